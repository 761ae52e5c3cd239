"""A streamed Slack answer's steps (the tool loop's "calling lookup") as the tasks of its timeline.

Slack's streaming methods take `chunks` beside the text: a `task_update` chunk (`id`, `title`,
`status` pending / in_progress / complete / error) draws a task card in the streamed message
(`task_display_mode` timeline, the default). Each new step of the job is a task in progress, the one
before it marked complete; stopping the stream marks the last one complete.
"""

from __future__ import annotations

from typing import Any

__all__ = ["MAX_STREAMS", "MAX_TITLE", "StreamSteps"]

MAX_STREAMS = 1_000     # streamed messages whose last step is remembered; past it the oldest go first
MAX_TITLE = 256         # characters of a task's title shown


class StreamSteps:
    """The last step shown in each streamed message (by its ts): (number, title)."""

    def __init__(self) -> None:
        self._last: dict[str, tuple[int, str]] = {}

    def tasks(self, ts: str, title: str) -> list[dict[str, Any]]:
        """The chunks that show `title` as the stream's current step (none when it is the current one)."""
        title = title[:MAX_TITLE]
        last = self._last.get(ts)
        if last is not None and last[1] == title:
            return []
        number = last[0] + 1 if last is not None else 1
        done = [_task(*last, "complete")] if last is not None else []
        return [*done, _task(number, title, "in_progress")]

    def shown(self, ts: str, title: str) -> None:
        """`tasks(ts, title)` reached Slack: `title` is the current step now."""
        title = title[:MAX_TITLE]
        last = self._last.pop(ts, None)
        if last is not None and last[1] == title:
            self._last[ts] = last
            return
        self._last[ts] = ((last[0] if last is not None else 0) + 1, title)
        while len(self._last) > MAX_STREAMS:
            self._last.pop(next(iter(self._last)))

    def done(self, ts: str) -> list[dict[str, Any]]:
        """The stream ends: its last step, marked complete (forgotten here)."""
        last = self._last.pop(ts, None)
        return [_task(*last, "complete")] if last is not None else []


def _task(number: int, title: str, status: str) -> dict[str, Any]:
    return {"type": "task_update", "id": f"step-{number}", "title": title, "status": status}
