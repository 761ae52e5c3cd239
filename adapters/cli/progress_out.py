"""How `oz0 run` shows a job's progress on stderr: a `rich.progress` bar on a terminal, plain lines
(`… reading files (3/10)`) otherwise, so a log or a pipe gets every report and no control codes.

rich is imported when the first report is drawn as a bar, never at start (tests/adapters/cli/test_startup.py).
"""

from __future__ import annotations

import sys
import threading
from typing import IO, Any

from oz0.edge.model.progress import Progress
from oz0.edge.runtime.events import TextDelta

__all__ = ["TerminalProgress", "TerminalText"]


class TerminalProgress:
    """The `on_progress` of `oz0 run`; `close()` once the job ended (the bar goes, the card follows)."""

    def __init__(self, stream: IO[str] | None = None, *, bar: bool | None = None) -> None:
        self.stream = stream or sys.stderr
        self.bar = self.stream.isatty() if bar is None else bar
        self._lock = threading.Lock()
        self._rich: Any = None
        self._task: Any = None
        self._closed = False
        self._paused = False

    def __call__(self, progress: Progress) -> None:
        with self._lock:  # reports come from the agent's thread, the jobs loop or the MCP loop
            if self._closed or self._paused:
                return
            if not self.bar:
                print(f"… {progress.line()}", file=self.stream, flush=True)
                return
            if self._rich is None:
                self._start()
            self._rich.update(self._task, description=progress.message or "working",
                              completed=progress.done or 0, total=progress.total)

    def _start(self) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, SpinnerColumn, TextColumn, TimeElapsedColumn
        from rich.progress import Progress as Bar

        console = Console(file=self.stream, stderr=self.stream is sys.stderr)
        self._rich = Bar(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                         TimeElapsedColumn(), console=console, transient=True)
        self._task = self._rich.add_task("working", total=None)
        self._rich.start()

    def pause(self, paused: bool) -> None:
        """Hold the bar while a question is asked on this terminal (it would redraw over the prompt);
        reports that come meanwhile are dropped, the next one after draws the bar again."""
        with self._lock:
            self._paused = paused
            if paused and self._rich is not None:
                self._rich.stop()
                self._rich = None

    def close(self) -> None:
        with self._lock:
            self._closed = True
            if self._rich is not None:
                self._rich.stop()


class TerminalText:
    """A model's text answer printed on stderr as it is written, when stderr is a terminal (the card
    follows on stdout, whole). Each piece is cleaned as the terminal renderer cleans text (no control
    sequence), and printed only up to the last token that has ended (`renderers.stream_text`); a
    model request that starts its text over starts a new paragraph."""

    def __init__(self, stream: IO[str] | None = None, *, live: bool | None = None,
                 pause: Any = lambda paused: None) -> None:
        self.stream = stream or sys.stderr
        self.live = self.stream.isatty() if live is None else live
        self.pause = pause
        self.raw = ""
        self.printed = 0
        self._lock = threading.Lock()

    def __call__(self, delta: TextDelta) -> None:
        from oz0.renderers.safety import clean
        from oz0.renderers.stream_text import showable

        with self._lock:
            if not self.raw and not self.printed:
                self.pause(True)   # the bar would draw over the text
            if delta.offset < self.printed:
                self.stream.write("\n\n")
                self.printed = 0
                self.raw = ""
            self.raw = self.raw[:delta.offset] + delta.text
            cut = showable(self.raw)
            if cut > self.printed:
                self.stream.write(clean(self.raw[self.printed:cut]))
                self.stream.flush()
                self.printed = cut

    def close(self) -> None:
        from oz0.renderers.safety import clean

        with self._lock:
            if self.raw:
                self.stream.write(clean(self.raw[self.printed:]) + "\n")
                self.stream.flush()
                self.printed, self.raw = 0, ""
