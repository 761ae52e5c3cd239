"""A text answer shown in chat while the model writes it, once for every channel (the ask flow's
`follow` hands it the job's `TextDelta` and `Progress` events).

- **Where.** A wire that streams into a message of its own (`StreamingWire`: Slack's native
  streaming in the thread of the ask, a Discord message posted then edited) gets `stream_start`
  with the first text, then `stream_update`; its streamed message is journaled as the job's reply
  target, so whichever replica delivers the card ends that message with it (`deliver`), and a
  restart ends it "(interrupted; ask again)" once (`stream_cut`). Any other wire, or a reply that
  does not stream (a private answer), has its working message redrawn through `ChatWire.progress`
  with the text so far: post then edit.
- **How often.** One call at a time per message, at most one every `StreamingWire.stream_every_s`
  (Slack 0.25 s) or EDIT_EVERY_S (an edit a second), counted from the end of the last; a rate limit
  pauses it for the platform's Retry-After; the latest text always wins.
- **Safe.** What is shown stops before a token or a link that has not ended
  (`renderers.stream_text.showable`); a redrawn message is drawn by the card renderer, an appended
  piece escaped by `markdown_safe`. The final message is the card, drawn as every card is.
- **Steps.** While the text is written, the job's latest progress (the tool loop's steps) is the
  status line under it: drawn into a redrawn message, and handed to a native stream as
  `StreamView.step` (a new step is a call of its own even with no new text).
- **The end, on any replica.** The replica that streamed the text appends the rest of it when the
  job ends (`finish_text`, on its `JobEnded`) and marks the journaled reply `whole`; the replica that
  delivers the card (the one whose workflow finished the job: this one or another) ends the streamed
  message with the card's tail under the text (`StreamEnd`), waiting up to WHOLE_WAIT_S for that
  mark. Without it (the streaming replica is gone) the message becomes the whole card.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from oz0.adapters.chat.cards import streaming_card
from oz0.adapters.chat.wire import RateLimited, StreamEnd, StreamingWire, StreamView
from oz0.adapters.chat.working import due
from oz0.edge import Card
from oz0.edge.model.progress import Progress
from oz0.edge.model.reply_ref import ReplyRef
from oz0.edge.runtime.events import TextDelta
from oz0.edge.runtime.metrics import count_channel_error
from oz0.edge.runtime.transient import is_transient
from oz0.renderers.rendered import Rendered
from oz0.renderers.stream_text import SafeChunks, markdown_safe, showable

if TYPE_CHECKING:
    from oz0.adapters.chat.flow import AskFlow

__all__ = ["EDIT_EVERY_S", "INTERRUPTED_NOTE", "MAX_STREAM_CHARS", "WHOLE_WAIT_S", "AnswerStream", "end_stream",
           "safe_whole", "shown_whole", "tail_card", "wait_whole"]

EDIT_EVERY_S = 1.0              # a message redrawn with the text so far: at most one edit a second
INTERRUPTED_NOTE = "(interrupted; ask again)"
MAX_STREAM_CHARS = 40_000       # the text kept for a message while it is written (the card has the rest)
WHOLE_WAIT_S = 5.0              # how long the replica delivering a card waits for another to finish its text
WHOLE_POLL_S = 0.1
WHOLE = "oz0_stream_whole"      # the flow's mark in a streamed reply's reference: all its text is appended


def tail_card(card: Card) -> Card | None:
    """The card as it goes under its streamed text: without the text (nor its title), the rest kept;
    None when nothing would be left to show."""
    if not (card.actions or card.feedback or card.notes or card.files or card.status or card.attachment):
        return None
    return replace(card, text="", title=None)


def safe_whole(card: Card) -> str:
    """The whole answer of a text card, made safe as the streamed pieces are."""
    return markdown_safe(card.text) if card.form == "text" else ""


def shown_whole(ref: ReplyRef | None) -> bool:
    """Whether a journaled reply says its streamed message has all of its text."""
    return ref is not None and bool(ref.data.get(WHOLE))


async def end_stream(flow: AskFlow, stream: Any, card: Card, rendered: Rendered, answer: AnswerStream | None,
                     job_id: str) -> None:
    """A job's streamed message ended with its `card` (`rendered`, as the flow drew it): the card's tail
    under the text once every piece of the text is in it (appended here, or by the replica that
    streamed it), else the whole card in its place."""
    wire = flow.wire
    assert isinstance(wire, StreamingWire)
    if card.form != "text":
        whole = False
    elif answer is not None and answer.stream is not None:
        whole = answer.appended
    else:
        whole = await wait_whole(flow, job_id)
    under = tail_card(card)
    tail = await flow.jobs.call(flow.draw, under) if under is not None else None
    await wire.stream_end(stream, StreamEnd(rendered, tail, safe_whole(card), whole))


async def wait_whole(flow: AskFlow, job_id: str) -> bool:
    """Wait (up to WHOLE_WAIT_S) for the replica streaming the job's text to mark it whole."""
    deadline = time.monotonic() + WHOLE_WAIT_S
    while True:
        job = await flow.jobs.call(flow.runtime.job, job_id)
        if job is not None and shown_whole(job.reply_to):
            return True
        if time.monotonic() > deadline:
            flow.log.warning("job %s: the replica streaming its answer did not finish it within %g s; its message "
                             "becomes the card", job_id, WHOLE_WAIT_S)
            return False
        await asyncio.sleep(WHOLE_POLL_S)


class AnswerStream:
    """One job's text answer as it is written, shown where it was asked."""

    def __init__(self, flow: AskFlow, reply: Any, agent: str, job_id: str) -> None:
        self.flow, self.reply, self.agent, self.job_id = flow, reply, agent, job_id
        wire = flow.wire
        self.native: StreamingWire | None = wire if isinstance(wire, StreamingWire) else None
        self.every_s = self.native.stream_every_s if self.native is not None else EDIT_EVERY_S
        self.raw = ""
        self.whole = False                  # the model's request ended: all of `raw` may show
        self.status: Progress | None = None
        self.step_shown = ""                # the step line a native stream was last given
        self.chunks = SafeChunks()
        self.stream: Any | None = None      # the streamed message's reply target, once started
        self.redraw = self.native is None   # post then edit the working message
        self.next_at = 0.0
        self.dirty = False
        self.closed = False
        self.appended = False               # the rest of the final text was appended: the message has it all
        self.closing = asyncio.Lock()
        self.stopping = asyncio.Event()
        self.task: asyncio.Task[Any] | None = None

    @property
    def writing(self) -> bool:
        """Whether the model has begun its text (then progress is the status line under it)."""
        return bool(self.raw)

    def text(self, delta: TextDelta) -> None:
        self.raw = (self.raw[:delta.offset] + delta.text)[:MAX_STREAM_CHARS]
        self.whole = delta.final
        self._kick()

    def step(self, progress: Progress) -> None:
        self.status = progress
        self._kick()

    def _kick(self) -> None:
        if self.closed:
            return
        self.dirty = True
        if self.task is None or self.task.done():
            self.task = self.flow.tasks.spawn(self._pump(), name=f"{self.flow.wire.platform}-stream-{self.job_id}")

    async def _pump(self) -> None:
        while not self.closed and self.dirty:
            if not await due(self.next_at, self.stopping):
                continue
            self.dirty = False
            sent = await self._send()
            if sent:
                self.next_at = max(self.next_at, time.monotonic() + self.every_s)

    async def _send(self) -> bool:
        """One call showing the text so far; False when there was nothing new to show."""
        shown = self.raw[:showable(self.raw, final=self.whole)]
        if not shown.strip():
            return False
        before = (self.chunks.shown, self.chunks.prefix)
        piece = "" if self.redraw else self.chunks.take(self.raw, final=self.whole)
        status = self.status
        line = status.message if status is not None else ""
        view = StreamView(piece, lambda: self._draw(shown, status), step=line)
        try:
            if self.redraw:
                await self.flow.wire.progress(self.reply, view.draw())
            elif self.stream is None:
                assert self.native is not None
                self.stream = await self.native.stream_start(self.reply, view)
                if self.stream is None:   # this reply does not stream: redraw the working message
                    self.redraw, self.dirty, self.every_s = True, True, EDIT_EVERY_S
                    return False
                await self._journal(self.stream)
            elif piece or line != self.step_shown:
                assert self.native is not None
                await self.native.stream_update(self.stream, view)
            else:
                return False
            self.step_shown = line
        except RateLimited as exc:
            self.flow.log.info("%s rate-limited the streamed answer of job %s: none for %g s", self.flow.wire.name,
                               self.job_id, exc.retry_after_s)
            self.chunks.shown, self.chunks.prefix = before
            self.next_at = time.monotonic() + exc.retry_after_s
            self.dirty = True
            return False
        except Exception as exc:
            self.flow.log.warning("could not stream the answer of job %s: %s", self.job_id, exc)
            count_channel_error(self.flow.wire.platform, type(exc).__name__)
            if self.stream is None and not self.redraw:   # it would not start: redraw the working message
                self.redraw, self.dirty, self.every_s = True, True, EDIT_EVERY_S
            elif not self.redraw:
                self.closed = True   # a streamed message that broke: the card still comes, by `deliver`
            return True
        return True

    def _draw(self, shown: str, status: Progress | None) -> Rendered:
        return self.flow.draw(streaming_card(self.agent, shown, status))

    async def _journal(self, stream: Any, *, whole: bool = False) -> None:
        """The streamed message becomes the job's reply target: its card ends it, on any replica."""
        ref: ReplyRef = stream.to_ref()
        if whole:
            ref = ReplyRef(ref.platform, ref.version, {**ref.data, WHOLE: True})
        try:
            await self.flow.jobs.call(self.flow.runtime.set_reply_to, self.job_id, ref)
        except Exception as exc:
            if not is_transient(exc):
                raise
            self.flow.log.warning("job %s: could not journal its streamed message (%s)", self.job_id,
                                  type(exc).__name__)

    async def close(self, final_text: str | None = None) -> Any | None:
        """No more updates (the one under way finishes); with `final_text` (the card's), the rest of it
        appended to a streamed message first, so the whole text shows before the card's tail goes
        under it (`appended`). The streamed message's reply target, if any; what follows on the same
        message comes at least `every_s` after the last update. Called again, it waits for the first."""
        async with self.closing:
            self.closed = True
            self.stopping.set()
            if self.task is not None:
                await asyncio.gather(self.task, return_exceptions=True)
            if self.stream is not None and final_text is not None and not self.appended and not self.chunks.rewound:
                piece = self.chunks.rest(final_text)
                try:
                    if piece:
                        await self._paced()
                        assert self.native is not None
                        await self.native.stream_update(self.stream, StreamView(piece, lambda: self._draw(final_text,
                                                                                                          None)))
                        self.next_at = time.monotonic() + self.every_s
                    self.appended = True
                except Exception as exc:   # the whole card replaces the message instead
                    self.flow.log.info("could not append the rest of job %s's answer: %s", self.job_id, exc)
            if self.stream is not None or self.redraw:
                await self._paced()
            return self.stream

    async def finish_text(self) -> None:
        """The job ended (its `JobEnded` read here): the rest of a text this replica streamed appended,
        and the journaled reply marked whole, for the replica that delivers the card, here or not."""
        if self.stream is None or self.appended:
            return
        job = await self.flow.jobs.call(self.flow.runtime.job, self.job_id)
        if job is None or not job.finished:
            return
        card = await self.flow.jobs.call(self.flow.runtime.card, job)
        if card.form != "text":
            return   # its card replaces the streamed message, wherever it is delivered
        stream = await self.close(card.text)
        if stream is not None and self.appended:
            await self._journal(stream, whole=True)

    async def _paced(self) -> None:
        wait = self.next_at - time.monotonic()
        if wait > 0:
            await asyncio.sleep(wait)
