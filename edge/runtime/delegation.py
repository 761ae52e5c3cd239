"""Delegation: a python agent asks another agent (`ctx.ask(agent, input)`), as a child job of its own.

The child is journaled once under the dedupe key `delegate:{parent}:{n}` (n counting the asks of
one attempt; `#aK` added for a retry's attempt K), so a rerun of the parent's step after a crash
finds the children it already started and reuses their answers instead of running them twice. It
starts under the tree's limits (edge.runtime.tree: max_depth, max_children, max_steps, the tree's
time) like a flow step.

Under the job engine the child runs in this process, inside the parent's run step (execute_here),
not as a workflow of its own: the parent's agent is a live call waiting for the answer, which a child
workflow (resumed, maybe, on another replica) could not hand back to it; the child's journal row is
its record, and a rerun of the parent's step rejoins it by the dedupe key.
"""

from __future__ import annotations

import asyncio
import itertools
import threading
from typing import TYPE_CHECKING, Any

from oz0.edge.contracts.json_data import dumps_exact
from oz0.edge.model.job import Job, JobFailure

if TYPE_CHECKING:
    from oz0.edge.runtime.runner import Runtime

__all__ = ["Delegation", "delegate_key"]


def delegate_key(parent_id: str, n: int, attempt: int) -> str:
    """The dedupe key of the n-th ask of a parent's attempt."""
    return f"delegate:{parent_id}:{n}" + (f"#a{attempt}" if attempt > 1 else "")


class Delegation:
    """The asks of one attempt of one job: what `RunContext.ask` calls."""

    def __init__(self, runtime: Runtime, job: Job, attempt: int, loop: asyncio.AbstractEventLoop) -> None:
        self.runtime = runtime
        self.job = job
        self.attempt = attempt
        self.loop = loop
        self._count = itertools.count(1)
        self._lock = threading.Lock()

    async def ask(self, agent: str, value: Any) -> Any:
        """Start (or find) the child job, run it here and return its output; JobFailure with its kind
        and reason when it fails (LimitExceeded when the tree refuses it)."""
        with self._lock:
            n = next(self._count)
        text = value if isinstance(value, str) else dumps_exact(value).decode()
        # A budget over the tree (its parents', the channel's) covers the child's calls as it covers
        # the parent's: it is reserved by the child's own calls, under the same tree (root_id).
        child = self.runtime.submit_child(self.job, agent, text, dedupe_key=delegate_key(self.job.id, n, self.attempt))
        if not child.finished:
            child = await self.runtime.execute_here(child.id, resume=self.runtime.engine is not None)
        if child.status == "succeeded":
            return child.output
        raise JobFailure(child.failure_kind or "AgentError",
                         child.failure_reason or f"delegation {n} ({agent}, job {child.id}) {child.status}",
                         partial_output=child.output)

    def ask_sync(self, agent: str, value: Any) -> Any:
        """`ask` from a sync agent's own thread, on the job's loop; refused on the loop's thread (an
        async agent awaits `ctx.ask` instead)."""
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is self.loop:
            raise RuntimeError("ctx.ask_sync blocks its thread: an async agent awaits ctx.ask(agent, input)")
        return asyncio.run_coroutine_threadsafe(self.ask(agent, value), self.loop).result()
