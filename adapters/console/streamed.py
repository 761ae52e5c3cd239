"""A running job's text answer on its console page while the model writes it.

The text is not journaled (edge.runtime.text_out: deltas are events), so the console reads the job's
event stream itself: the first view of a running job's page starts a reader on the server's loop,
which keeps the text so far; the page, which reloads itself every PAGE_REFRESH_S while the job runs
(no script needed), shows it: post then edit. Text written before the first view is not seen (the
page says the start is missing). What is shown stops before a token or a link that has not ended
(`renderers.stream_text.showable`), and the template escapes it as every text of the page.

Bounded: at most MAX_FOLLOWED jobs are followed at once (the oldest reader stops first), each text
at most MAX_TEXT characters; a reader ends with its job.
"""

from __future__ import annotations

import asyncio
import collections
import logging
from dataclasses import dataclass

from oz0.edge.runtime.api import ConsoleRuntime
from oz0.edge.runtime.events import TextDelta
from oz0.renderers.stream_text import showable

__all__ = ["MAX_FOLLOWED", "MAX_TEXT", "StreamedTexts"]

log = logging.getLogger("oz0.console")

MAX_FOLLOWED = 64       # running jobs whose text the console keeps at once
MAX_TEXT = 40_000       # characters of one job's text kept (its card has the whole answer)


@dataclass
class _Text:
    raw: str = ""
    base: int = 0        # where `raw` starts in the whole answer
    gap: bool = False    # the reader came after the text began
    whole: bool = False


class StreamedTexts:
    """The text so far of the running jobs whose pages were viewed."""

    def __init__(self, runtime: ConsoleRuntime) -> None:
        self.runtime = runtime
        self._texts: collections.OrderedDict[str, tuple[_Text, asyncio.Task[None]]] = collections.OrderedDict()

    def shown(self, job_id: str) -> str | None:
        """The job's text as far as it may be shown (None: none yet); start following it if not yet."""
        found = self._texts.get(job_id)
        if found is None:
            self._follow(job_id)
            return None
        text = found[0]
        shown = text.raw[:showable(text.raw, final=text.whole)]
        if not shown:
            return None
        return ("… " if text.gap else "") + shown

    def _follow(self, job_id: str) -> None:
        text = _Text()
        task = asyncio.get_running_loop().create_task(self._read(job_id, text), name=f"console-text-{job_id}")
        self._texts[job_id] = (text, task)
        while len(self._texts) > MAX_FOLLOWED:
            _, (_, oldest) = self._texts.popitem(last=False)
            oldest.cancel()

    async def _read(self, job_id: str, text: _Text) -> None:
        try:
            async for event in self.runtime.events(job_id):
                if isinstance(event, TextDelta):
                    at = event.offset - text.base
                    if 0 <= at <= len(text.raw):
                        text.raw = text.raw[:at] + event.text
                    else:   # a piece past a gap (this reader came late), or a model request starting over
                        text.base, text.raw, text.gap = event.offset, event.text, event.offset > 0
                    text.raw = text.raw[:MAX_TEXT]
                    text.whole = event.final
        except KeyError:
            pass   # no such job: nothing to follow
        except Exception as exc:   # the page still shows the card at the end
            log.warning("stopped reading the text of job %s: %s", job_id, type(exc).__name__)
        finally:
            current = self._texts.get(job_id)
            if current is not None and current[0] is text:
                del self._texts[job_id]
