"""The store side of person steps (edge.runtime.questions): the questions table read and written, the
first answer taken once, each ask and answer published on the job's event stream, and the one wait
for an answer (woken by the stream, in a job's own call or in a durable workflow's step)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from sqlalchemy import and_, bindparam, exists, insert, select, update
from sqlalchemy.engine import RowMapping
from sqlalchemy.exc import IntegrityError

from oz0.edge.contracts.answer_schema import check_answer_schema
from oz0.edge.contracts.json_data import JsonDataError, check_json_data
from oz0.edge.contracts.schema import load_contract, violation_sentence
from oz0.edge.runtime.events import Answered, JobEnded, QuestionAsked
from oz0.edge.runtime.questions import ACTIONS, MAX_MESSAGE_CHARS, POLL_S, Answer, AnswerRefused, Question, job_platform
from oz0.edge.runtime.store import jobs
from oz0.edge.runtime.store import questions as table

if TYPE_CHECKING:
    from oz0.edge.model.job import Job
    from oz0.edge.runtime.event_stream import JobEvents
    from oz0.edge.runtime.jobs import Jobs
    from oz0.edge.runtime.store import Store

__all__ = ["Questions", "asked_question", "open_question"]


def _question(row: RowMapping) -> Question:
    return Question(job_id=row["job_id"], step=row["step"], message=row["message"],
                    answer_schema=dict(row["answer_schema"]), answerers=dict(row["answerers"] or {}),
                    expires_at=row["expires_at"], source=row["source"])


def _answer(row: RowMapping) -> Answer | None:
    if row["action"] is None:
        return None
    return Answer(action=row["action"], content=row["content"], by=row["answered_by"] or "",
                  at=row["answered_at"] or 0.0)


def _may_answer(answerers: Mapping[str, Any], requester: str, *, by: str, groups: tuple[str, ...],
                roles: tuple[str, ...]) -> bool:
    if not any(answerers.get(k) for k in ("users", "groups", "roles")):
        return by == requester
    users = {str(u) for u in answerers.get("users") or ()}
    bare = by.partition(":")[2] or by
    return (by in users or bare in users or bool({str(g) for g in answerers.get("groups") or ()} & set(groups))
            or bool({str(r) for r in answerers.get("roles") or ()} & set(roles)))


def open_question(store: Store, job_id: str) -> Question | None:
    """The job's open question (the latest asked that has no answer), if any."""
    query = (select(table).where(table.c.job_id == job_id, table.c.action.is_(None))
             .order_by(table.c.asked_at.desc()).limit(1))
    with store.engine.connect() as conn:
        row = conn.execute(query).mappings().first()
    return _question(row) if row else None


def asked_question(store: Store, job_id: str, step: str) -> tuple[Question, Answer | None] | None:
    """A question of the job by step, with its answer once there is one."""
    with store.engine.connect() as conn:
        row = conn.execute(select(table).where(table.c.job_id == job_id, table.c.step == step)
                           ).mappings().first()
    return (_question(row), _answer(row)) if row else None


# A waiting job runs again once no question of it is left open: written with the answer, in its transaction
# (one commit, a synchronous write on SQLite, before the answer wakes the waiting step).
_RUNNING_AGAIN = update(jobs).where(
    jobs.c.id == bindparam("job_id"), jobs.c.status == "waiting",
    ~exists().where(table.c.job_id == jobs.c.id, table.c.action.is_(None))).values(status="running")


class Questions:
    """The runtime's person steps: the store's questions, published on the job's stream, and waited for.

    The stream reads questions with `open_question` and `asked_question` (store reads), not through
    this service, so the stream is built first and handed in."""

    def __init__(self, store: Store, jobs: Jobs, stream: JobEvents) -> None:
        self.store = store
        self.jobs = jobs
        self.stream = stream
        self._shown: set[str] = set()

    def shows(self, platform: str) -> None:
        """A channel of `platform` draws its jobs' questions here (it reads their event streams)."""
        self._shown.add(platform)

    def can_ask(self, platform: str) -> bool:
        """Whether a channel of this platform draws questions here (it said so with `shows`)."""
        return platform in self._shown

    def can_ask_job(self, job_id: str) -> bool:
        job = self.jobs.job(job_id)
        return job is not None and self.can_ask(job_platform(job))

    # asking and reading ----------------------------------------------------------------------

    def ask(self, question: Question) -> bool:
        """Record the question and show it; True when this call asked it (a second ask is a no-op)."""
        question = replace(question, answer_schema=check_answer_schema(question.answer_schema))
        if len(question.message) > MAX_MESSAGE_CHARS:
            raise ValueError(f"a question is {len(question.message):,} characters; the limit is "
                             f"{MAX_MESSAGE_CHARS:,}")
        job = self.jobs.job(question.job_id)
        if job is None:
            raise KeyError(f"no job {question.job_id!r}")
        store = self.store
        try:
            with store.engine.begin() as conn:
                conn.execute(insert(table).values(
                    job_id=job.id, step=question.step, message=question.message,
                    answer_schema=question.answer_schema, answerers=dict(question.answerers),
                    expires_at=question.expires_at, source=question.source, asked_at=time.time()))
        except IntegrityError:
            return False
        store.update_job(job.id, only_if_status=("queued", "running"), status="waiting")
        self.stream.publish(job.id, QuestionAsked(question))
        return True

    def question(self, job_id: str) -> Question | None:
        """The job's open question (the latest asked that has no answer), if any."""
        return open_question(self.store, job_id)

    def asked(self, job_id: str, step: str) -> tuple[Question, Answer | None] | None:
        """A question of the job by step, with its answer once there is one."""
        return asked_question(self.store, job_id, step)

    def open_steps(self, job_id: str) -> list[str]:
        with self.store.engine.connect() as conn:
            return [r[0] for r in conn.execute(select(table.c.step).where(
                table.c.job_id == job_id, table.c.action.is_(None)).order_by(table.c.asked_at))]

    def count(self, job_id: str) -> int:
        with self.store.engine.connect() as conn:
            return len(conn.execute(select(table.c.step).where(table.c.job_id == job_id)).all())

    # answering -------------------------------------------------------------------------------

    def answer(self, job_id: str, step: str, *, action: str, content: dict[str, Any] | None, by: str,
               groups: tuple[str, ...] = (), roles: tuple[str, ...] = (), via: str | None = None) -> Answer:
        """Take an answer, once: checked (answerer, then state, then content), recorded, audited, and
        published (`via`: the channel whose control took it, see events.Answered). Raises AnswerRefused."""
        job = self.jobs.job(job_id)
        found = self.asked(job.id, step) if job is not None else None
        if job is None or found is None:
            raise AnswerRefused("not_waiting", f"job {job_id} has no question {step!r} waiting for an answer")
        question, given = found
        if action not in ACTIONS or action == "timeout":
            raise AnswerRefused("invalid", f"action must be accept, decline or cancel, not {action!r}")
        if not _may_answer(question.answerers, job.requester, by=by, groups=tuple(groups), roles=tuple(roles)):
            self.store.add_audit("access.denied", actor=by, detail={
                "job": job.id, "step": step, "reason": "not among the question's answerers"})
            raise AnswerRefused("not_answerer", f"you are not among those who may answer {step!r} of job {job.id}")
        if given is not None:
            raise AnswerRefused("not_waiting", f"{step!r} of job {job.id} was already answered ({given.action}) by "
                                     f"{given.by}; the first answer stands")
        if job.finished:
            raise AnswerRefused("not_waiting", f"job {job.id} has ended ({job.status}); its question can no longer be answered")
        if question.expires_at is not None and time.time() > question.expires_at:
            raise AnswerRefused("not_waiting", f"{step!r} of job {job.id} expired; the question can no longer be answered")
        if action == "accept":
            content = self._checked(question, content)
        elif content is not None:
            raise AnswerRefused("invalid", f"a {action} answer carries no content")
        answer, won = self._record(job, question, Answer(action, content, by, time.time()), via)  # type: ignore[arg-type]
        if not won:
            raise AnswerRefused("not_waiting", f"{step!r} of job {job.id} was already answered ({answer.action}) by "
                                     f"{answer.by}; the first answer stands")
        return answer

    def _checked(self, question: Question, content: Any) -> dict[str, Any]:
        """The content if it is JSON data (the rule results pass: it is stored and read back) and meets
        the answer schema; AnswerRefused("invalid") otherwise."""
        if not isinstance(content, dict):
            raise AnswerRefused("invalid", "an accepted answer is a JSON object of the answer schema's fields")
        try:
            check_json_data(content)
        except JsonDataError as exc:
            where = f" at {exc.path}" if len(exc.path) <= 80 else ""
            raise AnswerRefused("invalid", f"the answer is not JSON data: {exc.message}{where}") from None
        violations = load_contract(question.answer_schema, source="the answer schema").validate(content)
        if violations:
            raise AnswerRefused("invalid", violation_sentence(violations, subject="the answer"), violations=violations)
        return content

    def _record(self, job: Job, question: Question, answer: Answer,
                via: str | None = None) -> tuple[Answer, bool]:
        """Write the answer if none is there (the database decides who was first): the answer that
        stands, and whether it is this one."""
        store = self.store
        with store.engine.begin() as conn:
            won = conn.execute(update(table).where(and_(
                table.c.job_id == job.id, table.c.step == question.step, table.c.action.is_(None))).values(
                action=answer.action, content=answer.content, answered_by=answer.by,
                answered_at=answer.at)).rowcount == 1
            if won:
                store.add_audit("flow.answered", actor=answer.by, conn=conn, detail={
                    "job": job.id, "step": question.step, "action": answer.action, "answer": answer.content})
                conn.execute(_RUNNING_AGAIN, {"job_id": job.id})
        if not won:
            standing = self.asked(job.id, question.step)
            assert standing is not None and standing[1] is not None
            return standing[1], False
        self.stream.publish(job.id, Answered(question.step, answer, via))
        return answer, True

    def close(self, job_id: str, step: str, *, action: str, by: str) -> Answer:
        """End an open question without a person (a timeout, a job that ended): the answer that stands."""
        job = self.jobs.job(job_id)
        found = self.asked(job_id, step)
        if job is None or found is None:
            raise KeyError(f"job {job_id} has no question {step!r}")
        if found[1] is not None:
            return found[1]
        return self._record(job, found[0], Answer(action, None, by, time.time()))[0]  # type: ignore[arg-type]

    # waiting ---------------------------------------------------------------------------------

    async def answered_within(self, job_id: str, step: str, seconds: float) -> Answer | None:
        """The one wait for an answer: the step's answer once given, or None after `seconds`. Woken by
        the job's `Answered` event (from this replica, or another through the stream's backend); the
        store is read again every POLL_S, for an answer given in a process the stream does not reach
        (`oz0` commands beside `oz0 serve` on one SQLite file)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + seconds
        with self.stream.reader(job_id) as reader:
            while True:
                answer = self._given(job_id, step)
                left = deadline - loop.time()
                if answer is not None or left <= 0:
                    return answer
                event = await reader.next(min(left, POLL_S))
                if isinstance(event, Answered) and event.step == step:
                    return event.answer
                if isinstance(event, JobEnded) or reader.ended:
                    return self._given(job_id, step)

    def _given(self, job_id: str, step: str) -> Answer | None:
        found = self.asked(job_id, step)
        if found is None:
            raise KeyError(f"job {job_id} has no question {step!r}")
        return found[1]

    async def wait_async(self, job_id: str, step: str, *, timeout_s: float | None) -> Answer:
        """Wait in the job's own call (not durable) until the step is answered or `timeout_s` passes
        (then a timeout answer); cancelling it (the job's time limit, a stop) closes the question as
        cancelled, so a late answer is refused rather than lost."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        try:
            while True:
                left = POLL_S * 60 if deadline is None else deadline - time.monotonic()
                answer = await self.answered_within(job_id, step, max(0.0, left))
                if answer is not None:
                    return answer
                if self.job_ended(job_id):
                    return self.close(job_id, step, action="cancel", by="ended")
                if deadline is not None and time.monotonic() >= deadline:
                    return self.close(job_id, step, action="timeout", by="timeout")
        except asyncio.CancelledError:
            self.close(job_id, step, action="cancel", by="stopped")
            raise

    def wait(self, job_id: str, step: str, *, timeout_s: float | None) -> Answer:
        """`wait_async` for a sync agent's own thread (it has no loop): blocks that thread."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        with self.stream.reader(job_id) as reader:
            while True:
                answer = self._given(job_id, step)
                if answer is not None:
                    return answer
                left = POLL_S if deadline is None else deadline - time.monotonic()
                if left <= 0:
                    return self.close(job_id, step, action="timeout", by="timeout")
                reader.next_blocking(min(left, POLL_S))
                if reader.ended and self.job_ended(job_id):
                    return self.close(job_id, step, action="cancel", by="ended")

    def job_ended(self, job_id: str) -> bool:
        job = self.jobs.job(job_id)
        return job is None or job.finished
