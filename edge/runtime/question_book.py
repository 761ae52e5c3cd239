"""The store side of person steps (edge.runtime.questions): the questions table read and written, the
first answer taken once, the listeners of each platform called, the in-process waiters woken."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Mapping

from sqlalchemy import and_, insert, select, update
from sqlalchemy.exc import IntegrityError

from oz0.edge.contracts.schema import load_contract, violation_sentence
from oz0.edge.runtime.questions import (ACTIONS, MAX_MESSAGE_CHARS, POLL_S, Answer, AnswerListener, AnswerRefused,
                                        Question, QuestionListener, answer_topic, job_platform)
from oz0.edge.contracts.answer_schema import check_answer_schema
from oz0.edge.runtime.store import questions as table

if TYPE_CHECKING:
    from oz0.edge.model.job import Job
    from oz0.edge.runtime.runner import Runtime

__all__ = ["Questions"]

log = logging.getLogger("oz0.questions")


def _question(row: Mapping[str, Any]) -> Question:
    return Question(job_id=row["job_id"], step=row["step"], message=row["message"],
                    answer_schema=dict(row["answer_schema"]), answerers=dict(row["answerers"] or {}),
                    expires_at=row["expires_at"], source=row["source"])


def _answer(row: Mapping[str, Any]) -> Answer | None:
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


class Questions:
    """The runtime's person steps: the store's questions, the listeners of each platform, the waiters."""

    def __init__(self, runtime: "Runtime") -> None:
        self.runtime = runtime
        self._on_question: dict[str, list[QuestionListener]] = {}
        self._on_answered: dict[str, list[AnswerListener]] = {}
        self._woken = threading.Condition()
        self._async_woken: set[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = set()
        self._tasks: set[asyncio.Future[Any]] = set()

    # listeners -------------------------------------------------------------------------------

    def on_question(self, platform: str, callback: QuestionListener) -> None:
        self._on_question.setdefault(platform, []).append(callback)

    def on_answered(self, platform: str, callback: AnswerListener) -> None:
        self._on_answered.setdefault(platform, []).append(callback)

    def can_ask(self, platform: str) -> bool:
        """Whether a channel of this platform draws questions here (it registered `on_question`)."""
        return bool(self._on_question.get(platform))

    def can_ask_job(self, job_id: str) -> bool:
        job = self.runtime.job(job_id)
        return job is not None and self.can_ask(job_platform(job))

    # asking and reading ----------------------------------------------------------------------

    def ask(self, question: Question) -> bool:
        """Record the question and show it; True when this call asked it (a second ask is a no-op)."""
        check_answer_schema(question.answer_schema)
        if len(question.message) > MAX_MESSAGE_CHARS:
            raise ValueError(f"a question is {len(question.message):,} characters; the limit is "
                             f"{MAX_MESSAGE_CHARS:,}")
        job = self.runtime.job(question.job_id)
        if job is None:
            raise KeyError(f"no job {question.job_id!r}")
        store = self.runtime.store
        try:
            with store.engine.begin() as conn:
                conn.execute(insert(table).values(
                    job_id=job.id, step=question.step, message=question.message,
                    answer_schema=question.answer_schema, answerers=dict(question.answerers),
                    expires_at=question.expires_at, source=question.source, asked_at=time.time()))
        except IntegrityError:
            return False
        store.update_job(job.id, only_if_status=("queued", "running"), status="waiting")
        self._notify(self._on_question.get(job_platform(job), ()), job, question)
        return True

    def question(self, job_id: str) -> Question | None:
        """The job's open question (the latest asked that has no answer), if any."""
        query = (select(table).where(table.c.job_id == job_id, table.c.action.is_(None))
                 .order_by(table.c.asked_at.desc()).limit(1))
        with self.runtime.store.engine.connect() as conn:
            row = conn.execute(query).mappings().first()
        return _question(row) if row else None

    def asked(self, job_id: str, step: str) -> tuple[Question, Answer | None] | None:
        """A question of the job by step, with its answer once there is one."""
        with self.runtime.store.engine.connect() as conn:
            row = conn.execute(select(table).where(table.c.job_id == job_id, table.c.step == step)
                               ).mappings().first()
        return (_question(row), _answer(row)) if row else None

    def _waiter(self, job_id: str, step: str) -> str | None:
        with self.runtime.store.engine.connect() as conn:
            return conn.execute(select(table.c.waiter).where(table.c.job_id == job_id, table.c.step == step)
                                ).scalar()

    def set_waiter(self, job_id: str, step: str, workflow: str) -> None:
        """Name the DBOS workflow that waits durably for this step (an answer sends it a message)."""
        with self.runtime.store.engine.begin() as conn:
            conn.execute(update(table).where(table.c.job_id == job_id, table.c.step == step)
                         .values(waiter=workflow))

    def open_steps(self, job_id: str) -> list[str]:
        with self.runtime.store.engine.connect() as conn:
            return [r[0] for r in conn.execute(select(table.c.step).where(
                table.c.job_id == job_id, table.c.action.is_(None)).order_by(table.c.asked_at))]

    def count(self, job_id: str) -> int:
        with self.runtime.store.engine.connect() as conn:
            return len(conn.execute(select(table.c.step).where(table.c.job_id == job_id)).all())

    # answering -------------------------------------------------------------------------------

    def answer(self, job_id: str, step: str, *, action: str, content: dict[str, Any] | None, by: str,
               groups: tuple[str, ...] = (), roles: tuple[str, ...] = ()) -> Answer:
        """Take an answer, once: checked (answerer, then state, then content), recorded, audited, and
        the waiters woken. Raises AnswerRefused."""
        job = self.runtime.job(job_id)
        found = self.asked(job.id, step) if job is not None else None
        if job is None or found is None:
            raise AnswerRefused(409, f"job {job_id} has no question {step!r} waiting for an answer")
        question, given = found
        if action not in ACTIONS or action == "timeout":
            raise AnswerRefused(422, f"action must be accept, decline or cancel, not {action!r}")
        if not _may_answer(question.answerers, job.requester, by=by, groups=tuple(groups), roles=tuple(roles)):
            self.runtime.audit("access.denied", actor=by, detail={
                "job": job.id, "step": step, "reason": "not among the question's answerers"})
            raise AnswerRefused(403, f"you are not among those who may answer {step!r} of job {job.id}")
        if given is not None:
            raise AnswerRefused(409, f"{step!r} of job {job.id} was already answered ({given.action}) by "
                                     f"{given.by}; the first answer stands")
        if job.finished:
            raise AnswerRefused(409, f"job {job.id} has ended ({job.status}); its question can no longer be answered")
        if question.expires_at is not None and time.time() > question.expires_at:
            raise AnswerRefused(409, f"{step!r} of job {job.id} expired; the question can no longer be answered")
        if action == "accept":
            content = self._checked(question, content)
        elif content is not None:
            raise AnswerRefused(422, f"a {action} answer carries no content")
        answer, won = self._record(job, question, Answer(action, content, by, time.time()))  # type: ignore[arg-type]
        if not won:
            raise AnswerRefused(409, f"{step!r} of job {job.id} was already answered ({answer.action}) by "
                                     f"{answer.by}; the first answer stands")
        return answer

    def _checked(self, question: Question, content: Any) -> dict[str, Any]:
        if not isinstance(content, dict):
            raise AnswerRefused(422, "an accepted answer is a JSON object of the answer schema's fields")
        violations = load_contract(question.answer_schema, source="the answer schema").validate(content)
        if violations:
            raise AnswerRefused(422, violation_sentence(violations, subject="the answer"), violations=violations)
        return content

    def _record(self, job: "Job", question: Question, answer: Answer) -> tuple[Answer, bool]:
        """Write the answer if none is there (the database decides who was first): the answer that
        stands, and whether it is this one."""
        store = self.runtime.store
        with store.engine.begin() as conn:
            won = conn.execute(update(table).where(and_(
                table.c.job_id == job.id, table.c.step == question.step, table.c.action.is_(None))).values(
                action=answer.action, content=answer.content, answered_by=answer.by,
                answered_at=answer.at)).rowcount == 1
            if won:
                store.add_audit("flow.answered", actor=answer.by, conn=conn, detail={
                    "job": job.id, "step": question.step, "action": answer.action, "answer": answer.content})
        if not won:
            standing = self.asked(job.id, question.step)
            assert standing is not None and standing[1] is not None
            return standing[1], False
        if self.question(job.id) is None:
            store.update_job(job.id, only_if_status=("waiting",), status="running")
        self._wake(job.id, question.step)
        self._notify(self._on_answered.get(job_platform(job), ()), job, question, answer)
        return answer, True

    def close(self, job_id: str, step: str, *, action: str, by: str) -> Answer:
        """End an open question without a person (a timeout, a job that ended): the answer that stands."""
        job = self.runtime.job(job_id)
        found = self.asked(job_id, step)
        if job is None or found is None:
            raise KeyError(f"job {job_id} has no question {step!r}")
        if found[1] is not None:
            return found[1]
        return self._record(job, found[0], Answer(action, None, by, time.time()))[0]  # type: ignore[arg-type]

    # waiting ---------------------------------------------------------------------------------

    def wait(self, job_id: str, step: str, *, timeout_s: float | None) -> Answer:
        """Block this thread until the step is answered or `timeout_s` passes (then a timeout answer)."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while True:
            answer, pause = self._settled(job_id, step, deadline)
            if answer is not None:
                return answer
            with self._woken:
                self._woken.wait(pause)

    def _settled(self, job_id: str, step: str, deadline: float | None) -> tuple[Answer | None, float]:
        """The step's answer (a timeout answer once `deadline` has passed), or None and how long to
        wait before looking again (another replica may answer without waking this one)."""
        found = self.asked(job_id, step)
        if found is None:
            raise KeyError(f"job {job_id} has no question {step!r}")
        if found[1] is not None:
            return found[1], 0.0
        left = POLL_S if deadline is None else deadline - time.monotonic()
        if left <= 0:
            return self.close(job_id, step, action="timeout", by="timeout"), 0.0
        return None, min(left, POLL_S)

    async def wait_async(self, job_id: str, step: str, *, timeout_s: float | None) -> Answer:
        """`wait` for a coroutine: the loop stays free; cancelling it (the job's time limit, a stop)
        closes the question as cancelled, so a late answer is refused rather than lost."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        woken = (asyncio.get_running_loop(), asyncio.Event())
        self._async_woken.add(woken)
        try:
            while True:
                answer, pause = self._settled(job_id, step, deadline)
                if answer is not None:
                    return answer
                woken[1].clear()
                try:
                    await asyncio.wait_for(woken[1].wait(), timeout=pause)
                except TimeoutError:
                    pass  # look again: another replica may have answered
        except asyncio.CancelledError:
            self.close(job_id, step, action="cancel", by="stopped")
            raise
        finally:
            self._async_woken.discard(woken)

    def _wake(self, job_id: str, step: str) -> None:
        with self._woken:
            self._woken.notify_all()
        for loop, event in list(self._async_woken):
            loop.call_soon_threadsafe(event.set)
        engine = self.runtime.engine
        if engine is not None and getattr(engine, "launched", False):
            waiter = self._waiter(job_id, step)
            if waiter:
                from oz0.edge.runtime.durable import send_answer  # imports dbos (about a second)

                send_answer(waiter, answer_topic(step))

    def _notify(self, listeners: Any, *args: Any) -> None:
        """Call a platform's listeners: as tasks on this thread's loop, else on a loop of their own."""
        for listener in list(listeners):
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                threading.Thread(target=_run_listener, args=(listener, args), daemon=True,
                                 name="oz0-question-listener").start()
                continue
            task = loop.create_task(_guarded(listener, args))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)


async def _guarded(listener: Callable[..., Awaitable[None]], args: tuple[Any, ...]) -> None:
    try:
        await listener(*args)
    except Exception:
        log.exception("a person-step listener failed for job %s", getattr(args[0], "id", "?"))


def _run_listener(listener: Callable[..., Awaitable[None]], args: tuple[Any, ...]) -> None:
    asyncio.run(_guarded(listener, args))


