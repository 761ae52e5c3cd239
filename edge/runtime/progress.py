"""Where a running job's progress is kept: its journal row, for readers on other replicas.

The value itself is edge.model.progress.Progress, from every source alike (a command's stderr lines, MCP
`notifications/progress`, a python agent's `ctx.progress`, a flow's "step 2 of 3: approve");
`JournalProgress` keeps the latest in the job's row and passes every report on to the caller's sink.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from oz0.edge.model.progress import Progress, ProgressSink

if TYPE_CHECKING:
    from oz0.edge.runtime.store import Store

__all__ = ["JOURNAL_EVERY_S", "JournalProgress"]

log = logging.getLogger(__name__)

JOURNAL_EVERY_S = 2.0       # a job's latest progress is written to the journal at most this often


class JournalProgress:
    """A sink that keeps a job's latest progress in its journal row (`jobs.progress`) for readers on
    any replica, publishes every report on the job's event stream (`publish`), and passes it on to
    `then` (the caller's sink, if any).

    Written at most every JOURNAL_EVERY_S: a report inside the window is written when it ends (by a
    timer thread, one per job at most), unless a newer one came; never once the job has ended."""

    def __init__(self, store: Store, job_id: str, then: ProgressSink | None = None, *,
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

    def close(self) -> None:
        """The job's run has ended: a report still waiting for its window is dropped with its timer (the
        job's end replaces it), so no write outlives the run, nor the store at a shutdown."""
        with self._lock:
            timer, self._timer, self._pending = self._timer, None, None
        if timer is not None:
            timer.cancel()

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
