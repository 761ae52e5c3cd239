"""Slack: a card as a `chat.postMessage` body of Block Kit blocks that Slack accepts and that runs nothing.

`render` returns `Rendered(payload, uploads, cuts)`: the payload is `{"text", "blocks",
"unfurl_links": false, "unfurl_media": false}`, and `uploads` the full result when the card does not
carry all of it (see `renderers.attachments`). Blocks are plain dicts shaped as slack_sdk's models
write them; the tests' oracle runs slack_sdk's `Block.parse` and `validate_json()` on every payload,
and `_over_limit` checks the caps again before a payload is returned.

Where data goes, and why:
- Data is never put in mrkdwn, which cannot escape `*_~` or backticks. It goes in `plain_text`
  (header, context, buttons), table `raw_text` cells, and rich text `text` elements, none of which
  Slack parses: `<!channel>` or `<@U…>` there is just text. The one parsed field, the top-level
  `text` fallback, goes through `slack_escape` (`&<>`).
- Markdown (the text form) is drawn as `rich_text` from the shared tree (`renderers.slack_rich_text`).
- Tables (and key-values, as a two-column table) use Slack's native `table` block
  (`renderers.slack_tables`). A diff's key changes are its one table, so the diff form shows its
  other fields as section fields instead.
- The card's actions are one `actions` block of buttons (`action_id` is the action's id, `value`
  its value, `style` primary or danger when set), always last, their block reserved first.

This module owns every Slack limit (slack_sdk does not check the aggregate ones): 50 blocks a
message; about 13,200 characters of blocks altogether (Slack's undocumented `msg_blocks_too_long`; we
count every text, in UTF-16 units, plus 4 per text object, and stay under 12,000); 150 for a header;
3,000 for section text and 2,000 a field, 10 fields; 10 context elements; 25 buttons an actions
block, 75 characters a label, 255 an `action_id`, 2,000 a value. Whatever does not fit is cut at a
row, line or element boundary, the card says so ("… 412 more rows, full result attached"), and the
whole result is uploaded.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import orjson

from oz0.edge.cards.model import FEEDBACK_ACTION, Action, Card, cell_text
from oz0.renderers.attachments import files_for, shortened, size_text, uploads_for
from oz0.renderers.rendered import Rendered
from oz0.renderers.safety import clean, clip, one_line, one_line_each, slack_escape, utf16_len
from oz0.renderers.slack_rich_text import (
    TEXT_OBJECT_COST,
    Room,
    blocks_size,
    fit_rich_text,
    preformatted,
    rich_text,
    rt_text,
    section,
)
from oz0.renderers.slack_tables import (
    CONTEXT_ELEMENTS_MAX,
    MAX_BLOCKS_CHARS,
    SECTION_TEXT_MAX,
    TABLE_MAX_COLUMNS,
    TABLE_MAX_ROWS,
    context,
    section_fields,
    table_block,
)

__all__ = [
    "MAX_BLOCKS",
    "MAX_BLOCKS_CHARS",
    "TABLE_MAX_COLUMNS",
    "TABLE_MAX_ROWS",
    "blocks_size",
    "render",
]


MAX_BLOCKS = 50
HEADER_MAX = 150
FALLBACK_MAX = 3_000
ACTIONS_MAX = 25
BUTTON_TEXT_MAX = 75
ACTION_ID_MAX = 255
ACTION_VALUE_MAX = 2_000
_TAIL_CHARS = 800
_TAIL_BLOCKS = 3


# Forms --------------------------------------------------------------------------------------------

def _body_table(card: Card, room: Room) -> list[dict[str, Any]]:
    if not card.columns:
        return [room.take(context([f"{len(card.rows):,} rows without columns"]))]
    out = table_block(list(card.columns), list(card.rows), room)
    if not card.rows:
        out.append(room.take(context(["(no rows)"])))
    return out


def _body_key_values(card: Card, room: Room) -> list[dict[str, Any]]:
    if not card.keys:
        return [room.take(context(["(no fields)"]))]
    return table_block(None, list(zip(card.keys, card.values)), room, noun="fields")


def _body_diff(card: Card, room: Room) -> list[dict[str, Any]]:
    out = section_fields(list(zip(card.keys, card.values)), room) if card.keys else []
    diff = card.diff
    if diff is None:
        return out
    if diff.kind == "lines":
        if not diff.lines:
            return out + [room.take(context(["(no differences)"]))]
        head = f"--- {clip(one_line(diff.before), 200)}\n+++ {clip(one_line(diff.after), 200)}\n"
        lines = [(ln.op if ln.op != "@" else "") + clean(ln.text).replace("\n", " ") for ln in diff.lines]
        text, shown = _fit_lines(head, lines, room.chars - 200)
        if shown < len(lines):
            room.cut.append(f"… {len(lines) - shown:,} more diff lines, full result attached")
        out.append(room.take(rich_text([preformatted(text)])))
        return out
    if not diff.changes:
        return out + [room.take(context(["(no differences)"]))]
    rows = [(c.key, c.change, cell_text(c.before) if c.change != "added" else "",
             cell_text(c.after) if c.change != "removed" else "") for c in diff.changes]
    return out + table_block(["key", "change", "before", "after"], rows, room, noun="changes")


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


def _body_text(card: Card, room: Room) -> list[dict[str, Any]]:
    if not card.text.strip():
        return []
    if card.text_format == "json":
        lines = clean(card.text).split("\n")
        text, shown = _fit_lines("", lines, room.chars - 200)
        if shown < len(lines):
            room.cut.append(f"… {len(lines) - shown:,} more lines of JSON, full result attached")
        return [room.take(rich_text([preformatted(text)]))]
    unparsed = 0
    if card.text_format == "plain":
        elements = [section([rt_text(p + "\n")]) for p in clean(card.text).split("\n\n") if p.strip()]
    else:
        from oz0.renderers import markdown_blocks as md  # the tree (~15 ms to import): only for markdown
        from oz0.renderers.slack_markdown import rt_blocks

        blocks, unparsed = md.document(card.text)
        elements = rt_blocks(blocks)
    return fit_rich_text(elements, room, what="text", unparsed=unparsed)


_RULES: dict[str, Callable[[Card, Room], list[dict[str, Any]]]] = {
    "table": _body_table,
    "key_values": _body_key_values,
    "diff": _body_diff,
    "text": _body_text,
}


# Head, tail, actions and the message --------------------------------------------------------------

def _status_blocks(card: Card) -> list[dict[str, Any]]:
    s = card.status
    if s is None:
        return []
    mark, word = ("✅ ", "Succeeded") if s.success else ("❌ ", "Failed")
    line = rich_text([section([rt_text(mark), rt_text(word, {"bold": True}),
                               rt_text(": " + clip(one_line(s.message), 1_000))])])
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
    return [line] + ([context(facts)] if facts else [])


def _not_drawn_blocks(card: Card) -> list[dict[str, Any]]:
    if card.drawn:
        return []
    elements = [section([rt_text("Not drawn as a card. ", {"bold": True}),
                         rt_text(clip(one_line(card.reason or "The result could not be drawn."), 2_000))])]
    if card.violations:
        shown = card.violations[:5]
        items = [section([rt_text(clip(one_line(v.describe()), 500))]) for v in shown]
        if len(card.violations) > len(shown):
            items.append(section([rt_text(f"… {len(card.violations) - len(shown)} more problems, "
                                          "full result attached")]))
        elements.append({"elements": items, "style": "bullet", "type": "rich_text_list"})
    return [rich_text(elements)]


def _notes_blocks(card: Card) -> list[dict[str, Any]]:
    if not card.notes:
        return []
    return [context([clip(one_line(n), 500) for n in card.notes])]


def _actions_block(actions: tuple[Action, ...]) -> list[dict[str, Any]]:
    """The card's actions as one `actions` block of buttons (none when the card has no actions)."""
    if not actions:
        return []
    if len(actions) > ACTIONS_MAX:
        raise ValueError(f"a card has {len(actions)} actions; a Slack actions block takes at most {ACTIONS_MAX}")
    elements = []
    for a in actions:
        if not 1 <= len(a.id) <= ACTION_ID_MAX or len(a.value) > ACTION_VALUE_MAX:
            raise ValueError(f"action {a.id[:40]!r}: Slack takes an action_id of 1 to {ACTION_ID_MAX} characters "
                             f"and a value of at most {ACTION_VALUE_MAX}")
        button: dict[str, Any] = {"action_id": a.id}
        if a.style in ("primary", "danger"):
            button["style"] = a.style
        button["text"] = {"emoji": True, "text": clip(one_line(a.label), BUTTON_TEXT_MAX) or a.id[:BUTTON_TEXT_MAX],
                          "type": "plain_text"}
        button["type"] = "button"
        if a.value:
            button["value"] = a.value
        elements.append(button)
    return [{"block_id": actions[0].id[:ACTION_ID_MAX], "elements": elements, "type": "actions"}]


def _fallback(card: Card, cut: list[str]) -> str:
    """The plain `text` fallback: what the card says, for notifications and screen readers.

    Slack parses it as mrkdwn, so it is escaped (`slack_escape`) and a run of backticks from data is
    spaced out so it cannot open a code block. It is cut as the blocks are: at a line, measured in
    UTF-16 units after escaping (FALLBACK_MAX), with the blocks' first cut sentence kept at its end,
    or, when only the fallback is cut, "… N more lines in the card"."""
    parts: list[str] = []
    if card.title:
        parts.append(one_line(card.title))
    if card.status is not None:
        parts.append(("Succeeded: " if card.status.success else "Failed: ") + one_line(card.status.message))
    if not card.drawn:
        parts.append("Not drawn as a card: " + one_line(card.reason or ""))
    elif card.form == "table":
        parts.append(f"Table of {len(card.rows):,} rows: " + ", ".join(one_line_each(card.columns[:20])))
    elif card.form == "key_values":
        parts += [f"{one_line(k)}: {one_line(cell_text(v))}" for k, v in zip(card.keys[:20], card.values)]
    elif card.form == "diff" and card.diff is not None:
        count = len(card.diff.lines) if card.diff.kind == "lines" else len(card.diff.changes)
        parts.append(f"Diff of {one_line(card.diff.before)} and {one_line(card.diff.after)} "
                     f"({count:,} {'lines' if card.diff.kind == 'lines' else 'changes'})")
    elif card.form == "text" and card.text.strip():
        parts.append(_markdown_head(card.text) if card.text_format == "markdown" else clean(card.text))
    lines = [line for p in parts if p for line in p.split("\n")]
    tail = [_fallback_line(c, FALLBACK_MAX // 4) for c in cut[:1]]
    room = FALLBACK_MAX - sum(utf16_len(t) + 1 for t in tail) - _FALLBACK_MORE
    out: list[str] = []
    for i, line in enumerate(lines):
        line = _fallback_line(line, room)
        if utf16_len(line) + 1 > room:
            tail = tail or [f"… {len(lines) - i:,} more lines in the card"]
            break
        out.append(line)
        room -= utf16_len(line) + 1
    text = "\n".join(out + tail).strip()
    return text or "(empty result)"


_FALLBACK_MORE = 40  # room kept for "… N more lines in the card"
_BACKTICKS = re.compile("`{3,}")


def _fallback_line(line: str, room: int) -> str:
    """One line escaped, its backtick runs spaced out, cut (with "…") to `room` UTF-16 units."""
    def escaped(text: str) -> str:
        text = slack_escape(text)
        return _BACKTICKS.sub(lambda m: " ".join(m.group(0)), text) if "```" in text else text

    text = escaped(line)
    limit = len(line)
    while utf16_len(text) > room and limit > 1:
        limit = max(1, min(limit - 1, limit * room // max(1, utf16_len(text))))
        text = escaped(clip(line, limit))
    return text


def _markdown_head(text: str) -> str:
    from oz0.renderers.slack_markdown import markdown_head  # the tree (~15 ms to import): only for markdown

    return markdown_head(text)


def render(card: Card) -> Rendered:
    """The card as a `chat.postMessage` body, the files to upload beside it and what was cut.

    Should the drawing break a limit despite the budgets (a bug), the reader gets a short card saying
    which limit, with the full result attached; a payload Slack would refuse is never returned."""
    rendered = _render(card)
    problem = _over_limit(rendered.payload)
    if problem is None:
        return rendered
    import logging  # defers a costly import (with traceback and string): only a budget bug is logged

    logging.getLogger(__name__).error("Slack card over a limit despite its budgets (%s); sending it shortened",
                                      problem)
    rendered = _render(shortened(card, f"This result did not fit in a Slack message ({problem}); "
                                       "the full result is attached."))
    problem = _over_limit(rendered.payload)
    if problem is not None:
        raise RuntimeError(f"a shortened Slack card is still over a limit: {problem}")
    return rendered


def _feedback_block(card: Card) -> list[dict[str, Any]]:
    """Slack's assistant feedback buttons (a `context_actions` block) under a card that asks for them."""
    if not card.feedback:
        return []
    button = {"good": ("👍", "Good answer"), "bad": ("👎", "Bad answer")}
    made = {f"{side}_button": {"text": {"type": "plain_text", "text": emoji}, "accessibility_label": label,
                               "value": f"{value}:{card.feedback}"[:ACTION_VALUE_MAX]}
            for side, (value, (emoji, label)) in zip(("positive", "negative"), button.items())}
    return [{"type": "context_actions", "elements": [{"type": "feedback_buttons", "action_id": FEEDBACK_ACTION,
                                                      **made}]}]


def _render(card: Card) -> Rendered:
    # the actions' blocks and characters are reserved before the body is filled
    actions = _actions_block(card.actions) + _feedback_block(card)
    head: list[dict[str, Any]] = []
    if card.title and one_line(card.title):
        head.append({"text": {"emoji": False, "text": clip(one_line(card.title), HEADER_MAX), "type": "plain_text"},
                     "type": "header"})
    head += _status_blocks(card) + _not_drawn_blocks(card)
    notes = _notes_blocks(card)
    room = Room(MAX_BLOCKS_CHARS - blocks_size(head + notes + actions) - _TAIL_CHARS,
                MAX_BLOCKS - len(head) - len(notes) - len(actions) - _TAIL_BLOCKS)
    rule = _RULES.get(card.form)
    body = rule(card, room) if rule else _body_text(card.degrade(), room)
    tail: list[dict[str, Any]] = []
    cuts = list(room.cut)
    facts = len(card.status.warnings) + 5 if card.status is not None else 0
    if facts > CONTEXT_ELEMENTS_MAX:
        cuts.append(f"Status facts past the {CONTEXT_ELEMENTS_MAX} a Slack context shows, full result attached")
    if len(card.notes) > CONTEXT_ELEMENTS_MAX:
        cuts.append(f"… {len(card.notes) - CONTEXT_ELEMENTS_MAX + 1} more notes, full result attached")
    if not card.drawn and len(card.violations) > 5:
        cuts.append(f"… {len(card.violations) - 5} more problems, full result attached")
    said = {t for b in body if b["type"] == "context" for t in (e["text"] for e in b["elements"])}
    unsaid = [c for c in room.cut if clip(one_line(c), SECTION_TEXT_MAX) not in said]
    if unsaid:
        tail.append(context(unsaid))
    uploads = uploads_for(card, cut=bool(cuts))
    where = f", {card.files_at}" if card.files_at else ""
    if uploads:
        a = uploads[0]
        tail.append(context([f"📎 Full result attached: {a.filename} ({a.content_type}, {size_text(a.size)}){where}"]))
    elif card.files and where:
        tail.append(context([f"📎 {len(card.files)} file(s) beside this card{where}"]))
    blocks = head + body + notes + tail + actions
    if not blocks:
        blocks = [context(["(empty result)"])]
    payload: dict[str, Any] = {
        "text": _fallback(card, cuts),
        "blocks": blocks,
        "unfurl_links": False,
        "unfurl_media": False,
    }
    return Rendered(payload, uploads + files_for(card), tuple(cuts))


def _json_size(blocks: list[dict[str, Any]], cells: int) -> int | None:
    """The bytes of the blocks' JSON, which `blocks_size` never exceeds: every text it counts is in the JSON
    whole (a UTF-8 byte or more for each UTF-16 unit), inside a `"text":""` of 9 bytes or a `"url":""` of 8
    that stand for its 4. So a card whose JSON is within the limit needs no walk (a small card's every
    time). None when it is surely over (`cells` table cells of `_RAW_CELL` bytes or more each) or cannot
    be written (a lone surrogate): then the blocks are walked."""
    if cells * len(_RAW_CELL) > MAX_BLOCKS_CHARS:
        return None
    try:
        return len(orjson.dumps(blocks))
    except TypeError:  # orjson.JSONEncodeError
        return None


_RAW_CELL = b'{"text":"","type":"raw_text"}'


def _over_limit(payload: dict[str, Any]) -> str | None:
    """Which limit slack_sdk does not check the payload breaks, if any: blocks, characters, and the one
    table's rows and cells."""
    blocks = payload["blocks"]
    if len(blocks) > MAX_BLOCKS:
        return f"{len(blocks)} blocks, over Slack's {MAX_BLOCKS}"
    tables = [b for b in blocks if b["type"] == "table"]
    if len(tables) > 1:
        return f"{len(tables)} table blocks; Slack allows one a message"
    for table in tables:
        rows = table["rows"]
        if not 1 <= len(rows) <= TABLE_MAX_ROWS or not 1 <= max(map(len, rows)) <= TABLE_MAX_COLUMNS:
            return (f"a table of {len(rows)} rows and up to {max(map(len, rows), default=0)} cells "
                    f"a row; Slack takes 1 to {TABLE_MAX_ROWS} rows of 1 to {TABLE_MAX_COLUMNS}")
    bound = _json_size(blocks, sum(map(len, tables[0]["rows"])) if tables else 0)
    if bound is None or bound > MAX_BLOCKS_CHARS:
        size = blocks_size(blocks)
        if size > MAX_BLOCKS_CHARS:
            return f"{size:,} characters of blocks, over our {MAX_BLOCKS_CHARS:,}"
    return None
