"""A job's question in a chat channel, written once for every platform.

- When a job asks (its event stream's `QuestionAsked`, read by the flow while the job runs), its
  question is drawn where the job was asked: a card
  with its buttons, to the asker alone when the ask was private and nobody else answers, else for
  the channel (the thread of a mention) so the answerers see it. Where it was posted is journaled
  with the job's reply target, so the card can be updated after a restart.
- A button answers at once; "Answer…" opens the platform's modal. The runtime validates the answer
  and checks the answerer; a refusal (403 not an answerer, 409 already answered, 422 invalid) is
  said to the clicker alone, a 422 in the modal with the JSON path and the rule where it can.
- When the step is answered, the question's card is replaced by what was decided, by whom and when:
  by the click that answered it (through that click's own reply), or, for an answer given anywhere
  else (the API, the console, a timeout), by the reader of the job's stream (`Answered`).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from oz0.adapters.chat.asking import FORM, answered_card, content_from, content_of, question_card, step_digest
from oz0.adapters.chat.wire import AnswerClick
from oz0.edge import AnswerRefused, Job

if TYPE_CHECKING:
    from oz0.adapters.chat.flow import AskFlow

__all__ = ["Questions"]

NOT_OPEN = "This question is no longer open (it was answered, or the job ended)."


class Questions:
    """The questions of one channel's jobs, through the channel's flow (its wire, runtime and loops)."""

    def __init__(self, flow: AskFlow, *, log: logging.Logger) -> None:
        self.flow = flow
        self.log = log

    def listen(self) -> None:
        """Say that this channel draws its platform's questions (the flow reads each job's stream)."""
        self.flow.runtime.shows_questions(self.flow.wire.platform)

    # -- the question shown, and updated --

    async def asked(self, job: Job, question: Any) -> None:
        """Draw the question where `job` was asked and journal where it is."""
        flow, wire = self.flow, self.flow.wire
        shown = job.question_shown or {}
        if shown.get("step") == question.step or job.reply_to is None:
            return   # drawn already (its stream is read once here; a replica may read it too)
        reply = wire.reply_from(job.reply_to)
        private = wire.private(reply) and not question.answerers
        rendered = await flow.jobs.call(flow.draw, question_card(job.id, question))
        where = await wire.post_question(reply, rendered, private=private)
        await flow.jobs.call(flow.runtime.set_question_shown, job.id, {"step": question.step, **where})

    async def answered(self, job: Job, question: Any, answer: Any, *, via: Any = None) -> None:
        """Replace the question's card with what was decided (`via`: the reply of the click that did)."""
        flow, wire = self.flow, self.flow.wire
        fresh = await flow.jobs.call(flow.runtime.job, job.id) or job
        shown = fresh.question_shown or {}
        if fresh.reply_to is None or (shown.get("step") != question.step and via is None):
            self.log.info("question %s of job %s was not shown here; nothing to update", question.step, job.id)
            return
        name = await flow.names.of(answer.by, workspace=fresh.workspace)
        rendered = await flow.jobs.call(flow.draw, answered_card(question, answer, platform=wire.platform,
                                                                 by_name=name))
        await wire.update_question(wire.reply_from(fresh.reply_to), shown, rendered, via=via)

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
        try:
            answer = await flow.jobs.call(flow.runtime.answer, pick.job_id, question.step, action="accept",
                                          content=dict(content), by=f"{wire.platform}:{asker.user}",
                                          groups=asker.groups, via=wire.platform)
        except AnswerRefused as exc:
            await wire.answer_refused(click, exc.message, why=exc.why, question=question)
            return
        await wire.answer_taken(click)
        job = await flow.jobs.call(flow.runtime.job, pick.job_id)
        if job is not None:
            await self.answered(job, question, answer, via=click.reply)

    async def _refuse(self, click: AnswerClick, message: str, *, opening: bool) -> None:
        if opening:
            await self.flow.wire.hold(click)   # it was not held: a modal would have been its answer
        await self.flow.wire.answer_refused(click, message, why="not_waiting", question=None)
