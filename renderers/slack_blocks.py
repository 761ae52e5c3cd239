"""Slack: a card as a `chat.postMessage` body of Block Kit blocks that Slack accepts and that runs nothing.

The body is `{"text", "blocks", "unfurl_links": false, "unfurl_media": false}`, plus
`oz0_attachments` when the full result must be uploaded beside it (see `renderers.attachments`;
adapters pop `oz0_*` keys before posting). Blocks are built with `slack_sdk.models.blocks`, whose
`to_dict()` runs `validate_json()`, so a per-block limit that slack_sdk knows cannot slip through;
except the table and context blocks, made as plain dicts on the hot path (their models check only
that a table has rows and a context at most 10 elements, both ensured here, and `_check` checks the
caps again); the tests' oracle runs slack_sdk's `Block.parse` and `validate_json()` on every payload.

Where data goes, and why:
- Data is never put in mrkdwn, which cannot escape `*_~` or backticks. It goes in `plain_text`
  (header, context), table `raw_text` cells, and rich text `text` elements, none of which Slack
  parses: `<!channel>` or `<@U…>` there is just text. The one parsed field, the top-level `text`
  fallback, goes through `slack_escape` (`&<>`).
- Markdown (the text form) is drawn as `rich_text`: the shared tree of `renderers.markdown_blocks`
  maps onto rich text sections, lists, quotes and preformatted elements with bold/italic/strike/code
  styles, so formatting comes only from the tree and never from characters in the data. Links are
  rich text `link` elements for http, https and mailto only, with the URL itself visible.
- Tables (and key-values, as a two-column table) use Slack's native `table` block: one per message,
  at most 100 rows and 20 cells a row, no empty cell. A diff's key changes are its one table, so the
  diff form shows its other fields as section fields instead.

Limits this module enforces (slack_sdk does not check the aggregate ones): 50 blocks a message;
about 13,200 characters of blocks altogether (Slack's undocumented `msg_blocks_too_long`; we count
every text, in UTF-16 units, plus 4 per text object, and stay under 12,000); 150 for a header; 3,000
for section text and 2,000 a field, 10 fields; 10 context elements. Whatever does not fit is cut at
a row, line or element boundary, the card says so ("… 412 more rows, full result attached"), and
`oz0_attachments` asks the adapter to upload the whole thing.
"""

from __future__ import annotations

import logging
from itertools import chain, islice
from operator import itemgetter
from typing import Any, Callable, Sequence

from slack_sdk.models.blocks import (
    HeaderBlock,
    PlainTextObject,
    RichTextBlock,
    SectionBlock,
)

from oz0.edge.cards.model import Card, cell_text, cell_texts
from oz0.renderers import markdown_blocks as md
from oz0.renderers.attachments import ATTACHMENTS_KEY, attachment_for, descriptors, shortened, size_text
from oz0.renderers.safety import clean, clip, clip_each, one_line, one_line_each, slack_escape, utf16_len, utf16_lens

__all__ = [
    "MAX_BLOCKS",
    "MAX_BLOCKS_CHARS",
    "TABLE_MAX_COLUMNS",
    "TABLE_MAX_ROWS",
    "blocks_size",
    "render",
]

log = logging.getLogger(__name__)

MAX_BLOCKS = 50
MAX_BLOCKS_CHARS = 12_000
TEXT_OBJECT_COST = 4
HEADER_MAX = 150
SECTION_TEXT_MAX = 3_000
FIELD_MAX = 2_000
FIELDS_MAX = 10
CONTEXT_ELEMENTS_MAX = 10
TABLE_MAX_ROWS = 100
TABLE_MAX_COLUMNS = 20
CELL_MAX = 300
FALLBACK_MAX = 3_000
LIST_INDENT_MAX = 6
PARSE_MAX = 3 * MAX_BLOCKS_CHARS
_TAIL_CHARS = 800
_TAIL_BLOCKS = 3
_EMPTY_CELL = "—"
_CHUNK_ROWS = 24  # the first rows made; then as many as the room is likely to hold


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
                    node = {k: v for k, v in node.items() if k != "rows"}
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
        if set(map(len, cells)) != {2} or set(map(itemgetter("type"), cells)) != {"raw_text"}:
            return None
        texts = list(map(itemgetter("text"), cells))
    except (TypeError, KeyError):
        return None
    if set(map(type, texts)) != {str}:
        return None
    return utf16_len("".join(texts)) + TEXT_OBJECT_COST * len(texts)


class _Room:
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


# Rich text ----------------------------------------------------------------------------------------

def _style(bold: bool = False, italic: bool = False, strike: bool = False, code: bool = False) -> dict[str, bool]:
    return {k: True for k, v in (("bold", bold), ("italic", italic), ("strike", strike), ("code", code)) if v}


def _rt_text(text: str, style: dict[str, bool] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "text", "text": text}
    if style:
        out["style"] = dict(style)
    return out


def _rt_spans(spans: tuple[md.Span, ...], style: dict[str, bool]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for span in spans:
        if isinstance(span, md.Text):
            if span.text:
                out.append(_rt_text(span.text, style))
        elif isinstance(span, md.Code):
            if span.text:
                out.append(_rt_text(span.text, {**style, "code": True}))
        elif isinstance(span, md.LineBreak):
            out.append(_rt_text("\n"))
        elif isinstance(span, md.Link):
            label = md.plain(span.children)
            if label not in ("", span.url):
                out += _rt_spans(span.children, style)
                out.append(_rt_text(" ("))
            out.append({"type": "link", "url": span.url, "text": span.url})
            if label not in ("", span.url):
                out.append(_rt_text(")"))
        else:
            flag = {md.Strong: "bold", md.Emph: "italic", md.Strike: "strike"}[type(span)]
            out += _rt_spans(span.children, {**style, flag: True})
    return out


def _section(elements: list[dict[str, Any]]) -> dict[str, Any]:
    elements = [e for e in elements if e.get("type") != "text" or e["text"]]
    return {"type": "rich_text_section", "elements": elements or [_rt_text(" ")]}


def _preformatted(text: str) -> dict[str, Any]:
    return {"type": "rich_text_preformatted", "elements": [_rt_text(text or " ")]}


def _rt_blocks(blocks: tuple[md.Block, ...], depth: int = 0) -> list[dict[str, Any]]:
    """Markdown blocks as rich text elements (sections, lists, quotes, preformatted)."""
    out: list[dict[str, Any]] = []
    for block in blocks:
        out += _RICH_RULES[type(block)](block, depth)
    return out


def _rt_paragraph(block: md.Paragraph, depth: int) -> list[dict[str, Any]]:
    return [_section(_rt_spans(block.spans, {}) + [_rt_text("\n")])]


def _rt_heading(block: md.Heading, depth: int) -> list[dict[str, Any]]:
    return [_section(_rt_spans(block.spans, {"bold": True}) + [_rt_text("\n")])]


def _rt_code(block: md.CodeBlock, depth: int) -> list[dict[str, Any]]:
    return [_preformatted(block.text)]


def _rt_list(block: md.ListBlock, depth: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    pending: list[dict[str, Any]] = []
    first = block.start

    def flush(next_number: int) -> None:
        nonlocal pending, first
        if pending:
            item = {"type": "rich_text_list", "style": "ordered" if block.ordered else "bullet",
                    "indent": min(depth, LIST_INDENT_MAX), "elements": pending}
            if block.ordered and first > 1:
                item["offset"] = first - 1
            out.append(item)
        pending, first = [], next_number

    for number, item in enumerate(block.items, start=block.start):
        lead = [b for b in item if isinstance(b, (md.Paragraph, md.Heading))][:1]
        pending.append(_section(_rt_spans(lead[0].spans, {}) if lead else []))
        rest = [b for b in item if not lead or b is not lead[0]]
        if rest:
            flush(number + 1)
            out += _rt_blocks(tuple(rest), depth + 1)
    flush(0)
    return out


def _rt_quote(block: md.Quote, depth: int) -> list[dict[str, Any]]:
    elements: list[dict[str, Any]] = []
    for child in block.children:
        for el in _rt_blocks((child,), depth):
            text = "".join(e.get("text", "") for e in el.get("elements", []) if isinstance(e, dict)) \
                if el["type"] != "rich_text_section" else None
            if text is None:
                elements += el["elements"]
            else:
                elements.append(_rt_text(text.strip("\n") + "\n"))
    return [{"type": "rich_text_quote", "elements": elements or [_rt_text(" ")]}]


def _rt_rule(block: md.Rule, depth: int) -> list[dict[str, Any]]:
    return [_section([_rt_text("──────────\n")])]


def _rt_table(block: md.Table, depth: int) -> list[dict[str, Any]]:
    return [_preformatted(_aligned([[one_line(md.plain(c)) for c in block.header]]
                                   + [[one_line(md.plain(c)) for c in row] for row in block.rows]))]


_RICH_RULES: dict[type, Callable[[Any, int], list[dict[str, Any]]]] = {
    md.Paragraph: _rt_paragraph,
    md.Heading: _rt_heading,
    md.CodeBlock: _rt_code,
    md.ListBlock: _rt_list,
    md.Quote: _rt_quote,
    md.Rule: _rt_rule,
    md.Table: _rt_table,
}


def _aligned(rows: list[list[str]]) -> str:
    from rich.cells import cell_len

    width = max((len(r) for r in rows), default=0)
    widths = [max((cell_len(r[i]) for r in rows if i < len(r)), default=0) for i in range(width)]
    return "\n".join("  ".join(c + " " * (widths[i] - cell_len(c)) for i, c in enumerate(r)).rstrip()
                     for r in rows)


def _clip_element(element: dict[str, Any], room: int) -> tuple[dict[str, Any], bool]:
    """A rich text element whose texts fit in `room`: later text elements dropped, the last one clipped."""
    out_elements: list[dict[str, Any]] = []
    used = 0
    clipped = False
    for child in element.get("elements", []):
        size = blocks_size([child])
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


def _rich_text_blocks(elements: list[dict[str, Any]], room: _Room, *, what: str,
                      unparsed: int = 0) -> list[dict[str, Any]]:
    """Rich text elements in one `rich_text` block, as many as fit the room; the rest cut and said."""
    current: list[dict[str, Any]] = []
    used = 0
    for index, element in enumerate(elements):
        size = blocks_size([element])
        if used + size <= room.chars:
            current.append(element)
            used += size
            continue
        clipped, _ = _clip_element(element, room.chars - used)
        if clipped.get("elements"):
            current.append(clipped)
        rest = sum(len(t) for t in _texts(elements[index:])) - sum(len(t) for t in _texts([clipped]))
        unparsed += rest
        break
    if unparsed:
        room.cut.append(f"… {unparsed:,} more characters of {what}, full result attached")
    if not current or room.blocks < 1:
        return []
    return [room.take(RichTextBlock(elements=current).to_dict())]


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


# Forms --------------------------------------------------------------------------------------------

def _cell(value: Any) -> tuple[dict[str, Any], bool]:
    text = one_line(cell_text(value)) if not isinstance(value, str) else one_line(value)
    return {"text": clip(text, CELL_MAX) or _EMPTY_CELL, "type": "raw_text"}, len(text) > CELL_MAX


def _columns(rows: Sequence[Sequence[Any]], width: int) -> list[Sequence[Any]]:
    """The first `width` cells of the rows, column by column (a short row padded with None)."""
    if not rows:
        return [()] * width
    if min(map(len, rows)) >= width:
        return list(zip(*rows))[:width]
    return [tuple(r[i] if i < len(r) else None for r in rows) for i in range(width)]


def _table_block(header: list[Any] | None, rows: Sequence[tuple[Any, ...]], room: _Room, *,
                 noun: str = "rows") -> list[dict[str, Any]]:
    """One native table: header row (if any), then as many rows as the limits and the room allow.

    Cells are made a chunk of rows at a time, column by column (`renderers.safety`'s `_each` forms),
    and only until the room is full: rows that are not shown are never turned into text.
    """
    width = len(header) if header is not None else max((len(r) for r in rows), default=0)
    shown_columns = min(width, TABLE_MAX_COLUMNS)
    notes: list[str] = []
    if width > TABLE_MAX_COLUMNS:
        notes.append(f"… {width - TABLE_MAX_COLUMNS} more columns (Slack shows at most {TABLE_MAX_COLUMNS}), "
                     "full result attached")
    table_rows: list[list[dict[str, Any]]] = []
    clipped_any = False
    if header is not None:
        cells = [_cell(c)[0] for c in header[:shown_columns]]
        table_rows.append(cells)
    budget = room.chars - 400
    used = blocks_size([{"rows": table_rows}]) + 40
    shown = 0
    room_rows = min(len(rows), TABLE_MAX_ROWS - len(table_rows))
    row_cost = TEXT_OBJECT_COST * shown_columns
    start, chunk_rows = used, _CHUNK_ROWS
    while shown < room_rows:
        chunk = rows[shown:min(room_rows, shown + chunk_rows)]
        texts = [one_line_each(cell_texts(col)) for col in _columns(chunk, shown_columns)]
        cells_text = [_cell_texts(col) for col in texts]
        took = 0
        for size in map(sum, zip(*map(utf16_lens, cells_text))):
            if used + size + row_cost > budget:
                break
            used += size + row_cost
            took += 1
        clipped_any = clipped_any or any(max(map(len, col[:took]), default=0) > CELL_MAX for col in texts)
        table_rows += [[{"text": t, "type": "raw_text"} for t in row] for row in islice(zip(*cells_text), took)]
        shown += took
        if took < len(chunk):
            break
        # next, about as many rows as the rest of the budget holds at the size of the rows so far
        chunk_rows = max(_CHUNK_ROWS, int((budget - used) * shown / max(1, used - start) * 1.25) + 1)
    if shown < len(rows):
        limit = (f"Slack shows at most {TABLE_MAX_ROWS} table rows" if len(table_rows) >= TABLE_MAX_ROWS
                 else f"Slack takes about {MAX_BLOCKS_CHARS:,} characters a message")
        notes.insert(0, f"… {len(rows) - shown:,} more {noun} ({limit}), full result attached")
    if clipped_any:
        notes.append(f"Values longer than {CELL_MAX} characters are shortened, full result attached")
    out: list[dict[str, Any]] = []
    if notes:
        room.cut += notes
        out.append(room.take(_context(notes)))
    if not table_rows:
        return out
    settings = [{"align": _align(col), "is_wrapped": True}
                for col in _columns(rows[:TABLE_MAX_ROWS], shown_columns)]
    # slack_sdk's TableBlock checks only that rows are not empty; the caps are ours, checked above and in _check
    table = {"column_settings": settings, "rows": table_rows, "type": "table"}
    out.append(room.take(table, size=used - 40))
    return out


def _cell_texts(texts: list[str]) -> list[str]:
    """A column's one-line texts as Slack cells: clipped, and never empty (Slack refuses an empty cell)."""
    texts = clip_each(texts, CELL_MAX)
    return texts if all(texts) else [t or _EMPTY_CELL for t in texts]


def _align(values: Sequence[Any]) -> str:
    kinds = set(map(type, values))
    kinds.discard(type(None))
    numeric = kinds and all(issubclass(k, (int, float)) and not issubclass(k, bool) for k in kinds)
    return "right" if numeric else "left"


def _context(texts: list[str]) -> dict[str, Any]:
    """A context block of plain texts (never parsed), at most 10 elements."""
    texts = [clip(one_line(t), SECTION_TEXT_MAX) for t in texts if one_line(t)]
    if len(texts) > CONTEXT_ELEMENTS_MAX:
        extra = len(texts) - CONTEXT_ELEMENTS_MAX + 1
        texts = texts[: CONTEXT_ELEMENTS_MAX - 1] + [f"… {extra} more, full result attached"]
    # what ContextBlock(elements=[PlainTextObject(text=t, emoji=False)]).to_dict() makes, whose one check is the 10 above
    return {"elements": [{"emoji": False, "text": t, "type": "plain_text"} for t in texts or ["—"]], "type": "context"}


def _body_table(card: Card, room: _Room) -> list[dict[str, Any]]:
    if not card.columns:
        return [room.take(_context([f"{len(card.rows):,} rows without columns"]))]
    out = _table_block(list(card.columns), list(card.rows), room)
    if not card.rows:
        out.append(room.take(_context(["(no rows)"])))
    return out


def _body_key_values(card: Card, room: _Room) -> list[dict[str, Any]]:
    if not card.keys:
        return [room.take(_context(["(no fields)"]))]
    return _table_block(None, list(zip(card.keys, card.values)), room, noun="fields")


def _fields(card: Card, room: _Room) -> list[dict[str, Any]]:
    """A diff's other fields as section fields (its one table is the key changes)."""
    out: list[dict[str, Any]] = []
    pairs = list(zip(card.keys, card.values))
    for start in range(0, len(pairs), FIELDS_MAX):
        fields = [PlainTextObject(text=clip(f"{one_line(k)}: {one_line(cell_text(v))}", FIELD_MAX), emoji=False)
                  for k, v in pairs[start:start + FIELDS_MAX]]
        block = SectionBlock(fields=fields).to_dict()
        if not room.fits(block) or room.blocks <= 2:
            room.cut.append(f"… {len(pairs) - start} more fields, full result attached")
            out.append(room.take(_context([room.cut[-1]])))
            break
        out.append(room.take(block))
    return out


def _body_diff(card: Card, room: _Room) -> list[dict[str, Any]]:
    out = _fields(card, room) if card.keys else []
    diff = card.diff
    if diff is None:
        return out
    if diff.kind == "lines":
        if not diff.lines:
            return out + [room.take(_context(["(no differences)"]))]
        head = f"--- {clip(one_line(diff.before), 200)}\n+++ {clip(one_line(diff.after), 200)}\n"
        lines = [(ln.op if ln.op != "@" else "") + clean(ln.text).replace("\n", " ") for ln in diff.lines]
        text, shown = _fit_lines(head, lines, room.chars - 200)
        if shown < len(lines):
            room.cut.append(f"… {len(lines) - shown:,} more diff lines, full result attached")
        out.append(room.take(RichTextBlock(elements=[_preformatted(text)]).to_dict()))
        return out
    if not diff.changes:
        return out + [room.take(_context(["(no differences)"]))]
    rows = [(c.key, c.change, cell_text(c.before) if c.change != "added" else "",
             cell_text(c.after) if c.change != "removed" else "") for c in diff.changes]
    return out + _table_block(["key", "change", "before", "after"], rows, room, noun="changes")


def _fit_lines(head: str, lines: list[str], room: int) -> tuple[str, int]:
    text = head
    used = utf16_len(head) + 2 * TEXT_OBJECT_COST
    shown = 0
    for line in lines:
        line = clip(line, SECTION_TEXT_MAX)
        size = utf16_len(line) + 1
        if used + size > room:
            break
        text += line + "\n"
        used += size
        shown += 1
    return text.rstrip("\n") or " ", shown


def _body_text(card: Card, room: _Room) -> list[dict[str, Any]]:
    if not card.text.strip():
        return []
    if card.text_format == "json":
        lines = clean(card.text).split("\n")
        text, shown = _fit_lines("", lines, room.chars - 200)
        if shown < len(lines):
            room.cut.append(f"… {len(lines) - shown:,} more lines of JSON, full result attached")
        return [room.take(RichTextBlock(elements=[_preformatted(text)]).to_dict())]
    unparsed = 0
    if card.text_format == "plain":
        elements = [_section([_rt_text(p + "\n")]) for p in clean(card.text).split("\n\n") if p.strip()]
    else:
        blocks, unparsed = md.parse_prefix(card.text, PARSE_MAX)
        elements = _rt_blocks(blocks)
    return _rich_text_blocks(elements, room, what="text", unparsed=unparsed)


_RULES: dict[str, Callable[[Card, _Room], list[dict[str, Any]]]] = {
    "table": _body_table,
    "key_values": _body_key_values,
    "diff": _body_diff,
    "text": _body_text,
}


# Head, tail and the message -----------------------------------------------------------------------

def _status_blocks(card: Card) -> list[dict[str, Any]]:
    s = card.status
    if s is None:
        return []
    mark, word = ("✅ ", "Succeeded") if s.success else ("❌ ", "Failed")
    line = RichTextBlock(elements=[_section([_rt_text(mark), _rt_text(word, {"bold": True}),
                                             _rt_text(": " + clip(one_line(s.message), 1_000))])]).to_dict()
    facts = []
    if s.error_code:
        facts.append(f"error code: {clip(one_line(s.error_code), 200)}")
    if s.error:
        facts.append(f"error: {clip(one_line(s.error), 1_000)}")
    facts += [f"warning: {clip(one_line(w), 300)}" for w in s.warnings]
    if s.command:
        facts.append(f"command: {clip(one_line(s.command), 300)}")
    if s.duration_ms is not None:
        facts.append(f"duration: {s.duration_ms:,.0f} ms")
    return [line] + ([_context(facts)] if facts else [])


def _not_drawn_blocks(card: Card) -> list[dict[str, Any]]:
    if card.drawn:
        return []
    elements = [_section([_rt_text("Not drawn as a card. ", {"bold": True}),
                          _rt_text(clip(one_line(card.reason or "The result could not be drawn."), 2_000))])]
    if card.violations:
        shown = card.violations[:5]
        items = [_section([_rt_text(clip(one_line(v.describe()), 500))]) for v in shown]
        if len(card.violations) > len(shown):
            items.append(_section([_rt_text(f"… {len(card.violations) - len(shown)} more problems, "
                                            "full result attached")]))
        elements.append({"type": "rich_text_list", "style": "bullet", "elements": items})
    return [RichTextBlock(elements=elements).to_dict()]


def _notes_blocks(card: Card) -> list[dict[str, Any]]:
    if not card.notes:
        return []
    return [_context([clip(one_line(n), 500) for n in card.notes])]


def _fallback(card: Card, cut: list[str]) -> str:
    """The plain `text` fallback: what the card says, for notifications and screen readers."""
    parts: list[str] = []
    if card.title:
        parts.append(one_line(card.title))
    if card.status is not None:
        parts.append(("Succeeded: " if card.status.success else "Failed: ") + one_line(card.status.message))
    if not card.drawn:
        parts.append("Not drawn as a card: " + one_line(card.reason or ""))
    elif card.form == "table":
        parts.append(f"Table of {len(card.rows):,} rows: " + ", ".join(one_line(c) for c in card.columns[:20]))
    elif card.form == "key_values":
        parts += [f"{one_line(k)}: {one_line(cell_text(v))}" for k, v in zip(card.keys[:20], card.values)]
    elif card.form == "diff" and card.diff is not None:
        count = len(card.diff.lines) if card.diff.kind == "lines" else len(card.diff.changes)
        parts.append(f"Diff of {one_line(card.diff.before)} and {one_line(card.diff.after)} "
                     f"({count:,} {'lines' if card.diff.kind == 'lines' else 'changes'})")
    elif card.form == "text" and card.text.strip():
        parts.append(md.plain(_first_spans(card)) if card.text_format == "markdown" else clean(card.text))
    parts += cut[:1]
    text = slack_escape(clip("\n".join(p for p in parts if p), FALLBACK_MAX))
    return text.strip() or "(empty result)"


def _first_spans(card: Card) -> tuple[md.Span, ...]:
    spans: list[md.Span] = []
    for block in md.parse_prefix(card.text, PARSE_MAX)[0][:5]:
        if isinstance(block, (md.Paragraph, md.Heading)):
            spans += list(block.spans) + [md.LineBreak(hard=True)]
        elif isinstance(block, md.CodeBlock):
            spans += [md.Code(block.text), md.LineBreak(hard=True)]
    return tuple(spans)


def render(card: Card) -> dict[str, Any]:
    """The card as a `chat.postMessage` body (with `oz0_attachments` for the adapter to pop).

    Should the drawing break a limit despite the budgets (a bug), the reader gets a short card saying
    which limit, with the full result attached; a payload Slack would refuse is never returned."""
    payload = _render(card)
    problem = _over_limit(payload)
    if problem is None:
        return payload
    log.error("Slack card over a limit despite its budgets (%s); sending it shortened", problem)
    payload = _render(shortened(card, f"This result did not fit in a Slack message ({problem}); "
                                      "the full result is attached."))
    problem = _over_limit(payload)
    if problem is not None:
        raise RuntimeError(f"a shortened Slack card is still over a limit: {problem}")
    return payload


def _render(card: Card) -> dict[str, Any]:
    head: list[dict[str, Any]] = []
    if card.title and one_line(card.title):
        head.append(HeaderBlock(text=PlainTextObject(text=clip(one_line(card.title), HEADER_MAX),
                                                     emoji=False)).to_dict())
    head += _status_blocks(card) + _not_drawn_blocks(card)
    notes = _notes_blocks(card)
    room = _Room(MAX_BLOCKS_CHARS - blocks_size(head + notes) - _TAIL_CHARS,
                 MAX_BLOCKS - len(head) - len(notes) - _TAIL_BLOCKS)
    rule = _RULES.get(card.form)
    body = rule(card, room) if rule else _body_text(card.degrade(), room)
    tail: list[dict[str, Any]] = []
    facts = len(card.status.warnings) + 5 if card.status is not None else 0
    cut = bool(room.cut) or facts > CONTEXT_ELEMENTS_MAX or len(card.notes) > CONTEXT_ELEMENTS_MAX \
        or (not card.drawn and len(card.violations) > 5)
    said = {t for b in body if b["type"] == "context" for t in (e["text"] for e in b["elements"])}
    unsaid = [c for c in room.cut if clip(one_line(c), SECTION_TEXT_MAX) not in said]
    if unsaid:
        tail.append(_context(unsaid))
    if card.attachment is not None or cut:
        a = attachment_for(card)
        tail.append(_context([f"📎 Full result attached: {a.filename} ({a.content_type}, {size_text(a.size)})"]))
    blocks = head + body + notes + tail
    if not blocks:
        blocks = [_context(["(empty result)"])]
    payload: dict[str, Any] = {
        "text": _fallback(card, room.cut),
        "blocks": blocks,
        "unfurl_links": False,
        "unfurl_media": False,
    }
    attachments = descriptors(card, cut=cut)
    if attachments:
        payload[ATTACHMENTS_KEY] = attachments
    return payload


def _over_limit(payload: dict[str, Any]) -> str | None:
    """Which limit slack_sdk does not check the payload breaks, if any: blocks, characters, and the one
    table's rows and cells.

    Other blocks were validated by their slack_sdk model's `to_dict`; the table is a plain dict (its
    model checks only that it has rows), and the tests' oracle runs slack_sdk over every payload.
    """
    blocks = payload["blocks"]
    if len(blocks) > MAX_BLOCKS:
        return f"{len(blocks)} blocks, over Slack's {MAX_BLOCKS}"
    size = blocks_size(blocks)
    if size > MAX_BLOCKS_CHARS:
        return f"{size:,} characters of blocks, over our {MAX_BLOCKS_CHARS:,}"
    tables = [b for b in blocks if b["type"] == "table"]
    if len(tables) > 1:
        return f"{len(tables)} table blocks; Slack allows one a message"
    for table in tables:
        rows = table["rows"]
        if not 1 <= len(rows) <= TABLE_MAX_ROWS or not 1 <= max(map(len, rows)) <= TABLE_MAX_COLUMNS:
            return (f"a table of {len(rows)} rows and up to {max(map(len, rows), default=0)} cells "
                    f"a row; Slack takes 1 to {TABLE_MAX_ROWS} rows of 1 to {TABLE_MAX_COLUMNS}")
    return None
