"""What the ask flow and a chat channel say to each other, in neutral terms.

A channel (Slack, Discord) translates a platform request into an `Ask` or a `ShareClick` and hands
it to the flow (`flow.AskFlow`); the flow decides and calls back through `ChatWire`, whose methods
are platform calls out ("answer privately", "show working", "replace it with this card"). The flow
reaches the edge only through `ChatRuntime`, exactly the part of `Runtime` it uses.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

from oz0.edge import ChatRuntime
from oz0.edge.model.reply_ref import ReplyRef
from oz0.edge.runtime.access import Asker
from oz0.edge.runtime.questions import RefusedWhy
from oz0.renderers.rendered import Rendered

__all__ = ["AnswerClick", "Ask", "ButtonClick", "ChatRuntime", "ChatWire", "RateLimited", "Reply", "ShareClick",
           "StreamEnd", "StreamView", "StreamingWire", "Syntax", "WireRefused"]


class Reply(Protocol):
    """Where an answer goes, as the platform needs it; journaled with the job as the wire's versioned
    reply reference (`to_ref`, read back by `ChatWire.reply_from`)."""

    def to_ref(self) -> ReplyRef: ...


@dataclass(frozen=True)
class Ask:
    """One ask from a chat channel. `help` asks for the help card (of `agent` alone, when named).

    `delivery` is the platform's id for this delivery (Slack's event_id or trigger_id, Discord's
    interaction id): a redelivery carries the same one and is answered by nobody a second time.
    `thread` names the thread the answer goes to (a conversation there: `conversing`); a
    `follow_up` is a reply in it without a mention (`agent` None: the conversation's agent).
    `chain` is for a reply chain outside threads (a reply to the bot's answer message): the delivery
    id of the ask that answer answered, whose conversation this message continues.
    """

    agent: str | None
    text: str
    asker: Asker
    delivery: str
    reply: Any
    help: bool = False
    source: Literal["command", "mention", "modal", "reply"] = "command"
    thread: str | None = None
    follow_up: bool = False
    chain: str | None = None

    @property
    def requester(self) -> str:
        return f"{self.asker.platform}:{self.asker.user}"

    @property
    def channel_name(self) -> str:
        return f"{self.asker.platform}:{self.asker.channel}"


@dataclass(frozen=True)
class ShareClick:
    """A click on "Share in channel": which job, who clicked, and where to answer the clicker."""

    job_id: str
    asker: Asker
    reply: Any


@dataclass(frozen=True)
class ButtonClick:
    """A click on one of an answer's own buttons (its card's `Action`: Stop, 👍 / 👎), by its action id
    and value as the card carried them; `reply` is where to answer the clicker privately."""

    action: str
    value: str
    asker: Asker
    reply: Any


@dataclass(frozen=True)
class AnswerClick:
    """A click on a question's button, or the submit of its modal (`form`: the platform's own
    submission, read by `ChatWire.submitted`). `pick` is the button's value read back
    (`adapters.chat.asking.AnswerPick`); `reply` is where to answer the clicker privately."""

    pick: Any
    asker: Asker
    reply: Any
    form: Any = None


@dataclass(frozen=True)
class Syntax:
    """How people type an ask on this platform, for the help card and the hints."""

    example: Callable[[str, str], str]          # (agent, input) -> what to type
    help_notes: tuple[str, ...]                 # under the help card
    unknown_hint: str                           # after "There is no agent 'x'. Agents you may run here: ..."
    help_form: Literal["table", "key_values"] = "table"


class WireRefused(Exception):
    """The platform refused what the channel sent (its words, never a credential)."""


class RateLimited(Exception):
    """The platform asked the channel to wait `retry_after_s` before its next call of this kind."""

    def __init__(self, retry_after_s: float) -> None:
        super().__init__(f"rate limited: retry after {retry_after_s:g} s")
        self.retry_after_s = retry_after_s


class ChatWire(Protocol):
    """The platform calls the flow makes; a channel implements each as one or two API requests."""

    platform: str      # the renderer's key and the requester prefix: "slack", "discord"
    name: str          # for people: "Slack", "Discord"
    syntax: Syntax

    async def with_groups(self, asker: Asker) -> Asker:
        """The asker with the groups (user groups, roles) access rules may name."""
        ...

    async def display_name(self, user: str, workspace: str | None) -> str | None:
        """How the platform names this user for people (None: it will not say); `names.Names` caches it."""
        ...

    def audit_detail(self, ask: Ask, asker: Asker) -> dict[str, Any]:
        """What the audit log records of a denied ask, in the platform's words."""
        ...

    async def refuse(self, ask: Ask, message: str, rendered: Rendered) -> None:
        """Tell the asker alone why not (unknown agent, access denied)."""
        ...

    async def show_help(self, ask: Ask, rendered: Rendered) -> None:
        """Show the help card to the asker alone."""
        ...

    async def ignore(self, ask: Ask) -> None:
        """A redelivery: answer the platform (an ack) and nobody else."""
        ...

    def working_first(self, ask: Ask) -> bool:
        """Whether "working..." must be shown before the job is journaled (the platform's deadline
        for its first answer is too short to wait behind a journal write under load)."""
        ...

    async def working(self, ask: Ask, rendered: Rendered) -> Any:
        """Show that the job runs (`rendered`: the working card, drawn for this platform); the reply
        target, updated if the platform named the message."""
        ...

    def private(self, reply: Any) -> bool:
        """Whether a card delivered to `reply` now is seen by the asker alone (then it can be shared)."""
        ...

    def files_place(self, reply: Any, *, private: bool, job_id: str) -> tuple[Any, str | None]:
        """Where the files beside job `job_id`'s card delivered to `reply` will go (before the card is
        drawn, so its one drawing says so): the reply target updated, and those words ("uploaded in
        this thread"; a platform that cannot attach files to a message names the job's page)."""
        ...

    async def deliver(self, reply: Any, rendered: Rendered) -> None:
        """Replace the working message with the card and upload its files. WireRefused if refused."""
        ...

    async def progress(self, reply: Any, rendered: Rendered) -> None:
        """Show a progress card in place of the working message (where the platform allows it);
        RateLimited when the platform says to wait (the flow then sends none for that long)."""
        ...

    async def notice(self, reply: Any, text: str) -> None:
        """One line to the person who clicked, seen by them alone."""
        ...

    async def share(self, click: ShareClick, public: Rendered, marked: Rendered) -> None:
        """Post `public` for everyone in the channel; show `marked` in place of the private copy."""
        ...

    def share_note(self, user: str, agent: str) -> str | None:
        """The note under a shared card ("Asked by ..."), if the platform does not show who asked."""
        ...

    def reply_from(self, ref: ReplyRef) -> Any:
        """A journaled reply target (`Reply.to_ref()`) read back; ReplyRefError for a version this
        release does not read."""
        ...

    # -- questions (a job that asks someone) --

    async def post_question(self, reply: Any, rendered: Rendered, *, private: bool) -> dict[str, Any]:
        """Show a job's question where it was asked (to the asker alone when `private`); what names
        the message for `update_question`, as JSON."""
        ...

    async def update_question(self, reply: Any, shown: Mapping[str, Any], rendered: Rendered, *,
                              via: Any = None) -> None:
        """Replace the question's message with its answered card; `via` is the reply of the click
        that answered it, when it came from that message."""
        ...

    async def hold(self, click: AnswerClick) -> None:
        """Acknowledge a click or submit within the platform's deadline, before the answer is recorded."""
        ...

    async def open_form(self, click: AnswerClick, question: Any) -> None:
        """Open the modal of `question` for the clicker (the interaction's first answer)."""
        ...

    def submitted(self, click: AnswerClick, answer_schema: Mapping[str, Any]) -> Mapping[str, Any]:
        """A modal's submission as field -> what was entered (`asking.content_from` reads it)."""
        ...

    async def answer_refused(self, click: AnswerClick, message: str, *, why: RefusedWhy, question: Any) -> None:
        """Tell the clicker alone why their answer was not taken (`why`: not_answerer, not_waiting
        or invalid, see edge.runtime.questions.AnswerRefused; for a modal's answer the schema refused, keep the modal open with the path and rule where the
        platform can). `question` is the open question, None when there is none."""
        ...

    async def answer_taken(self, click: AnswerClick) -> None:
        """The answer was recorded: finish the interaction (close the modal)."""
        ...



@dataclass(frozen=True)
class StreamView:
    """A text answer as far as it may be shown (adapters.chat.streaming): `piece`, the safe text to
    append since the last view (for a platform that appends), and `draw()`, the whole message so far
    drawn as a card (for one that redraws); `step`, the job's latest step (a tool the model calls) as one
    line, for a platform that shows steps beside the streamed text (Slack's task_update chunks)."""

    piece: str
    draw: Callable[[], Rendered]
    step: str = ""


@dataclass(frozen=True)
class StreamEnd:
    """How a streamed answer ends (adapters.chat.streaming): `tail`, the card without its text (its
    status, notes, actions and feedback), goes under the streamed text when `whole` (every piece of the
    text was appended, by whichever replica streamed it); else the message becomes `card`, the whole
    card. `text` is the whole answer made safe as the pieces were, for a platform whose end carries
    the whole text (Teams)."""

    card: Rendered
    tail: Rendered | None   # None: nothing goes under the text
    text: str
    whole: bool


@runtime_checkable
class StreamingWire(Protocol):
    """What a wire may add to `ChatWire` to stream a text answer into a message of its own (Slack's
    native streaming, a Discord message posted then edited). A wire without it still streams: the
    flow redraws the working message through `ChatWire.progress`."""

    stream_every_s: float   # the least time between two calls on one streamed message

    async def stream_start(self, reply: Any, view: StreamView) -> Any | None:
        """Start the streamed message where `reply` answers; its reply target (journaled in place of
        `reply`, `streaming` True), or None where this reply does not stream (then the flow redraws)."""
        ...

    async def stream_update(self, stream: Any, view: StreamView) -> None:
        """Show `view` in the streamed message; RateLimited when the platform says to wait."""
        ...

    def streaming(self, reply: Any) -> bool:
        """Whether `reply` is a streamed message (then `deliver` ends it with the card)."""
        ...

    async def stream_cut(self, stream: Any, note: str) -> None:
        """End a streamed message whose job was cut short, what it showed kept, `note` after it."""
        ...

    async def stream_end(self, stream: Any, end: StreamEnd) -> None:
        """End a streamed message with its job's card (`StreamEnd`), on whichever replica finished the job."""
        ...
