"""Microsoft Teams: a card as a message activity carrying one Adaptive Card 1.5 that runs nothing.

`render` returns `Rendered(payload, uploads, cuts)`: the payload is the activity's body
`{"type": "message", "summary", "attachments": [{"contentType": "application/vnd.microsoft.card.adaptive",
"content": card}]}` with no `entities` (so no `<at>` mention is ever live) and no `text` (so nothing is
parsed as markdown or HTML outside the card). The card is valid against the official Adaptive Card
1.5 schema (the tests validate every payload against it):
- title and status in `RichTextBlock`s (status coloured Good or Attention), data always in
  `TextRun`s (see `renderers.teams_text`: no markdown, URLs with their real host);
- tables as a `Table` element (the schema's column order, the header row first, grid lines), at most
  `TABLE_MAX_COLUMNS` columns;
- key-values as a `FactSet` when every name and value is inert (no markdown character, no URL: a
  FactSet's text is parsed by Teams); otherwise as a two-column `Table` of TextRuns, which is not;
- diffs as monospace TextRuns, `+` lines Good and `-` lines Attention;
- markdown through the shared tree (`renderers.markdown_blocks`) as RichTextBlocks;
- the card's actions as `Action.Execute` (verb = the action's id, data = `{id, value}`), read back
  by the wire from the invoke's `action.data`; a card asking for feedback (`Card.feedback`) gains
  👍 / 👎 the same way (`FEEDBACK_ACTION`, values `good:...` / `bad:...`).

This module owns the Teams limits: the whole activity at most `MAX_BYTES` (Teams refuses a message
over 28 KB), `MAX_ACTIONS` actions. Rows, fields, lines and blocks are added while they fit in the
byte budget (the tail reserved first); whatever does not fit is cut at a boundary, the card says so,
and the full result goes beside it (`Rendered.uploads`: the wire offers it as a file in a personal
chat, or links the console's job page elsewhere). Never a silent cut.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Any

import orjson

from oz0.edge.cards.model import FEEDBACK_ACTION, Action, Card, cell_text, cell_texts
from oz0.renderers import markdown_blocks as md
from oz0.renderers.attachments import files_for, size_text, uploads_for, within_limits
from oz0.renderers.rendered import Rendered
from oz0.renderers.safety import clean, clip, one_line, one_line_each
from oz0.renderers.teams_text import INERT, md_blocks, mono, rich, run

__all__ = ["CARD_TYPE", "MAX_ACTIONS", "MAX_BYTES", "payload_bytes", "render"]

log = logging.getLogger(__name__)

CARD_TYPE = "application/vnd.microsoft.card.adaptive"
MAX_BYTES = 28_000           # Teams' message limit is 28 KB, counted as the activity's UTF-8 JSON
MAX_ACTIONS = 6              # buttons Teams shows on a card before it folds them away
TABLE_MAX_COLUMNS = 10
CELL_MAX = 500
VALUE_MAX = 2_000
LABEL_MAX = 80
_TAIL_BYTES = 1_500          # reserved for the cut notes and the file line
_PROBE_ROWS = 500            # at most this many rows are tried
_STYLES = {"default": "default", "primary": "positive", "danger": "destructive"}


def _size(node: Any) -> int:
    return len(orjson.dumps(node)) + 1


def payload_bytes(payload: dict[str, Any]) -> int:
    """The activity as Teams counts it against its 28 KB: compact UTF-8 JSON."""
    return len(orjson.dumps(payload))


class _Room:
    def __init__(self, size: int) -> None:
        self.bytes = size
        self.cut: list[str] = []

    def take(self, elements: Iterable[dict[str, Any]]) -> tuple[list[dict[str, Any]], int]:
        """As many elements as fit, in order; and how many were offered that did not fit."""
        out: list[dict[str, Any]] = []
        pending = list(elements)
        for el in pending:
            size = _size(el)
            if size > self.bytes:
                break
            self.bytes -= size
            out.append(el)
        return out, len(pending) - len(out)


# Forms --------------------------------------------------------------------------------------------

def _cell(text: str) -> dict[str, Any]:
    return {"type": "TableCell", "items": [rich([run(text)])]}


def _table(header: list[str], rows: Iterable[list[str]], room: _Room, total: int, what: str) -> list[dict[str, Any]]:
    """A Table element of the header and as many rows as fit in the room."""
    head = {"type": "TableRow", "cells": [_cell(h) for h in header], "style": "accent"}
    table: dict[str, Any] = {"type": "Table", "columns": [{"type": "TableColumnDefinition", "width": 1}
                                                          for _ in header],
                             "firstRowAsHeader": True, "showGridLines": True, "rows": [head]}
    room.bytes -= _size(table)
    if room.bytes < 0:
        return []
    shown = 0
    for row in rows:
        el = {"type": "TableRow", "cells": [_cell(c) for c in row]}
        size = _size(el)
        if size > room.bytes:
            break
        room.bytes -= size
        table["rows"].append(el)
        shown += 1
    if shown < total:
        room.cut.append(f"… {total - shown:,} more {what}, full result attached")
    return [table]


def _body_table(card: Card, room: _Room) -> list[dict[str, Any]]:
    if not card.columns:
        return [rich([run(f"{len(card.rows):,} rows without columns")])]
    cols = min(len(card.columns), TABLE_MAX_COLUMNS)
    if len(card.columns) > cols:
        room.cut.append(f"… {len(card.columns) - cols} more columns (a Teams table shows {TABLE_MAX_COLUMNS}), "
                        "full result attached")
    probe = card.rows[:_PROBE_ROWS]
    columns = [one_line_each(cell_texts([r[i] if i < len(r) else None for r in probe])) for i in range(cols)]
    clipped = any(len(t) > CELL_MAX for col in columns for t in col)
    rows = ([clip(col[j], CELL_MAX) or " " for col in columns] for j in range(len(probe)))
    out = _table([clip(h, CELL_MAX) for h in one_line_each(card.columns[:cols])], rows, room, len(card.rows), "rows")
    if clipped:
        room.cut.append(f"Values longer than {CELL_MAX} characters are shortened, full result attached")
    if not card.rows:
        out.append(rich([run("(no rows)", isSubtle=True)]))
    return out


def _body_key_values(card: Card, room: _Room) -> list[dict[str, Any]]:
    if not card.keys:
        return [rich([run("(no fields)", isSubtle=True)])]
    pairs = [(one_line(k), one_line(cell_text(v))) for k, v in zip(card.keys, card.values)]
    if any(len(v) > VALUE_MAX for _, v in pairs):
        room.cut.append(f"Values longer than {VALUE_MAX:,} characters are shortened, full result attached")
    pairs = [(clip(k, 200) or " ", clip(v, VALUE_MAX) or " ") for k, v in pairs]
    if all(INERT.match(k) and INERT.match(v) and "://" not in v for k, v in pairs):
        facts = [{"title": k, "value": v} for k, v in pairs]
        kept, left = room.take(facts)
        if left:
            room.cut.append(f"… {left:,} more fields, full result attached")
        return [{"type": "FactSet", "facts": kept}] if kept else []
    return _table(["field", "value"], ([k, v] for k, v in pairs), room, len(pairs), "fields")


def _diff_lines(card: Card) -> tuple[list[str], list[str | None], str]:
    diff = card.diff
    assert diff is not None
    if diff.kind == "lines":
        lines = [f"--- {one_line(diff.before)}", f"+++ {one_line(diff.after)}"]
        lines += [(ln.op if ln.op != "@" else "") + clean(ln.text).replace("\n", " ") for ln in diff.lines]
        return lines, [None, None] + [_colour(ln.op) for ln in diff.lines], "diff lines"
    changed: list[str] = []
    colours: list[str | None] = []
    for c in diff.changes:
        if c.change != "added":
            changed.append(f"- {one_line(c.key)}: {clip(one_line(cell_text(c.before)), VALUE_MAX)}")
            colours.append("Attention")
        if c.change != "removed":
            changed.append(f"+ {one_line(c.key)}: {clip(one_line(cell_text(c.after)), VALUE_MAX)}")
            colours.append("Good")
    return changed, colours, "lines of changes"


def _colour(op: str) -> str | None:
    return {"+": "Good", "-": "Attention", "@": "Accent"}.get(op)


def _fit_lines(lines: list[str], colours: list[str | None] | None, room: _Room, what: str) -> list[dict[str, Any]]:
    """A monospace block of as many lines as fit (each line's cost measured as its own run)."""
    room.bytes -= _size(mono([" "]))
    shown = 0
    for line in lines:
        cost = _size(mono([line]))
        if cost > room.bytes:
            break
        room.bytes -= cost
        shown += 1
    if shown < len(lines):
        room.cut.append(f"… {len(lines) - shown:,} more {what}, full result attached")
    return [mono(lines[:shown], colours[:shown] if colours else None)] if shown else []


def _body_diff(card: Card, room: _Room) -> list[dict[str, Any]]:
    out = _body_key_values(card, room) if card.keys else []
    if card.diff is None:
        return out
    if not (card.diff.lines if card.diff.kind == "lines" else card.diff.changes):
        return out + [rich([run("(no differences)", isSubtle=True)])]
    lines, colours, what = _diff_lines(card)
    return out + _fit_lines(lines, colours, room, what)


def _body_text(card: Card, room: _Room) -> list[dict[str, Any]]:
    if not card.text.strip():
        return []
    if card.text_format in ("json", "plain"):
        lines = clean(card.text).split("\n")
        if card.text_format == "json":
            return _fit_lines(lines, None, room, "lines of JSON")
        kept, left = room.take(rich([run(ln or " ")]) for ln in lines)
        if left:
            room.cut.append(f"… {left:,} more lines, full result attached")
        return kept
    blocks, unparsed = md.document(card.text)
    elements = [el for b in blocks for el in md_blocks(b)]
    kept, left = room.take(elements)
    if left:
        room.cut.append(f"… {left:,} more blocks of text, full result attached")
    if unparsed:
        room.cut.append(f"… {unparsed:,} more characters of text, full result attached")
    return kept


_RULES: dict[str, Callable[[Card, _Room], list[dict[str, Any]]]] = {
    "table": _body_table,
    "key_values": _body_key_values,
    "diff": _body_diff,
    "text": _body_text,
}


# Head, tail, actions and the activity -------------------------------------------------------------

def _head(card: Card, cuts: list[str]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    if card.title and one_line(card.title):
        out.append(rich([run(clip(one_line(card.title), 200), weight="Bolder", size="Large")]))
    s = card.status
    if s is not None:
        colour = "Good" if s.success else "Attention"
        out.append(rich([run("✅ Succeeded: " if s.success else "❌ Failed: ", weight="Bolder", color=colour),
                         run(clip(one_line(s.message), 400))]))
        facts = [f"error code: {one_line(s.error_code)[:100]}" if s.error_code else "",
                 f"error: {clip(one_line(s.error), 200)}" if s.error else "",
                 f"command: {clip(one_line(s.command), 100)}" if s.command else "",
                 f"{s.duration_ms:,.0f} ms" if s.duration_ms is not None else ""]
        if any(facts):
            out.append(rich([run(" · ".join(f for f in facts if f), isSubtle=True)], spacing="None"))
        for w in s.warnings[:3]:
            out.append(rich([run("⚠️ warning: " + clip(one_line(w), 150), isSubtle=True)], spacing="None"))
        if len(s.warnings) > 3:
            cuts.append(f"… {len(s.warnings) - 3} more warnings, full result attached")
    if not card.drawn:
        out.append(rich([run("Not drawn as a card. ", weight="Bolder", color="Warning"),
                         run(clip(one_line(card.reason or "The result could not be drawn."), 500))]))
        out += [rich([run("• " + clip(one_line(v.describe()), 200))], spacing="None") for v in card.violations[:3]]
        if len(card.violations) > 3:
            cuts.append(f"… {len(card.violations) - 3} more problems, full result attached")
    return out


def _actions(actions: tuple[Action, ...]) -> list[dict[str, Any]]:
    """The card's actions as `Action.Execute` buttons (verb = id; data = {id, value})."""
    if len(actions) > MAX_ACTIONS:
        raise ValueError(f"a card has {len(actions)} actions; Teams shows at most {MAX_ACTIONS} on a card")
    return [{"type": "Action.Execute", "title": clip(one_line(a.label), LABEL_MAX) or a.id[:LABEL_MAX],
             "verb": a.id, "data": {"id": a.id, "value": a.value}, "style": _STYLES.get(a.style, "default"),
             "isEnabled": not a.disabled} for a in actions]


def _feedback(card: Card) -> tuple[Action, ...]:
    """👍 / 👎 under a card that asks for feedback, as buttons like its others (value "good:..." / "bad:...")."""
    if not card.feedback:
        return ()
    return (Action(FEEDBACK_ACTION, "👍", value=f"good:{card.feedback}"),
            Action(FEEDBACK_ACTION, "👎", value=f"bad:{card.feedback}"))


def _fallback(card: Card) -> str:
    title = one_line(card.title or "") or (card.status.message if card.status else "") or "oz0 result"
    return clip(one_line(clean(title)), 200) or "oz0 result"


def render(card: Card) -> Rendered:
    """The card as a Teams message activity, the files to offer beside it and what was cut.

    Should the drawing break a limit despite the budgets (a bug), the reader gets a short card saying
    which limit, with the full result beside it; an activity Teams would refuse is never returned."""
    return within_limits(_render, card, platform="Teams", log=log)


def _activity(body: list[dict[str, Any]], actions: list[dict[str, Any]], summary: str) -> dict[str, Any]:
    content: dict[str, Any] = {"type": "AdaptiveCard", "$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
                               "version": "1.5", "fallbackText": summary, "body": body}
    if actions:
        content["actions"] = actions
    return {"type": "message", "summary": summary, "attachments": [{"contentType": CARD_TYPE, "content": content}]}


def _render(card: Card) -> tuple[Rendered, str | None]:
    actions = _actions(card.actions + _feedback(card))
    cuts: list[str] = []
    head = _head(card, cuts)
    notes = [rich([run(clip(one_line(n), 150), isSubtle=True)], spacing="Small") for n in card.notes[:3]]
    if len(card.notes) > 3:
        cuts.append(f"… {len(card.notes) - 3} more notes, full result attached")
    summary = _fallback(card)
    room = _Room(MAX_BYTES - payload_bytes(_activity(head + notes, actions, summary)) - _TAIL_BYTES)
    rule = _RULES.get(card.form)
    body = rule(card, room) if rule else _body_text(card.degrade(), room)
    all_cuts = cuts + room.cut
    uploads = uploads_for(card, cut=bool(all_cuts))
    tail = [rich([run(clip(c, 200), isSubtle=True)], spacing="Small") for c in all_cuts[:6]]
    where = f", {card.files_at}" if card.files_at else ""
    if uploads:
        a = uploads[0]
        tail.append(rich([run(f"📎 Full result: {a.filename} ({a.content_type}, {size_text(a.size)}){where}",
                              isSubtle=True)], spacing="Small"))
    elif card.files and where:
        tail.append(rich([run(f"📎 {len(card.files)} file(s) with this result{where}", isSubtle=True)],
                         spacing="Small"))
    uploads += files_for(card)
    elements = head + ([{**body[0], "separator": True}] + body[1:] if head and body else body) + notes + tail
    payload = _activity(elements or ([] if actions else [rich([run("(empty result)")])]), actions, summary)
    size = payload_bytes(payload)
    problem = f"{size:,} bytes, over Teams' {MAX_BYTES:,}" if size > MAX_BYTES else None
    return Rendered(payload, uploads, tuple(all_cuts)), problem
