"""Conversations in chat, the same for every channel: a thread the bot answered in is a conversation
with that agent (edge.runtime.conversations).

- An ask made in a thread (`Ask.thread`: a mention, Slack's thread reply, a Discord thread) is
  journaled as the conversation's next turn once its job is, linked to the previous turn's job.
- Outside threads, a reply to the bot's answer message (`Ask.chain`: a Discord reply chain) continues
  the conversation of the ask that answer answered.
- A follow-up (`Ask.follow_up`: a reply in the thread without a mention) goes to the conversation's
  agent; in a thread that is no open conversation (never one, stopped, idle past the agent's
  `conversation.idle_hours`) it is nobody's ask and is left alone.
- `@oz0 other-agent ...` in the thread is an ask like any other: the conversation goes on with that
  agent, which is given the same earlier turns.
- `@oz0 stop` (or the Stop button under an answer) ends it: later replies are ignored.
- A follow-up is text: an agent whose input is JSON refuses it, naming its input form.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from oz0.adapters.chat.cards import failure_card
from oz0.adapters.chat.wire import Ask
from oz0.edge.cards.model import Action, Card
from oz0.edge.model.agent import AgentSpec
from oz0.edge.runtime.conversations import ConversationBusy, conversation_id, thread_in

if TYPE_CHECKING:
    from oz0.adapters.chat.flow import AskFlow

__all__ = ["MAX_PROMPTS", "STOP_ACTION", "STOP_WORDS", "Conversing", "stop_button", "suggested_prompts"]

STOP_ACTION = "oz0_stop"
STOP_WORDS = ("stop", "end", "bye")
MAX_PROMPTS = 4        # Slack's assistant pane shows at most four suggested prompts


def suggested_prompts(specs: list[AgentSpec]) -> list[tuple[str, str]]:
    """(title, message) of the prompts a new assistant thread suggests: the first agents the person
    may run that declare an example, each as the ask it would type."""
    out = []
    for spec in specs:
        example = spec.example or (spec.examples[0].input_text if spec.examples else None)
        if example:
            title = (spec.description or spec.name)[:75]
            out.append((title, f"{spec.name} {example}"))
        if len(out) == MAX_PROMPTS:
            break
    return out


def stop_button(cid: str) -> Action:
    """The Stop button under an answer in a conversation: its value names the conversation."""
    return Action(STOP_ACTION, "Stop", value=cid, style="danger")


_BUSY_STOP = ("The conversation in this thread is taking many asks at this moment, so it was not stopped; "
              "stop it again in a few seconds.")


class Conversing:
    """One channel's conversations, through its flow's runtime and wire."""

    def __init__(self, flow: AskFlow) -> None:
        self.flow = flow

    def cid(self, ask: Ask) -> str | None:
        if ask.thread is None or ask.asker.channel is None:
            return None
        return conversation_id(self.flow.wire.platform, str(ask.asker.channel), ask.thread)

    async def in_chain(self, ask: Ask) -> Ask:
        """A reply to the bot's answer outside a thread (`Ask.chain`): in the thread of the conversation
        the answered ask was a turn of, if it was one in this channel; else as it came."""
        if ask.chain is None or ask.asker.channel is None:
            return ask
        cid = await self.flow.jobs.call(self.flow.runtime.conversations.of_delivery, ask.chain)
        thread = thread_in(cid, self.flow.wire.platform, str(ask.asker.channel)) if cid else None
        return replace(ask, thread=thread) if thread is not None else ask

    def is_stop(self, ask: Ask, names: list[str]) -> bool:
        """`@oz0 stop` in a thread (an agent of that name wins: it is asked instead)."""
        return (ask.thread is not None and not ask.follow_up and not ask.help and ask.agent is not None
                and ask.agent.lower() in STOP_WORDS and ask.agent not in names and not ask.text)

    async def follow_up(self, ask: Ask, specs: list[AgentSpec]) -> Ask | None:
        """The follow-up as an ask of the conversation's agent, or None when the thread is no open
        conversation (then nobody answers it)."""
        cid = self.cid(ask)
        if cid is None:
            return None
        current = await self.flow.jobs.call(self.flow.runtime.conversations.get, cid)
        if current is None or current.agent is None:
            return None
        spec = next((s for s in specs if s.name == current.agent), None)
        limits = spec.conversation if spec is not None else None
        if limits is None or not current.open(limits):
            return None
        return replace(ask, agent=current.agent)

    @staticmethod
    def refusal(ask: Ask, spec: AgentSpec) -> Card | None:
        """A follow-up to an agent that does not take text: refused, naming its input form."""
        if not ask.follow_up or spec.input is None:
            return None
        example = f" For example: {spec.example}" if spec.example else ""
        return failure_card(f"{spec.name} takes JSON that matches {spec.input_schema_file or 'its input schema'}, "
                            f"not a reply in words; mention the bot with {spec.name} and the JSON to ask it again."
                            f"{example}", code="follow_up_not_text")

    async def stop(self, ask: Ask, recorded: Callable[[], Awaitable[Any]]) -> None:
        """End the thread's conversation; the asker is told (privately) either way. `recorded`: the
        flow's once-only ack of the delivery (awaited once it is journaled)."""
        cid = self.cid(ask)
        if not await self.flow._first(ask, recorded):  # type: ignore[arg-type]
            return
        try:
            stopped = cid is not None and await self.flow.jobs.call(
                lambda: self.flow.runtime.conversations.stop(cid, by=ask.requester))
        except ConversationBusy:
            card = Card(form="text", title="Not stopped yet", text=_BUSY_STOP, text_format="plain")
            await self.flow.wire.show_help(ask, await self.flow.jobs.call(self.flow.draw, card))
            return
        text = ("The conversation in this thread has ended: replies here are not asks any more. Mention the "
                "bot to start again." if stopped else "There is no conversation in this thread to stop.")
        card = Card(form="text", title="Conversation ended" if stopped else "Nothing to stop", text=text,
                    text_format="plain")
        await self.flow.wire.show_help(ask, await self.flow.jobs.call(self.flow.draw, card))

    async def stop_click(self, cid: str, by: str, reply: object) -> None:
        """The Stop button: end the conversation it names, and say so to the clicker."""
        try:
            stopped = await self.flow.jobs.call(lambda: self.flow.runtime.conversations.stop(cid, by=by))
        except ConversationBusy:
            await self.flow.wire.notice(reply, _BUSY_STOP)
            return
        await self.flow.wire.notice(reply, "The conversation has ended: replies in this thread are not asks any "
                                    "more." if stopped else "This conversation had ended already.")

    async def turn(self, ask: Ask, job_id: str, agent: str) -> str | None:
        """Journal a new job asked in a thread as the conversation's next turn; its id."""
        cid = self.cid(ask)
        if cid is None:
            return None
        await self.flow.jobs.call(lambda: self.flow.runtime.conversations.add_turn(cid, job_id, agent,
                                                                                  by=ask.requester))
        return cid
