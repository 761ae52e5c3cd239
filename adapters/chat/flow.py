"""The ask flow, written once for every chat channel.

A channel hands the flow an `Ask` (or a `ShareClick`) and the flow decides, in this order:
- Access is checked on the agent name alone, before the input is parsed, so a refused ask learns
  nothing about the agent's contract; `help` and `help AGENT` show only what the asker may run.
- The platform's delivery id is journaled before anything is said: a job under its dedupe key (the
  journal's unique key), a help or a refusal as a claim. A redelivery (Slack retries, a Discord
  gateway resume) finds it and is answered by nobody, even across a restart or another replica.
  Only where the platform's deadline is too short to wait for a journal write under load (Slack's
  slash command ack, `ChatWire.working_first`) is "working..." shown first: a redelivery then sees
  that again, and nothing more.
- The job runs on the channel's `JobLoop`, never on the gateway's or web server's loop; the
  "working..." message shows its progress and is replaced by the card, files uploaded beside it.
- A private answer carries "Share in channel": only the asker may share it, once (a durable claim).
- After a restart, each job a crash left running is reported interrupted where it was asked, once.
- While a job runs, the flow reads its event stream on the channel's loop (`follow`): progress in
  the working message, a question shown where it was asked (its answer taken from its buttons or
  modal, `question_flow.Questions`), an answer given elsewhere shown in the question's place.
- Every finished card goes out by one route, `delivery.CardDelivery.job`: called by the job's durable
  workflow (`deliver_durably`) under the engine, by `finish` without it.

Cards are drawn by `oz0.renderers.render` and sent as they are; the flow never builds markup.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import replace
from typing import Any

from oz0.adapters.chat.buttons import AnswerButtons
from oz0.adapters.chat.cards import agent_help_card, failure_card, help_card, working_card
from oz0.adapters.chat.catalog import Catalog
from oz0.adapters.chat.conversing import Conversing
from oz0.adapters.chat.delivery import CardDelivery
from oz0.adapters.chat.names import Names
from oz0.adapters.chat.question_flow import Questions
from oz0.adapters.chat.stopping import JobStopping
from oz0.adapters.chat.streaming import AnswerStream
from oz0.adapters.chat.tasks import ChannelTasks, JobLoop
from oz0.adapters.chat.wire import (
    AnswerClick,
    Ask,
    ChatRuntime,
    ChatWire,
    WireRefused,
)
from oz0.adapters.chat.working import PROGRESS_EVERY_S, WorkingProgress
from oz0.edge import AgentSpec, Card, Job, tracing
from oz0.edge.model.progress import Progress
from oz0.edge.runtime.access import AccessPolicy, Asker
from oz0.edge.runtime.conversations import ConversationBusy
from oz0.edge.runtime.events import Answered, QuestionAsked, TextDelta
from oz0.edge.runtime.jobs import new_job_id
from oz0.edge.runtime.metrics import count_channel_error
from oz0.edge.runtime.transient import UNAVAILABLE, is_transient, unavailable_reason
from oz0.renderers import render
from oz0.renderers.rendered import Rendered

__all__ = ["PROGRESS_EVERY_S", "AskFlow"]

STOP_DELIVER_S = 5.0         # how long a stopping channel tries to tell an asker their job was cut short
ENDED_WITHIN_S = 2.0         # how long a cancelled job may take to be journaled as interrupted
FOLLOW_END_S = 5.0           # how long the reader of an ended job's events may finish what it shows
STOPPED_GRACE_S = 1.0        # how long a channel's tasks may finish once the runtime's jobs were drained


class AskFlow:
    """One channel's asks, from the platform's request to the card, through `wire` and `runtime`."""

    def __init__(self, runtime: ChatRuntime, wire: ChatWire, *, policy: AccessPolicy, log: logging.Logger,
                 grace_s: float) -> None:
        self.runtime = runtime
        self.wire = wire
        self.policy = policy
        self.log = log
        self.tasks = ChannelTasks(wire.name, log=log, grace_s=grace_s)
        self.jobs = JobLoop(wire.platform)
        self.questions = Questions(self, log=log)
        self.catalog = Catalog(runtime)
        self.conversing = Conversing(self)
        self.stopping = JobStopping(self)
        self.buttons = AnswerButtons(self)  # share, feedback and the one handler of every card button
        self.delivery = CardDelivery(self)  # every card posted, and what it replaces
        self.names = Names(wire.platform, wire.display_name, remember=self._remember_name)

    def _remember_name(self, who: str, name: str) -> None:
        """A name learned here, kept in the journal for every replica, the console and the CLI."""
        self.tasks.spawn(self.jobs.call(self.runtime.people.remember, who, name), name=f"{self.wire.platform}-name")

    def listen_questions(self) -> None:
        """Show this platform's jobs' questions where they were asked, and update them once answered
        (wherever the answer came from): the flow follows each job it runs (`follow`)."""
        self.questions.listen()

    async def follow(self, job_id: str, progress: WorkingProgress, answer: AnswerStream | None = None) -> None:
        """Read the job's events on this loop until it ends: its progress in the working message (or,
        once a text answer is being written, that text with its latest step: `streaming`), its
        questions drawn, an answer given elsewhere drawn in the question's place."""
        asked: dict[str, Any] = {}  # this job's questions, by step, as its stream showed them
        async for event in self.runtime.events(job_id):
            try:
                if isinstance(event, TextDelta) and answer is not None:
                    if not answer.writing:
                        await progress.close()   # the streamed text takes the working message over
                    answer.text(event)
                elif isinstance(event, Progress) and answer is not None and answer.writing:
                    answer.step(event)
                elif isinstance(event, Progress):
                    progress.report(event)
                elif isinstance(event, QuestionAsked):
                    asked[event.question.step] = event.question
                    job = await self.jobs.call(self.runtime.job, job_id)
                    if job is not None:
                        await self.questions.asked(job, event.question)
                elif isinstance(event, Answered) and event.via != self.wire.platform:  # a click updated it
                    job = await self.jobs.call(self.runtime.job, job_id)
                    question = asked.get(event.step)
                    if job is not None and question is not None:
                        await self.questions.answered(job, question, event.answer)
            except WireRefused as exc:
                self.log.error("%s refused to show a question of job %s: %s", self.wire.name, job_id, exc)
                count_channel_error(self.wire.platform, "refused")
        if answer is not None:
            await answer.finish_text()   # the rest of a text streamed here, for whichever replica ends it

    async def answer(self, click: AnswerClick) -> None:
        """A click on a question's button, or its modal's submit."""
        await self.questions.click(click)

    def deliver_durably(self) -> None:
        """Let the engine post this platform's finished jobs through this flow (`CardDelivery.durably`).
        Call on the channel's loop."""
        self.delivery.durably()

    async def close(self) -> None:
        """Let running jobs finish for a while, report the rest interrupted, then stop the jobs loop."""
        try:
            # after a drain (runtime.stopping) the engine posts the cards of jobs that finished, and the
            # rest resume elsewhere: nothing is left here to wait for
            await self.tasks.drain(timeout=STOPPED_GRACE_S if self.runtime.stopping else None)
        finally:
            self.jobs.close()

    def draw(self, card: Card) -> Rendered:
        """The card for this platform, as the renderer drew it."""
        return render(card, self.wire.platform)

    # -- who may run what --

    async def allowed(self, asker: Asker) -> list[AgentSpec]:
        """The agents `asker` (groups not yet filled in) may run where they are."""
        asker = await self.wire.with_groups(asker)
        specs = await self.jobs.call(self.runtime.agents)
        names = set(self.policy.allowed_agents([s.name for s in specs], asker))
        return [s for s in specs if s.name in names]

    def _refusal(self, ask: Ask, asker: Asker, names: list[str]) -> tuple[Card | None, dict[str, Any] | None]:
        """(None, None) when `ask.agent` may run; else the card saying why not, and for a denial the
        audit detail to record."""
        agent = ask.agent or ""
        if agent not in names:
            allowed = self.policy.allowed_agents(names, asker)
            return failure_card(f"There is no agent '{agent[:100]}'. Agents you may run here: "
                                f"{', '.join(allowed) if allowed else 'none'}. {self.wire.syntax.unknown_hint}",
                                code="unknown_agent"), None
        if not self.policy.allows(agent, asker):
            return (failure_card(self.policy.explain_denial(agent, asker), code="access_denied"),
                    self.wire.audit_detail(ask, asker))
        return None, None

    # -- an ask --

    async def ask(self, ask: Ask, *, recorded: Callable[[], Awaitable[Any]] | None = None) -> None:
        """Check, journal, answer: a help card, a refusal, or the working message and then the card.

        `recorded` is for a platform that sends again what was not acknowledged (Slack's events): it is
        awaited once the ask is journaled (or found journaled), and never while the journal cannot be
        written, so the platform gets an error and redelivers. Without it, an ask the journal cannot
        take is answered "could not start: ask again", where it was asked; never "working..." and then
        nothing."""
        done = _Once(recorded)
        shown: list[Any] = []   # the reply whose working message was shown before the journal took the ask
        if self.runtime.stopping:   # a stop began: this replica takes no more work
            await self._not_started(ask, "the bot is restarting", redelivered=recorded is not None, shown=shown)
            return
        try:
            with tracing.span("oz0.chat.event", platform=self.wire.platform, source=ask.source,
                              agent=ask.agent, delivery=ask.delivery):
                await self._ask(ask, done, shown)
        except Exception as exc:
            if not is_transient(exc) or done.called:
                raise
            self.log.warning("could not journal the ask %s (%s)", ask.delivery, type(exc).__name__)
            await self._not_started(ask, unavailable_reason(exc), redelivered=recorded is not None, shown=shown)

    async def _not_started(self, ask: Ask, why: str, *, redelivered: bool, shown: list[Any]) -> None:
        """An ask this replica cannot take: not acknowledged where the platform sends it again, else
        answered "could not start: ask again" where it was asked."""
        count_channel_error(self.wire.platform, UNAVAILABLE)
        if redelivered and not shown:
            self.log.info("%s not acknowledged (%s): %s sends it again", ask.delivery, why, self.wire.name)
            return
        card = failure_card(f"oz0 could not start this ask: {why}. Nothing was run; ask again in a minute.",
                            code=UNAVAILABLE)
        rendered = self.draw(card)
        if shown:
            await self.wire.deliver(shown[0], rendered)
        else:
            assert card.status is not None
            await self.wire.refuse(ask, card.status.message, rendered)

    async def _ask(self, ask: Ask, recorded: _Once, shown: list[Any]) -> None:
        asker = await self.wire.with_groups(ask.asker)
        specs = await self.catalog.specs(ask.agent)   # from memory: the ack of a known agent waits for no read
        if ask.chain is not None:
            ask = await self.conversing.in_chain(ask)
        names = [s.name for s in specs]
        if ask.follow_up:
            followed = await self.conversing.follow_up(ask, specs)
            if followed is None:
                return   # a reply in a thread that is no open conversation: nobody's ask
            ask = followed
        elif self.conversing.is_stop(ask, names):
            await self.conversing.stop(ask, recorded)
            return
        elif ask.thread is not None and ask.agent is not None and ask.agent not in names and not ask.help:
            # "@oz0 and yesterday's?" in a conversation's thread: a follow-up (where the platform
            # shows the bot only the messages that mention it, the only way to follow up)
            words = replace(ask, agent=None, text=f"{ask.agent} {ask.text}".strip(), follow_up=True)
            ask = await self.conversing.follow_up(words, specs) or ask
        if ask.help and ask.agent is None:
            allowed = set(self.policy.allowed_agents(names, asker))
            if await self._first(ask, recorded):
                card = help_card([s for s in specs if s.name in allowed], self.wire.syntax)
                await self.wire.show_help(ask, await self.jobs.call(self.draw, card))
            return
        refusal, denial = self._refusal(ask, asker, names)
        if refusal is not None:
            if await self._first(ask, recorded):
                assert refusal.status is not None
                await self.wire.refuse(ask, refusal.status.message, await self.jobs.call(self.draw, refusal))
                if denial is not None:
                    await self.jobs.call(self.runtime.audit, "access.denied", actor=ask.requester, detail=denial)
            return
        assert ask.agent is not None
        spec = next(s for s in specs if s.name == ask.agent)
        if ask.help:
            if await self._first(ask, recorded):
                await self.wire.show_help(ask, await self.jobs.call(self.draw, agent_help_card(spec, self.wire.syntax)))
            return
        not_text = self.conversing.refusal(ask, spec)
        if not_text is not None:
            if await self._first(ask, recorded):
                assert not_text.status is not None
                await self.wire.refuse(ask, not_text.status.message, await self.jobs.call(self.draw, not_text))
            return
        busy = await self.jobs.call(self.runtime.backlog.busy, spec)
        if busy is not None:   # turned away at once, not queued (edge.runtime.backlog)
            if await self._first(ask, recorded):
                await self.wire.refuse(ask, busy.message, await self.jobs.call(
                    self.draw, failure_card(busy.message, code="busy")))
            return
        ahead = await self.jobs.call(self.runtime.backlog.queued, spec.name)
        early = self.wire.working_first(ask)
        job_id = new_job_id()   # the working message carries the job's Stop from the start, early or not
        reply = await self.wire.working(ask, self._working(ask.agent, ahead, job_id=job_id)) if early else ask.reply
        if early:
            shown.append(reply)
        job, new = await self.jobs.call(self.runtime.submit, ask.agent, ask.text, requester=ask.requester,
                                        channel=ask.channel_name, dedupe_key=ask.delivery,
                                        reply_to=reply.to_ref(), workspace=ask.asker.workspace,
                                        channel_id=ask.asker.channel, job_id=job_id)
        await recorded()
        if not new:
            self.log.info("redelivered %s ignored: job %s already %s", ask.delivery, job.id, job.status)
            if not early:
                await self.wire.ignore(ask)
            return
        try:
            await self.conversing.turn(ask, job.id, job.agent)
        except Exception as exc:   # the ask is journaled and acknowledged: it runs, whatever its thread's state
            if not (is_transient(exc) or isinstance(exc, ConversationBusy)):
                raise
            self.log.warning("job %s: not journaled as its thread's next turn (%s); it runs without the "
                             "earlier turns", job.id, type(exc).__name__)
        self.tasks.spawn(self.names.of(ask.requester, workspace=ask.asker.workspace),  # "asked by Ana Lima"
                         name=f"{self.wire.platform}-name-{job.id}")  # on the console and every replica
        if not early:
            reply = await self.wire.working(ask, self._working(ask.agent, ahead, job_id=job.id))
        if reply.to_ref() != ask.reply.to_ref():
            try:
                await self.jobs.call(self.runtime.set_reply_to, job.id, reply.to_ref())
            except Exception as exc:
                if not is_transient(exc):
                    raise
                self.log.warning("job %s: could not journal where its working message is (%s); its card is "
                                 "posted as a new message", job.id, type(exc).__name__)
        self.tasks.spawn(self.finish(job.id, job.agent, reply), name=f"{self.wire.platform}-job-{job.id}")

    def _working(self, agent: str, ahead: int, *, job_id: str) -> Rendered:
        """The working message of `agent` with the job's Stop button; with asks ahead of it in the
        queue, its place."""
        return self.draw(working_card(agent, ahead=ahead, job_id=job_id))

    async def _first(self, ask: Ask, recorded: _Once) -> bool:
        """Journal this delivery; False (and the platform acked, nobody answered) for a redelivery."""
        first = await self.jobs.call(self.runtime.claim, f"delivery:{ask.delivery}")
        await recorded()
        if first:
            return True
        self.log.info("redelivered %s ignored: already answered", ask.delivery)
        await self.wire.ignore(ask)
        return False

    # -- the job and its card --

    async def finish(self, job_id: str, agent: str, reply: Any) -> None:
        """Run the job on the jobs loop, follow its events, and put its card where it was asked."""
        progress = WorkingProgress(self, reply, agent, job_id)
        self.delivery.working[job_id] = progress
        answer = self.delivery.answers[job_id] = AnswerStream(self, reply, agent, job_id)
        follower = self.tasks.spawn(self.follow(job_id, progress, answer), name=f"{self.wire.platform}-events-{job_id}")
        try:
            await self._finish(job_id, progress, reply)
        finally:
            self.delivery.working.pop(job_id, None)
            self.delivery.answers.pop(job_id, None)
            await answer.close()
            done, _ = await asyncio.wait({follower}, timeout=FOLLOW_END_S)
            if not done:
                follower.cancel()
            await progress.close()

    async def _finish(self, job_id: str, progress: WorkingProgress, reply: Any) -> None:
        if self.runtime.delivers(self.wire.platform):
            # The job's durable workflow posts its card (deliver_durably), here or on the replica that
            # finishes it; a stop here leaves the job to resume at the next start, or on another replica.
            try:
                await self.jobs.run(self.runtime.execute(job_id))
            except Exception as exc:
                if not self.runtime.stopping:
                    raise
                self.log.info("job %s is left to resume after the stop (%s)", job_id, type(exc).__name__)
            return
        try:
            job = await self.jobs.run(self.runtime.execute(job_id))
        except asyncio.CancelledError:
            # The channel is stopping: the runtime journals the job as interrupted; say so where it was asked.
            await progress.close()
            stopped = await self._ended(job_id)
            if stopped is not None:
                card = await self.jobs.call(self.runtime.card, stopped)
                await asyncio.wait_for(self.delivery.card(card, reply, job_id=job_id, shareable=False,
                                                          interrupted=True), STOP_DELIVER_S)
            raise
        except Exception as exc:
            self.log.exception("job %s could not run", job_id)
            count_channel_error(self.wire.platform, type(exc).__name__)
            await progress.close()
            card = failure_card(f"oz0 could not run this ask (internal error, job {job_id}); the bot's log "
                                "has the details.", code="internal_error")
            await self.delivery.card(card, reply, job_id=job_id, shareable=False)
            return
        await self.delivery.job(job)

    async def _ended(self, job_id: str) -> Job | None:
        """The job once the runtime has journaled its end (a cancelled job ends on the jobs loop)."""
        deadline = time.monotonic() + ENDED_WITHIN_S
        while True:
            job = await self.jobs.call(self.runtime.job, job_id)
            if job is None or job.finished or time.monotonic() > deadline:
                return job if job is not None and job.finished else None
            await asyncio.sleep(0.02)

    # -- restart --

    async def report_interrupted(self, jobs: Iterable[Job]) -> None:
        """Tell each asker whose job a restart cut short, where it was asked, once (a durable claim)."""
        await self.delivery.interrupted(jobs)


class _Once:
    """A channel's `recorded` callback (its platform's ack), awaited at most once."""

    def __init__(self, call: Callable[[], Awaitable[Any]] | None) -> None:
        self.call = call
        self.called = False

    async def __call__(self) -> None:
        if not self.called:
            self.called = True
            if self.call is not None:
                await self.call()
