"""Stopping a job: `oz0 jobs cancel ID`, `POST /v1/jobs/{id}/cancel`, the Stop button in chat.

Why a request in the journal and not a signal: the job may run on another replica (or in `oz0 serve`
while the request comes from the CLI), so the request is written on the job's row (`stop_request`,
revision 0018) and published on its event stream (`StopAsked`: Postgres NOTIFY reaches every
replica). The replica running the job watches both (`guard`, around every run in this process): it
cancels the run's task there, which ends what the step does (a command's process group sent SIGTERM
then SIGKILL, an MCP call cancelled with `notifications/cancelled`, a model request or a tool loop
cut), and the run ends the job `cancelled`, "stopped by Ana Lima". That job's own workflow then posts
its card, once, as for any end.

What runs nowhere yet is stopped by the request itself: a queued job (and a flow, whose workflow is
the orchestration, not a step) has its workflow cancelled in the engine (`DBOS.cancel_workflow`) and
is ended here; so is a job whose run did not end within STOP_WAIT_S (its replica is gone). The
children of a flow or a delegation are stopped the same way, first. Who may stop a job: its asker,
or an admin (the caller says which, `admin=`). Every stop is audited (`job.cancel`).
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol

from oz0.edge.errors import Oz0Error
from oz0.edge.model.agent import AgentSpec
from oz0.edge.model.job import Job
from oz0.edge.runtime.body_retries import read_out, waited_out
from oz0.edge.runtime.engine_settings import system_database_url, workflow_id
from oz0.edge.runtime.events import JobEnded, StopAsked
from oz0.edge.runtime.store import ACTIVE_STATUSES

if TYPE_CHECKING:
    from pathlib import Path

    from oz0.edge.runtime.event_stream import JobEvents
    from oz0.edge.runtime.question_book import Questions
    from oz0.edge.runtime.store import Store

__all__ = ["CANCELLED", "STOP_WAIT_S", "CancelRefused", "JobStops", "StopRequest", "StopsRuntime"]

log = logging.getLogger("oz0.cancel")

CANCELLED = "Cancelled"   # the failure kind of a stopped job (edge.model.job.BUILTIN_FAILURES)
STOP_WAIT_S = 10.0        # how long a running job's replica may take to stop it before it is ended here
POLL_S = 1.0              # how often a running job's guard reads the journal (the stream is at once)

CancelWhy = Literal["unknown", "forbidden", "finished"]


class CancelRefused(Oz0Error):
    """A stop that is not made: no such job, not the asker's (nor an admin's), or the job has ended."""

    def __init__(self, why: CancelWhy, message: str) -> None:
        super().__init__(message)
        self.why = why
        self.message = message


@dataclass(frozen=True)
class StopRequest:
    """Who asked to stop a job (as journaled, and as people read them) and when."""

    by: str
    name: str
    at: float

    @property
    def reason(self) -> str:
        return f"stopped by {self.name}"

    def to_json(self) -> dict[str, Any]:
        return {"by": self.by, "name": self.name, "at": self.at}

    @classmethod
    def of(cls, raw: Any) -> StopRequest | None:
        if not isinstance(raw, Mapping) or not raw.get("by"):
            return None
        return cls(str(raw["by"]), str(raw.get("name") or raw["by"]), float(raw.get("at") or 0.0))


class StopsRuntime(Protocol):
    """What stopping a job needs of the Runtime."""

    home: Path
    store: Store
    stream: JobEvents
    questions: Questions
    engine: Any  # edge.runtime.durable.Engine once launched, else None

    def job(self, job_id: str) -> Job | None: ...

    def tree_below(self, job: Job) -> tuple[list[tuple[int, Job]], int]: ...

    def flows(self) -> list[AgentSpec]: ...

    def deliverer(self, platform: str) -> Callable[[Job], Awaitable[None]] | None: ...

    def delivers(self, platform: str) -> bool: ...

    def audit(self, action: str, *, actor: str, detail: Mapping[str, Any]) -> None: ...


class JobStops:
    """Stop requests, made anywhere (`cancel`) and obeyed where the job runs (`guard`)."""

    def __init__(self, runtime: StopsRuntime, *, wait_s: float = STOP_WAIT_S) -> None:
        self.runtime = runtime
        self.wait_s = wait_s

    def requested(self, job_id: str) -> StopRequest | None:
        row = self.runtime.store.job(job_id)
        return StopRequest.of(row.get("stop_request")) if row is not None else None

    # asking -----------------------------------------------------------------------------------

    def refusal(self, job_id: str, *, by: str, admin: bool = False) -> CancelRefused | None:
        """Why `by` may not stop this job now, if they may not: no such job, neither its asker nor an
        admin, or it has ended."""
        job = self.runtime.job(job_id)
        if job is None:
            return CancelRefused("unknown", f"no job has the id {job_id!r}")
        if not admin and by != job.requester:
            return CancelRefused("forbidden", f"only the asker of job {job.id} or an admin may stop it")
        if job.finished:
            return CancelRefused("finished", f"job {job.id} has already ended ({job.status}); there is nothing "
                                             "to stop")
        return None

    async def cancel(self, job_id: str, *, by: str, name: str | None = None, admin: bool = False) -> Job:
        """Stop the job and its children, wherever they run; the job once it has ended `cancelled`.
        Raises CancelRefused (unknown, forbidden, finished)."""
        runtime = self.runtime
        refused = await asyncio.to_thread(self.refusal, job_id, by=by, admin=admin)
        if refused is not None:
            raise refused
        job = await asyncio.to_thread(runtime.job, job_id)
        assert job is not None
        stop = StopRequest(by, name or by, time.time())
        below, _ = await asyncio.to_thread(runtime.tree_below, job)
        tree = [j for _, j in reversed(below)]  # the deepest first: a parent sees its children end
        if not await asyncio.to_thread(self._record, tree, stop):
            raise CancelRefused("finished", f"job {job.id} has already ended; there is nothing to stop")
        await asyncio.to_thread(runtime.audit, "job.cancel", actor=by, detail={
            "job": job.id, "agent": job.agent, "status": job.status, "by_name": stop.name,
            "children": [j.id for j in tree if j.id != job.id]})
        flow_names = {f.name for f in await asyncio.to_thread(runtime.flows)}
        flows = {j.id for j in tree if j.agent in flow_names or _is_flow(j, tree)}
        for node in tree:
            if node.status == "queued" or node.id in flows:  # runs no step now: its workflow is cancelled
                await self._cancel_workflow(node)
            if node.status == "queued":
                await self._end_here(node.id, stop)
        deadline = time.monotonic() + self.wait_s
        while time.monotonic() < deadline:
            if not [j for j in await asyncio.to_thread(self._active, tree) if j.id not in flows]:
                break
            await asyncio.sleep(0.1)
        for node in await asyncio.to_thread(self._active, tree):
            if node.id not in flows:  # its replica did not stop it: gone, or stuck
                log.warning("job %s did not stop where it ran within %g s; its workflow is cancelled and it "
                            "is ended here", node.id, self.wait_s)
                await self._cancel_workflow(node)
            await self._end_here(node.id, stop)
        ended = await asyncio.to_thread(runtime.job, job.id)
        assert ended is not None
        return ended

    def _record(self, tree: list[Job], stop: StopRequest) -> bool:
        """Write the request on each active job of the tree, then publish it, the top job first (so a
        flow run here is stopped before its step's end could fail it); whether the top one took it."""
        store = self.runtime.store
        took = [j for j in tree if store.update_job(j.id, only_if_status=ACTIVE_STATUSES, stop_request=stop.to_json())]
        for node in reversed(took):
            self.runtime.stream.publish(node.id, StopAsked(stop.by, stop.name))
        return any(j.id == tree[-1].id for j in took)

    def _active(self, tree: list[Job]) -> list[Job]:
        jobs = (self.runtime.job(j.id) for j in tree)
        return [j for j in jobs if j is not None and not j.finished]

    async def _cancel_workflow(self, job: Job) -> None:
        """Cancel the job's workflow in the engine (on whichever replica it would run): DBOS's own, or a
        DBOS client of the engine's system database from a process that runs no engine (the CLI)."""
        engine = self.runtime.engine
        if engine is not None:
            from dbos import DBOS  # dbos is imported only where the engine runs (about a second)

            await asyncio.to_thread(DBOS.cancel_workflow, workflow_id(job))
            return
        await asyncio.to_thread(_cancel_by_client, self.runtime, job)

    async def _end_here(self, job_id: str, stop: StopRequest) -> None:
        """End a job nobody runs as `cancelled`, and post its card where this process can (a channel
        registered for its platform); its workflow was cancelled, so it will not."""
        runtime = self.runtime
        ended = await asyncio.to_thread(self._journal_end, job_id, stop)
        if ended is None or ended.reply_to is None or ended.parent_id is not None:
            return
        deliver = runtime.deliverer(ended.reply_to.platform)
        if deliver is not None and runtime.delivers(ended.reply_to.platform):
            await deliver(ended)

    def _journal_end(self, job_id: str, stop: StopRequest) -> Job | None:
        runtime = self.runtime
        for step in runtime.questions.open_steps(job_id):
            runtime.questions.close(job_id, step, action="cancel", by=stop.by)
        if not runtime.store.update_job(job_id, only_if_status=ACTIVE_STATUSES, status="cancelled",
                                        failure_kind=CANCELLED, failure_reason=stop.reason, ended=time.time()):
            return None
        runtime.stream.publish(job_id, JobEnded("cancelled", CANCELLED))
        return runtime.job(job_id)

    # obeying ----------------------------------------------------------------------------------

    async def guard(self, job_id: str, work: Coroutine[Any, Any, Job]) -> Job:
        """Run a job's work here, cancelled as soon as a stop is asked for it: published on its stream
        (from any replica), or written in the journal (looked at every POLL_S, for a request made by
        a process that shares no stream with this one). The work ends the job `cancelled`
        (edge.runtime.runner); this returns the job as the journal has it."""
        task = asyncio.ensure_future(work)
        try:
            reader = await read_out("a job's stop watch", self.runtime.stream.reader, job_id)
        except KeyError:
            return await task
        try:
            looked = -math.inf
            while True:
                now = time.monotonic()
                if now - looked >= POLL_S:  # the journal every POLL_S, not on each of the job's events
                    if await read_out("a job's stop watch", self.requested, job_id) is not None:
                        break
                    looked = now
                wait = max(0.0, looked + POLL_S - now)
                arrived = asyncio.ensure_future(waited_out("a job's stop watch", reader.next, wait))
                done, _ = await asyncio.wait({task, arrived}, return_when=asyncio.FIRST_COMPLETED)
                if task in done:
                    arrived.cancel()
                    return task.result()
                if isinstance(arrived.result(), StopAsked):
                    break
            log.info("job %s: stop asked; its run is cancelled here", job_id)
            task.cancel()
            await asyncio.wait({task})
            if not task.cancelled():
                return task.result()  # it ended first, or its cancel path failed: that error, never dropped
            job = await read_out("a job's read", self.runtime.job, job_id)
            assert job is not None
            return job
        except asyncio.CancelledError:
            task.cancel()
            raise
        finally:
            reader.close()


def _is_flow(job: Job, tree: list[Job]) -> bool:
    """A job with children in the tree runs their orchestration (a flow's workflow), not a step."""
    return any(j.parent_id == job.id for j in tree)


def _cancel_by_client(runtime: StopsRuntime, job: Job) -> None:
    """DBOS.cancel_workflow from a process without the engine, over the system database `oz0 serve`
    uses (the journal's Postgres, or the SQLite file beside the journal); nothing when there is none."""

    url = system_database_url(runtime.store.url, runtime.home)
    if url is None:
        return
    from dbos import DBOSClient

    client = DBOSClient(system_database_url=url)
    try:
        client.cancel_workflow(workflow_id(job))
    finally:
        client.destroy()
