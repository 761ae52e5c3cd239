"""A model's text answer published on the job's event stream while it is written (`TextDelta`).

Why here and not in each kind: the plain model agent (edge.runtime.kinds) and the tool loop
(edge.runtime.tool_loop) both stream, and both must follow the same two rules:

- **Best effort, never the record.** Deltas are events, not journal entries: the answer the job
  records (the model request's step, the job's output) is the whole text, and a reader that misses
  a delta learns it from the next one's `offset`. Publishing never fails the job.
- **Secrets never leave.** The text is redacted as a whole (the same `Redactor` as the answer), and
  the last `Redactor.hold` characters are held back until more text (or the end) shows whether they
  begin a secret, so no part of one is ever published.

Deltas are coalesced: at most one every EVERY_S (the first at once), so a fast model does not send an
event per token across replicas. A new model request (`begin`) starts the text again at offset 0:
readers replace what they showed from that offset (`shown[:offset] + text`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from oz0.edge.runtime.events import TextDelta
from oz0.edge.runtime.redact import Redactor

__all__ = ["EVERY_S", "TextOut", "TextSink"]

EVERY_S = 0.05   # deltas of one job are published at most this often

TextSink = Callable[[TextDelta], None]


class TextOut:
    """One answer's text as it arrives (`add`), published through `sink` redacted and coalesced."""

    def __init__(self, sink: TextSink | None, redactor: Redactor | None = None, *, every_s: float = EVERY_S) -> None:
        self.sink = sink
        self.redactor = redactor
        self.every_s = every_s
        self.raw = ""
        self.sent = ""          # what readers were given, as they hold it
        self._last = -float("inf")
        self._timer: asyncio.TimerHandle | None = None

    def begin(self) -> None:
        """A new model request: its text replaces the previous one's (it may have called tools)."""
        self.raw = ""

    def add(self, piece: str) -> None:
        if self.sink is None or not piece:
            return
        self.raw += piece
        wait = self._last + self.every_s - time.monotonic()
        if wait <= 0:
            self._flush(final=False)
        elif self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(wait, self._flush, False)

    def end(self) -> None:
        """The request ended: everything held back is published."""
        self._flush(final=True)

    def _flush(self, final: bool) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self.sink is None:
            return
        text = self.raw
        if self.redactor:
            text = self.redactor.text(text)
            if not final:
                text = text[:max(0, len(text) - self.redactor.hold)]
        if text == self.sent and not (final and text):
            return
        same = _common_prefix(self.sent, text)
        self.sent = text
        self._last = time.monotonic()
        self.sink(TextDelta(text[same:], same, final))   # JobEvents.publish never raises


def _common_prefix(a: str, b: str) -> int:
    n = min(len(a), len(b))
    if a[:n] == b[:n]:
        return n
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i
