"""Where a chat channel's work runs: the tasks after an ack, and the one loop the agents run on.

A chat platform wants its answer within seconds, so a channel acknowledges first and finishes in a
task: `ChannelTasks` keeps those referenced, logs what they raise, and on stop lets them finish for
a grace period before cancelling the rest (the runtime journals them as interrupted).

`JobLoop` is the one concurrency model of every channel: agents run on an event loop of its own in
one thread, never on the gateway's or the web server's loop, and the flow's synchronous journal
calls run in the default executor's bounded threads. A burst of jobs on the channel's loop would
queue the next acks behind them; measured with bench/slack_ack.py, 200 concurrent asks then pushed
acks past Slack's 3 seconds, and so did journal writes queued behind the agents on the jobs loop.
On one long-lived loop (not a loop per job) the agents' connection pools stay valid between jobs.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

__all__ = ["UNWIND_S", "ChannelTasks", "JobLoop"]

T = TypeVar("T")
UNWIND_S = 5.0  # how long the jobs loop's cancelled tasks get to run their `finally` blocks at close
log = logging.getLogger("oz0.chat.tasks")


class ChannelTasks:
    """The jobs a channel runs after its ack: referenced (so none is garbage-collected mid-run) and
    logged when they fail (never swallowed)."""

    def __init__(self, platform: str, *, log: logging.Logger, grace_s: float) -> None:
        self.platform = platform
        self.log = log
        self.grace_s = grace_s
        self._tasks: set[asyncio.Task[Any]] = set()

    def __len__(self) -> int:
        return len(self._tasks)

    def spawn(self, coro: Coroutine[Any, Any, Any], *, name: str) -> asyncio.Task[Any]:
        """Run `coro` in a task; keep a reference and log what it raises."""
        task = asyncio.create_task(coro, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._done)
        return task

    def _done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            self.log.error("%s task %s failed", self.platform, task.get_name(), exc_info=task.exception())

    async def drain(self, *, timeout: float | None = None) -> None:
        """Let running jobs finish for a while (`grace_s`); the rest are cancelled, which journals them
        as interrupted and lets each say so to its asker while it can."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + (self.grace_s if timeout is None else timeout)
        while self._tasks and loop.time() < deadline:   # a task may spawn another (the job after its ack)
            await asyncio.wait(set(self._tasks), timeout=deadline - loop.time())
        pending = set(self._tasks)
        for task in pending:
            task.cancel()
        if pending:
            self.log.warning("stopped with %d %s job(s) still running; they are reported as interrupted",
                             len(pending), self.platform)
            await asyncio.gather(*pending, return_exceptions=True)


class JobLoop:
    """An event loop in a thread of its own, for the agents and the journal (see the module's doc)."""

    def __init__(self, name: str) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name=f"oz0-{name}-jobs", daemon=True)
        self._thread.start()

    def on_thread(self) -> bool:
        return threading.current_thread() is self._thread

    async def run(self, coro: Awaitable[T]) -> T:
        """Await `coro` on the jobs loop; cancelling the caller cancels it there too."""
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, self.loop))  # type: ignore[arg-type]

    async def call(self, func: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """`func(*args, **kwargs)` (a journal write, a card drawn) off the channel's loop, in the default
        executor's bounded threads: never queued behind the agents on the jobs loop."""
        return await asyncio.to_thread(func, *args, **kwargs)

    def close(self) -> None:
        """Cancel what still runs on the jobs loop and let it unwind there (a job waiting for its
        workflow cancels its polling in a `finally`), then stop and close the loop: a coroutine left
        pending on a closed loop fails later, at garbage collection, with "Event loop is closed"."""
        if self.loop.is_running() and not self.on_thread():
            try:
                asyncio.run_coroutine_threadsafe(_cancel_all(), self.loop).result(timeout=UNWIND_S + 1)
            except TimeoutError:
                log.warning("tasks on the jobs loop did not unwind within %.0f s", UNWIND_S)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=10)
        if not self._thread.is_alive():
            self.loop.close()


async def _cancel_all() -> None:
    """Cancel every other task of the running loop and wait (at most UNWIND_S) for them to end."""
    tasks = asyncio.all_tasks() - {asyncio.current_task()}
    for task in tasks:
        task.cancel()
    if tasks:
        await asyncio.wait(tasks, timeout=UNWIND_S)
