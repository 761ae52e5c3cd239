"""Teams' streaming protocol for a text answer in a personal chat, as connector activities.

Teams streams a bot message in one-on-one chats only (a channel or group chat keeps post then
edit, the flow's redraw). The protocol (Microsoft's "Stream bot messages", REST API):

- **Start.** A `typing` activity POSTed to the conversation with the first text and the entity
  `{"type": "streaminfo", "streamType": "streaming", "streamSequence": 1}`; the 201 answer's `id`
  is the `streamId` every later activity names.
- **Continue.** `typing` activities carrying the whole text so far (each contains the one before:
  pieces are only ever appended), the `streamId` and the next `streamSequence` (1, 2, 3, ...), one at
  a time and at most one a second (Teams' throttle, `STREAM_EVERY_S`). A 202 with
  `ContentStreamSequenceOrderPreConditionFailed` is an update Teams dropped: the next one carries the
  whole text anyway. A 429 is `RateLimited` for its Retry-After.
- **End.** A `message` activity with `streamType: "final"` and no sequence: its text the whole
  streamed text, the answer's card attached (attachments may come only in the final message).
- **Limits.** Two minutes from the start (`STREAM_MAX_S`): past it Teams refuses with 403
  "Content stream finished due to exceeded streaming time.", so no update is sent after
  `STREAM_MAX_S - STREAM_MARGIN_S`, and a final refused so updates the streamed message in place
  (PUT). The person's Stop button: 403 "Content stream was cancelled by user."; no more updates,
  and the card comes as a message of its own. A final whose text and card would pass Teams' message
  size (`MAX_BYTES`) ends the stream with the text alone, the card following as its own message.

The SDK's `StreamingResponse` needs the live turn; an answer is streamed after the turn was
acknowledged (and may be ended by another replica), so the activities are built here and sent
through the SDK's connector client like every other call of the wire.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

from oz0.renderers.teams_adaptive import MAX_BYTES, payload_bytes
from oz0.renderers.teams_text import shown

__all__ = ["MAX_STREAMS", "STREAM_EVERY_S", "STREAM_MAX_S", "StreamState", "Streams", "final_activity", "fits",
           "piece_text", "refusal", "typing_activity"]

STREAM_EVERY_S = 1.0        # Teams: "The throttling limit is 1 request per second"
STREAM_MAX_S = 120.0        # Teams: a stream ends within "the strict time limit of two minutes"
STREAM_MARGIN_S = 10.0      # no update this close to that limit: the final must still be accepted
MAX_STREAMS = 1_000         # streams this replica remembers the text of; past it the oldest go first
TIMED_OUT = "exceeded streaming time"
CANCELLED = "cancelled by user"
DROPPED = "ContentStreamSequenceOrderPreConditionFailed"


@dataclass
class StreamState:
    """What one streamed message has shown: its text and the last sequence number sent."""

    text: str = ""
    sequence: int = 0
    started: float = field(default_factory=time.monotonic)
    ended: str | None = None       # why Teams takes no more of it: "cancelled" (Stop), "timed_out", "refused"

    def late(self) -> bool:
        return time.monotonic() - self.started > STREAM_MAX_S - STREAM_MARGIN_S


class Streams:
    """The streams this replica is writing, by streamId (bounded: MAX_STREAMS, oldest first out)."""

    def __init__(self) -> None:
        self._by_id: dict[str, StreamState] = {}

    def begin(self, stream_id: str, state: StreamState) -> None:
        self._by_id[stream_id] = state
        while len(self._by_id) > MAX_STREAMS:
            self._by_id.pop(next(iter(self._by_id)))

    def get(self, stream_id: str) -> StreamState | None:
        return self._by_id.get(stream_id)

    def end(self, stream_id: str) -> StreamState | None:
        return self._by_id.pop(stream_id, None)


def piece_text(piece: str) -> str:
    """A safe piece of the answer (`renderers.stream_text.SafeChunks`, markdown escaped) as Teams
    shows it: invisible characters cleaned, a URL's real host named where it is hidden."""
    return shown(piece)


def typing_activity(text: str, sequence: int, stream_id: str | None) -> dict[str, Any]:
    info: dict[str, Any] = {"type": "streaminfo", "streamType": "streaming", "streamSequence": sequence}
    if stream_id is not None:
        info["streamId"] = stream_id
    return {"type": "typing", "text": text, "entities": [info]}


def final_activity(stream_id: str, text: str, payload: dict[str, Any] | None) -> dict[str, Any]:
    """The final message: `text` with the card of `payload` attached (or the text alone)."""
    body = {**(payload or {}), "type": "message", "text": text or "\u2026", "textFormat": "markdown"}
    if payload is None:
        body.pop("attachments", None)
    return {**body, "entities": [{"type": "streaminfo", "streamId": stream_id, "streamType": "final"}]}


def fits(activity: dict[str, Any]) -> bool:
    return payload_bytes(activity) <= MAX_BYTES


def refusal(message: str) -> str:
    """What a 403 of the streaming protocol means: "timed_out", "cancelled" or "refused"."""
    text = message
    try:
        error = json.loads(message).get("error") or {}
        text = f"{error.get('code', '')}: {error.get('message', '')}"
    except (ValueError, AttributeError):
        pass
    if TIMED_OUT in text:
        return "timed_out"
    if CANCELLED in text or "canceled by user" in text:
        return "cancelled"
    return "refused"
