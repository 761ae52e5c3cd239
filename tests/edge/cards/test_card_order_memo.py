"""A contract's column order is read off its schema once, and every result still gets its own columns."""

from __future__ import annotations

from oz0.edge.cards.choice import choose_card
from oz0.edge.contracts.schema import load_contract

SCHEMA = {
    "type": "object",
    "properties": {"rows": {"type": "array", "items": {"$ref": "#/$defs/row"}}},
    "$defs": {"row": {"type": "object", "x-oz0-order": ["status", "name"],
                      "properties": {"id": {"type": "integer"}, "name": {"type": "string"},
                                     "status": {"type": "string"}}}},
}


def test_each_result_gets_its_own_columns_in_the_schemas_order() -> None:
    contract = load_contract({**SCHEMA, "title": "order memo"})
    first = choose_card({"rows": [{"extra": 1, "id": 1, "name": "a", "status": "ok"}]}, contract, checked=True)
    second = choose_card({"rows": [{"id": 2, "status": "bad"}]}, contract, checked=True)
    third = choose_card({"rows": [{"zeta": True, "name": "c"}]}, contract, checked=True)
    assert first.columns == ("status", "name", "id", "extra")
    assert second.columns == ("status", "id")
    assert third.columns == ("name", "zeta")
    assert first.full_result == b'{"rows":[{"extra":1,"id":1,"name":"a","status":"ok"}]}'


def test_the_memo_holds_schema_positions_not_results() -> None:
    contract = load_contract({**SCHEMA, "title": "order memo size"})
    for i in range(50):
        choose_card({"rows": [{f"k{i}": i, "id": i}]}, contract, checked=True)
    assert len(contract._derived) == 1  # one table position of the schema, however many results
