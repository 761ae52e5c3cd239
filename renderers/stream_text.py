"""A text answer shown while it is written: which part of it may be shown yet, and, for a platform
that appends to a message (Slack's chat.appendStream), the safe pieces to append.

Why a part is held back: the safety rules decide on whole tokens. `<!chan` is harmless and
`nel>` is harmless, `<!channel>` is not; `[docs](https://ev` may still become a masked link. So what
may be shown stops before the last token that has not ended (no whitespace after it yet) and before
a `[` whose link is not decided yet (`[label](url)` not closed), unless that tail grows past
MAX_HELD characters (then it is shown as it is: it is escaped anyway, and memory stays bounded).

A platform that redraws the message (post then edit) draws the shown prefix through the card
renderer, which applies every rule; one that appends gets `SafeChunks` pieces: the shown prefix
escaped by `markdown_safe`, which is the same whole escape applied piece by piece (each piece ends
at a token boundary, so the escapes of the pieces are the escape of the whole).
"""

from __future__ import annotations

import re

from oz0.renderers.safety import slack_escape

__all__ = ["MAX_HELD", "SafeChunks", "markdown_safe", "showable"]

MAX_HELD = 2_000  # characters held back at most, waiting for a token or a link to end

_MASKED = re.compile(r"!?\[([^\[\]\n]*)\]\(([^()\s]*)\)")
_BRACKETS = re.compile(r"([\[\]])")


def showable(text: str, *, final: bool = False) -> int:
    """How many characters of `text` (still growing unless `final`) may be shown now."""
    if final:
        return len(text)
    cut = max(text.rfind(" "), text.rfind("\n"), text.rfind("\t")) + 1
    open_link = _undecided_link(text)
    if open_link is not None:
        cut = min(cut, open_link)
    if len(text) - cut > MAX_HELD:
        cut = len(text) - MAX_HELD
    return cut


def _undecided_link(text: str) -> int | None:
    """Where the first `[` of the tail starts that may still become a masked link (`[label](url)`
    not yet closed, nor ruled out by what follows its `]`)."""
    for match in re.finditer(r"\[", text[-MAX_HELD:]):
        start = match.start() + max(0, len(text) - MAX_HELD)
        rest = text[start:]
        if _MASKED.match(rest) or "\n\n" in rest:
            continue
        closing = rest.find("]")
        if closing == -1:
            return start
        after = rest[closing + 1:closing + 2]
        if after == "" or (after == "(" and ")" not in rest[closing:]):
            return start
    return None


def markdown_safe(text: str) -> str:
    """Text for a field a platform reads as markdown (Slack's markdown_text): mentions and special
    words inert (`&<>` escaped), a masked link shown as its label and its real URL, any other
    bracket escaped so no link, image or reference forms."""
    out: list[str] = []
    pos = 0
    for match in _MASKED.finditer(text):
        out.append(_BRACKETS.sub(r"\\\1", text[pos:match.start()]))
        label, url = match.group(1), match.group(2)
        shown_label = _BRACKETS.sub(r"\\\1", label)
        out.append(f"{shown_label} ({url})" if label and label != url else url)
        pos = match.end()
    out.append(_BRACKETS.sub(r"\\\1", text[pos:]))
    return slack_escape("".join(out))


class SafeChunks:
    """A growing text as the pieces to append: `take(text)` gives what may be appended now,
    `rest(text)` at the end gives the remainder. A text that was rewound (a model request that
    started over) is not appended again: `rewound` says so and nothing more is given."""

    def __init__(self) -> None:
        self.shown = 0        # characters of the raw text given out so far
        self.prefix = ""      # those characters
        self.rewound = False

    def take(self, text: str, *, final: bool = False) -> str:
        if self.rewound or not text.startswith(self.prefix):
            self.rewound = True
            return ""
        cut = showable(text, final=final)
        if cut <= self.shown:
            return ""
        piece = text[self.shown:cut]
        self.shown, self.prefix = cut, text[:cut]
        return markdown_safe(piece)

    def rest(self, text: str) -> str:
        return self.take(text, final=True)
