"""How `oz0 run` shows a job's progress on stderr: a `rich.progress` bar on a terminal, plain lines
(`… reading files (3/10)`) otherwise, so a log or a pipe gets every report and no control codes.

rich is imported when the first report is drawn as a bar, never at start (tests/adapters/cli/test_startup.py).
"""

from __future__ import annotations

import sys
import threading
from typing import IO, Any

from oz0.edge.model.progress import Progress

__all__ = ["TerminalProgress"]


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
