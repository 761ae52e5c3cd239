"""Discord: a card as a Create Message body that Discord accepts and that pings and runs nothing.

We draw with **Components V2** (message flag `IS_COMPONENTS_V2`, 1<<15): one Container whose
accent colour says success (green), failure (red) or not drawn (amber), holding Text Displays,
a Separator and, when the full result is uploaded, a File component; the card's actions follow as
action rows of buttons. Why not embeds:
- a V2 message has one documented cap we can count (40 components, nested included) and a text
  length we hold to 4,000; embed limits are documented but not enforced;
- a Container spans the message width, so monospace tables wrap less than in a narrow embed, and
  markdown (headings, lists, code blocks) renders in Text Displays as it does in messages;
- V2 components are not hidden by a reader's "hide embeds" setting, so we can also set
  `SUPPRESS_EMBEDS` (1<<2) to stop link previews for every URL that comes from data.
The price is the smaller text budget (4,000 characters across components, against 6,000 across
embeds) and no `content` field (its 2,000-character limit therefore never applies); a card that
does not fit is cut and the full result attached. With V2, an uploaded file only shows when a File
component points at it (`attachment://<filename>`), so the renderer adds that component and the
adapter uploads `Rendered.uploads` under the same names.

The components are plain JSON, the shapes discord.py's `ui.LayoutView.to_components()` makes
(the tests rebuild every payload with discord.py as an independent oracle); this module owns every
Discord limit: 40 components (the action rows reserved first), 4,000 characters of text, 5 buttons
a row, 80 characters a label, 100 a `custom_id` (`f"{id}:{value}"`). Every payload has
`allowed_mentions: {"parse": []}` (regular messages would otherwise ping `@everyone`). Data is
escaped as `renderers.discord_markdown` says; tables are fitted by `renderers.monospace`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator
from functools import lru_cache
from typing import Any

from oz0.edge.cards.model import FEEDBACK_ACTION, Action, Card, cell_text
from oz0.renderers import markdown_blocks as md
from oz0.renderers.attachments import files_for, size_text, uploads_for, within_limits
from oz0.renderers.discord_markdown import CELL_WIDTH, block, code_block, code_block_raw, esc, plain_spans
from oz0.renderers.monospace import fit, fit_table
from oz0.renderers.rendered import Rendered
from oz0.renderers.safety import (
    clean,
    clip,
    discord_escape,
    fence_safe,
    one_line,
    one_line_each,
    utf16_len,
)

__all__ = ["MAX_COMPONENTS", "MAX_TEXT", "component_count", "render", "text_length"]

log = logging.getLogger(__name__)

MAX_COMPONENTS = 40
MAX_TEXT = 4_000
MAX_FILES = 10
TABLE_MAX_COLUMNS = 10
VALUE_MAX = 1_024
BUTTONS_PER_ROW = 5
ACTION_ROWS_MAX = 5
LABEL_MAX = 80
CUSTOM_ID_MAX = 100
_TAIL_TEXT = 400
_PROBE_ROWS = 200  # at most this many rows are drawn
_GREEN, _RED, _AMBER = 0x2E7D32, 0xC62828, 0xF9A825
_FLAGS = (1 << 15) | (1 << 2)  # IS_COMPONENTS_V2 | SUPPRESS_EMBEDS
_STYLES = {"default": 2, "primary": 1, "danger": 4}  # secondary, primary, danger


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


def component_count(components: Iterable[dict[str, Any]]) -> int:
    """Components as Discord counts them against its 40: every one, nested included."""
    return sum(1 + component_count(c.get("components") or ()) for c in components)


class _Room:
    def __init__(self, chars: int) -> None:
        self.chars = chars
        self.cut: list[str] = []


def _fit(pieces: Iterable[str], room: _Room, *, sep: str = "\n") -> tuple[str, int]:
    """As many pieces as fit in the room, joined; returns the text and how many were taken."""
    text, taken, used = fit(pieces, room.chars, sep=sep)
    room.chars -= used
    return text, taken


def _fit_code(lines: list[str], room: _Room, *, lang: str = "", head: str = "") -> tuple[str, int]:
    room.chars -= utf16_len(head) + 12
    body, shown = _fit((fence_safe(ln) or " " for ln in lines), room)
    return head + code_block_raw(body, lang), shown


# Forms --------------------------------------------------------------------------------------------

def _body_table(card: Card, room: _Room) -> list[str]:
    """A monospace table of as many rows as fit, its column widths taken from the rows it shows."""
    if not card.columns:
        return [f"{len(card.rows):,} rows without columns"]
    shown_cols = min(len(card.columns), TABLE_MAX_COLUMNS)
    room.chars -= 12
    table = fit_table(one_line_each(card.columns[:shown_cols]), card.rows, room.chars, cell_width=CELL_WIDTH,
                      probe_rows=_PROBE_ROWS)
    room.chars -= table.used
    out = [code_block_raw(table.text, "")]
    if table.shown < len(card.rows):
        room.cut.append(f"… {len(card.rows) - table.shown:,} more rows, full result attached")
    if len(card.columns) > shown_cols:
        room.cut.append(f"… {len(card.columns) - shown_cols} more columns (a chat table shows "
                        f"{TABLE_MAX_COLUMNS}), full result attached")
    if table.clipped:
        room.cut.append(f"Values longer than {CELL_WIDTH} characters are shortened, full result attached")
    if not card.rows:
        out.append("(no rows)")
    return out


def _kv_lines(keys: tuple[str, ...], values: tuple[Any, ...]) -> Iterator[str]:
    return (f"**{esc(k, 256)}**: {esc(cell_text(v), VALUE_MAX)}" for k, v in zip(keys, values))


def _body_key_values(card: Card, room: _Room) -> list[str]:
    if not card.keys:
        return ["(no fields)"]
    count = min(len(card.keys), len(card.values))
    text, shown = _fit(_kv_lines(card.keys, card.values), room)
    if shown < count:
        room.cut.append(f"… {count - shown:,} more fields, full result attached")
    if any(len(one_line(cell_text(v))) > VALUE_MAX for v in card.values[:shown] if _may_be_longer(v, VALUE_MAX)):
        room.cut.append(f"Values longer than {VALUE_MAX:,} characters are shortened, full result attached")
    return [text] if text else []


def _may_be_longer(value: Any, limit: int) -> bool:
    """Whether a value's one-line text may be longer than `limit`: not a string within it (cleaning and
    folding never lengthen a text), a float (at most 24 characters), a boolean or None."""
    kind = type(value)
    if kind is str:
        return len(value) > limit
    return kind not in (float, bool, type(None)) or limit < 24


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
        code, shown = _fit_code(lines, room, lang="diff")
        if shown < len(lines):
            room.cut.append(f"… {len(lines) - shown:,} more diff lines, full result attached")
        return out + [code]
    if not diff.changes:
        return out + ["(no differences)"]
    lines = []
    for c in diff.changes:
        key = one_line(c.key)
        if c.change != "added":
            lines.append(f"- {key}: {clip(one_line(cell_text(c.before)), VALUE_MAX)}")
        if c.change != "removed":
            lines.append(f"+ {key}: {clip(one_line(cell_text(c.after)), VALUE_MAX)}")
    code, shown = _fit_code(lines, room, lang="diff")
    if shown < len(lines):
        room.cut.append(f"… {len(lines) - shown:,} more lines of changes, full result attached")
    return out + [code]


def _body_text(card: Card, room: _Room) -> list[str]:
    if not card.text.strip():
        return []
    if card.text_format == "json":
        lines = clean(card.text).split("\n")
        code, shown = _fit_code(lines, room, lang="json")
        if shown < len(lines):
            room.cut.append(f"… {len(lines) - shown:,} more lines of JSON, full result attached")
        return [code]
    if card.text_format == "plain":
        pieces = [discord_escape(p) for p in clean(card.text).split("\n")]
        text, shown = _fit(pieces, room)
        if shown < len(pieces):
            room.cut.append(f"… {len(pieces) - shown:,} more lines, full result attached")
        return [text] if text else []
    blocks, unparsed = md.document(card.text)
    room.chars -= 120 if unparsed else 0
    text, shown = _fit(map(block, blocks), room, sep="\n\n")
    if shown < len(blocks) or unparsed:
        rest = unparsed + sum(len(md.plain(plain_spans(b))) for b in blocks[shown:])
        lead = _clipped_block(blocks[shown], room) if shown < len(blocks) else ""
        text = "\n\n".join(p for p in (text, lead) if p)
        room.cut.append(f"… {rest:,} more characters of text, full result attached")
    return [text] if text else []


def _clipped_block(node: md.Block, room: _Room) -> str:
    """The start of a block too long for the room: code stays a closed code block, the rest plain."""
    budget = room.chars - 20
    if budget < 40:
        return ""
    if isinstance(node, md.CodeBlock):
        text = code_block(clip(node.text, budget // 2 - 10), node.lang)
    elif isinstance(node, (md.Paragraph, md.Heading)):
        text = discord_escape(clip(md.plain(node.spans), budget // 2))
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


# Head, tail, actions and the message --------------------------------------------------------------

def _head(card: Card, cuts: list[str]) -> list[str]:
    """Title, status and why not drawn: each part capped so the head stays under 3,000 of the 4,000."""
    out: list[str] = []
    if card.title and one_line(card.title):
        out.append("## " + esc(card.title, 200))
    s = card.status
    if s is not None:
        lines = [("✅ **Succeeded**: " if s.success else "❌ **Failed**: ") + esc(s.message, 400)]
        facts = []
        if s.error_code:
            facts.append("error code: " + esc(s.error_code, 100))
        if s.error:
            facts.append("error: " + esc(s.error, 200))
        if s.command:
            facts.append("command: " + esc(s.command, 100))
        if s.duration_ms is not None:
            facts.append(f"{s.duration_ms:,.0f} ms")
        if facts:
            lines.append("-# " + " · ".join(facts))
        shown = s.warnings[:3]
        lines += ["-# ⚠️ warning: " + esc(w, 150) for w in shown]
        if len(s.warnings) > len(shown):
            cuts.append(f"… {len(s.warnings) - len(shown)} more warnings, full result attached")
            lines.append("-# " + cuts[-1])
        out.append("\n".join(lines))
    if not card.drawn:
        lines = ["**Not drawn as a card.** " + esc(card.reason or "The result could not be drawn.", 500)]
        shown_v = card.violations[:3]
        lines += ["- " + esc(v.describe(), 200) for v in shown_v]
        if len(card.violations) > len(shown_v):
            cuts.append(f"… {len(card.violations) - len(shown_v)} more problems, full result attached")
            lines.append("- " + cuts[-1])
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


def _action_rows(actions: tuple[Action, ...]) -> list[dict[str, Any]]:
    """The card's actions as action rows of buttons (`custom_id` is `f"{id}:{value}"`)."""
    if len(actions) > BUTTONS_PER_ROW * ACTION_ROWS_MAX:
        raise ValueError(f"a card has {len(actions)} actions; Discord shows at most "
                         f"{BUTTONS_PER_ROW * ACTION_ROWS_MAX} buttons ({ACTION_ROWS_MAX} rows of {BUTTONS_PER_ROW})")
    buttons = []
    for a in actions:
        custom_id = f"{a.id}:{a.value}"
        if len(custom_id) > CUSTOM_ID_MAX:
            raise ValueError(f"action {a.id!r}: its custom_id is {len(custom_id)} characters; Discord takes "
                             f"at most {CUSTOM_ID_MAX}")
        label = clip(one_line(a.label), LABEL_MAX) or a.id[:LABEL_MAX]
        buttons.append({"type": 2, "style": _STYLES.get(a.style, 2), "disabled": a.disabled, "label": label,
                        "custom_id": custom_id})
    return [{"type": 1, "components": buttons[i:i + BUTTONS_PER_ROW]}
            for i in range(0, len(buttons), BUTTONS_PER_ROW)]


@lru_cache(maxsize=64)
def _file_name(name: str) -> str:
    """An attachment's name as Discord text: escaped once per name (nearly every card's is `result.json`)."""
    return discord_escape(name)


def render(card: Card) -> Rendered:
    """The card as a Discord Create Message body, the files to upload beside it and what was cut.

    Should the drawing break a limit despite the budgets (a bug), the reader gets a short card saying
    which limit, with the full result attached; a payload Discord would refuse is never returned."""
    return within_limits(_render, card, platform="Discord", log=log)


def _render(card: Card) -> tuple[Rendered, str | None]:
    """The drawing, and which limit it breaks if any."""
    feedback = (Action(FEEDBACK_ACTION, "👍", value=f"good:{card.feedback}"),
                Action(FEEDBACK_ACTION, "👎", value=f"bad:{card.feedback}")) if card.feedback else ()
    actions = _action_rows(card.actions + feedback)
    room_components = MAX_COMPONENTS - component_count(actions)  # reserved before the card is filled
    cuts: list[str] = []
    head = _head(card, cuts)
    notes = ["-# " + esc(n, 150) for n in card.notes[:3]]
    if len(card.notes) > 3:
        cuts.append(f"… {len(card.notes) - 3} more notes, full result attached")
        notes.append("-# " + cuts[-1])
    room = _Room(MAX_TEXT - sum(utf16_len(t) for t in head + notes) - _TAIL_TEXT)
    rule = _RULES.get(card.form)
    body = [b for b in (rule(card, room) if rule else _body_text(card.degrade(), room)) if b.strip()]
    cut = bool(room.cut) or bool(cuts)
    tail = ["\n".join("-# " + c for c in room.cut)] if room.cut else []
    uploads = uploads_for(card, cut=cut)
    if uploads:
        a = uploads[0]
        tail.append(f"-# 📎 Full result attached: {_file_name(a.filename)} ({a.content_type}, {size_text(a.size)})")
    files = files_for(card)
    room_for = MAX_FILES - len(uploads)
    if len(files) > room_for:
        cuts.append(f"… {len(files) - room_for} more files not attached: Discord takes {MAX_FILES} per message")
        tail.append("-# " + cuts[-1])
    uploads += files[:room_for]
    children: list[dict[str, Any]] = [{"type": 10, "content": t} for t in head]
    if head and (body or notes):
        children.append({"type": 14, "divider": True, "spacing": 1})
    children += [{"type": 10, "content": t} for t in body + notes + tail]
    children += [{"type": 13, "file": {"url": "attachment://" + a.filename}, "spoiler": False} for a in uploads]
    if not children:
        children.append({"type": 10, "content": "(empty result)"})
    container = {"type": 17, "accent_color": _colour(card), "spoiler": False, "components": children}
    components = [container, *actions]
    # counted from the children just made (Text Displays, a Separator, Files: none nests another), as
    # `text_length` and `component_count` would count the whole payload, which adds nothing to them
    length = utf16_len("".join([c["content"] for c in children if c["type"] == 10]))
    count = 1 + len(children)
    problem = None
    if length > MAX_TEXT:
        problem = f"{length:,} characters of text, over Discord's {MAX_TEXT:,}"
    elif count > room_components:
        problem = (f"{count} components and {MAX_COMPONENTS - room_components} for its buttons, "
                   f"over Discord's {MAX_COMPONENTS}")
    payload = {"flags": _FLAGS, "components": components, "allowed_mentions": {"parse": []}}
    return Rendered(payload, uploads, tuple(room.cut) + tuple(cuts)), problem
