"""A process for test_faults_steps.py: the job engine launched over OZ0_HOME (SQLite), one job run
while its journal refuses some writes the way a full disk does ("database or disk is full", raised at
the SQLite layer), then the ended job printed as JSON.

    python fault_steps_engine.py flow    the flow `release`: its start and its end refused twice each
    python fault_steps_engine.py loop    the tool loop `triage`: its end (the job's result) refused twice
    python fault_steps_engine.py trace   the tool loop `triage`: its first turn's trace rows refused twice
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import sys
from typing import Any

from sqlalchemy import event, text

from oz0.edge.flows.engine import FLOW_ENGINE
from oz0.edge.runtime.runner import Runtime

FAULTS = 2  # writes refused in a row, each retried by the engine after a second or so


class FullDisk:
    """Refuses the first FAULTS writes that set the job `job_id` to each status in `statuses`."""

    def __init__(self, statuses: tuple[str, ...]) -> None:
        self.job_id: str | None = None
        self.left = {status: FAULTS for status in statuses}
        self.refused: list[str] = []

    def __call__(self, conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, many: bool) -> None:
        if self.job_id is None or not statement.lstrip().upper().startswith("UPDATE JOBS"):
            return
        values = parameters if isinstance(parameters, (tuple, list)) else tuple(dict(parameters or {}).values())
        if self.job_id not in values:
            return
        for status, left in self.left.items():
            if status in values and left > 0:
                self.left[status] = left - 1
                self.refused.append(status)
                raise sqlite3.OperationalError("database or disk is full")


class FullTrace(FullDisk):
    """Refuses the first FAULTS writes of trace rows (edge.runtime.loop_trace) while `job_id` runs."""

    def __call__(self, conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, many: bool) -> None:
        if self.job_id is None or not statement.lstrip().upper().startswith("INSERT INTO JOB_TRACE"):
            return
        if self.left["trace"] > 0:
            self.left["trace"] -= 1
            self.refused.append("trace")
            raise sqlite3.OperationalError("database or disk is full")


async def main(mode: str) -> None:
    runtime = Runtime(flow_engine=FLOW_ENGINE)
    full = {"flow": FullDisk(("running", "succeeded")), "loop": FullDisk(("succeeded",)),
            "trace": FullTrace(("trace",))}[mode]
    event.listen(runtime.store.engine, "before_cursor_execute", full)
    await asyncio.to_thread(runtime.launch_engine)
    error = None
    try:
        if mode == "flow":
            job, _ = runtime.submit("release", '{"repo": "acme/api", "pr": 42}', requester="cli:ana")
        else:
            job, _ = runtime.submit("triage", "why did main fail?", requester="cli:ana")
        full.job_id = job.id
        try:
            await asyncio.wait_for(runtime.execute(job.id), timeout=60)
        except Exception as exc:  # the workflow's error, before the fix: printed for the test to read
            error = f"{type(exc).__name__}: {exc}"[:300]
        full.job_id = None
        ended = runtime.job(job.id)
        print(json.dumps({"status": ended.status, "output": ended.output, "reason": ended.failure_reason,
                          "refused": full.refused, "error": error,
                          "children": [(c.agent, c.status) for c in runtime.children(job.id)],
                          "trace": _trace(runtime, job.id)}), flush=True)
    finally:
        await asyncio.to_thread(runtime.close)


def _trace(runtime: Runtime, job_id: str) -> list[list[str]]:
    """The job's trace rows as written (kind, name), in order."""
    with runtime.store.engine.connect() as conn:
        return [[r.kind, r.name] for r in conn.execute(
            text("SELECT kind, name FROM job_trace WHERE job_id = :job ORDER BY seq"), {"job": job_id})]


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
