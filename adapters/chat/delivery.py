"""A finished job's card, put where it was asked: the one route of every card a channel posts.

The card replaces what the asker sees of the job (its working message, or the text answer streamed
into it), with "Share in channel" where only the asker sees it. `job` is that route: called by the
job's durable workflow (`durably`) under the engine, on whichever replica finishes the job, and by
the flow's `finish` without it. A job a restart or a stop cut short is reported once (a durable claim),
whoever reports it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from oz0.adapters.chat.cards import failure_card
from oz0.adapters.chat.cards import shareable as _share
from oz0.adapters.chat.conversing import stop_button
from oz0.adapters.chat.restarts import report_interrupted
from oz0.adapters.chat.streaming import INTERRUPTED_NOTE, AnswerStream, end_stream
from oz0.adapters.chat.wire import StreamingWire, WireRefused
from oz0.adapters.chat.working import WorkingProgress
from oz0.edge import Card, Job, tracing
from oz0.edge.runtime.metrics import count_channel_error

if TYPE_CHECKING:
    from oz0.adapters.chat.flow import AskFlow

__all__ = ["CardDelivery"]


class CardDelivery:
    """One channel's cards, and what each replaces until it is posted."""

    def __init__(self, flow: AskFlow) -> None:
        self.flow = flow
        self.working: dict[str, WorkingProgress] = {}   # the working messages shown, by job
        self.answers: dict[str, AnswerStream] = {}      # text answers being written, by job

    def durably(self) -> None:
        """Let the engine post this platform's finished jobs through this flow: a job's durable
        workflow calls it as a checkpointed step, on whichever replica finishes the job, so a job taken
        over from a dead replica is still answered, and never twice. Call on the channel's loop."""
        loop = asyncio.get_running_loop()

        async def deliver_job(job: Job) -> None:
            await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(self.job(job), loop))

        self.flow.runtime.deliver_with(self.flow.wire.platform, deliver_job)

    async def job(self, job: Job) -> None:
        """The finished job's card, where it was asked."""
        flow = self.flow
        progress = self.working.pop(job.id, None)
        if progress is not None:
            await progress.close()
        if job.status in ("interrupted", "cancelled") and not await flow.jobs.call(flow.runtime.claim,
                                                                                   f"reported:{job.id}"):
            return  # a restart report (or the stop) said so already: one report per job, whoever makes it
        card = await flow.jobs.call(flow.runtime.card, job)
        if job.reply_to is None:
            flow.log.error("job %s ended with no reply reference to answer it by", job.id)
            return
        await self.card(card, flow.wire.reply_from(job.reply_to), job_id=job.id,
                        shareable=job.status != "interrupted", interrupted=job.status == "interrupted")

    async def card(self, card: Card, reply: Any, *, job_id: str, shareable: bool = True,
                   interrupted: bool = False) -> None:
        """Replace the working message with `card` (with "Share in channel" where only the asker sees
        it); a card the platform refuses becomes a failure card in its place. A streamed answer's
        message is ended with the card, or, when its job was `interrupted`, with INTERRUPTED_NOTE."""
        flow, wire = self.flow, self.flow.wire
        answer = self.answers.pop(job_id, None)
        streamed = await answer.close(card.text if card.form == "text" else None) if answer is not None else None
        reply = streamed if streamed is not None else reply
        stream = isinstance(wire, StreamingWire) and wire.streaming(reply)
        if interrupted and stream:
            assert isinstance(wire, StreamingWire)
            await wire.stream_cut(reply, INTERRUPTED_NOTE)
            return
        private = wire.private(reply)
        if shareable and private:
            card = _share(card, job_id)
        cid = await flow.jobs.call(flow.runtime.conversations.of_job, job_id)
        if cid is not None and shareable:
            card = replace(card, actions=(*card.actions, stop_button(cid)))
        if shareable:
            card = replace(card, feedback=job_id)
        reply, files_at = wire.files_place(reply, private=private, job_id=job_id)
        card = replace(card, files_at=files_at)
        rendered = await flow.jobs.call(flow.draw, card)  # drawn once
        job = await flow.jobs.call(flow.runtime.job, job_id) if tracing.enabled() else None
        try:
            with tracing.span("oz0.delivery", parent=job.trace_context if job is not None else None,
                              platform=wire.platform, job_id=job_id):
                if stream:
                    await end_stream(flow, reply, card, rendered, answer, job_id)
                else:
                    await wire.deliver(reply, rendered)
        except WireRefused as exc:
            flow.log.error("%s refused the card for job %s: %s", wire.name, job_id, exc)
            count_channel_error(wire.platform, "refused")
            fallback = failure_card(f"oz0 could not show this result in {wire.name} ({exc}); job {job_id} "
                                    "is in the journal.", code=f"{wire.platform}_refused")
            await wire.deliver(reply, flow.draw(fallback))

    async def interrupted(self, jobs: Iterable[Job]) -> None:
        """Tell each asker whose job a restart cut short, where it was asked, once (a durable claim)."""
        flow = self.flow

        async def deliver(job: Job, card: Card) -> None:
            if await flow.jobs.call(flow.runtime.claim, f"reported:{job.id}"):
                await self.card(card, flow.wire.reply_from(job.reply_to), job_id=job.id, shareable=False,
                                interrupted=True)

        await report_interrupted(jobs, platform=flow.wire.platform, log=flow.log, card_for=flow.runtime.card,
                                 deliver=deliver)
