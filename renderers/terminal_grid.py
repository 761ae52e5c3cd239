"""The terminal's lines and tables drawn without rich when that gives the very bytes rich draws.

Why: `oz0 render --to text` of a small table is mostly start-up, and importing rich costs about as
much as the rest of the command. Rich's drawing is simple when nothing has to wrap: every text is
printable ASCII (one column a character) and every line fits the width. Then a line is printed as it
is and a table's columns are as wide as their widest cell. `draw` does exactly that, and answers
None for anything else (wide or combining characters, tabs, a line or a table too wide), which the
caller then draws with rich. tests/renderers/test_renderers_terminal.py compares both on the hostile corpus.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["Grid", "Line", "Part", "draw"]


@dataclass(frozen=True)
class Line:
    """A text (possibly of several lines), printed as rich prints `Text(text)`."""

    text: str
    bold: bool = False


@dataclass(frozen=True)
class Grid:
    """A table: `boxed` is rich's default `Table()` with a header; otherwise rich's
    `Table(show_header=False, box=None, padding=(0, 2, 0, 0))` of key-values."""

    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    boxed: bool = True


Part = Line | Grid


def _plain(text: str) -> bool:
    return text.isascii() and text.isprintable()


def _widths(grid: Grid) -> list[int] | None:
    rows = (grid.columns, *grid.rows) if grid.boxed else grid.rows
    count = len(grid.columns)
    if count == 0 or not rows or any(len(r) != count for r in rows):
        return None
    widths = [0] * count
    for row in rows:
        for i, cell in enumerate(row):
            if not _plain(cell):
                return None
            widths[i] = max(widths[i], len(cell))
    return widths


def _boxed(grid: Grid, widths: list[int]) -> list[str]:
    def rule(left: str, fill: str, mid: str, right: str) -> str:
        return left + mid.join(fill * (w + 2) for w in widths) + right

    def row(cells: Sequence[str], edge: str) -> str:
        return edge + edge.join(f" {c.ljust(w)} " for c, w in zip(cells, widths)) + edge

    return [rule("┏", "━", "┳", "┓"), row(grid.columns, "┃"), rule("┡", "━", "╇", "┩"),
            *(row(r, "│") for r in grid.rows), rule("└", "─", "┴", "┘")]


def draw(parts: Sequence[Part], *, width: int) -> str | None:
    """The parts as rich prints them at `width` columns with no colour, or None when that needs rich."""
    out: list[str] = []
    for part in parts:
        if isinstance(part, Line):
            lines = part.text.split("\n")
            if not all(_plain(ln) and len(ln) <= width for ln in lines):
                return None
            out += lines
            continue
        widths = _widths(part)
        if widths is None:
            return None
        if part.boxed:
            if sum(widths) + 3 * len(widths) + 1 > width:
                return None
            out += _boxed(part, widths)
        else:
            if sum(widths) + 2 * len(widths) > width:
                return None
            out += ["".join(c.ljust(w) + "  " for c, w in zip(r, widths)) for r in part.rows]
    return "".join(line + "\n" for line in out)
