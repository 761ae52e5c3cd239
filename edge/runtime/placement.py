"""Where a job's workflow runs: started at once on this replica, or through its agent's DBOS queue.

Why two ways: a queue is what counts `limits.concurrency` across replicas, so a limited agent's jobs
(and a flow's) wait there; any other agent's job would only wait for its queue's next poll, so it starts
at once, as long as fewer than OZ0_WORKER_CONCURRENCY jobs started so run here (past that, its queue
takes it). Each poll of a queue costs the replica a few ms of CPU and the database a transaction, so a
queue whose jobs start at once is polled every OVERFLOW_POLL_S, the others every QUEUE_POLL_S (polling
every queue every 50 ms kept an idle replica with two agents at 17% of a core).

This module imports dbos; only the engine (edge.runtime.durable) imports it.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypedDict

from dbos import DBOS, SetWorkflowID

from oz0.edge.model.flow import FLOW_KIND
from oz0.edge.runtime.dbos_loop import engine_loop
from oz0.edge.runtime.engine_settings import queue_name

if TYPE_CHECKING:
    from oz0.edge.model.job import Job
    from oz0.edge.runtime.runner import Runtime

__all__ = ["OVERFLOW_POLL_S", "QUEUE_POLL_S", "Placement", "Places"]

QUEUE_POLL_S = 0.05             # how often each replica looks for queued jobs of a limited agent or a flow
OVERFLOW_POLL_S = 1.0           # ... and of any other agent, whose jobs start at once (DBOS's default)


class Placement(TypedDict):
    """Where a job of an agent runs (`Places.placement`): a step's value, so JSON data."""

    queue: str
    concurrency: int | None
    flow: bool
    known: bool


class Places:
    """The queues of one engine, and the jobs it started at once. `job_workflow` is the workflow
    `oz0.job` (edge.runtime.durable), a flow's job runs as the runtime's flow workflow."""

    def __init__(self, runtime: Runtime, worker_concurrency: int, job_workflow: Callable[..., Any]) -> None:
        self.runtime = runtime
        self.worker_concurrency = worker_concurrency
        self.job_workflow = job_workflow
        self._queues: dict[str, int | None] = {}
        self._direct = 0  # jobs started at once, not through their queue, running now
        self._lock = threading.Lock()

    def placement(self, agent: str) -> Placement:
        """Where a job of `agent` runs, read from the catalog as JSON data, so that a workflow reads it
        in a step (retried through a database fault) and a replay takes the same way: its queue's agent
        ("" for the shared queue of an agent uninstalled since, whose run reports it as UnknownAgent),
        its `limits.concurrency`, and whether it is a flow."""
        spec = self.runtime.catalog.agent_or_none(agent)
        if spec is None:
            return {"queue": "", "concurrency": None, "flow": False, "known": False}
        return {"queue": agent, "concurrency": spec.limits.concurrency, "flow": spec.kind == FLOW_KIND,
                "known": True}

    def workflow_at(self, placement: Placement) -> Any:
        """A flow's job runs as the flow workflow (the runtime's flow engine), every other job as `oz0.job`."""
        if placement["flow"] and self.runtime.flow_engine is not None:
            return self.runtime.flow_engine.workflow()
        return self.job_workflow

    async def queue_at(self, placement: Placement) -> str:
        """The queue of a job placed at `placement`, registered first when new or its limit changed."""
        name, concurrency = queue_name(placement["queue"]), placement["concurrency"]
        if self._queues.get(name, -1) != concurrency:
            await asyncio.to_thread(self.register, placement["queue"], concurrency, flow=placement["flow"])
        return name

    def register(self, agent: str, concurrency: int | None, *, flow: bool) -> None:
        """The agent's queue, polled every QUEUE_POLL_S when its jobs wait there, else OVERFLOW_POLL_S."""
        worker = self.worker_concurrency if concurrency is None else min(self.worker_concurrency, concurrency)
        poll = QUEUE_POLL_S if concurrency is not None or flow else OVERFLOW_POLL_S
        DBOS.register_queue(queue_name(agent), global_concurrency=concurrency, worker_concurrency=worker,
                            polling_interval_sec=poll, on_conflict="always_update")
        self._queues[queue_name(agent)] = concurrency

    def take_at_once(self, agent: str) -> bool:
        """Whether a job of `agent` starts at once instead of through its queue: a job (not a flow) of an
        agent with no `limits.concurrency`, while fewer than OZ0_WORKER_CONCURRENCY jobs started so run
        here; if so it counts as one of them until `release`. A duplicate start of the same workflow id
        joins the one run (DBOS runs a workflow id once)."""
        placement = self.placement(agent)
        if not placement["known"] or placement["flow"] or placement["concurrency"] is not None:
            return False
        with self._lock:
            if self._direct >= self.worker_concurrency:
                return False
            self._direct += 1
            return True

    def release(self) -> None:
        """A job `take_at_once` counted has ended here."""
        with self._lock:
            self._direct -= 1

    async def start_here(self, wid: str, job: Job) -> None:
        """The job's workflow started now in this process, on the engine's own loop (where a queue's
        workflows run, and DBOS's stop waits for them), not the caller's."""
        async def start() -> None:
            with SetWorkflowID(wid):
                await DBOS.start_workflow_async(self.workflow_at(self.placement(job.agent)), job.id)

        loop = engine_loop()
        if loop is None or loop is asyncio.get_running_loop():
            await start()
        else:
            await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(start(), loop))

    async def enqueue(self, wid: str, job: Job) -> Any:
        """The job's workflow put on its agent's queue; its DBOS handle."""
        placement = self.placement(job.agent)
        queue = await self.queue_at(placement)
        with SetWorkflowID(wid):
            return await DBOS.enqueue_workflow_async(queue, self.workflow_at(placement), job.id)

    async def start_child(self, placement: Placement, workflow: str, job_id: str) -> Any:
        """Start the job (a flow's child) as the workflow `oz0.job` under the id `workflow`; the DBOS
        handle of its result. `placement` is its agent's (`placement`, read in the flow's step). A child
        of an agent with no `limits.concurrency` starts at once, as a child workflow of the flow (the
        flow already holds its queue's place, and waiting for a queue's next poll was most of a person
        step's answer-to-next-step time); one with a limit goes through its agent's queue (registered
        first when new), which counts it across replicas."""
        if placement["known"] and placement["concurrency"] is None:
            with SetWorkflowID(workflow):
                return await DBOS.start_workflow_async(self.job_workflow, job_id)
        queue = await self.queue_at(placement)
        with SetWorkflowID(workflow):
            return await DBOS.enqueue_workflow_async(queue, self.job_workflow, job_id)
