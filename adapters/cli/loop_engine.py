"""A tool loop run by a terminal command (`oz0 run`, `oz0 jobs answer`) under the job engine, in process.

Each model request and each tool call of a loop is a checkpointed step only inside the job's workflow
(edge.runtime.loop_steps). A loop that `oz0 run` leaves waiting for a person off a terminal ends with
the process, so its workflow stays pending; `oz0 jobs answer` goes on with it from its last finished
step, so no call made before the question is made again. The command launches an engine of its own
(edge.runtime.durable, `private`): its own executor id and queue, so it never takes work of an
`oz0 serve` on the same home. Only on SQLite: over Postgres the replicas' leases recover pending
workflows, and a command's engine there would race them; such a loop runs as before (journaled,
rerun from its start when answered). DBOS is imported only when a loop runs (`oz0 --help` stays cheap).
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, NoReturn

if TYPE_CHECKING:
    from oz0.edge.runtime.runner import Runtime

__all__ = ["launch_for_loop", "leave_pending", "resumable"]


def launch_for_loop(runtime: Runtime, agent: str) -> bool:
    """Launch this command's own engine when `agent` is a tool loop on a SQLite home; whether it did."""
    if runtime.engine is not None:
        return True
    if not runtime.store.url.startswith("sqlite") or not runtime.agent(agent).loops:
        return False
    runtime.launch_engine(private=True)
    return True


def resumable(runtime: Runtime, job_id: str, agent: str) -> bool:
    """Whether the parked job is a loop whose workflow this command's engine can go on with (launched
    now); a job parked before the engine ran loops (no workflow) runs here as it did."""
    from oz0.edge.runtime.recovery import runner_id

    if not launch_for_loop(runtime, agent):
        return False
    assert runtime.engine is not None
    if not runtime.engine.pending(job_id):
        return False
    runtime.store.update_job(job_id, only_if_status=("running", "waiting"), runner=runner_id())  # this process's
    return True


def leave_pending(code: int) -> NoReturn:
    """End the command now, its parked job's workflow left pending where it waits (the engine's record
    of every finished step is written): an ordinary exit would stop the engine under the waiting
    workflow, which would end the job failed instead of leaving it to `oz0 jobs answer`."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
