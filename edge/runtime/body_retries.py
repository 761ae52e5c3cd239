"""A workflow body's own journal reads and writes, waited out through a database fault.

A job's steps are retried by DBOS (edge.runtime.step_retries), but a tool loop's bookkeeping between
its steps (the claim, the job re-read, the catalog, the conversation's history, a destructive tool's
confirmation, the tree's steps and its `tree_timeout_s` watch) runs as the workflow's own code: a
fault raised there ended the workflow ERROR, its result lost. Those calls are idempotent and are not
recorded (a replay makes them again), so a fault is waited out where it met them, under the same
waits as a step's retries: the workflow's steps and their order stay what they were, and a replay
reads back the same. Outside a workflow's body (inside a step, whose retries already cover it, or
with no engine, as an in-process `oz0 run`) the call is made once, as before.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable
from typing import ParamSpec, TypeVar

from oz0.edge.runtime.step_retries import fault_waits

__all__ = ["in_workflow_body", "read_out", "waited_out"]

T = TypeVar("T")
P = ParamSpec("P")


def in_workflow_body() -> bool:
    """Whether this code runs as a DBOS workflow's own code, not inside one of its steps. DBOS is never
    imported here: a process that has not imported it runs no workflow."""
    dbos = sys.modules.get("dbos")
    return dbos is not None and dbos.DBOS.workflow_id is not None and dbos.DBOS.step_id is None


async def waited_out(what: str, call: Callable[P, Awaitable[T]], *args: P.args, **kwargs: P.kwargs) -> T:
    """`await call(*args, **kwargs)`, made again after a database fault while this is a workflow's body,
    as edge.runtime.step_retries.fault_waits says. Any other error, and the fault of the last attempt,
    is raised."""
    if not in_workflow_body():
        return await call(*args, **kwargs)
    for check in fault_waits(f"{what} in a workflow"):
        try:
            return await call(*args, **kwargs)
        except Exception as exc:
            wait = check(exc)
        await asyncio.sleep(wait)
    return await call(*args, **kwargs)   # the last attempt: its fault is raised


async def read_out(what: str, call: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    """`call(*args, **kwargs)` (a plain journal read or write), waited out through a database fault as
    `waited_out` says."""
    async def once() -> T:
        return call(*args, **kwargs)

    return await waited_out(what, once)
