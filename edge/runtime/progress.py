"""What a running job says it is doing: one `Progress` value, from every source alike.

Sources: a command agent's stderr lines, MCP `notifications/progress` (progress, total, message), a
python agent's `ctx.progress(message, done, total)` and a flow's "step 2 of 3: approve". Every sink
(the chat working message, `oz0 run`, the console through the journal) gets the same value and draws
it its own way; `JournalProgress` keeps the latest in the job's row for readers on other replicas.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Mapping

if TYPE_CHECKING:
    from oz0.edge.runtime.store import Store

__all__ = ["JOURNAL_EVERY_S", "MAX_PROGRESS_CHARS", "JournalProgress", "Progress", "ProgressSink"]

log = logging.getLogger(__name__)

MAX_PROGRESS_CHARS = 1000   # a progress message is cut to this many characters
JOURNAL_EVERY_S = 2.0       # a job's latest progress is written to the journal at most this often


@dataclass(frozen=True)
class Progress:
    """One report of a job's progress: what it does now and, when it knows, how far it is (`done` of
    `total`, in whatever unit the source counts: items, steps, percent)."""

    message: str
    done: float | None = None
    total: float | None = None

    @classmethod
    def of(cls, message: Any, done: Any = None, total: Any = None) -> "Progress":
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
    def from_dict(cls, data: Mapping[str, Any] | None) -> "Progress | None":
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


class JournalProgress:
    """A sink that keeps a job's latest progress in its journal row (`jobs.progress`) for readers on
    any replica, publishes every report on the job's event stream (`publish`), and passes it on to
    `then` (the caller's sink, if any).

    Written at most every JOURNAL_EVERY_S: a report inside the window is written when it ends (by a
    timer thread, one per job at most), unless a newer one came; never once the job has ended."""

    def __init__(self, store: "Store", job_id: str, then: ProgressSink | None = None, *,
                 publish: Callable[[str, Progress], None] | None = None, every_s: float = JOURNAL_EVERY_S) -> None:
        self.store, self.job_id, self.then, self.every_s = store, job_id, then, every_s
        self.publish = publish
        self._last = -math.inf
        self._pending: Progress | None = None
        self._timer: threading.Timer | None = None
        self._lock = threading.Lock()

    def __call__(self, progress: Progress) -> None:
        now = time.monotonic()
        with self._lock:
            due = now - self._last >= self.every_s and self._timer is None
            if due:
                self._last = now
            else:
                self._pending = progress
                if self._timer is None:
                    self._timer = threading.Timer(max(0.0, self._last + self.every_s - now), self._flush)
                    self._timer.daemon = True
                    self._timer.start()
        if due:
            self._write(progress)
        if self.publish is not None:
            self.publish(self.job_id, progress)
        if self.then is not None:
            self.then(progress)

    def _flush(self) -> None:
        with self._lock:
            progress, self._pending, self._timer = self._pending, None, None
            self._last = time.monotonic()
        if progress is not None:
            self._write(progress)

    def _write(self, progress: Progress) -> None:
        try:
            self.store.update_job(self.job_id, only_if_status=("queued", "running", "waiting"),
                                  progress=progress.to_dict())
        except Exception as exc:  # the journal's progress is a convenience: it never fails the job
            log.warning("could not journal the progress of job %s: %s", self.job_id, type(exc).__name__)
