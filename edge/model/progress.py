"""What a running job says it is doing: one `Progress` value, from every source alike.

Sources: a command agent's stderr lines, MCP `notifications/progress` (progress, total, message), a
python agent's `ctx.progress(message, done, total)` and a flow's "step 2 of 3: approve". Every sink
(the chat working message, `oz0 run`, the console through the journal) gets the same value and draws
it its own way (edge.runtime.progress.JournalProgress keeps the latest in the job's row).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["MAX_PROGRESS_CHARS", "Progress", "ProgressSink"]

MAX_PROGRESS_CHARS = 1000   # a progress message is cut to this many characters


@dataclass(frozen=True)
class Progress:
    """One report of a job's progress: what it does now and, when it knows, how far it is (`done` of
    `total`, in whatever unit the source counts: items, steps, percent)."""

    message: str
    done: float | None = None
    total: float | None = None

    @classmethod
    def of(cls, message: Any, done: Any = None, total: Any = None) -> Progress:
        """A Progress from what a source sent: the message cut to MAX_PROGRESS_CHARS, a count that is
        not a finite number >= 0 dropped (a source's bad number must not fail its job)."""
        return cls(str(message if message is not None else "")[:MAX_PROGRESS_CHARS], _count(done), _count(total))

    @property
    def fraction(self) -> float | None:
        """How far, 0..1, when both counts are known and the total is positive."""
        if self.done is None or not self.total:
            return None
        return max(0.0, min(1.0, self.done / self.total))

    def counts(self) -> str:
        """`3/10`, `3` with no total, or "" with no count."""
        if self.done is None:
            return ""
        return f"{_num(self.done)}/{_num(self.total)}" if self.total is not None else _num(self.done)

    def bar(self, width: int = 10) -> str:
        """`3/10 ▓▓▓░░░░░░░` as text (the counts alone without a total), "" with no count."""
        fraction = self.fraction
        if fraction is None:
            return self.counts()
        filled = round(fraction * width)
        return f"{self.counts()} {'▓' * filled}{'░' * (width - filled)}"

    def summary(self) -> str:
        """The message and the bar, as chat and the console show it: `reading · 3/10 ▓▓▓░░░░░░░`."""
        return " · ".join(p for p in (self.message, self.bar()) if p)

    def line(self) -> str:
        """The message with its counts: `reading files (3/10)`."""
        counts = self.counts()
        if not counts:
            return self.message
        return f"{self.message} ({counts})" if self.message else counts

    def to_dict(self) -> dict[str, Any]:
        return {"message": self.message, "done": self.done, "total": self.total}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> Progress | None:
        if not isinstance(data, Mapping):
            return None
        return cls.of(data.get("message"), data.get("done"), data.get("total"))


ProgressSink = Callable[[Progress], Any]


def _count(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    number = float(value)
    return number if math.isfinite(number) and number >= 0 else None


def _num(value: float | None) -> str:
    if value is None:
        return "?"
    return str(int(value)) if value == int(value) else f"{value:g}"
