"""Monospace tables: cells padded to their column's width, for a code block or a terminal.

Two things live here, shared by the renderers that draw a table as lines of text:
- `aligned`: a small table (a markdown table in a result) padded to the widest cell of each column,
  measured in terminal columns (`rich.cells.cell_len`, so 日本語 takes two a character), for Slack's
  and Discord's code blocks and the terminal's markdown;
- `fit_table`: a card's table fitted into a text budget (Discord's 4,000 characters): as many rows as
  fit once every line is padded to the widths of the rows shown, and no row turned into text that
  cannot be shown. Its column widths come from the rows it shows, so a long row that is cut never
  widens the table.
Both take one-line texts (no control characters); what escaping a platform needs is the caller's.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import cache
from itertools import accumulate, chain, islice, repeat
from operator import sub
from typing import Any

from oz0.edge.cards.model import cell_texts
from oz0.renderers.safety import (
    clipped_clean_each,
    fence_marks_broken,
    fence_safe_clipped,
    one_line_each,
    utf16_len,
    utf16_lens,
)

__all__ = ["FittedTable", "aligned", "cell_widths", "fit", "fit_table", "table_columns"]

_CHUNK_ROWS = 24  # the first rows made; then about as many as the rest of the budget holds
_MIN_CHUNK_ROWS = 8


def _cell_len(text: str) -> int:
    """`rich.cells.cell_len`, without importing rich for printable ASCII (one column a character)."""
    if text.isascii() and text.isprintable():
        return len(text)
    return _rich_cell_len()(text)


@cache
def _rich_cell_len() -> Callable[[str], int]:
    from rich.cells import cell_len  # defers rich (~10 ms) to the first text past ASCII

    return cell_len


def _plain(texts: Sequence[str]) -> bool:
    """Whether every text is printable ASCII (one column a character)."""
    every = "".join(texts)
    return every.isascii() and every.isprintable()


def cell_widths(texts: Sequence[str]) -> list[int]:
    """Monospace widths of one-line texts (no control characters): ASCII is one column a character."""
    if all(map(str.isascii, texts)):
        return list(map(len, texts))
    measure = _rich_cell_len()
    return [len(t) if t.isascii() else measure(t) for t in texts]


def _longer_than(texts: Sequence[str], cell_width: int) -> bool:
    """Whether a text is cut to `cell_width` (cells are cut by characters, not monospace columns)."""
    return max(map(len, texts), default=0) > cell_width


def aligned(rows: Sequence[Sequence[str]], *, rule: bool = False) -> str:
    """`rows` as lines, each cell padded to its column's width and two spaces between cells (line ends
    stripped); with `rule`, a line of `─` under the first row (the header)."""
    plain = [_plain(r) for r in rows]  # printable ASCII: one column a character
    measured = [list(map(len, r)) if p else list(map(_cell_len, r)) for r, p in zip(rows, plain)]
    if len(set(map(len, rows))) == 1:
        widths = list(map(max, zip(*measured)))
    else:
        count = max(map(len, rows), default=0)
        widths = [max((m[i] for m in measured if i < len(m)), default=0) for i in range(count)]
    lines = []
    for r, p, m in zip(rows, plain, measured):  # a wide cell is padded to its width less its extra columns
        pads = widths if p else map(sub, widths, map(sub, m, map(len, r)))
        lines.append("  ".join(map(str.ljust, r, pads)).rstrip())
    if rule and rows:
        lines.insert(1, "  ".join("─" * w for w in widths))
    return "\n".join(lines)


def fit(pieces: Iterable[str], chars: int, *, sep: str = "\n") -> tuple[str, int, int]:
    """As many pieces as fit in `chars` UTF-16 units (each counted with its separator), joined; returns
    the text, how many were taken and the units used. `pieces` may be lazy: what does not fit is never made."""
    out: list[str] = []
    used = 0
    step = utf16_len(sep)
    for piece in pieces:
        size = utf16_len(piece) + step
        if used + size > chars:
            break
        out.append(piece)
        used += size
    return sep.join(out), len(out), used


def _fit_made(lines: list[str], chars: int) -> tuple[str, int, int]:
    """`fit(lines, chars)` of lines already made, counted in one pass: they are all measured at once."""
    ends = list(accumulate(map((1).__add__, utf16_lens(lines))))  # each line with its newline
    taken = bisect_right(ends, chars)
    return "\n".join(lines[:taken]), taken, ends[taken - 1] if taken else 0


def table_columns(rows: Sequence[Sequence[Any]], width: int) -> list[Sequence[Any]]:
    """The first `width` cells of the rows, column by column (a short row padded with None)."""
    if not rows:
        return [()] * width
    if min(map(len, rows)) >= width:
        return list(zip(*rows, strict=False))[:width]  # type: ignore[return-value]  # tuples are Sequences; list is invariant
    return [tuple(r[i] if i < len(r) else None for r in rows) for i in range(width)]


@dataclass(frozen=True)
class FittedTable:
    """A table fitted into a budget: `text` is the header, its rule and `shown` rows (empty when not even
    the header fits); `used` the UTF-16 units it took; `clipped` whether a shown cell was shortened."""

    text: str
    shown: int
    used: int
    clipped: bool


def fit_table(header: Sequence[str], rows: Sequence[Sequence[Any]], chars: int, *, cell_width: int,
              probe_rows: int) -> FittedTable:
    """`header` (one-line texts, one a column) and as many of `rows` (values) as fit in `chars` units.

    Cells are cut to `cell_width` columns and made fence-safe (the table goes in a code block). At most
    `probe_rows` rows are considered, made a chunk at a time and only while they may still fit.
    """
    small = _small_table(header, rows, chars, cell_width=cell_width) if len(rows) <= _CHUNK_ROWS else None
    if small is not None:
        return small
    shown_cols = len(header)
    columns = [[h] for h in header]  # one-line texts, column by column: the header, then the candidate rows
    header_widths = cell_widths(fence_safe_clipped(header, cell_width))
    need = 0
    candidates = 0
    probe = min(len(rows), probe_rows)
    chunk_rows = _CHUNK_ROWS
    while candidates < probe:
        chunk = rows[candidates:min(candidates + chunk_rows, probe)]
        texts = one_line_each(list(chain.from_iterable(map(cell_texts, table_columns(chunk, shown_cols)))))
        made = _by_column(texts, len(chunk))
        between = 2 * (shown_cols - 1) + 1 if all(made[-1]) else 1
        took = 0
        floors = map(_floor_lens, made, header_widths[:-1] + [0], repeat(cell_width))  # the last is not padded
        for floor in map(sum, zip(*floors)):
            need += floor + between
            if need > chars:
                break
            took += 1
        for column, col in zip(columns, made):
            column += col[:took]
        candidates += took
        if took < len(chunk):
            break
        # next, about as many rows as the rest of the budget holds at the rows' floors so far, and a quarter more
        chunk_rows = max(_MIN_CHUNK_ROWS, int((chars - need) * candidates / max(1, need) * 1.25) + 1)
    every = fence_safe_clipped(list(chain.from_iterable(columns)), cell_width)
    cells = _by_column(every, candidates + 1)
    widths = _by_column(cell_widths(every), candidates + 1)
    extra = [None if w == lens else list(map(sub, w, lens)) for w, lens in zip(widths, (list(map(len, c)) for c in cells))]
    widest = list(map(_running_max, widths))
    most = _most_rows(cells, widths, widest, candidates, chars)
    shown = candidates if most is None else most
    left = chars
    while True:  # widths from `shown` rows; a row that no longer fits makes the next widths narrower
        width = [w[shown] for w in widest]
        lines = list(_table_lines(cells, extra, width, shown))
        head, _, head_used = _fit_made(lines[:2], chars)
        body, fitted, body_used = _fit_made(lines[2:], chars - head_used)
        left = chars - head_used - body_used
        if fitted >= shown or [w[fitted] for w in widest] == width:
            shown = fitted
            break
        shown = fitted
    shown = shown if body else 0
    clipped = _longer_than(list(chain.from_iterable(col[:shown + 1] for col in columns)), cell_width)
    return FittedTable(head + ("\n" + body if body else ""), shown, chars - left, clipped)


def _by_column(values: list[Any], rows: int) -> list[list[Any]]:
    """A list made column by column (each column's `rows` values in turn), cut back into its columns.

    The passes over a table's cells (cleaning, cutting, measuring) run once over all of them, not once
    a column: a pass costs about as much to start as to run over a column of a few dozen cells."""
    return [values[start:start + rows] for start in range(0, len(values), rows)] if rows else []


def _small_table(header: Sequence[str], rows: Sequence[Sequence[Any]], chars: int, *,
                 cell_width: int) -> FittedTable | None:
    """A table of a few rows drawn whole, when the whole of it fits (None otherwise): the same lines as
    the general fitter draws then, without its budget bookkeeping. Its cells are made column by column
    (a column holds one JSON type as a rule, turned to text at C speed), cleaned and cut in one pass over
    all of them, and made fence-safe once, in the drawn text."""
    width = len(header)
    count = len(rows)
    if not width:
        text = aligned([[]] * (count + 1), rule=True)
        return FittedTable(text, count, utf16_len(text) + 1, False) if utf16_len(text) + 1 <= chars else None
    values = table_columns(rows, width)
    texts = one_line_each(list(chain(header, chain.from_iterable(map(cell_texts, values)))))
    cells = clipped_clean_each(texts, cell_width)  # their fence marks are broken in the drawn text, at once
    lens = list(map(len, cells))
    measured = cell_widths(cells)
    # the header's cells, then each row's: in these lists made column by column, every count-th cell
    rows_at = [slice(0, width), *(slice(width + r, None, count) for r in range(count))]
    widths = list(map(max, *(measured[at] for at in rows_at))) if count else measured[:width]
    wide = measured != lens
    lines = []
    for at in rows_at:  # a wide cell is padded to its column's width less its extra columns
        pads = list(map(sub, widths, map(sub, measured[at], lens[at]))) if wide and measured[at] != lens[at] else widths
        lines.append("  ".join(map(str.ljust, cells[at], pads)).rstrip())
    lines.insert(1, "  ".join(map("─".__mul__, widths)))
    text = fence_marks_broken("\n".join(lines))
    used = utf16_len(text) + 1  # every line and its newline, as `fit` counts them
    if used > chars:
        return None
    return FittedTable(text, count, used, _longer_than(texts, cell_width))


def _most_rows(cells: list[list[str]], widths: list[list[int]], widest: list[list[int]], candidates: int,
               room: int) -> int | None:
    """The most rows that fit in `room` with the header and its rule, every line padded to those rows' widths.

    Counted, not drawn: a line is its cells' UTF-16 units, the padding of every cell before its last
    non-empty one (the column's width less the cell's; the line's end is stripped), and two spaces
    between cells. None when even the header and its rule do not fit.
    """
    columns = len(cells)
    units = _by_column(utf16_lens(list(chain.from_iterable(cells))), candidates + 1)
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


def _floor_lens(texts: Sequence[str], header_width: int, cell_width: int) -> list[int]:
    """The least each text's cell can take in a line: its length cut to `cell_width`, and in a column of
    ASCII (one unit and at most one column a character), no less than the header's width either."""
    lens = list(map(len, texts))
    if max(lens, default=0) > cell_width:
        lens = [n if n < cell_width else cell_width for n in lens]
    return [n if n > header_width else header_width for n in lens] if all(map(str.isascii, texts)) else lens


# `max` called on two numbers at a time (by `map` or `accumulate`) costs four times a comparison in a
# comprehension or a loop: the elementwise maxima here are written out.

def _running_max(values: list[int]) -> list[int]:
    """The largest of `values` up to each one (`accumulate(values, max)`)."""
    out = []
    most = values[0] if values else 0
    for value in values:
        if value > most:
            most = value
        out.append(most)
    return out


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
