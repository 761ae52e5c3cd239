"""Jobs a restart cut short, told to their askers where they asked, once.

`oz0 serve` finds the interrupted jobs before the channels are up: `Restarts` holds them per platform
until its channel's flow attaches, then reports them at once (and any found later, at once too).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, Any

from oz0.adapters.chat.cards import failure_card
from oz0.edge import Card, Job

if TYPE_CHECKING:
    from oz0.adapters.chat.flow import AskFlow

__all__ = ["Restarts", "report_interrupted"]


class Restarts:
    """Jobs `oz0 serve` found interrupted, held until the channel is up (then reported at once)."""

    def __init__(self, platform: str) -> None:
        self.platform = platform
        self.pending: list[Job] = []
        self.active: AskFlow | None = None

    def report(self, jobs: Iterable[Job]) -> None:
        """The `report_interrupted(jobs)` hook of a channel module for `oz0 serve`."""
        mine = [j for j in jobs if j.reply_to is not None and j.reply_to.platform == self.platform]
        if mine and self.active is not None:
            self.active.tasks.spawn(self.active.report_interrupted(mine), name=f"{self.platform}-report-interrupted")
        else:
            self.pending.extend(mine)

    def attach(self, flow: AskFlow) -> None:
        """The channel is up: report what is pending, and from now on at once."""
        self.active = flow
        pending, self.pending = self.pending, []
        self.report(pending)

    def detach(self, flow: AskFlow) -> None:
        if self.active is flow:
            self.active = None


async def report_interrupted(jobs: Iterable[Any], *, platform: str, log: logging.Logger,
                             card_for: Callable[[Any], Card],
                             deliver: Callable[[Any, Card], Awaitable[None]]) -> None:
    """Tell each asker on `platform` whose job a restart cut short; never drop one silently.

    `card_for(job)` is the runtime's card; when it fails, a plain "ask again" card stands in.
    `deliver(job, card)` puts it where the job's `reply_to` says the ask was made.
    """
    for job in jobs:
        if job.reply_to is None or job.reply_to.platform != platform:
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
                          getattr(job, "channel_id", None))
