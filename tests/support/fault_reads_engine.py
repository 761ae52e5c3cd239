"""A process for test_faults_reads.py and test_flows_durable_faults.py: the job engine launched over
OZ0_HOME (SQLite), one job run while its journal refuses some of its *reads* the way a locked or
failing database does ("database is locked", raised at the SQLite layer), then the ended job, the
cards posted and the workflow's steps printed as JSON.

    python fault_reads_engine.py flow          the flow `release`: the first FAULTS reads of its job's row once
                                               it runs (its start step claimed it), and as many reads of the
                                               installed plugins once its start step has read its flow
    python fault_reads_engine.py loop          the tool loop `triage`: the first FAULTS reads of its job's row
                                               by its workflow (the caller's read before it passes)
    python fault_reads_engine.py tick          the schedule `pulse` (fired once): the first FAULTS reads of
                                               its tick's job's row, once the tick journaled it
    python fault_reads_engine.py loopbody      the tool loop `triage`: every other read of its job's row, and of
                                               its conversation (once), its workflow's own code makes between its
                                               steps once it runs (BODY_FAULTS of the job's)
    python fault_reads_engine.py flowwatch     the flow `release` (with a tree_timeout_s): every other read of a
                                               job's row its workflow's own code makes once it runs (BODY_FAULTS),
                                               as its tree's watch of each child does
    python fault_reads_engine.py loopcancel    the tool loop `triage`, stopped once its tool was called: every read
                                               of its job's row its workflow's own code makes for STOP_FAULTS_S once
                                               the stop is journaled, as its cancel path's reads (the tree's
                                               reason, the stop request, its end) do
"""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from dbos import DBOS
from sqlalchemy import event

from oz0.edge.flows.engine import FLOW_ENGINE
from oz0.edge.model.job import Job
from oz0.edge.plugins.schedules import Post
from oz0.edge.runtime.engine_settings import workflow_id
from oz0.edge.runtime.runner import Runtime
from oz0.edge.runtime.schedules import channel_ref

FAULTS = 2  # reads refused in a row, each retried by the engine after a second or so
BODY_FAULTS = 4  # reads refused by a workflow's own code, one in two: each read between steps meets one
STOP_FAULTS_S = 3.0  # how long a stopped loop's workflow has its reads refused: its cancel path meets several
JOB_ROW = "WHERE jobs.id = "   # a read of one job's row (edge.runtime.store.Store.job)
CATALOG = "FROM plugins LEFT OUTER JOIN agents"  # what names the installed state (edge.runtime.installed_cache)
ANY_JOB = "FROM jobs"  # a read of any job's row
TURNS = "FROM conversation_turns"  # a read of a conversation (edge.runtime.conversations)


def _in_body() -> bool:
    """Whether the read is made by a workflow's own code, between its steps (not inside a step)."""
    return DBOS.workflow_id is not None and DBOS.step_id is None


def _values(parameters: Any) -> tuple[Any, ...]:
    return tuple(parameters) if isinstance(parameters, (tuple, list)) else tuple(dict(parameters or {}).values())


class LockedReads:
    """Refuses the first FAULTS reads matching `read` once armed (and `skip` more passed): at once
    (`arm="submit"`), when the job is claimed (`arm="running"`), when a tick's job is journaled
    (`arm="tick"`), or when a stop of the job is journaled (`arm="stop"`)."""

    def __init__(self, read: str, arm: str, *, skip: int = 0, body: bool = False, left: int = FAULTS,
                 for_s: float | None = None) -> None:
        self.read, self.arm, self.skip = read, arm, skip
        self.body = body  # only the reads of a workflow's own code, every other one (the one after a refusal passes)
        self.for_s = for_s  # with `body`: every one of those reads for this long once armed, not every other
        self.until = float("inf")
        self.job_id: str | None = None
        self.armed = False
        self.left = left
        self.passed = True
        self.refused: list[str] = []

    def __call__(self, conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, many: bool) -> None:
        head = statement.lstrip().upper()
        if not self.armed:
            values = _values(parameters)
            if self.arm == "running" and head.startswith("UPDATE JOBS") and self.job_id in values and "running" in values:
                self.armed = True
            elif self.arm == "tick" and head.startswith("INSERT INTO JOBS") and any(
                    isinstance(v, str) and v.startswith("schedule:pulse:") for v in values):
                self.armed = True
                self.job_id = context.compiled_parameters[0]["id"]
            elif self.arm == "stop" and head.startswith("UPDATE JOBS SET STOP_REQUEST") and self.job_id in values:
                self.armed = True
                self.until = time.monotonic() + (self.for_s or 0.0)
            return
        if self.left <= 0 or not head.startswith("SELECT") or self.read not in statement:
            return
        if self.read == JOB_ROW and self.job_id not in _values(parameters):
            return
        if self.body:
            if not _in_body() or time.monotonic() > self.until:
                return
            if self.for_s is None:
                self.passed = not self.passed
                if self.passed:
                    return
        if self.skip > 0:
            self.skip -= 1
            return
        self.left -= 1
        self.refused.append({JOB_ROW: "job", ANY_JOB: "job", TURNS: "turns"}.get(self.read, "catalog"))
        raise sqlite3.OperationalError("database is locked")


async def main(mode: str) -> None:
    runtime = Runtime(flow_engine=FLOW_ENGINE)
    locked = {"flow": LockedReads(JOB_ROW, "running"), "loop": LockedReads(JOB_ROW, "submit", skip=1),
              "tick": LockedReads(JOB_ROW, "tick"),
              "loopbody": LockedReads(JOB_ROW, "running", body=True, left=BODY_FAULTS),
              "flowwatch": LockedReads(ANY_JOB, "running", body=True, left=BODY_FAULTS),
              "loopcancel": LockedReads(JOB_ROW, "stop", body=True, left=1000, for_s=STOP_FAULTS_S)}[mode]
    also = {"flow": [LockedReads(CATALOG, "running", skip=1)],
            "loopbody": [LockedReads(TURNS, "running", body=True, left=1)]}.get(mode, [])
    posted: list[Job] = []

    async def post(job: Job) -> None:
        posted.append(job)

    runtime.deliver_with("slack", post)
    for each in (locked, *also):
        event.listen(runtime.store.engine, "before_cursor_execute", each)
    await asyncio.to_thread(runtime.launch_engine)
    error = stopped = None
    try:
        if mode == "tick":
            job, error = await _tick(runtime, locked)
        else:
            agent, text = ("triage", "why did main fail?") if mode.startswith("loop") else (
                "release", '{"repo": "acme/api", "pr": 42}')
            job, _ = runtime.submit(agent, text, requester="cli:ana", reply_to=channel_ref(Post("slack", (("channel", "C0TEAM"),))))
            for each in (locked, *also):
                each.job_id = job.id
            locked.armed = mode == "loop"
            try:
                if mode == "loopcancel":
                    stopped = await _stopped(runtime, job)
                else:
                    await asyncio.wait_for(runtime.execute(job.id), timeout=60)
            except Exception as exc:  # the workflow's error, before the fix: printed for the test to read
                error = f"{type(exc).__name__}: {exc}"[:300]
        locked.left = 0
        await asyncio.sleep(0.3)  # a card posted twice would be posted by now
        ended = runtime.job(job.id)
        assert ended is not None
        status = await DBOS.get_workflow_status_async(workflow_id(ended))
        steps = await DBOS.list_workflow_steps_async(workflow_id(ended), load_output=False)
        print(json.dumps({"status": ended.status, "output": ended.output, "reason": ended.failure_reason,
                          "refused": sorted(locked.refused + [r for a in also for r in a.refused]), "error": error, "posted": [p.id == job.id for p in posted],
                          "cards": [p.status for p in posted], "stopped": stopped,
                          "workflow": status.status if status is not None else None,
                          "steps": [s["function_name"] for s in steps]}), flush=True)
    finally:
        await asyncio.to_thread(runtime.close)


async def _stopped(runtime: Runtime, job: Job) -> str:
    """Run the job and stop it (as `oz0 jobs cancel` does) once its tool was called, while its model's
    next request is held: the job's status as the stop returns it."""
    running = asyncio.ensure_future(runtime.execute(job.id))
    calls = Path(os.environ["OZ0_TEST_CALLS"])
    async with asyncio.timeout(30):
        while not (calls.exists() and calls.read_text()):
            await asyncio.sleep(0.05)
    await asyncio.sleep(0.5)  # its next model request is made and held
    ended = await runtime.stops.cancel(job.id, by="cli:ana", name="Ana Lima")
    await asyncio.wait_for(running, timeout=60)
    return ended.status


async def _tick(runtime: Runtime, locked: LockedReads) -> tuple[Job, str | None]:
    """Fire the schedule `pulse` once (its tick workflow, as the engine's scheduler starts it) and wait
    for its end (or for 30 s): the tick's job, and the tick workflow's error if it ended with one."""
    from oz0.edge.runtime.schedule_engine import _tick_workflow

    handle = await DBOS.start_workflow_async(_tick_workflow, datetime.now(UTC), {"name": "pulse"})
    error = None
    try:
        await asyncio.wait_for(handle.get_result(), timeout=30)
    except Exception as exc:  # the tick's error, before the fix: printed for the test to read
        error = f"{type(exc).__name__}: {exc}"[:300]
    assert locked.job_id is not None, "the tick journaled no job"
    job = runtime.job(locked.job_id)
    assert job is not None
    return job, error


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
