"""What the chat channels (Slack, Discord) do alike around a job, whatever the platform.

A chat platform wants its answer within seconds, so each channel acknowledges first and runs the job
in a task: `ChannelTasks` keeps those tasks referenced, logs what they raise, and on stop lets them
finish for a grace period before cancelling the rest (the runtime journals them as interrupted).
After a restart, `report_interrupted` tells each asker whose job was cut short. The cards here are
for what went wrong around the agent, never a traceback.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Awaitable, Callable, Coroutine, Iterable

from oz0.edge.cards.model import Card, Status

__all__ = ["NO_AGENTS_TEXT", "ChannelTasks", "failure_card", "no_agents_card", "report_interrupted"]

NO_AGENTS_TEXT = "No agent may be run by you in this channel. Ask the bot's administrator (access.yaml)."


def failure_card(message: str, *, code: str, title: str | None = None) -> Card:
    """A card for what went wrong outside the agent (the platform refused, the channel broke): no traceback."""
    return Card(form="text", title=title, text="", text_format="plain",
                status=Status(success=False, message=message, error_code=code))


def no_agents_card() -> Card:
    """The answer to a help request from someone access.yaml lets run no agent here."""
    return Card(form="text", title="No agents for you here", text_format="plain", text=NO_AGENTS_TEXT)


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
        if not self._tasks:
            return
        _done, pending = await asyncio.wait(set(self._tasks), timeout=self.grace_s if timeout is None else timeout)
        for task in pending:
            task.cancel()
        if pending:
            self.log.warning("stopped with %d %s job(s) still running; they are reported as interrupted",
                             len(pending), self.platform)
            await asyncio.gather(*pending, return_exceptions=True)


async def report_interrupted(jobs: Iterable[Any], *, platform: str, log: logging.Logger,
                             card_for: Callable[[Any], Card],
                             deliver: Callable[[Any, Card], Awaitable[None]]) -> None:
    """Tell each asker on `platform` whose job a restart cut short; never drop one silently.

    `card_for(job)` is the runtime's card; when it fails, a plain "ask again" card stands in.
    `deliver(job, card)` puts it where the job's `reply_to` says the ask was made.
    """
    for job in jobs:
        reply_to = job.reply_to or {}
        if reply_to.get("platform") != platform or not reply_to.get("channel"):
            continue
        try:
            card = card_for(job)
        except Exception:
            log.exception("no card for interrupted job %s", job.id)
            card = failure_card(f"oz0 restarted while job {job.id} was running; ask again.", code="interrupted")
        try:
            await deliver(job, card)
        except Exception:
            log.exception("could not report interrupted job %s to %s channel %s", job.id, platform,
                          reply_to.get("channel"))
