"""A job's question in a chat channel, written once for every platform.

- When a job asks (`runtime.on_question`), its question is drawn where the job was asked: a card
  with its buttons, to the asker alone when the ask was private and nobody else answers, else for
  the channel (the thread of a mention) so the answerers see it. Where it was posted is journaled
  with the job's reply target, so the card can be updated after a restart.
- A button answers at once; "Answer…" opens the platform's modal. The runtime validates the answer
  and checks the answerer; a refusal (403 not an answerer, 409 already answered, 422 invalid) is
  said to the clicker alone, a 422 in the modal with the JSON path and the rule where it can.
- When the step is answered, by a click here or anywhere else (`runtime.on_answered`), the
  question's card is replaced by what was decided, by whom and when.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any, Callable, Mapping

from oz0.adapters.chat.asking import FORM, answered_card, content_from, content_of, question_card, step_digest
from oz0.adapters.chat.wire import AnswerClick
from oz0.edge.model.job import Job
from oz0.edge.runtime.questions import AnswerRefused

if TYPE_CHECKING:
    from oz0.adapters.chat.flow import AskFlow

__all__ = ["QUESTION_KEY", "Questions"]

QUESTION_KEY = "question"      # reply_to["question"]: where the open question of a job is shown
NOT_OPEN = "This question is no longer open (it was answered, or the job ended)."


class Questions:
    """The questions of one channel's jobs, through the channel's flow (its wire, runtime and loops)."""

    def __init__(self, flow: "AskFlow", *, log: logging.Logger) -> None:
        self.flow = flow
        self.log = log
        self._via: dict[tuple[str, str], Any] = {}   # (job, step) -> the reply of the click answering it

    def listen(self) -> None:
        """Register with the runtime: this platform's questions and answers come here. Call on the
        channel's loop (the runtime calls back from its own threads)."""
        loop = asyncio.get_running_loop()

        def on(handler: Callable[..., Any]) -> Callable[..., Any]:
            async def hop(*args: Any) -> None:
                await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(handler(*args), loop))
            return hop

        platform = self.flow.wire.platform
        self.flow.runtime.on_question(platform, on(self.asked))
        self.flow.runtime.on_answered(platform, on(self.answered))

    # -- the question shown, and updated --

    async def asked(self, job: Job, question: Any) -> None:
        """Draw the question where `job` was asked and journal where it is."""
        flow, wire = self.flow, self.flow.wire
        reply_to = dict(job.reply_to or {})
        shown = reply_to.get(QUESTION_KEY) or {}
        if shown.get("step") == question.step:
            return   # drawn already (the runtime asks each listener once; a replica may too)
        reply = wire.reply_from(reply_to)
        private = wire.private(reply) and not question.answerers
        rendered = await flow.jobs.call(flow.draw, question_card(job.id, question))
        where = await wire.post_question(reply, rendered, private=private)
        reply_to[QUESTION_KEY] = {"step": question.step, **where}
        await flow.jobs.call(flow.runtime.set_reply_to, job.id, reply_to)

    async def answered(self, job: Job, question: Any, answer: Any) -> None:
        """Replace the question's card with what was decided."""
        flow, wire = self.flow, self.flow.wire
        via = self._via.pop((job.id, question.step), None)
        fresh = await flow.jobs.call(flow.runtime.job, job.id) or job
        reply_to = dict(fresh.reply_to or {})
        shown = reply_to.get(QUESTION_KEY) or {}
        if shown.get("step") != question.step and via is None:
            self.log.info("question %s of job %s was not shown here; nothing to update", question.step, job.id)
            return
        rendered = await flow.jobs.call(flow.draw, answered_card(question, answer, platform=wire.platform))
        await wire.update_question(wire.reply_from(reply_to), shown, rendered, via=via)

    # -- a click, or a modal's submit --

    async def click(self, click: AnswerClick) -> None:
        """Answer the question a button or modal names, as the clicker; refusals to them alone."""
        flow, wire = self.flow, self.flow.wire
        pick = click.pick
        opening = pick.choice == FORM and click.form is None
        if not opening:
            await wire.hold(click)
        question = await flow.jobs.call(flow.runtime.question, pick.job_id)
        if question is None or step_digest(question.step) != pick.digest:
            await self._refuse(click, NOT_OPEN, opening=opening)
            return
        if opening:
            await wire.open_form(click, question)
            return
        if click.form is not None:
            content: Mapping[str, Any] | None = content_from(question.answer_schema,
                                                             wire.submitted(click, question.answer_schema))
        else:
            content = content_of(question.answer_schema, pick.choice)
            if content is None:
                await self._refuse(click, NOT_OPEN, opening=False)
                return
        asker = await wire.with_groups(click.asker)
        key = (pick.job_id, question.step)
        self._via[key] = click.reply
        try:
            await flow.jobs.call(flow.runtime.answer, pick.job_id, question.step, action="accept",
                                 content=dict(content), by=f"{wire.platform}:{asker.user}", groups=asker.groups)
        except AnswerRefused as exc:
            self._via.pop(key, None)
            await wire.answer_refused(click, exc.message, status=exc.status, question=question)
            return
        except BaseException:
            self._via.pop(key, None)
            raise
        await wire.answer_taken(click)

    async def _refuse(self, click: AnswerClick, message: str, *, opening: bool) -> None:
        if opening:
            await self.flow.wire.hold(click)   # it was not held: a modal would have been its answer
        await self.flow.wire.answer_refused(click, message, status=409, question=None)
