"""Slack: rich text elements, and how much of Slack's block budget a body uses.

The shared markdown tree is mapped to these elements by `renderers.slack_markdown`, imported only for
a markdown text (the tree's module and its dataclasses cost a table card's start-up ~15 ms otherwise).
No text here is parsed by Slack, so `<!channel>` stays text.

Elements are plain dicts with their keys in the order slack_sdk's `RichTextBlock(...).to_dict()`
writes them (sorted, but a style's flags in the order given), so the payload is the one slack_sdk would make; the tests' oracle parses and
validates every block with slack_sdk.
"""

from __future__ import annotations

from itertools import chain
from operator import itemgetter
from typing import Any

from oz0.renderers.safety import utf16_len

__all__ = ["LIST_INDENT_MAX", "TEXT_OBJECT_COST", "Room", "blocks_size", "element_size", "fit_rich_text", "preformatted",
           "rich_text", "rt_text", "section"]

TEXT_OBJECT_COST = 4
LIST_INDENT_MAX = 6


def blocks_size(blocks: list[dict[str, Any]]) -> int:
    """What we count against Slack's aggregate limit: every text and URL, plus 4 per text object."""
    total = 0
    stack: list[Any] = list(blocks)
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if node.get("type") == "table" and isinstance(node.get("rows"), list):
                size = _raw_cells_size(node["rows"])
                if size is not None:
                    total += size
                    skip = ("rows", "column_settings") if _plain_settings(node.get("column_settings")) else ("rows",)
                    node = {k: v for k, v in node.items() if k not in skip}
            for key, value in node.items():
                if isinstance(value, str):
                    if key == "text" or key == "url":
                        total += utf16_len(value) + TEXT_OBJECT_COST
                elif isinstance(value, (dict, list)):
                    stack.append(value)
        elif isinstance(node, list):
            stack.extend(node)
    return total


def _raw_cells_size(rows: list[Any]) -> int | None:
    """The size of a table's rows when every cell is a plain `raw_text` (ours always are), at C speed."""
    try:
        cells = list(chain.from_iterable(rows))
        if not cells:
            return 0
        # every cell has a "type" and a "text" (or KeyError), so two keys a cell on average is two each
        if set(map(itemgetter("type"), cells)) != {"raw_text"} or sum(map(len, cells)) != 2 * len(cells):
            return None
        joined = "".join(map(itemgetter("text"), cells))  # TypeError unless every text is a str
    except (TypeError, KeyError):
        return None
    return utf16_len(joined) + TEXT_OBJECT_COST * len(cells)


def _plain_settings(settings: Any) -> bool:
    """Whether a table's column settings hold no text to count: objects of flags and words only (ours)."""
    if not isinstance(settings, list) or set(map(type, settings)) - {dict}:
        return False
    return not set(map(type, chain.from_iterable(map(dict.values, settings)))) - {str, bool} and \
        not set(chain.from_iterable(settings)) & {"text", "url"}


def element_size(element: dict[str, Any]) -> int:
    """`blocks_size([element])` for the rich text elements made here (texts, links and their containers),
    without walking every key: the hot path of a long markdown text."""
    kind = element["type"]
    if kind == "text":
        return utf16_len(element["text"]) + TEXT_OBJECT_COST
    if kind == "link":
        return utf16_len(element["text"]) + utf16_len(element["url"]) + 2 * TEXT_OBJECT_COST
    return sum(map(element_size, element["elements"]))


class Room:
    """The blocks and characters a body may still use, and what it had to leave out."""

    def __init__(self, chars: int, blocks: int) -> None:
        self.chars = chars
        self.blocks = blocks
        self.cut: list[str] = []

    def fits(self, block: dict[str, Any]) -> bool:
        return self.blocks >= 1 and blocks_size([block]) <= self.chars

    def take(self, block: dict[str, Any], *, size: int | None = None) -> dict[str, Any]:
        """`block`, counted against the room (`size` when the caller already measured it)."""
        self.blocks -= 1
        self.chars -= blocks_size([block]) if size is None else size
        return block


# Elements, keys sorted as slack_sdk writes them ---------------------------------------------------

def rt_text(text: str, style: dict[str, bool] | None = None) -> dict[str, Any]:
    """A text element; its style dict keeps the order the styles were applied (as slack_sdk keeps it)."""
    if style:
        return {"style": dict(style), "text": text, "type": "text"}
    return {"text": text, "type": "text"}


def section(elements: list[dict[str, Any]]) -> dict[str, Any]:
    elements = [e for e in elements if e.get("type") != "text" or e["text"]]
    return {"elements": elements or [rt_text(" ")], "type": "rich_text_section"}


def preformatted(text: str) -> dict[str, Any]:
    return {"elements": [rt_text(text or " ")], "type": "rich_text_preformatted"}


def rich_text(elements: list[dict[str, Any]]) -> dict[str, Any]:
    """A `rich_text` block (what `RichTextBlock(elements=...).to_dict()` makes of these elements)."""
    return {"elements": elements, "type": "rich_text"}


# Fitting ------------------------------------------------------------------------------------------

def _clip_element(element: dict[str, Any], room: int) -> tuple[dict[str, Any], bool]:
    """A rich text element whose texts fit in `room`: later text elements dropped, the last one clipped."""
    out_elements: list[dict[str, Any]] = []
    used = 0
    clipped = False
    for child in element.get("elements", []):
        size = element_size(child)
        if used + size <= room:
            out_elements.append(child)
            used += size
            continue
        clipped = True
        left = room - used - TEXT_OBJECT_COST - 1
        if child.get("type") == "text" and left > 20:
            out_elements.append({**child, "text": _clip16(child["text"], left)})
        elif "elements" in child and left > 20:
            sub, _ = _clip_element(child, left)
            if sub["elements"]:
                out_elements.append(sub)
        break
    return {**element, "elements": out_elements}, clipped


def _clip16(text: str, limit: int) -> str:
    """`text` cut to at most `limit` UTF-16 units, ending with "…" when cut."""
    if utf16_len(text) <= limit:
        return text
    out, used = [], 1
    for ch in text:
        used += 2 if ord(ch) > 0xFFFF else 1
        if used > limit:
            break
        out.append(ch)
    return "".join(out) + "…"


def fit_rich_text(elements: list[dict[str, Any]], room: Room, *, what: str,
                  unparsed: int = 0) -> list[dict[str, Any]]:
    """Rich text elements in one `rich_text` block, as many as fit the room; the rest cut and said."""
    current: list[dict[str, Any]] = []
    used = 0
    for index, element in enumerate(elements):
        size = element_size(element)
        if used + size <= room.chars:
            current.append(element)
            used += size
            continue
        clipped, _ = _clip_element(element, room.chars - used)
        if clipped.get("elements"):
            current.append(clipped)
            used += element_size(clipped)
        rest = sum(len(t) for t in _texts(elements[index:])) - sum(len(t) for t in _texts([clipped]))
        unparsed += rest
        break
    if unparsed:
        room.cut.append(f"… {unparsed:,} more characters of {what}, full result attached")
    if not current or room.blocks < 1:
        return []
    return [room.take(rich_text(current), size=used)]


def _texts(elements: list[dict[str, Any]]) -> list[str]:
    found: list[str] = []
    stack: list[Any] = list(elements)
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if isinstance(node.get("text"), str):
                found.append(node["text"])
            stack += node.get("elements", [])
    return found
