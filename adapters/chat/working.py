"""The working message while a job runs: its latest progress and the time so far, drawn as the
working card and sent through the channel's wire at the rate the platforms allow. Used by the ask
flow (adapters/chat/flow.py), once for every channel."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import TYPE_CHECKING, Any

from oz0.adapters.chat.cards import working_card
from oz0.adapters.chat.wire import RateLimited
from oz0.edge.model.progress import Progress
from oz0.edge.runtime.metrics import count_channel_error

if TYPE_CHECKING:
    from oz0.adapters.chat.flow import AskFlow

__all__ = ["PROGRESS_EVERY_S", "WorkingProgress", "due"]

PROGRESS_EVERY_S = 2.0       # the working message is updated with the latest progress at most this often


async def due(at: float, stopping: asyncio.Event) -> bool:
    """Whether the monotonic time `at` has come; if not, wait for it (or for `stopping`) first and say
    False, so a pump looks at its state again before it sends."""
    wait = at - time.monotonic()
    if wait <= 0:
        return True
    try:
        await asyncio.wait_for(stopping.wait(), wait)
    except TimeoutError:
        pass
    return False


class WorkingProgress:
    """A job's progress (it comes on the jobs thread, or the MCP loop's) shown in the working message
    with the time so far: one update at a time, at most one every PROGRESS_EVERY_S counted from the end
    of the last, always the latest report (one that arrives inside the window is shown when it ends,
    unless a newer one came), none for as long as the platform says after a rate limit, and none
    after the card (`close` waits for an update under way and drops the rest)."""

    def __init__(self, flow: AskFlow, reply: Any, agent: str, job_id: str | None = None) -> None:
        self.flow, self.reply, self.agent, self.job_id = flow, reply, agent, job_id
        self.loop = asyncio.get_running_loop()
        self.started = time.monotonic()
        self.next_at = 0.0
        self.latest: Progress | None = None
        self._incoming: Progress | None = None   # the newest report not yet seen on the loop
        self._lock = threading.Lock()
        self.closed = False
        self.stopping = asyncio.Event()
        self.task: asyncio.Task[Any] | None = None

    def report(self, progress: Progress) -> None:
        """The job's `on_progress`: called on any thread; a burst of reports wakes the loop once."""
        if self.closed:
            return
        with self._lock:
            wake, self._incoming = self._incoming is None, progress
        if wake:
            self.loop.call_soon_threadsafe(self._arrived)

    def _arrived(self) -> None:
        with self._lock:
            progress, self._incoming = self._incoming, None
        if self.closed or progress is None:
            return
        self.latest = progress
        if self.task is None or self.task.done():
            self.task = self.flow.tasks.spawn(self._pump(), name=f"{self.flow.wire.platform}-progress")

    async def _pump(self) -> None:
        while not self.closed and self.latest is not None:
            if not await due(self.next_at, self.stopping):
                continue
            progress, self.latest = self.latest, None
            await self._send(progress)
            self.next_at = max(self.next_at, time.monotonic() + PROGRESS_EVERY_S)

    async def _send(self, progress: Progress) -> None:
        card = working_card(self.agent, progress, elapsed_s=time.monotonic() - self.started, job_id=self.job_id)
        try:
            await self.flow.wire.progress(self.reply, self.flow.draw(card))
        except RateLimited as exc:
            self.flow.log.info("%s rate-limited the progress of %s: none for %g s", self.flow.wire.name,
                               self.agent, exc.retry_after_s)
            self.next_at = time.monotonic() + exc.retry_after_s
            if self.latest is None:
                self.latest = progress
        except Exception as exc:
            self.flow.log.warning("could not show progress of %s: %s", self.agent, exc)
            count_channel_error(self.flow.wire.platform, type(exc).__name__)

    async def close(self) -> None:
        self.closed = True
        self.stopping.set()
        if self.task is not None:
            await asyncio.gather(self.task, return_exceptions=True)
