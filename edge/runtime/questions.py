"""Person steps: a job that pauses to ask someone, and the answer that lets it go on.

One mechanism serves flow `ask` steps, MCP `elicitation/create` and confirmations of destructive
tools. A question is a row of the store's `questions` table, keyed by (job, step): asking twice is a
no-op, and the answer is written once, by a conditional UPDATE ... WHERE action IS NULL, so the first
answer wins across replicas and restarts. While a question is open the job's status is `waiting`.

Two ways to wait:
- `Questions.wait` / `wait_async` (a running step: an MCP elicitation, a confirmation): in-process,
  woken at once by an answer given here and finding one given on another replica within
  `POLL_S`. Not durable: a restart ends such a job interrupted, once (edge.runtime.durable).
- `wait_in_workflow` (a DBOS workflow: a flow): durable. Every decision is a checkpointed step
  reading the store, and the wait between them is DBOS.recv, which `answer` wakes with DBOS.send;
  an answer given after `oz0 serve` restarted resumes the workflow.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Literal


if TYPE_CHECKING:
    from oz0.edge.model.job import Job
    from oz0.edge.runtime.question_book import Questions

__all__ = [
    "ACTIONS",
    "Answer",
    "AnswerRefused",
    "POLL_S",
    "Question",
    "PersonSteps",
    "answer_topic",
    "job_platform",
    "wait_in_workflow",
]


ACTIONS = ("accept", "decline", "cancel", "timeout")
MAX_MESSAGE_CHARS = 3_000       # a question's text
POLL_S = 1.0                    # how often an in-process waiter looks for an answer given on another replica
WORKFLOW_POLL_S = 60.0          # how often a durable waiter re-reads the store (a lost DBOS.send costs this)

QuestionListener = Callable[["Job", "Question"], Awaitable[None]]
AnswerListener = Callable[["Job", "Question", "Answer"], Awaitable[None]]


@dataclass(frozen=True)
class Question:
    """What a paused job asks: the text, the shape of the answer, and who may give it."""

    job_id: str
    step: str
    message: str
    answer_schema: dict[str, Any]
    answerers: dict[str, Any]
    expires_at: float | None
    source: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"step": self.step, "message": self.message, "answer_schema": self.answer_schema,
                "answerers": self.answerers, "expires": self.expires_at, "source": self.source}


@dataclass(frozen=True)
class Answer:
    """How a question was answered: accepted with content, declined, cancelled, or timed out."""

    action: Literal["accept", "decline", "cancel", "timeout"]
    content: dict[str, Any] | None
    by: str
    at: float

    def to_dict(self) -> dict[str, Any]:
        return {"action": self.action, "content": self.content, "by": self.by, "at": self.at}


class AnswerRefused(Exception):
    """An answer not taken: 403 not an answerer, 409 already answered or not waiting, 422 invalid."""

    def __init__(self, status: int, message: str, *, violations: tuple[Any, ...] = ()) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.violations = violations  # for 422: the contract's Violations (json_path, keyword, message)


def job_platform(job: "Job") -> str:
    """Where a job was asked: its reply_to platform (slack, discord), else its channel (api, console, cli)."""
    return str((job.reply_to or {}).get("platform") or job.channel)


def answer_topic(step: str) -> str:
    """The DBOS message topic an answer to `step` is sent on."""
    return f"oz0.answer:{step}"


class PersonSteps:
    """Runtime's person-step methods (mixed into edge.runtime.runner.Runtime, which sets `questions`)."""

    questions: "Questions"

    def ask(self, question: Question) -> None:
        """Pause the question's job to ask someone; the first ask of a (job, step) wins."""
        self.questions.ask(question)

    def question(self, job_id: str) -> Question | None:
        """The job's open question, if it waits for one."""
        return self.questions.question(job_id)

    def answer(self, job_id: str, step: str, *, action: str, content: dict[str, Any] | None, by: str,
               groups: tuple[str, ...] = (), roles: tuple[str, ...] = ()) -> Answer:
        """Answer a job's question once (see Questions.answer); raises AnswerRefused."""
        return self.questions.answer(job_id, step, action=action, content=content, by=by, groups=groups,
                                     roles=roles)

    def wait_answer(self, job_id: str, step: str, *, timeout_s: float | None) -> Answer:
        """Block this thread for the answer (not durable; in a workflow use wait_in_workflow)."""
        return self.questions.wait(job_id, step, timeout_s=timeout_s)

    async def wait_answer_async(self, job_id: str, step: str, *, timeout_s: float | None) -> Answer:
        """Await the answer without blocking the loop (not durable)."""
        return await self.questions.wait_async(job_id, step, timeout_s=timeout_s)

    def on_question(self, platform: str, callback: QuestionListener) -> None:
        """A channel draws its platform's questions with `await callback(job, question)`; registering
        is also how it says it can ask (`can_ask`)."""
        self.questions.on_question(platform, callback)

    def on_answered(self, platform: str, callback: AnswerListener) -> None:
        """A channel updates the card a question replaced with `await callback(job, question, answer)`."""
        self.questions.on_answered(platform, callback)

    def can_ask(self, platform: str) -> bool:
        """Whether a channel of `platform` draws questions in this process."""
        return self.questions.can_ask(platform)


async def wait_in_workflow(job_id: str, step: str, timeout_s: float | None) -> Answer:
    """Inside a DBOS workflow: wait durably for the answer to `step` of `job_id` (asked before with
    `runtime.ask`). Each look at the store is a checkpointed step, the wait between is DBOS.recv, so a
    restart replays to the same point and goes on waiting; past `timeout_s` (from the question's
    `expires_at` when it has one) the step is closed with a timeout answer, unless a person was first."""
    from dbos import DBOS

    from oz0.edge.runtime.durable import current_runtime  # imports dbos (about a second): only inside a workflow

    runtime = current_runtime()
    book = runtime.questions

    workflow = DBOS.workflow_id
    if workflow is None:
        raise RuntimeError("wait_in_workflow runs inside a DBOS workflow; elsewhere use runtime.wait_answer")

    def look() -> dict[str, Any]:
        book.set_waiter(job_id, step, workflow)  # before reading: an answer after this read wakes us
        found = book.asked(job_id, step)
        if found is None:
            raise KeyError(f"job {job_id} has no question {step!r}; ask it before waiting")
        question, answer = found
        return {"answer": answer.to_dict() if answer else None, "now": time.time(),
                "expires": question.expires_at}

    def expire() -> dict[str, Any]:
        return book.close(job_id, step, action="timeout", by="timeout").to_dict()

    first = await DBOS.run_step_async({"name": "oz0.question.look"}, look)
    expires = first["expires"]
    if timeout_s is not None:
        until = first["now"] + timeout_s
        expires = until if expires is None else min(expires, until)
    seen = first
    while seen["answer"] is None:
        left = WORKFLOW_POLL_S if expires is None else expires - seen["now"]
        if left <= 0:
            return Answer(**await DBOS.run_step_async({"name": "oz0.question.expire"}, expire))
        await DBOS.recv_async(answer_topic(step), timeout_seconds=max(0.05, min(left, WORKFLOW_POLL_S)))
        seen = await DBOS.run_step_async({"name": "oz0.question.look"}, look)
    return Answer(**seen["answer"])
