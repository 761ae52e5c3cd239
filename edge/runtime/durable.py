"""Jobs as durable DBOS workflows: restarts lose nothing, and replicas over one Postgres share the work.

Why an engine and not the journal alone: a job journaled by one process used to belong to that
process; if it died, the job was only reported interrupted at the next start. Here every job is a
DBOS workflow whose id is the job's dedupe key (a Slack delivery id, an API idempotency key, else the
job id), so a redelivery on any replica joins the one run. The workflow has two checkpointed steps:
`run` (the agent, under the runtime's limits and retries) and `deliver` (the card posted by the channel
that registered for the job's platform), so a step finished before a crash is never done again.

- System database: a SQLite file beside the journal (one process), or the journal's own Postgres.
- Executor id: the replica id (OZ0_REPLICA_ID, else the host name); the application version is set
  explicitly, because DBOS recovers a dead executor's workflows only for the same id and version.
- Lease (Postgres): each replica holds a session advisory lock on its replica id while it lives. A
  replica that finds another's lock free for OZ0_LEASE_S seconds (default 30) takes it and hands that
  replica's pending workflows back to the queues with DBOS's own recovery; any live replica runs them.
  On SQLite, DBOS recovers the process's own pending workflows when it launches.
- Concurrency: one DBOS queue per agent, with `limits.concurrency` as its global limit (across
  replicas) and OZ0_WORKER_CONCURRENCY (default 16) as the limit per replica.
- A step that cannot be resumed (a live MCP call: the session died with the process) is not rerun:
  the job ends as interrupted and the deliver step says so in its thread, once.
- Execution is at least once: a job cut short by a crash runs its agent again (agents get the job id
  as an idempotency key); after `limits.max_restarts` restarts in a row (default 3) it ends
  interrupted instead. A database fault inside a step is retried (STEP_RETRIES), never the job's end.

This module imports dbos (about a second); only `Runtime.launch_engine` imports it.
"""

from __future__ import annotations

import asyncio
import logging
import math
import os
import threading
import time
import uuid
from collections.abc import Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any

from dbos import DBOS, DBOSConfig, DBOSPortableJSONSerializer

from oz0.edge.model.agent import Limits
from oz0.edge.model.flow import FLOW_KIND
from oz0.edge.model.progress import ProgressSink
from oz0.edge.runtime.engine_settings import (
    app_version,
    beside_journal,
    positive_setting,
    replica_id,
    workflow_id,
    write_ahead_log,
)
from oz0.edge.runtime.leases import EngineError, Lease
from oz0.edge.runtime.placement import QUEUE_POLL_S, Places
from oz0.edge.runtime.recovery import runner_id
from oz0.edge.runtime.retention import PRUNE_CRON, prune_by_settings
from oz0.edge.runtime.step_retries import STEP_RETRIES, step_options
from oz0.edge.runtime.transient import is_transient

if TYPE_CHECKING:
    from oz0.edge.model.job import Job
    from oz0.edge.runtime.runner import Runtime

__all__ = [
    "DEFAULT_LEASE_S",
    "DEFAULT_WORKER_CONCURRENCY",
    "NOT_RESUMABLE_KINDS",
    "STEP_RETRIES",
    "Engine",
    "EngineError",
    "app_version",
    "current_engine",
    "current_runtime",
    "replica_id",
    "workflow_id",
]

log = logging.getLogger("oz0.engine")

DEFAULT_LEASE_S = 30.0
DEFAULT_WORKER_CONCURRENCY = 16
CHANNEL_WAIT_S = 60.0           # how long a resumed job's card waits for its channel to connect
RESULT_POLL_S = 0.5             # how often a caller looks for a job another replica runs
SCHEDULES_POLL_S = 1.0          # how often the scheduler reads the schedules: one applied while serving ticks soon
NOT_RESUMABLE_KINDS = frozenset({"mcp"})  # its session died with the process that held it
LOOPS = "loops"  # the `run` step's value for a tool loop's job, which the workflow then runs as its own code
_ENGINE: Engine | None = None  # DBOS is one per process, so is the engine its workflow finds


@DBOS.workflow(name="oz0.job")
async def _job_workflow(job_id: str) -> str:
    engine = _current()
    status: str = await DBOS.run_step_async(step_options("oz0.run"), engine.run_step, job_id)
    if status == LOOPS:  # a tool loop: its model requests and tool calls are this workflow's steps
        await engine.run_loop(job_id)
        status = await DBOS.run_step_async(step_options("oz0.deliver"), engine.end_and_deliver_step, job_id)
    else:
        await DBOS.run_step_async(step_options("oz0.deliver"), engine.deliver_step, job_id)
    engine.finished(job_id)
    return status


@DBOS.workflow(name="oz0.retention.prune")
def _prune_workflow(scheduled_at: datetime, context: Any) -> dict[str, int]:
    """The daily prune (edge.runtime.retention); a DBOS schedule starts it once a tick across replicas.
    Its result, the rows removed per table, is the workflow's output (`oz0 db prune` prints the same)."""
    return DBOS.run_step(step_options("oz0.retention.prune"), lambda: prune_by_settings(_current().runtime.store.engine))


def _pending_replicas() -> set[str]:
    """The replicas (DBOS executors) that have pending workflows: whose leases a replica looks at."""
    return {w.executor_id for w in DBOS.list_workflows(status="PENDING", load_input=False, load_output=False)
            if w.executor_id}


def _recover(replica: str) -> int:
    """Hand a dead replica's pending workflows back to the queues; how many. DBOS's own recovery, which
    its admin API runs for `POST /dbos-workflow-recovery`; the Python API names it only with an underscore,
    and the admin server (a port per replica) is not worth opening for it."""
    return len(DBOS._recover_pending_workflows([replica]))


def current_runtime() -> Runtime:
    """The Runtime whose engine runs this process's workflows (for code inside a workflow)."""
    return _current().runtime


def current_engine() -> Engine:
    """The engine that runs this process's workflows (for a workflow of the flows above: edge.flows.durable)."""
    return _current()


def _current() -> Engine:
    if _ENGINE is None:
        raise EngineError("a job workflow ran with no engine launched in this process")
    return _ENGINE


class Engine:
    """The DBOS side of one Runtime: launch, run a job as a workflow, recover dead replicas."""

    def __init__(self, runtime: Runtime, *, env: dict[str, str] | None = None, private: bool = False) -> None:
        env = dict(os.environ if env is None else env)
        self.runtime = runtime
        self.replica = replica_id(env)
        # A command's own engine (`oz0 run` of a tool loop, `oz0 jobs answer`): an executor id of its own, so
        # its launch recovers no other process's workflows, and one queue of its own, the only one it
        # dequeues, so it never takes an `oz0 serve`'s queued jobs; no lease, no schedules.
        self.private = private
        self.own_queue: str | None = None
        if private:
            token = uuid.uuid4().hex[:12]
            self.replica, self.own_queue = f"{self.replica}-cli-{token}", f"oz0-cli-{token}"
        self.lease_s = positive_setting(env, "OZ0_LEASE_S", DEFAULT_LEASE_S)
        self.worker_concurrency = int(positive_setting(env, "OZ0_WORKER_CONCURRENCY", DEFAULT_WORKER_CONCURRENCY))
        url = runtime.store.url
        self.postgres = url.startswith("postgresql")
        self.system_url = url if self.postgres else beside_journal(url, runtime.home)
        self.places = Places(runtime, self.worker_concurrency, _job_workflow)  # queues, and jobs started at once
        self._carried: set[str] = set()  # workflows left unfinished by an earlier run, found at launch
        self._waiters: dict[str, list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]]] = {}
        self._progress: dict[str, ProgressSink] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self.lease = (Lease(url, self.replica, self.lease_s, pending_replicas=_pending_replicas, recover=_recover)
                      if self.postgres and not private else None)  # a private engine takes over nobody's jobs
        self._watcher: threading.Thread | None = None
        self.launched = False

    # lifecycle ---------------------------------------------------------------------------------

    def launch(self) -> None:
        """Take this replica's lease (Postgres), launch DBOS (which resumes this replica's own pending
        workflows) and register a queue per installed agent. Call before the event loop starts, so
        workflows run on DBOS's own loop thread, beside the channels' loops."""
        global _ENGINE
        if _ENGINE is not None:
            raise EngineError("the job engine is already launched in this process (one Runtime per process)")
        if self.lease is not None:
            self.lease.take()
        config: DBOSConfig = {
            "name": "oz0", "system_database_url": self.system_url, "executor_id": self.replica,
            "application_version": app_version(), "serializer": DBOSPortableJSONSerializer(),
            "log_level": "WARNING", "run_migrations": True, "scheduler_polling_interval_sec": SCHEDULES_POLL_S,
        }
        _ENGINE = self
        try:
            if self.runtime.flow_engine is not None:
                self.runtime.flow_engine.workflow()  # registers the flow workflow before DBOS launches
            if not self.postgres:
                write_ahead_log(self.system_url)
            DBOS(config=config)
            if self.own_queue is not None:
                DBOS.listen_queues([self.own_queue])
            DBOS.launch()
            if self.own_queue is not None:
                DBOS.register_queue(self.own_queue, polling_interval_sec=QUEUE_POLL_S)  # the CLI waits on it
            else:
                for spec in self.runtime.agents():
                    self.places.register(spec.name, spec.limits.concurrency, flow=spec.kind == FLOW_KIND)
                DBOS.apply_schedules([{"schedule_name": "oz0.retention.prune",
                                       # DBOS types a schedule's function as returning None; a result is kept
                                       "workflow_fn": _prune_workflow,  # type: ignore[typeddict-item]
                                       "schedule": PRUNE_CRON}])  # replaces itself: replicas agree
            self._carried = {w.workflow_id for w in DBOS.list_workflows(
                status=["PENDING", "ENQUEUED", "DELAYED"], load_input=False, load_output=False)}
        except BaseException:
            _ENGINE = None
            if self.lease is not None:
                self.lease.release()
            raise
        self.launched = True
        log.info("job engine launched: replica %s, %s, lease %.0f s", self.replica,
                 "Postgres" if self.postgres else "SQLite", self.lease_s)
        if self.lease is not None:
            self._watcher = threading.Thread(target=self.lease.watch, args=(self._stop,), name="oz0-lease",
                                             daemon=True)
            self._watcher.start()

    def drain(self, timeout_s: float) -> None:
        """A stop (SIGTERM): take no more work from the queues, let the workflows running here finish
        for up to `timeout_s` (their cards posted by the channels, still up meanwhile), and leave the
        rest pending, for the next start or a peer (DBOS's own shutdown wait)."""
        if self.launched:
            self.launched = False
            DBOS.destroy(workflow_completion_timeout_sec=math.ceil(timeout_s))

    def shutdown(self) -> None:
        """Stop DBOS; jobs still running stay pending and resume at the next start (or on a peer)."""
        global _ENGINE
        self._stop.set()
        if self._watcher is not None:
            self._watcher.join(timeout=5)
        if self.launched:
            DBOS.destroy(workflow_completion_timeout_sec=0)
            self.launched = False
        if self.lease is not None:
            self.lease.release()
        if _ENGINE is self:
            _ENGINE = None

    # running a job -----------------------------------------------------------------------------

    async def execute(self, job_id: str, *, on_progress: ProgressSink | None = None, resume: bool = False) -> Job:
        """Start (or join) the job's workflow and wait for its end, on whichever replica runs it. A
        private engine runs it here; with `resume` its workflow (left pending by a command that ended)
        goes on from its last finished step, on this engine's own queue."""
        job = self.runtime.job(job_id)
        if job is None:
            raise KeyError(f"no job {job_id!r}")
        if job.finished:
            return job
        wid = workflow_id(job)
        loop = asyncio.get_running_loop()
        done: asyncio.Future[None] = loop.create_future()
        direct = False
        with self._lock:
            self._waiters.setdefault(job.id, []).append((loop, done))
            if on_progress is not None:
                self._progress[job.id] = on_progress
        try:
            if resume:
                handle = await DBOS.resume_workflow_async(wid, queue_name=self.own_queue)
            elif self.private or (direct := self.places.take_at_once(job.agent)):
                await self.places.start_here(wid, job)
                handle = await DBOS.retrieve_workflow_async(wid)
            else:
                handle = await self.places.enqueue(wid, job)
            polled = asyncio.ensure_future(handle.get_result(polling_interval_sec=RESULT_POLL_S))
            try:
                await asyncio.wait({done, polled}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                polled.cancel()
            if polled.done() and not polled.cancelled() and polled.exception() is not None:
                log.info("job %s: its workflow ended without a result (%s)", job_id,  # cancelled: edge.runtime.cancel
                         type(polled.exception()).__name__)
        finally:
            if direct:
                self.places.release()
            with self._lock:
                waiters = self._waiters.get(job.id, [])
                if (loop, done) in waiters:
                    waiters.remove((loop, done))
                if not waiters:
                    self._waiters.pop(job.id, None)
                    self._progress.pop(job.id, None)
        ended = self.runtime.job(job_id)
        assert ended is not None
        return ended

    async def run_step(self, job_id: str) -> str:
        """The `run` step: the agent under the runtime's limits. A job found running was cut short by a
        stopped replica: rerun it, unless its kind cannot resume (then it ends interrupted). A tool
        loop's job is not run here: its checks made, the step's value is LOOPS and the workflow runs it
        (`run_loop`), so every read deciding how a job runs is inside this step, retried through a fault."""
        job = self.runtime.job(job_id)
        if job is None:
            return "missing"
        if job.finished:
            return job.status
        spec = self.runtime.catalog.agent_or_none(job.agent)  # None: uninstalled since, which its run reports
        loops = spec is not None and spec.loops
        if job.status == "waiting" and not loops:
            for step in self.runtime.questions.open_steps(job_id):  # closed first: an ended job asks nothing
                self.runtime.questions.close(job_id, step, action="cancel", by="interrupted")
            ended = self.runtime.end_interrupted(
                job_id, reason="the bot restarted while this job waited for an answer inside a running step "
                               "(the call that asked is gone); ask again to rerun it")
            return ended.status
        if job.status == "running" and (self.runtime.store.job(job_id) or {}).get("runner") != runner_id():
            kind = spec.kind if spec is not None else None
            if kind in NOT_RESUMABLE_KINDS:
                ended = self.runtime.end_interrupted(
                    job_id, reason=f"the replica running this job stopped during a live {kind} call, which "
                                   "cannot be resumed; ask again to rerun it")
                return ended.status
            restarts = self.runtime.store.count_restart(job_id)
            limit = spec.limits.max_restarts if spec is not None else Limits.max_restarts
            if restarts > limit:
                ended = self.runtime.end_interrupted(
                    job_id, reason=f"the bot stopped {restarts} times in a row while this job ran "
                                   f"(limits.max_restarts is {limit}), so it is not run again; ask again to rerun it")
                return ended.status
            log.info("resuming job %s (%s), cut short on another run (restart %d of at most %d)", job_id,
                     job.agent, restarts, limit)
        if loops:
            return LOOPS
        ended = await self.runtime.execute_here(job_id, on_progress=self.progress_of(job_id), resume=True)
        return ended.status

    async def run_loop(self, job_id: str) -> None:
        """A tool loop's run, as the workflow's own code (its calls are steps) once the `run` step has
        checked it (LOOPS). An end a database fault kept out of the journal is held by the runtime and
        written by the delivery step (`end_and_deliver_step`, under STEP_RETRIES) once the database is
        back, never lost with the job."""
        try:
            await self.runtime.execute_here(job_id, on_progress=self.progress_of(job_id), resume=True)
        except Exception as exc:
            if not is_transient(exc) or not self.runtime.holds_end(job_id):
                raise
            log.warning("job %s ended, and a database fault kept its end out of the journal (%s); the engine "
                        "retries writing it", job_id, type(exc).__name__)

    async def end_and_deliver_step(self, job_id: str) -> str:
        """A tool loop's `deliver` step: its held end written first (it raises again while the database
        is down), then its card posted; the job's status. One step, not two: each step is a checkpoint
        write, and a step run again writes the end once (a held end is written once) and posts as
        `deliver_step` does."""
        job = self.runtime.write_held_end(job_id)
        await self._deliver(job)
        return job.status if job is not None else "missing"

    async def deliver_step(self, job_id: str) -> bool:
        """The `deliver` step: the card posted by the channel registered for the job's platform. Its
        checkpoint is the record of what was posted, keyed by the job: a redelivered or recovered job
        never posts again once this step has ended."""
        return await self._deliver(self.runtime.job(job_id))

    async def _deliver(self, job: Job | None) -> bool:
        platform = job.reply_to.platform if job is not None and job.reply_to is not None else None
        if job is None or platform is None:
            return False
        deliver = self.runtime.deliverer(platform)
        deadline = time.monotonic() + CHANNEL_WAIT_S
        while deliver is None and time.monotonic() < deadline and not self._stop.is_set():
            await asyncio.sleep(0.1)  # a job resumed at launch ends before its channel has connected
            deliver = self.runtime.deliverer(platform)
        if deliver is None:
            log.warning("job %s ended, but no %s channel connected on replica %s within %.0f s to post its card",
                        job.id, platform, self.replica, CHANNEL_WAIT_S)
            return False
        await deliver(job)
        return True

    def progress_of(self, job_id: str) -> ProgressSink | None:
        """Where the caller that waits for the job here (`execute`) shows its progress, if one does."""
        return self._progress.get(job_id)

    def follow(self, job_id: str, sink: ProgressSink) -> ProgressSink:
        """Show the progress of `job_id` (a flow's child) with `sink`, unless a caller of its own
        already does; the sink that shows it is returned, to `unfollow` with."""
        return self._progress.setdefault(job_id, sink)

    def unfollow(self, job_id: str, sink: ProgressSink) -> None:
        """Stop showing the progress of `job_id` with `sink` (left alone if another sink took over)."""
        if self._progress.get(job_id) is sink:
            self._progress.pop(job_id, None)

    def resumes(self, row: Mapping[str, Any]) -> bool:
        """Whether the engine will carry this journaled job on (its workflow is queued or pending), so a
        restart must not report it interrupted."""
        return workflow_id(row) in self._carried

    def finished(self, job_id: str) -> None:
        with self._lock:
            waiters = list(self._waiters.get(job_id, []))
        for loop, done in waiters:
            loop.call_soon_threadsafe(_settle, done)

    def pending(self, job_id: str) -> bool:
        """Whether the job has a workflow that has not ended (what `execute(resume=True)` goes on with)."""
        job = self.runtime.job(job_id)
        status = DBOS.get_workflow_status(workflow_id(job)) if job is not None else None
        return status is not None and status.status in ("PENDING", "ENQUEUED")


def _settle(done: asyncio.Future[None]) -> None:
    if not done.done():
        done.set_result(None)
