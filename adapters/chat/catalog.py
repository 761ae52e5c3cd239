"""What a chat channel may answer from memory: the installed agents and flows as last read.

Reading the installed plugins is a database query (two, agents and flows): measured with
bench/slack_ack.py it was most of a slash command's ack, run on the channel's loop before the ack.
The flow answers from this snapshot instead and refreshes it off the loop once it is CATALOG_TTL_S
old, so a change (an install on another replica) is seen within about that long. A name the
snapshot does not know is always checked against a fresh read (a new agent is never refused as
unknown); an agent removed since the snapshot is journaled and its job ends as UnknownAgent.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from oz0.adapters.chat.wire import ChatRuntime
from oz0.edge import AgentSpec

__all__ = ["CATALOG_TTL_S", "Catalog"]

log = logging.getLogger("oz0.chat")

CATALOG_TTL_S = 2.0     # how old the snapshot of installed agents may get before it is read again


class Catalog:
    """The runtime's agents and flows as last read, refreshed off the loop; one per channel."""

    def __init__(self, runtime: ChatRuntime, *, ttl_s: float = CATALOG_TTL_S) -> None:
        self.runtime = runtime
        self.ttl_s = ttl_s
        self._specs: list[AgentSpec] | None = None
        self._read_at = 0.0
        self._reading: asyncio.Task[list[AgentSpec]] | None = None

    def _read(self) -> list[AgentSpec]:
        return [*self.runtime.agents(), *self.runtime.flows()]

    async def fresh(self) -> list[AgentSpec]:
        """Read the installed agents now (off the loop; one read at a time, shared by its callers)."""
        if self._reading is None or self._reading.done():
            self._reading = asyncio.ensure_future(self._refresh())
        return await asyncio.shield(self._reading)

    async def _refresh(self) -> list[AgentSpec]:
        started = time.monotonic()
        specs = await asyncio.to_thread(self._read)
        self._specs, self._read_at = specs, started
        return specs

    async def specs(self, wanted: str | None = None) -> list[AgentSpec]:
        """The snapshot, when it exists and knows `wanted` (else a fresh read); a snapshot past its
        age is refreshed in the background, never while the caller waits."""
        specs = self._specs
        if specs is None or (wanted is not None and all(s.name != wanted for s in specs)):
            return await self.fresh()
        if time.monotonic() - self._read_at > self.ttl_s and (self._reading is None or self._reading.done()):
            self._reading = asyncio.ensure_future(self._refresh())
            self._reading.add_done_callback(_retrieve)
        return specs


def _retrieve(task: asyncio.Future[Any]) -> None:
    """A background refresh that failed is logged; the snapshot stays, and the next ask reads again."""
    if not task.cancelled() and task.exception() is not None:
        log.warning("could not read the installed agents: %s", task.exception())
