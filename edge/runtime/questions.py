"""Person steps: a job that pauses to ask someone, and the answer that lets it go on.

One mechanism serves flow `ask` steps, MCP `elicitation/create` and confirmations of destructive
tools. A question is a row of the store's `questions` table, keyed by (job, step): asking twice is a
no-op, and the answer is written once, by a conditional UPDATE ... WHERE action IS NULL, so the first
answer wins across replicas and restarts. While a question is open the job's status is `waiting`.

Asking publishes `QuestionAsked` and answering `Answered` on the job's event stream
(edge.runtime.event_stream); channels draw and update questions from there. There is one wait,
`Questions.answered_within` (woken by the stream's `Answered`), with two backends:
- in the job's own call (`Questions.wait_async` / `wait`: an MCP elicitation, a confirmation, a flow
  run by `oz0 run`): not durable, a restart ends such a job interrupted, once (edge.runtime.durable);
- in a DBOS workflow (`wait_in_workflow`: a flow under `oz0 serve`): durable. The wait is a
  sequence of checkpointed steps, each waiting at most WORKFLOW_SLICE_S, so a restart replays the
  finished ones and goes on waiting; an answer given after a restart resumes the workflow.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from oz0.edge.errors import Oz0Error
from oz0.edge.runtime.step_retries import step_options

if TYPE_CHECKING:
    from oz0.edge.model.job import Job

__all__ = [
    "ACTIONS",
    "POLL_S",
    "Answer",
    "AnswerRefused",
    "Question",
    "RefusedWhy",
    "job_platform",
    "wait_in_workflow",
]


ACTIONS = ("accept", "decline", "cancel", "timeout")
MAX_MESSAGE_CHARS = 3_000       # a question's text
POLL_S = 1.0                    # how often a waiter re-reads the store (an answer the stream cannot carry)
WORKFLOW_SLICE_S = 60.0         # the longest checkpointed step of a durable wait


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


RefusedWhy = Literal["not_answerer", "not_waiting", "invalid"]


class AnswerRefused(Oz0Error):
    """An answer not taken, and `why`: the asker may not answer (not_answerer), the question is not
    waiting (already answered, expired, the job ended: not_waiting), or the answer is wrong (invalid).
    Each adapter chooses what that means on its wire (the console's API: 403, 409, 422)."""

    def __init__(self, why: RefusedWhy, message: str, *, violations: tuple[Any, ...] = ()) -> None:
        super().__init__(message)
        self.why: RefusedWhy = why
        self.message = message
        self.violations = violations  # for 422: the contract's Violations (json_path, keyword, message)


def job_platform(job: Job) -> str:
    """Where a job was asked: its reply reference's platform (slack, discord), else its channel."""
    return job.platform


async def wait_in_workflow(job_id: str, step: str, timeout_s: float | None) -> Answer:
    """Inside a DBOS workflow: wait durably for the answer to `step` of `job_id` (asked before with
    `runtime.ask`). Each wait is a checkpointed step of at most WORKFLOW_SLICE_S (the one wait,
    `Questions.answered_within`, woken by the job's event stream), so a restart replays the slices
    that ended and goes on waiting; past `timeout_s` (from the question's `expires_at` when it has
    one) the step is closed with a timeout answer, unless a person was first."""
    from dbos import DBOS

    from oz0.edge.runtime.durable import current_runtime  # imports dbos (about a second): only inside a workflow

    book = current_runtime().questions

    def look() -> dict[str, Any]:
        found = book.asked(job_id, step)
        if found is None:
            raise KeyError(f"job {job_id} has no question {step!r}; ask it before waiting")
        question, answer = found
        return {"answer": answer.to_dict() if answer else None, "now": time.time(),
                "expires": question.expires_at}

    async def wait(seconds: float) -> dict[str, Any]:
        answer = await book.answered_within(job_id, step, seconds)
        return {"answer": answer.to_dict() if answer else None, "now": time.time(),
                "ended": answer is None and book.job_ended(job_id)}

    def cancel() -> dict[str, Any]:
        return book.close(job_id, step, action="cancel", by="ended").to_dict()

    def expire() -> dict[str, Any]:
        return book.close(job_id, step, action="timeout", by="timeout").to_dict()

    if DBOS.workflow_id is None:
        raise RuntimeError("wait_in_workflow runs inside a DBOS workflow; elsewhere use runtime.wait_answer")
    seen = await DBOS.run_step_async(step_options("oz0.question.look"), look)
    expires = seen["expires"]
    if timeout_s is not None:
        until = seen["now"] + timeout_s
        expires = until if expires is None else min(expires, until)
    while seen["answer"] is None:
        left = WORKFLOW_SLICE_S if expires is None else expires - seen["now"]
        if left <= 0:
            return Answer(**await DBOS.run_step_async(step_options("oz0.question.expire"), expire))
        seen = await DBOS.run_step_async(step_options("oz0.question.wait"), wait, min(left, WORKFLOW_SLICE_S))
        if seen.get("ended"):  # the job was ended by someone else (a stop): nobody can answer now
            return Answer(**await DBOS.run_step_async(step_options("oz0.question.cancel"), cancel))
    return Answer(**seen["answer"])
