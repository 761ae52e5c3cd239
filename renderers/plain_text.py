"""Terminal text: aligned tables, key-values, +/- diffs, readable markdown and the QZX status header.

Drawn as rich draws it into a string (no colour codes, so the output is the same in a pipe and in a
test); every string from the result goes through `safety`, and into rich as `Text`, never as markup,
so a `[bold]` or an escape sequence in data stays literal or is removed. Rich is imported only when
the card needs it: `terminal_grid` draws the same bytes itself when nothing has to wrap.

`render` returns `Rendered(text, uploads, cuts)`. A card's actions are not drawn: they are the chat
channels' buttons ("Share in channel"), and a terminal has nothing to click.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from oz0.edge.cards.model import Card, cell_text
from oz0.renderers.attachments import files_for, uploads_for
from oz0.renderers.rendered import Rendered
from oz0.renderers.safety import clean, one_line
from oz0.renderers.terminal_grid import Grid, Line, Part, draw

if TYPE_CHECKING:
    from rich.console import RenderableType

__all__ = ["render"]

WIDTH = 100
MAX_ROWS = 200


def _t(value: Any) -> str:
    return one_line(cell_text(value))


def _status(card: Card) -> list[Part]:
    s = card.status
    if s is None:
        return []
    out: list[Part] = [Line(("✔ success: " if s.success else "✘ failure: ") + one_line(s.message))]
    if s.error_code or s.error:
        out.append(Line("  error: " + " ".join(one_line(x) for x in (s.error_code, s.error) if x)))
    for w in s.warnings:
        out.append(Line("  warning: " + one_line(w)))
    facts = [f"command {one_line(s.command)}" if s.command else "",
             f"{s.duration_ms:g} ms" if s.duration_ms is not None else ""]
    if any(facts):
        out.append(Line("  " + " · ".join(f for f in facts if f)))
    return out


def _table(card: Card, cuts: list[str]) -> list[Part]:
    out: list[Part] = [Grid(tuple(one_line(col) for col in card.columns),
                            tuple(tuple(_t(c) for c in row) for row in card.rows[:MAX_ROWS]))]
    if len(card.rows) > MAX_ROWS:
        cuts.append(f"… {len(card.rows) - MAX_ROWS} more rows")
        out.append(Line(cuts[-1]))
    if not card.rows:
        out.append(Line("(no rows)"))
    return out


def _key_values(card: Card, cuts: list[str]) -> list[Part]:
    rows = tuple((one_line(key), _t(value)) for key, value in zip(card.keys, card.values))
    return [Grid(("", ""), rows, boxed=False)] if card.keys else []


def _diff(card: Card, cuts: list[str]) -> list[Part]:
    out = _key_values(card, cuts)
    diff = card.diff
    if diff is None:
        return out
    if diff.kind == "lines":
        out.append(Line(f"--- {one_line(diff.before)}\n+++ {one_line(diff.after)}"))
        out += [Line((ln.op if ln.op != "@" else "") + clean(ln.text).replace("\n", " ")) for ln in diff.lines]
        if not diff.lines:
            out.append(Line("(no differences)"))
    else:
        for c in diff.changes:
            if c.change == "added":
                out.append(Line(f"+ {one_line(c.key)}: {one_line(cell_text(c.after))}"))
            elif c.change == "removed":
                out.append(Line(f"- {one_line(c.key)}: {one_line(cell_text(c.before))}"))
            else:
                out.append(Line(f"~ {one_line(c.key)}: {one_line(cell_text(c.before))} → "
                                f"{one_line(cell_text(c.after))}"))
    return out


def _text(card: Card, cuts: list[str]) -> list[Part]:
    if not card.text:
        return []
    if card.text_format != "markdown":
        return [Line(clean(card.text))]
    from oz0.renderers.text_markdown import markdown_text  # the tree (~15 ms to import): only for markdown

    text, unparsed = markdown_text(card.text, width=WIDTH)
    out: list[Part] = [Line(text)]
    if unparsed:
        cuts.append(f"… {unparsed:,} more characters of text")
        out.append(Line(cuts[-1]))
    return out


RULES: dict[str, Callable[[Card, list[str]], list[Part]]] = {
    "table": _table,
    "key_values": _key_values,
    "diff": _diff,
    "text": _text,
}


def render(card: Card) -> Rendered:
    """The card as terminal text, the file that carries the full result when it was cut or not drawn,
    and what was cut."""
    parts: list[Part] = []
    cuts: list[str] = []
    if card.title:
        parts.append(Line(one_line(card.title), bold=True))
    parts += _status(card)
    if not card.drawn:
        parts.append(Line("Not drawn as a card: " + one_line(card.reason or "")))
        for v in card.violations:
            parts.append(Line("  " + one_line(v.describe())))
    rule = RULES.get(card.form)
    parts += rule(card, cuts) if rule else _text(card.degrade(), cuts)
    parts += [Line("note: " + one_line(n)) for n in card.notes]
    uploads = uploads_for(card, cut=bool(cuts))
    if card.attachment is not None:
        a = uploads[0]
        parts.append(Line(f"[attached: {a.filename}, {a.content_type}, {a.size:,} bytes]"))
    uploads += files_for(card)
    text = draw(parts, width=WIDTH)
    return Rendered(_with_rich(parts) if text is None else text, uploads, tuple(cuts))


def _with_rich(parts: Sequence[Part]) -> str:
    """The parts drawn by rich: what wraps, folds or holds characters wider or narrower than one column."""
    from rich.console import Console, Group
    from rich.table import Table
    from rich.text import Text

    def renderable(part: Part) -> RenderableType:
        if isinstance(part, Line):
            return Text(part.text, style="bold") if part.bold else Text(part.text)
        if part.boxed:
            table = Table(show_lines=False, expand=False)
            for col in part.columns:
                table.add_column(Text(col), overflow="fold")
        else:
            table = Table(show_header=False, box=None, padding=(0, 2, 0, 0))
            table.add_column(style=None, no_wrap=True)
            table.add_column(overflow="fold")
        for row in part.rows:
            table.add_row(*map(Text, row))
        return table

    buffer = io.StringIO()
    Console(file=buffer, width=WIDTH, color_system=None, force_terminal=False, legacy_windows=False,
            emoji=False, highlight=False, markup=False).print(Group(*map(renderable, parts)))
    return buffer.getvalue()
