"""The terminal's text is rich's, byte for byte, whether or not rich drew it.

`terminal_grid` draws tables and lines itself when nothing has to wrap (so a small table renders
without importing rich); rich is the oracle: every card here is drawn both ways and compared.
"""

from __future__ import annotations

import random

import hostile
import pytest

from oz0.adapters.cli.render import examples
from oz0.edge import choose_card, load_contract, load_json_file
from oz0.edge.cards.model import Card
from oz0.renderers import plain_text, terminal_grid

SHORT = [*hostile.SLACK, *hostile.DISCORD, *hostile.HTML, *hostile.FENCES, *hostile.CELLS, *hostile.INVISIBLE,
         "plain ascii", "", " x ", "a" * 99, "a" * 101, "日本語", "tab\there", "…"]
BIG = ("columns_30", "wide_cells", "empty_table", "no_columns", "keys_500", "no_changes", "no_lines",
       "many_warnings", "many_violations", "status_only", "empty")


def _random_cards(count: int) -> list[Card]:
    rng = random.Random(14)
    pieces = ["a", "bb", " ", "x y", "12345", "-" * 30, "w" * 60, "[b]x[/b]", "", "日本", "é", "\t", "…", "😀"]
    cards = []
    for _ in range(count):
        ncol = rng.randint(1, 8)
        pick = lambda: "".join(rng.choice(pieces[:8] if rng.random() < 0.9 else pieces)  # noqa: E731
                               for _ in range(rng.randint(0, 4)))
        cards.append(Card(form="table", title=rng.choice(["", "t", "x" * rng.randint(95, 105)]),
                          columns=tuple(pick() for _ in range(ncol)),
                          rows=tuple(tuple(pick() for _ in range(ncol)) for _ in range(rng.randint(0, 10)))))
        keys = tuple(pick() or "k" for _ in range(rng.randint(1, 6)))
        cards.append(Card(form="key_values", keys=keys, values=tuple(pick() for _ in keys)))
    return cards


def _bundled() -> list[Card]:
    cards = []
    for entry in examples():
        contract = load_contract(entry["schema"]) if entry["schema"] else None
        cards.append(choose_card(load_json_file(entry["result"]), contract, title=entry["name"]))
    return cards


CASES = [*_bundled(), *(make(s) for make in hostile.CARDS.values() for s in SHORT),
         *(hostile.big_cards()[name] for name in BIG), *_random_cards(300)]


def test_text_is_rich_s_byte_for_byte(monkeypatch: pytest.MonkeyPatch) -> None:
    drawn = [plain_text.render(card).payload for card in CASES]
    monkeypatch.setattr(plain_text, "draw", lambda parts, *, width: None)
    by_rich = [plain_text.render(card).payload for card in CASES]
    differ = [(card, a, b) for card, a, b in zip(CASES, drawn, by_rich) if a != b]
    assert not differ, f"{len(differ)} cards differ from rich's drawing; the first: {differ[0]}"


def test_small_ascii_tables_and_lines_are_drawn_without_rich() -> None:
    parts = [terminal_grid.Line("deploys", bold=True),
             terminal_grid.Grid(("service", "ok"), (("api", "yes"), ("billing", ""))),
             terminal_grid.Grid(("", ""), (("id", "INC-1"), ("severity", "sev2")), boxed=False)]
    assert terminal_grid.draw(parts, width=100) == (
        "deploys\n"
        "┏━━━━━━━━━┳━━━━━┓\n"
        "┃ service ┃ ok  ┃\n"
        "┡━━━━━━━━━╇━━━━━┩\n"
        "│ api     │ yes │\n"
        "│ billing │     │\n"
        "└─────────┴─────┘\n"
        "id        INC-1  \n"
        "severity  sev2   \n")
    assert terminal_grid.draw([terminal_grid.Line("x" * 100)], width=100) is not None


@pytest.mark.parametrize("parts", [
    [terminal_grid.Line("x" * 101)],
    [terminal_grid.Line("日本語")],
    [terminal_grid.Line("a\tb")],
    [terminal_grid.Grid(("a",), (("w" * 97,),))],
    [terminal_grid.Grid((), ())],
    [terminal_grid.Grid(("", ""), (), boxed=False)],
], ids=["too long", "wide characters", "tab", "table too wide", "no columns", "no key-values"])
def test_what_would_wrap_or_measure_otherwise_is_left_to_rich(parts: list[terminal_grid.Part]) -> None:
    assert terminal_grid.draw(parts, width=100) is None
