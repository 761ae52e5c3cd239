"""A process for test_schedule_faults.py: the job engine launched over OZ0_HOME (SQLite), whose plugin has
the schedule `pulse` (every 2 s), while the journal refuses the first FAULTS writes of one tick's job the
way a full disk does ("database or disk is full", raised at the SQLite layer); then that tick's job
printed as JSON (None when the tick never journaled one).
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import time
from typing import Any

from sqlalchemy import event

from oz0.edge.runtime.runner import Runtime

FAULTS = 2
TICK_PREFIX = "schedule:pulse:"


class FullDisk:
    """Refuses the first FAULTS inserts of the job of the first tick seen."""

    def __init__(self) -> None:
        self.key: str | None = None
        self.refused = 0

    def __call__(self, conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, many: bool) -> None:
        if not statement.lstrip().upper().startswith("INSERT INTO JOBS"):
            return
        values = parameters if isinstance(parameters, (tuple, list)) else tuple(dict(parameters or {}).values())
        key = next((v for v in values if isinstance(v, str) and v.startswith(TICK_PREFIX)), None)
        if key is None or (self.key is not None and key != self.key) or self.refused >= FAULTS:
            return
        self.key = key
        self.refused += 1
        raise sqlite3.OperationalError("database or disk is full")


async def main() -> None:
    runtime = Runtime()
    full = FullDisk()
    event.listen(runtime.store.engine, "before_cursor_execute", full)
    await asyncio.to_thread(runtime.launch_engine)
    try:
        deadline = time.monotonic() + 20
        job = None
        while time.monotonic() < deadline:
            found = [j for j in runtime.jobs(limit=100) if full.key is not None and j.dedupe_key == full.key]
            job = found[0] if found else None
            if job is not None and job.status not in ("queued", "running"):
                break
            await asyncio.sleep(0.2)
        print(json.dumps({"key": full.key, "refused": full.refused,
                          "job": None if job is None else {"status": job.status, "output": job.output}}), flush=True)
    finally:
        await asyncio.to_thread(runtime.close)


if __name__ == "__main__":
    asyncio.run(main())
