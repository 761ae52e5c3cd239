"""Discord: a card as a Create Message body that Discord accepts and that pings and runs nothing.

We draw with **Components V2** (message flag `IS_COMPONENTS_V2`, 1<<15): one Container whose
accent colour says success (green), failure (red) or not drawn (amber), holding Text Displays,
a Separator and, when the full result is uploaded, a File component. Why not embeds:
- a V2 message is built with discord.py's own `ui.LayoutView` models, which check the 40-component
  cap and report the text length we hold to 4,000; embed limits are documented but not enforced;
- a Container spans the message width, so monospace tables wrap less than in a narrow embed, and
  markdown (headings, lists, code blocks) renders in Text Displays as it does in messages;
- V2 components are not hidden by a reader's "hide embeds" setting, so we can also set
  `SUPPRESS_EMBEDS` (1<<2) to stop link previews for every URL that comes from data.
The price is the smaller text budget (4,000 characters across components, against 6,000 across
embeds) and no `content` field (its 2,000-character limit therefore never applies); a card that
does not fit is cut and the full result attached. With V2, an uploaded file only shows when a File
component points at it (`attachment://<filename>`), so the renderer adds that component and the
adapter uploads the file under the same name.

Every payload has `allowed_mentions: {"parse": []}` (regular messages would otherwise ping
`@everyone`). Data is escaped with `discord_escape` (markdown, `<@…>`, `<@&…>`, `<#…>`,
`</cmd:…>`, `<t:…>`, masked links, `@everyone`/`@here`), code blocks hold `fence_safe` text that cannot
close the fence, and markdown from results is redrawn from the shared tree of
`renderers.markdown_blocks` with links shown as their real URL in `<…>`.

`oz0_attachments` lists what the adapter must upload (see `renderers.attachments`; adapters pop
`oz0_*` keys before posting).
"""

from __future__ import annotations

import logging
import re
from itertools import accumulate, islice, repeat
from operator import sub
from typing import Any, Callable, Iterable, Iterator, Sequence

import discord
from discord import ui
from rich.cells import cell_len

from oz0.edge.cards.model import Card, cell_text, cell_texts
from oz0.renderers import markdown_blocks as md
from oz0.renderers.attachments import ATTACHMENTS_KEY, attachment_for, descriptors, shortened, size_text
from oz0.renderers.safety import (
    clean,
    clip,
    clip_each,
    discord_escape,
    fence_safe,
    fence_safe_each,
    one_line,
    one_line_each,
    utf16_len,
    utf16_lens,
)

__all__ = ["MAX_COMPONENTS", "MAX_TEXT", "render", "text_length"]

log = logging.getLogger(__name__)

MAX_COMPONENTS = 40
MAX_TEXT = 4_000
TABLE_MAX_COLUMNS = 10
CELL_WIDTH = 32
VALUE_MAX = 1_024
PARSE_MAX = 3 * MAX_TEXT
_TAIL_TEXT = 400
_PROBE_ROWS = 200  # at most this many rows are drawn
_CHUNK_ROWS = 24
_GREEN, _RED, _AMBER = 0x2E7D32, 0xC62828, 0xF9A825
_LANG = re.compile(r"^[A-Za-z0-9_+\-]{1,20}$")


def text_length(components: list[dict[str, Any]]) -> int:
    """The text Discord counts against its 4,000: every Text Display's content, in UTF-16 units."""
    total = 0
    stack: list[Any] = list(components)
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if node.get("type") == 10 and isinstance(node.get("content"), str):
                total += utf16_len(node["content"])
            stack += node.get("components", [])
    return total


class _Room:
    def __init__(self, chars: int) -> None:
        self.chars = chars
        self.cut: list[str] = []


def _esc(text: str, limit: int) -> str:
    """`text` on one line, escaped, at most `limit` UTF-16 units (escaping can double a text)."""
    text = one_line(text)
    out = discord_escape(clip(text, limit))
    return out if utf16_len(out) <= limit else discord_escape(clip(text, limit // 2 - 1))


# Markdown tree to Discord markdown ----------------------------------------------------------------

def _spans(spans: tuple[md.Span, ...]) -> str:
    return "".join(_SPAN_RULES[type(s)](s) for s in spans)


def _wrap(marker: str) -> Callable[[Any], str]:
    def rule(span: Any) -> str:
        inner = _spans(span.children)
        return f"{marker}{inner}{marker}" if inner.strip() else inner
    return rule


def _code_span(span: md.Code) -> str:
    text = one_line(span.text)
    if not text or "`" in text:
        return discord_escape(text)
    return f"`{fence_safe(text)}`"


def _link(span: md.Link) -> str:
    label = md.plain(span.children)
    url = re.sub(r"@(everyone|here)", r"%40\1", span.url, flags=re.I)
    url = f"<{url}>" if not re.search(r"[<>\s]", url) else discord_escape(url)
    return url if label in ("", span.url) else f"{_spans(span.children)} ({url})"


_SPAN_RULES: dict[type, Callable[[Any], str]] = {
    md.Text: lambda s: discord_escape(s.text),
    md.Code: _code_span,
    md.LineBreak: lambda s: "\n",
    md.Strong: _wrap("**"),
    md.Emph: _wrap("*"),
    md.Strike: _wrap("~~"),
    md.Link: _link,
}


def _code_block(text: str, lang: str = "") -> str:
    lang = lang if _LANG.match(lang) else ""
    return f"```{lang}\n{fence_safe(text) or ' '}\n```"


def _block(block: md.Block, depth: int = 0) -> str:
    return _BLOCK_RULES[type(block)](block, depth)


def _list(block: md.ListBlock, depth: int) -> str:
    lines: list[str] = []
    indent = "  " * min(depth, 4)
    for number, item in enumerate(block.items, start=block.start):
        marker = f"{number}." if block.ordered else "-"
        parts = [_block(b, depth + 1) for b in item]
        first, rest = (parts[0], parts[1:]) if parts else ("", [])
        lines.append(f"{indent}{marker} {first}")
        lines += rest
    return "\n".join(lines)


def _quote(block: md.Quote, depth: int) -> str:
    inner = "\n".join(_block(b, depth) for b in block.children)
    return "\n".join("> " + line.lstrip("> ") if line.strip() else ">" for line in inner.split("\n"))


def _md_table(block: md.Table, depth: int) -> str:
    header = [one_line(md.plain(c)) for c in block.header]
    rows = [[one_line(md.plain(c)) for c in r] for r in block.rows]
    return _code_block(_aligned(header, rows))


_BLOCK_RULES: dict[type, Callable[[Any, int], str]] = {
    md.Paragraph: lambda b, d: _spans(b.spans),
    md.Heading: lambda b, d: ("### " + _spans(b.spans)) if b.level == 1 and d == 0 else f"**{_spans(b.spans)}**",
    md.CodeBlock: lambda b, d: _code_block(b.text, b.lang),
    md.ListBlock: _list,
    md.Quote: _quote,
    md.Rule: lambda b, d: "──────────",
    md.Table: _md_table,
}


def _aligned(header: list[str], rows: list[list[str]]) -> str:
    """A monospace table, cells cut to `CELL_WIDTH` columns; fence-safe, so it stays in its block."""
    table = [header] + rows
    width = max((len(r) for r in table), default=0)
    table = [[fence_safe(clip(c, CELL_WIDTH)) for c in r] + [""] * (width - len(r)) for r in table]
    widths = [max(cell_len(r[i]) for r in table) for i in range(width)]
    lines = ["  ".join(c + " " * (widths[i] - cell_len(c)) for i, c in enumerate(r)).rstrip() for r in table]
    if header:
        lines.insert(1, "  ".join("─" * w for w in widths))
    return "\n".join(lines)


# Forms --------------------------------------------------------------------------------------------

def _fit(pieces: Iterable[str], room: _Room, *, sep: str = "\n") -> tuple[str, int]:
    """As many pieces as fit in the room, joined; returns the text and how many were taken.

    `pieces` may be lazy: what does not fit is never made.
    """
    out: list[str] = []
    used = 0
    for piece in pieces:
        size = utf16_len(piece) + utf16_len(sep)
        if used + size > room.chars:
            break
        out.append(piece)
        used += size
    room.chars -= used
    return sep.join(out), len(out)


def _fit_code(lines: list[str], room: _Room, *, lang: str = "", head: str = "") -> tuple[str, int]:
    room.chars -= utf16_len(head) + 12
    body, shown = _fit((fence_safe(ln) or " " for ln in lines), room)
    return head + _code_block_raw(body, lang), shown


def _code_block_raw(body: str, lang: str) -> str:
    return f"```{lang}\n{body or ' '}\n```"


def _body_table(card: Card, room: _Room) -> list[str]:
    """A monospace table of as many rows as fit, its column widths taken from the rows it shows."""
    if not card.columns:
        return [f"{len(card.rows):,} rows without columns"]
    shown_cols = min(len(card.columns), TABLE_MAX_COLUMNS)
    header = one_line_each(card.columns[:shown_cols])
    room.chars -= 12
    columns = [[h] for h in header]  # one-line texts, column by column: the header, then the candidate rows
    header_widths = _cell_lens(fence_safe_each(clip_each(header, CELL_WIDTH)))
    need = 0
    candidates = 0
    for start in range(0, min(len(card.rows), _PROBE_ROWS), _CHUNK_ROWS):
        chunk = card.rows[start:min(start + _CHUNK_ROWS, _PROBE_ROWS)]
        made = [one_line_each(cell_texts(col)) for col in _columns(chunk, shown_cols)]
        between = 2 * (shown_cols - 1) + 1 if all(made[-1]) else 1
        took = 0
        for floor in map(sum, zip(*map(_floor_lens, made, header_widths[:-1] + [0]))):  # the last is not padded
            need += floor + between
            if need > room.chars:
                break
            took += 1
        for column, col in zip(columns, made):
            column += col[:took]
        candidates += took
        if took < len(chunk):
            break
    cells = [fence_safe_each(clip_each(col, CELL_WIDTH)) for col in columns]
    widths = [_cell_lens(col) for col in cells]
    extra = [None if w == lens else list(map(sub, w, lens)) for w, lens in zip(widths, map(_lens, cells))]
    widest = [list(accumulate(w, max)) for w in widths]
    most = _most_rows(cells, widths, widest, candidates, room.chars)
    shown = candidates if most is None else most
    while True:  # widths from `shown` rows; a row that no longer fits makes the next widths narrower
        width = [w[shown] for w in widest]
        lines = _table_lines(cells, extra, width, shown)
        trial = _Room(room.chars)
        text, _ = _fit(list(islice(lines, 2)), trial)
        body, fitted = _fit(lines, trial)
        if fitted >= shown or [w[fitted] for w in widest] == width:
            shown = fitted
            break
        shown = fitted
    room.chars = trial.chars
    shown = shown if body else 0
    out = [_code_block_raw(text + ("\n" + body if body else ""), "")]
    if shown < len(card.rows):
        room.cut.append(f"… {len(card.rows) - shown:,} more rows, full result attached")
    if len(card.columns) > shown_cols:
        room.cut.append(f"… {len(card.columns) - shown_cols} more columns (a chat table shows "
                        f"{TABLE_MAX_COLUMNS}), full result attached")
    if any(max(_cell_lens(col[:shown + 1]), default=0) > CELL_WIDTH for col in columns):
        room.cut.append(f"Values longer than {CELL_WIDTH} characters are shortened, full result attached")
    if not card.rows:
        out.append("(no rows)")
    return out


def _most_rows(cells: list[list[str]], widths: list[list[int]], widest: list[list[int]], candidates: int,
               room: int) -> int | None:
    """The most rows that fit in `room` with the header and its rule, every line padded to those rows' widths.

    Counted, not drawn: a line is its cells' UTF-16 units, the padding of every cell before its last
    non-empty one (the column's width less the cell's; the line's end is stripped), and two spaces
    between cells. None when even the header and its rule do not fit.
    """
    columns = len(cells)
    units = [utf16_lens(col) for col in cells]
    ends: list[int] | None = None
    if all(islice(cells[-1], candidates + 1)):  # every line ends in its last column: counted column by column
        spare = [list(map(sub, u, w)) for u, w in zip(units[:-1], widths[:-1])]
        fixed = [n + 2 * (columns - 1) for n in map(sum, zip(*spare, units[-1]))]
    else:
        ends, fixed = [], []
        for row, row_units, row_widths in zip(zip(*cells), zip(*units), zip(*widths)):
            end = max((j for j, c in enumerate(row) if c), default=-1)
            ends.append(end)
            fixed.append(sum(row_units[j] - row_widths[j] + 2 for j in range(end)) + (row_units[end] if end >= 0 else 0))
    before = list(accumulate(fixed, initial=0))

    def size(rows: int) -> int:
        width = [w[rows] for w in widest]
        rule = sum(width) + 2 * (columns - 1) + 1
        if ends is None:
            padding = sum(width[:-1])
        else:
            starts = list(accumulate(width, initial=0))
            padding = sum(starts[e] for e in ends[:rows + 1] if e >= 0)
            return rule + before[rows + 1] + padding + rows + 1
        return rule + before[rows + 1] + (rows + 1) * (padding + 1)

    if size(0) > room:
        return None
    low, high = 0, candidates
    while low < high:
        mid = (low + high + 1) // 2
        if size(mid) <= room:
            low = mid
        else:
            high = mid - 1
    return low


def _columns(rows: Sequence[Sequence[Any]], width: int) -> list[Sequence[Any]]:
    """The first `width` cells of the rows, column by column (a short row padded with None)."""
    if not rows:
        return [()] * width
    if min(map(len, rows)) >= width:
        return list(zip(*rows))[:width]
    return [tuple(r[i] if i < len(r) else None for r in rows) for i in range(width)]


def _lens(texts: Sequence[str]) -> list[int]:
    return list(map(len, texts))


def _floor_lens(texts: Sequence[str], header_width: int) -> list[int]:
    """The least each text's cell can take in a line: its length cut to CELL_WIDTH, and in a column of
    ASCII (one unit and at most one column a character), no less than the header's width either."""
    lens = list(map(len, texts))
    if max(lens, default=0) > CELL_WIDTH:
        lens = [min(n, CELL_WIDTH) for n in lens]
    return list(map(max, lens, repeat(header_width))) if all(map(str.isascii, texts)) else lens


def _cell_lens(texts: Sequence[str]) -> list[int]:
    """Monospace widths of one-line texts (no control characters): ASCII is one column a character."""
    if all(map(str.isascii, texts)):
        return list(map(len, texts))
    return [len(t) if t.isascii() else cell_len(t) for t in texts]


def _table_lines(cells: list[list[str]], extra: list[list[int] | None], widths: list[int],
                 rows: int) -> Iterator[str]:
    """The header, its rule, then the first `rows` rows (made as they are asked for), cells padded to `widths`.

    `extra` is, per column, how many more monospace columns than characters each cell takes (None: none).
    """
    pads = [repeat(0) if e is None else e for e in extra]
    for index, (row, more) in enumerate(zip(zip(*cells), zip(*pads))):
        if index > rows:
            return
        line = "  ".join(map(str.ljust, row, map(sub, widths, more) if any(more) else widths)).rstrip()
        yield line
        if index == 0:
            yield "  ".join("─" * w for w in widths)


def _kv_lines(keys: tuple[str, ...], values: tuple[Any, ...]) -> Iterator[str]:
    return (f"**{_esc(k, 256)}**: {_esc(cell_text(v), VALUE_MAX)}" for k, v in zip(keys, values))


def _body_key_values(card: Card, room: _Room) -> list[str]:
    if not card.keys:
        return ["(no fields)"]
    count = min(len(card.keys), len(card.values))
    text, shown = _fit(_kv_lines(card.keys, card.values), room)
    if shown < count:
        room.cut.append(f"… {count - shown:,} more fields, full result attached")
    if any(len(one_line(cell_text(v))) > VALUE_MAX for v in card.values[:shown]):
        room.cut.append(f"Values longer than {VALUE_MAX:,} characters are shortened, full result attached")
    return [text] if text else []


def _body_diff(card: Card, room: _Room) -> list[str]:
    out = _body_key_values(card, room) if card.keys else []
    diff = card.diff
    if diff is None:
        return out
    if diff.kind == "lines":
        if not diff.lines:
            return out + ["(no differences)"]
        lines = [f"--- {one_line(diff.before)}", f"+++ {one_line(diff.after)}"]
        lines += [(ln.op if ln.op != "@" else "") + clean(ln.text).replace("\n", " ") for ln in diff.lines]
        block, shown = _fit_code(lines, room, lang="diff")
        if shown < len(lines):
            room.cut.append(f"… {len(lines) - shown:,} more diff lines, full result attached")
        return out + [block]
    if not diff.changes:
        return out + ["(no differences)"]
    lines = []
    for c in diff.changes:
        key = one_line(c.key)
        if c.change != "added":
            lines.append(f"- {key}: {clip(one_line(cell_text(c.before)), VALUE_MAX)}")
        if c.change != "removed":
            lines.append(f"+ {key}: {clip(one_line(cell_text(c.after)), VALUE_MAX)}")
    block, shown = _fit_code(lines, room, lang="diff")
    if shown < len(lines):
        room.cut.append(f"… {len(lines) - shown:,} more lines of changes, full result attached")
    return out + [block]


def _body_text(card: Card, room: _Room) -> list[str]:
    if not card.text.strip():
        return []
    if card.text_format == "json":
        lines = clean(card.text).split("\n")
        block, shown = _fit_code(lines, room, lang="json")
        if shown < len(lines):
            room.cut.append(f"… {len(lines) - shown:,} more lines of JSON, full result attached")
        return [block]
    if card.text_format == "plain":
        pieces = [discord_escape(p) for p in clean(card.text).split("\n")]
        text, shown = _fit(pieces, room)
        if shown < len(pieces):
            room.cut.append(f"… {len(pieces) - shown:,} more lines, full result attached")
        return [text] if text else []
    blocks, unparsed = md.parse_prefix(card.text, PARSE_MAX)
    room.chars -= 120 if unparsed else 0
    pieces = [_block(b) for b in blocks]
    text, shown = _fit(pieces, room, sep="\n\n")
    if shown < len(pieces) or unparsed:
        rest = unparsed + sum(len(md.plain(_plain_spans(b))) for b in blocks[shown:])
        lead = _clipped_block(blocks[shown], room) if shown < len(blocks) else ""
        text = "\n\n".join(p for p in (text, lead) if p)
        room.cut.append(f"… {rest:,} more characters of text, full result attached")
    return [text] if text else []


def _plain_spans(block: md.Block) -> tuple[md.Span, ...]:
    if isinstance(block, (md.Paragraph, md.Heading)):
        return block.spans
    if isinstance(block, md.CodeBlock):
        return (md.Text(block.text),)
    return (md.Text(""),)


def _clipped_block(block: md.Block, room: _Room) -> str:
    """The start of a block too long for the room: code stays a closed code block, the rest plain."""
    budget = room.chars - 20
    if budget < 40:
        return ""
    if isinstance(block, md.CodeBlock):
        text = _code_block(clip(block.text, budget // 2 - 10), block.lang)
    elif isinstance(block, (md.Paragraph, md.Heading)):
        text = discord_escape(clip(md.plain(block.spans), budget // 2))
    else:
        return ""
    room.chars -= utf16_len(text) + 2
    return text


_RULES: dict[str, Callable[[Card, _Room], list[str]]] = {
    "table": _body_table,
    "key_values": _body_key_values,
    "diff": _body_diff,
    "text": _body_text,
}


# Head, tail and the message -----------------------------------------------------------------------

def _head(card: Card) -> list[str]:
    """Title, status and why not drawn: each part capped so the head stays under 3,000 of the 4,000."""
    out: list[str] = []
    if card.title and one_line(card.title):
        out.append("## " + _esc(card.title, 200))
    s = card.status
    if s is not None:
        lines = [("✅ **Succeeded**: " if s.success else "❌ **Failed**: ") + _esc(s.message, 400)]
        facts = []
        if s.error_code:
            facts.append("error code: " + _esc(s.error_code, 100))
        if s.error:
            facts.append("error: " + _esc(s.error, 200))
        if s.command:
            facts.append("command: " + _esc(s.command, 100))
        if s.duration_ms is not None:
            facts.append(f"{s.duration_ms:,.0f} ms")
        if facts:
            lines.append("-# " + " · ".join(facts))
        shown = s.warnings[:3]
        lines += ["-# ⚠️ warning: " + _esc(w, 150) for w in shown]
        if len(s.warnings) > len(shown):
            lines.append(f"-# … {len(s.warnings) - len(shown)} more warnings, full result attached")
        out.append("\n".join(lines))
    if not card.drawn:
        lines = ["**Not drawn as a card.** " + _esc(card.reason or "The result could not be drawn.", 500)]
        shown_v = card.violations[:3]
        lines += ["- " + _esc(v.describe(), 200) for v in shown_v]
        if len(card.violations) > len(shown_v):
            lines.append(f"- … {len(card.violations) - len(shown_v)} more problems, full result attached")
        out.append("\n".join(lines))
    return out


def _colour(card: Card) -> int | None:
    if card.status is not None and not card.status.success:
        return _RED
    if not card.drawn:
        return _AMBER
    if card.status is not None:
        return _GREEN
    return None


def render(card: Card) -> dict[str, Any]:
    """The card as a Discord Create Message body (with `oz0_attachments` for the adapter to pop).

    Should the drawing break the text limit despite the budgets (a bug), the reader gets a short card
    saying so, with the full result attached; a payload Discord would refuse is never returned."""
    payload, problem = _render(card)
    if problem is None:
        return payload
    log.error("Discord card over a limit despite its budgets (%s); sending it shortened", problem)
    payload, problem = _render(shortened(card, f"This result did not fit in a Discord message ({problem}); "
                                               "the full result is attached."))
    if problem is not None:
        raise RuntimeError(f"a shortened Discord card is still over a limit: {problem}")
    return payload


def _render(card: Card) -> tuple[dict[str, Any], str | None]:
    """The payload, and which limit it breaks if any."""
    head = _head(card)
    notes = ["-# " + _esc(n, 150) for n in card.notes[:3]]
    if len(card.notes) > 3:
        notes.append(f"-# … {len(card.notes) - 3} more notes, full result attached")
    room = _Room(MAX_TEXT - sum(utf16_len(t) for t in head + notes) - _TAIL_TEXT)
    rule = _RULES.get(card.form)
    body = [b for b in (rule(card, room) if rule else _body_text(card.degrade(), room)) if b.strip()]
    cut = bool(room.cut) or len(card.notes) > 3 or (card.status is not None and len(card.status.warnings) > 3)
    tail = ["\n".join("-# " + c for c in room.cut)] if cut else []
    if card.attachment is not None or cut:
        a = attachment_for(card)
        tail.append(f"-# 📎 Full result attached: {discord_escape(a.filename)} ({a.content_type}, {size_text(a.size)})")
    children: list[ui.Item[Any]] = [ui.TextDisplay(t) for t in head]
    if head and (body or notes):
        children.append(ui.Separator())
    children += [ui.TextDisplay(t) for t in body + notes + tail]
    if card.attachment is not None or cut:
        children.append(ui.File("attachment://" + attachment_for(card).filename))
    if not children:
        children.append(ui.TextDisplay("(empty result)"))
    colour = _colour(card)
    container = ui.Container(*children, accent_colour=discord.Colour(colour) if colour is not None else None)
    view = ui.LayoutView(timeout=None)
    view.add_item(container)
    components = view.to_components()
    length = max(view.content_length(), text_length(components))
    problem = f"{length:,} characters of text, over Discord's {MAX_TEXT:,}" if length > MAX_TEXT else None
    payload: dict[str, Any] = {
        "flags": discord.MessageFlags(components_v2=True, suppress_embeds=True).value,
        "components": components,
        "allowed_mentions": discord.AllowedMentions.none().to_dict(),
    }
    attachments = descriptors(card, cut=cut)
    if attachments:
        payload[ATTACHMENTS_KEY] = attachments
    return payload, problem
