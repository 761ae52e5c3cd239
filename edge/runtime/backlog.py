"""Back-pressure: how many jobs wait their turn, and when an ask is turned away instead of queued.

A job waits (journal status `queued`) until a worker takes it; past a bound, more asks only make every
asker wait longer and the queue grow without end. Two bounds, each checked before a job is journaled:
an agent's `limits.max_queued` (none by default) and OZ0_MAX_QUEUED over every agent (DEFAULT_MAX_QUEUED).
Past either the ask is answered "busy: N asks ahead, try again in a minute" at once (chat: privately;
the API: 429 with Retry-After) and nothing is queued. The counts are the journal's, so they hold across
replicas; each is read at most every COUNT_TTL_S, so a burst of asks costs one count query, not one each.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from oz0.edge.model.agent import AgentSpec
    from oz0.edge.runtime.store import Store

__all__ = ["BUSY_RETRY_S", "COUNT_TTL_S", "DEFAULT_MAX_QUEUED", "Backlog", "Busy", "max_queued"]

DEFAULT_MAX_QUEUED = 1000   # jobs waiting over every agent (OZ0_MAX_QUEUED)
BUSY_RETRY_S = 60           # "try again in a minute": the Retry-After of a busy answer
COUNT_TTL_S = 1.0           # how old a queue count may be when an ask is checked against it


@dataclass(frozen=True)
class Busy:
    """Why an ask is turned away: how many wait ahead of it, and the bound (named) they reached."""

    ahead: int
    limit: int
    bound: str

    @property
    def message(self) -> str:
        return (f"busy: {self.ahead} asks ahead, try again in a minute ({self.bound} is {self.limit}); "
                "nothing was queued")


def max_queued(env: Mapping[str, str] | None = None) -> int:
    """OZ0_MAX_QUEUED: a whole number above 0, else DEFAULT_MAX_QUEUED; anything else is a ValueError naming it."""
    raw = ((os.environ if env is None else env).get("OZ0_MAX_QUEUED") or "").strip()
    if not raw:
        return DEFAULT_MAX_QUEUED
    if not raw.isdigit() or int(raw) < 1:
        raise ValueError(f"OZ0_MAX_QUEUED must be a whole number of jobs above 0, not {raw!r}")
    return int(raw)


class Backlog:
    """The queue counts of one store, and the busy check an ask goes through before it is journaled."""

    def __init__(self, store: Store, *, limit: int | None = None) -> None:
        self.store = store
        self.limit = max_queued() if limit is None else limit
        self._counts: dict[str | None, tuple[float, int]] = {}   # agent (None: every agent) -> (read at, count)
        self._lock = threading.Lock()

    def queued(self, agent: str | None = None) -> int:
        """Jobs of `agent` (of every agent for None) waiting their turn, as counted at most COUNT_TTL_S ago."""
        now = time.monotonic()
        with self._lock:
            cached = self._counts.get(agent)
        if cached is not None and now - cached[0] < COUNT_TTL_S:
            return cached[1]
        count = self.store.count_queued(agent)
        with self._lock:
            if len(self._counts) > 4096:   # bounded whatever the number of agents asked
                self._counts.clear()
            self._counts[agent] = (now, count)
        return count

    def busy(self, spec: AgentSpec) -> Busy | None:
        """None when an ask of `spec` may be queued; else how many wait ahead and which bound they reached."""
        own = spec.limits.max_queued
        if own is not None:
            ahead = self.queued(spec.name)
            if ahead >= own:
                return Busy(ahead, own, f"limits.max_queued of {spec.name}")
        total = self.queued(None)
        if total >= self.limit:
            return Busy(total, self.limit, "OZ0_MAX_QUEUED")
        return None
