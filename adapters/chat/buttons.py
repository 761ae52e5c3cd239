"""The buttons under an answer and on a working message, for every channel: Share in channel, 👍 / 👎
and the one handler of a channel that hands every card button over as a `ButtonClick` (the working
message's Stop, a conversation's Stop, feedback).

Why apart from the ask flow: these act on a job that has been asked (and usually answered); they need
the flow's wire, names and job loop, which they are given, and nothing of the ask itself.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from oz0.adapters.chat.cards import CANCEL_ACTION
from oz0.adapters.chat.cards import shareable as _share
from oz0.adapters.chat.conversing import STOP_ACTION
from oz0.adapters.chat.wire import ButtonClick, ShareClick
from oz0.edge.cards.model import FEEDBACK_ACTION
from oz0.edge.runtime.access import Asker
from oz0.edge.runtime.feedback import give_feedback

if TYPE_CHECKING:
    from oz0.adapters.chat.flow import AskFlow

__all__ = ["AnswerButtons"]


class AnswerButtons:
    """One channel's clicks on the buttons of its cards."""

    def __init__(self, flow: AskFlow) -> None:
        self.flow = flow

    async def button(self, click: ButtonClick) -> None:
        """A click on a working message's Stop, an answer's Stop or 👍 / 👎, for a channel that hands every
        card button to one handler."""
        if click.action == CANCEL_ACTION:
            await self.flow.stopping.click(click.value, f"{self.flow.wire.platform}:{click.asker.user}", click.reply,
                                      workspace=click.asker.workspace)
        elif click.action == STOP_ACTION:
            await self.flow.conversing.stop_click(click.value, f"{self.flow.wire.platform}:{click.asker.user}", click.reply)
        elif click.action == FEEDBACK_ACTION:
            await self.feedback(click.value, click.asker, click.reply)
        else:
            await self.flow.wire.notice(click.reply, "This button is not oz0's.")

    async def feedback(self, value: str, asker: Asker, reply: Any) -> None:
        """A click on 👍 / 👎 under an answer (`value`: "good:JOB" or "bad:JOB"): audited once per person."""
        verdict, _, job_id = value.partition(":")
        by = f"{self.flow.wire.platform}:{asker.user}"
        problem = await self.flow.jobs.call(lambda: give_feedback(self.flow.runtime, job_id, verdict, by=by,
                                                             platform=self.flow.wire.platform))
        await self.flow.wire.notice(reply, problem or f"Thanks: your {'👍' if verdict == 'good' else '👎'} was recorded.")

    async def share(self, click: ShareClick) -> None:
        """Post a private answer for everyone, if the clicker asked it and it was not shared before."""
        job = await self.flow.jobs.call(self.flow.runtime.job, click.job_id)
        asker = await self.flow.wire.with_groups(click.asker)
        problem = None
        if job is None or not job.finished:
            problem = "This result is no longer available; ask again."
        elif job.requester != f"{self.flow.wire.platform}:{asker.user}":
            problem = "Only the person who asked can share this result."
        elif not self.flow.policy.allows(job.agent, asker):
            problem = self.flow.policy.explain_denial(job.agent, asker)
        elif not await self.flow.jobs.call(self.flow.runtime.claim, f"shared:{job.id}"):
            problem = "This result was already shared."
        if problem is not None or job is None:
            await self.flow.wire.notice(click.reply, problem or "This result is no longer available; ask again.")
            return
        card = await self.flow.jobs.call(self.flow.runtime.card, job)
        name = await self.flow.names.of(f"{self.flow.wire.platform}:{asker.user}", workspace=asker.workspace)
        note = self.flow.wire.share_note(name, job.agent)
        reply, files_at = self.flow.wire.files_place(click.reply, private=False, job_id=job.id)
        public = await self.flow.jobs.call(self.flow.draw, replace(card, notes=card.notes + ((note,) if note else ()),
                                                         files_at=files_at))
        marked = await self.flow.jobs.call(self.flow.draw, _share(card, job.id, shared=True))
        await self.flow.wire.share(replace(click, reply=reply), public, marked)
