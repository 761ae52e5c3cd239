"""Slack: tables (and key-values, as a two-column table) as the native `table` block, context blocks
and section fields, within the limits Slack sets on each.

A table is one a message, at most 100 rows of 20 cells, no empty cell (`—` stands in), every cell a
`raw_text` that Slack never parses. Cells are made a chunk of rows at a time, column by column, and
only until the room is full: rows that are not shown are never turned into text.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from collections.abc import Set as AbstractSet
from itertools import chain
from typing import Any

from oz0.edge.cards.model import cell_text, cell_texts
from oz0.renderers.monospace import table_columns
from oz0.renderers.safety import clip, clip_each, one_line, one_line_each, utf16_lens
from oz0.renderers.slack_rich_text import TEXT_OBJECT_COST, Room

__all__ = ["CELL_MAX", "CONTEXT_ELEMENTS_MAX", "FIELDS_MAX", "FIELD_MAX", "MAX_BLOCKS_CHARS",
           "SECTION_TEXT_MAX", "TABLE_MAX_COLUMNS", "TABLE_MAX_ROWS", "context", "section_fields", "table_block"]

MAX_BLOCKS_CHARS = 12_000
SECTION_TEXT_MAX = 3_000
FIELD_MAX = 2_000
FIELDS_MAX = 10
CONTEXT_ELEMENTS_MAX = 10
TABLE_MAX_ROWS = 100
TABLE_MAX_COLUMNS = 20
CELL_MAX = 300
_EMPTY_CELL = "—"
_CHUNK_ROWS = 24  # the first rows made; then as many as the room is likely to hold
_ROOM_KEPT = 400  # of the room, kept for the cut notes a table may add before it
_TABLE_COST = 40  # counted for the table block itself while its rows are fitted
_CLIPPED = f"Values longer than {CELL_MAX} characters are shortened, full result attached"


def table_block(header: list[Any] | None, rows: Sequence[tuple[Any, ...]], room: Room, *,
                noun: str = "rows") -> list[dict[str, Any]]:
    """One native table: header row (if any), then as many rows as the limits and the room allow,
    preceded by a context block saying what was cut."""
    width = len(header) if header is not None else max((len(r) for r in rows), default=0)
    if header is not None and 0 < width <= TABLE_MAX_COLUMNS and 0 < len(rows) <= _CHUNK_ROWS:
        small = _small_table(header, rows, room)
        if small is not None:
            return small
    shown_columns = min(width, TABLE_MAX_COLUMNS)
    notes: list[str] = []
    if width > TABLE_MAX_COLUMNS:
        notes.append(f"… {width - TABLE_MAX_COLUMNS} more columns (Slack shows at most {TABLE_MAX_COLUMNS}), "
                     "full result attached")
    table_rows: list[list[dict[str, Any]]] = []
    clipped_any = False
    used = _TABLE_COST
    if header is not None:
        head_texts, _, head_lens = _cell_texts(one_line_each(cell_texts(header[:shown_columns])))
        table_rows.append(_cells(head_texts))
        used += sum(head_lens) + TEXT_OBJECT_COST * len(head_lens)
    budget = room.chars - _ROOM_KEPT
    shown = 0
    room_rows = min(len(rows), TABLE_MAX_ROWS - len(table_rows))
    row_cost = TEXT_OBJECT_COST * shown_columns
    start, chunk_rows = used, _CHUNK_ROWS
    kinds: list[set[type]] = [set() for _ in range(shown_columns)]  # each column's types, for its alignment
    made = 0  # the rows made into text so far (their types are in `kinds`)
    while shown < room_rows:
        chunk = rows[shown:min(room_rows, shown + chunk_rows)]
        count = len(chunk)
        made = shown + count
        # every cell of the chunk in one list, column by column: each pass runs once over all of them
        values = table_columns(chunk, shown_columns)
        chunk_kinds = [set(map(type, column)) for column in values]
        for column_kinds, more in zip(kinds, chunk_kinds):
            column_kinds |= more
        flat = one_line_each(list(chain.from_iterable(map(cell_texts, values, chunk_kinds))))
        cells, clipped, lens = _cell_texts(flat)
        cells_text = [cells[i:i + count] for i in range(0, len(cells), count)]
        took = 0
        for size in map(sum, zip(*(lens[i:i + count] for i in range(0, len(lens), count)))):
            if used + size + row_cost > budget:
                break
            used += size + row_cost
            took += 1
        if clipped and not clipped_any:
            clipped_any = any(max(map(len, flat[i:i + took]), default=0) > CELL_MAX for i in range(0, len(flat), count))
        if took:  # the cells of the rows taken
            table_rows += _by_row(_cells(chain.from_iterable(column[:took] for column in cells_text)), took)
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
        notes.append(_CLIPPED)
    out: list[dict[str, Any]] = []
    if notes:
        room.cut += notes
        out.append(room.take(context(notes)))
    if not table_rows:
        return out
    for column_kinds, column in zip(kinds, table_columns(rows[made:TABLE_MAX_ROWS], shown_columns)):
        column_kinds |= set(map(type, column))  # the rows up to Slack's 100 that were not made: aligned by too
    settings = [{"align": _align(column_kinds), "is_wrapped": True} for column_kinds in kinds]
    table = {"column_settings": settings, "rows": table_rows, "type": "table"}
    out.append(room.take(table, size=used - _TABLE_COST))
    return out


def _small_table(header: list[Any], rows: Sequence[tuple[Any, ...]], room: Room) -> list[dict[str, Any]] | None:
    """A table of a few rows under a header, when all of it fits the room (None otherwise): the block
    `table_block` makes then, its header and cells made, cleaned and counted in one pass over all of them."""
    width, count = len(header), len(rows)
    values = table_columns(rows, width)
    kinds = [set(map(type, column)) for column in values]
    flat = one_line_each(list(chain(cell_texts(header), chain.from_iterable(map(cell_texts, values, kinds)))))
    cells, clipped, lens = _cell_texts(flat)
    used = sum(lens) + TEXT_OBJECT_COST * len(cells) + _TABLE_COST
    if used > room.chars - _ROOM_KEPT:
        return None
    made = _cells(cells)
    table_rows = [made[:width], *_by_row(made[width:], count)]
    settings = [{"align": _align(column_kinds), "is_wrapped": True} for column_kinds in kinds]
    out: list[dict[str, Any]] = []
    if clipped and max(map(len, flat[width:])) > CELL_MAX:  # a body cell, not only the header
        notes = [_CLIPPED]
        room.cut += notes
        out.append(room.take(context(notes)))
    out.append(room.take({"column_settings": settings, "rows": table_rows, "type": "table"}, size=used - _TABLE_COST))
    return out


def _cell_texts(texts: list[str]) -> tuple[list[str], bool, list[int]]:
    """One-line texts as Slack cells: clipped, and never empty (Slack refuses an empty cell); whether one
    was clipped; and the cells' UTF-16 lengths. `texts` is the caller's own list, returned as it is when
    nothing changes. A text is never longer than its UTF-16 length, so the texts are counted by characters
    only when one is over the limit in UTF-16 units."""
    lens = utf16_lens(texts)
    clipped = max(lens, default=0) > CELL_MAX and max(map(len, texts)) > CELL_MAX
    if clipped:
        texts = clip_each(texts, CELL_MAX)
    if not all(texts):
        texts = [t or _EMPTY_CELL for t in texts]
    elif not clipped:
        return texts, False, lens
    return texts, clipped, utf16_lens(texts)


def _cells(texts: Iterable[str]) -> list[dict[str, Any]]:
    """Texts as table cells: `raw_text`, which Slack never parses."""
    return [{"text": t, "type": "raw_text"} for t in texts]


def _by_row(cells: list[dict[str, Any]], count: int) -> list[list[dict[str, Any]]]:
    """Cells made column by column (each column's `count` in turn) regrouped into rows, at C speed: the
    cells are made in one pass, not one comprehension a row (each a call in Python 3.11)."""
    return list(map(list, zip(*(cells[i:i + count] for i in range(0, len(cells), count)))))


def _align(kinds: AbstractSet[type]) -> str:
    """Right for a column of numbers (blanks aside), left for anything else (a boolean is no number):
    `kinds` is the set of the column's types."""
    if str in kinds:  # the usual column, read without a set made
        return "left"
    kinds = kinds - {type(None)}
    for kind in kinds:
        if kind is bool or not issubclass(kind, (int, float)):
            return "left"
    return "right" if kinds else "left"


def context(texts: list[str]) -> dict[str, Any]:
    """A context block of plain texts (never parsed), at most 10 elements (the 10th says how many more)."""
    texts = [clip(one_line(t), SECTION_TEXT_MAX) for t in texts if one_line(t)]
    if len(texts) > CONTEXT_ELEMENTS_MAX:
        extra = len(texts) - CONTEXT_ELEMENTS_MAX + 1
        texts = texts[: CONTEXT_ELEMENTS_MAX - 1] + [f"… {extra} more, full result attached"]
    return {"elements": [{"emoji": False, "text": t, "type": "plain_text"} for t in texts or ["—"]], "type": "context"}


def section_fields(pairs: list[tuple[str, Any]], room: Room) -> list[dict[str, Any]]:
    """Key-value pairs as section fields, 10 a section, 2,000 characters a field, while the room lasts."""
    out: list[dict[str, Any]] = []
    for start in range(0, len(pairs), FIELDS_MAX):
        fields = [{"emoji": False, "text": clip(f"{one_line(k)}: {one_line(cell_text(v))}", FIELD_MAX),
                   "type": "plain_text"} for k, v in pairs[start:start + FIELDS_MAX]]
        block = {"fields": fields, "type": "section"}
        if not room.fits(block) or room.blocks <= 2:
            room.cut.append(f"… {len(pairs) - start} more fields, full result attached")
            out.append(room.take(context([room.cut[-1]])))
            break
        out.append(room.take(block))
    return out
