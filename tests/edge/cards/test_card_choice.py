"""Card choice: the rules of ARCHITECTURE.md section 2, each with a test that fails if it breaks."""

from __future__ import annotations

import copy
import json

import pytest

from oz0.edge import choose_card, load_contract
from oz0.edge.cards.choice import MAX_CARD_BYTES


def test_list_of_objects_is_a_table_in_schema_order():
    schema = {"type": "array", "items": {"type": "object", "properties": {
        "name": {"type": "string"}, "age": {"type": "integer"}, "city": {"type": "string"}}}}
    card = choose_card([{"city": "Oslo", "age": 3, "name": "a"}, {"name": "b", "extra": True}], schema)
    assert card.form == "table"
    assert card.columns == ("name", "age", "city", "extra")
    assert card.rows == (("a", 3, "Oslo", None), ("b", None, None, True))


def test_without_schema_columns_are_first_seen():
    card = choose_card([{"b": 1, "a": 2}, {"c": 3, "a": 4}])
    assert card.columns == ("b", "a", "c")



def test_rows_of_as_many_keys_but_other_ones_get_every_column():
    card = choose_card([{"b": 1, "a": 2}, {"c": 3, "a": 4}, {"a": 5, "b": 6}])
    assert card.columns == ("b", "a", "c")
    assert card.rows == ((1, 2, None), (None, 4, 3), (6, 5, None))


def test_rows_of_the_same_keys_in_another_order_keep_the_first_rows_order():
    card = choose_card([{"b": 1, "a": 2}, {"a": 4, "b": 3}])
    assert card.columns == ("b", "a")
    assert card.rows == ((1, 2), (3, 4))


def test_a_row_mapping_with_a_default_is_read_without_adding_to_it():
    from collections import defaultdict

    odd = defaultdict(int, {"a": 1, "c": 2})
    card = choose_card([{"a": 0, "b": 0}, odd])
    assert card.columns == ("a", "b", "c")
    assert card.rows == ((0, 0, None), (1, None, 2))
    assert dict(odd) == {"a": 1, "c": 2}

def test_x_oz0_order_for_columns_on_row_schema_then_enclosing():
    row = {"type": "object", "properties": {"a": {}, "b": {}, "c": {}}}
    rows = [{"a": 1, "b": 2, "c": 3}]
    assert choose_card(rows, {"type": "array", "items": {**row, "x-oz0-order": ["c"]}}).columns == ("c", "a", "b")
    assert choose_card(rows, {"type": "array", "x-oz0-order": ["b"], "items": row}).columns == ("b", "a", "c")
    both = {"type": "array", "x-oz0-order": ["b"], "items": {**row, "x-oz0-order": ["c", "a"]}}
    assert choose_card(rows, both).columns == ("c", "a", "b")


def test_x_oz0_order_for_keys_then_schema_then_result_order():
    schema = {"type": "object", "x-oz0-order": ["z", "not-there"],
              "properties": {"a": {}, "z": {}, "m": {}}}
    card = choose_card({"extra2": 0, "m": 1, "a": 2, "z": 3, "extra1": 4}, schema)
    assert card.form == "key_values"
    assert card.keys == ("z", "a", "m", "extra2", "extra1")
    assert card.values == (3, 2, 1, 0, 4)


def test_mcp_wrapped_list_is_a_table():
    schema = {"type": "object", "properties": {"result": {"type": "array", "items": {
        "type": "object", "properties": {"city": {}, "tz": {}}}}}}
    card = choose_card({"result": [{"tz": "UTC", "city": "London"}]}, schema)
    assert card.form == "table"
    assert card.columns == ("city", "tz")
    assert card.rows == (("London", "UTC"),)


def test_object_with_a_list_beside_other_keys_is_key_values():
    card = choose_card({"result": [{"a": 1}], "count": 1})
    assert card.form == "key_values"


def test_empty_list_is_a_table_with_its_columns():
    schema = {"type": "array", "items": {"type": "object", "properties": {"id": {}, "name": {}}}}
    card = choose_card([], schema)
    assert (card.form, card.columns, card.rows) == ("table", ("id", "name"), ())
    wrapped = {"type": "object", "properties": {"result": schema}}
    card = choose_card({"result": []}, wrapped)
    assert (card.form, card.columns) == ("table", ("id", "name"))


DIFF_SCHEMA = {"type": "object", "x-oz0-diff": {"before": "old", "after": "new"}, "x-oz0-order": ["path"],
               "properties": {"path": {"type": "string"}, "old": {}, "new": {}}}


def test_diff_of_two_texts_is_a_unified_line_diff():
    card = choose_card({"new": "a\nB\nc\n", "old": "a\nb\nc\n", "path": "x.txt"}, DIFF_SCHEMA)
    assert card.form == "diff"
    assert card.diff.kind == "lines"
    assert [(ln.op, ln.text) for ln in card.diff.lines] == [
        ("@", "@@ -1,3 +1,3 @@"), (" ", "a"), ("-", "b"), ("+", "B"), (" ", "c")]
    assert card.keys == ("path",) and card.values == ("x.txt",)
    as_json = card.to_dict()
    assert as_json["diff"]["kind"] == "lines"


def test_diff_of_two_objects_is_a_key_diff():
    card = choose_card({"path": "p", "old": {"a": 1, "b": 2, "c": 3}, "new": {"a": 1, "b": 5, "d": 4}}, DIFF_SCHEMA)
    assert card.diff.kind == "keys"
    changes = [(c.key, c.change, c.before, c.after) for c in card.diff.changes]
    assert changes == [("b", "changed", 2, 5), ("c", "removed", 3, None), ("d", "added", None, 4)]
    assert card.to_dict()["diff"]["changes"][1] == {"key": "c", "change": "removed", "before": 3}


def test_diff_only_when_both_named_properties_are_present():
    card = choose_card({"path": "p", "old": "a"}, DIFF_SCHEMA)
    assert card.form == "key_values"
    assert card.keys == ("path", "old")


def test_diff_of_mixed_values_is_key_values():
    assert choose_card({"path": "p", "old": "a", "new": 3}, DIFF_SCHEMA).form == "key_values"


def test_text_forms():
    md = choose_card("# Title\n\n*hi*")
    assert (md.form, md.text_format, md.text) == ("text", "markdown", "# Title\n\n*hi*")
    number = choose_card(42)
    assert (number.form, number.text_format, number.text) == ("text", "json", "42")
    mixed = choose_card([1, {"a": 2}])
    assert mixed.form == "text" and mixed.text_format == "json"
    assert json.loads(mixed.text) == [1, {"a": 2}]


def _sized(total: int) -> dict:
    base = len(json.dumps({"t": ""}, separators=(",", ":")))
    return {"t": "x" * (total - base)}


def test_size_rule_65536_is_drawn_65537_is_not():
    at_limit, over = _sized(MAX_CARD_BYTES), _sized(MAX_CARD_BYTES + 1)
    assert len(json.dumps(at_limit, separators=(",", ":"))) == 65_536
    assert choose_card(at_limit).drawn is True
    card = choose_card(over)
    assert card.drawn is False
    assert "65,537 bytes" in card.reason and "65,536" in card.reason
    assert card.attachment.size == 65_537
    assert json.loads(card.attachment.data) == over


def test_size_counts_utf8_bytes_not_characters():
    base = len(json.dumps({"t": ""}, separators=(",", ":")))
    text = "é" * ((MAX_CARD_BYTES - base) // 2 + 1)  # fewer characters than the limit, more bytes
    assert choose_card({"t": text}).drawn is False


def test_size_rule_comes_before_the_contract():
    card = choose_card(_sized(MAX_CARD_BYTES + 1), {"type": "string"})
    assert card.drawn is False and "bytes of JSON" in card.reason and not card.violations


def test_result_that_breaks_its_contract_is_not_drawn_and_says_where():
    schema = {"type": "array", "items": {"type": "object", "properties": {"cpu": {"type": "number"}}}}
    result = [{"cpu": 1}, {"cpu": "high"}]
    card = choose_card(result, schema)
    assert card.drawn is False
    assert card.violations[0].json_path == "$[1].cpu"
    assert card.violations[0].keyword == "type"
    assert "$[1].cpu" in card.reason and "'type'" in card.reason and '"high"' in card.reason
    assert json.loads(card.attachment.data) == result
    as_json = card.to_dict()
    assert as_json["drawn"] is False and as_json["reason"] == card.reason


def test_checked_skips_the_contract_step_only_for_the_value_the_caller_checked():
    schema = {"type": "array", "items": {"type": "object", "properties": {"cpu": {"type": "number"}}}}
    result = [{"cpu": 1}, {"cpu": "high"}]
    card = choose_card(result, schema, checked=True)  # the caller vouches for it: not validated again
    assert card.drawn is True and card.form == "table" and card.rows == ((1,), ("high",))
    mcp = {"content": [], "structuredContent": {"result": "no"}}
    mcp_schema = {"type": "object", "properties": {"result": {"type": "array"}}}
    assert choose_card(mcp, mcp_schema, checked=True).violations[0].json_path == "$.result"


def test_every_chosen_card_keeps_the_measured_result():
    result = {"success": True, "message": "ok", "rows": [{"a": 1}]}
    assert json.loads(choose_card(result).full_result) == result
    assert "full_result" not in choose_card(result).to_dict()
    mcp = {"content": [{"type": "text", "text": "boom"}], "isError": True}
    assert json.loads(choose_card(mcp).full_result) == mcp


def test_qzx_success_with_one_evidence_field_uses_its_sub_schema():
    schema = {"type": "object", "properties": {
        "success": {"type": "boolean"}, "message": {"type": "string"},
        "files": {"type": "array", "items": {"type": "object", "x-oz0-order": ["size"],
                                              "properties": {"name": {}, "size": {}}}}}}
    result = {"success": True, "message": "2 files.", "files": [{"name": "a", "size": 1}],
              "warnings": ["slow disk"], "meta": {"command": "ls", "duration_ms": 3.5, "schema_version": 1}}
    card = choose_card(result, schema)
    assert card.form == "table" and card.columns == ("size", "name")
    assert card.status.success is True and card.status.message == "2 files."
    assert card.status.warnings == ("slow disk",)
    assert (card.status.command, card.status.duration_ms) == ("ls", 3.5)


def test_qzx_failure_header_and_several_evidence_fields_as_key_values():
    result = {"success": False, "message": "Not found.", "error": "no such file", "error_code": "path_not_found",
              "details": {"path": "x"}, "path": "x"}
    card = choose_card(result)
    assert card.form == "key_values" and card.keys == ("details", "path")
    assert (card.status.success, card.status.error_code, card.status.error) == (False, "path_not_found",
                                                                                  "no such file")


def test_qzx_header_alone():
    card = choose_card({"success": True, "message": "Done."})
    assert card.form == "text" and card.text == "" and card.status.message == "Done."


def test_blank_message_is_not_an_envelope():
    assert choose_card({"success": True, "message": "  "}).status is None


def test_mcp_call_tool_result_structured_content_against_output_schema():
    schema = {"type": "object", "properties": {"result": {"type": "array", "items": {"type": "object"}}}}
    result = {"content": [{"type": "text", "text": "[]"}], "structuredContent": {"result": [{"a": 1}]},
              "isError": False}
    card = choose_card(result, schema)
    assert card.form == "table" and card.columns == ("a",)
    broken = choose_card({"content": [], "structuredContent": {"result": "no"}}, schema)
    assert broken.drawn is False and broken.violations[0].json_path == "$.result"


def test_mcp_is_error_is_a_failure_card_with_the_tools_text():
    card = choose_card({"content": [{"type": "text", "text": "City 'Atlantis' is unknown."}], "isError": True})
    assert card.status.success is False
    assert card.status.message == "City 'Atlantis' is unknown."


def test_mcp_text_content_json_and_markdown():
    as_json = choose_card({"content": [{"type": "text", "text": '{"a": 1}'}]}, source="mcp")
    assert as_json.form == "key_values" and as_json.keys == ("a",)
    as_md = choose_card({"content": [{"type": "text", "text": "**bold**"}]}, source="mcp")
    assert as_md.form == "text" and as_md.text == "**bold**"


def test_mcp_incomplete_result_type_is_reported():
    card = choose_card({"content": [], "resultType": "task", "structuredContent": {}}, source="mcp")
    assert card.drawn is False and "'task'" in card.reason


def test_order_through_nested_ref_and_allof():
    schema = {
        "$defs": {
            "base": {"properties": {"id": {}, "kind": {}}},
            "named": {"allOf": [{"$ref": "#/$defs/base"}], "properties": {"name": {}}},
        },
        "type": "array",
        "items": {"allOf": [{"$ref": "#/$defs/named"}, {"properties": {"tags": {}}}]},
    }
    rows = [{"tags": [], "name": "n", "kind": "k", "id": 1}]
    assert choose_card(rows, schema).columns == ("id", "kind", "name", "tags")


def test_x_oz0_order_found_through_ref():
    schema = {"$ref": "#/$defs/obj", "$defs": {"obj": {"x-oz0-order": ["b"], "properties": {"a": {}, "b": {}}}}}
    assert choose_card({"a": 1, "b": 2}, schema).keys == ("b", "a")


@pytest.mark.parametrize("result, schema", [
    ([{"b": {"deep": [1, 2]}, "a": 1}], {"type": "array", "x-oz0-order": ["a"]}),
    ({"path": "p", "old": "x\ny", "new": "x\nz"}, DIFF_SCHEMA),
    ({"path": "p", "old": {"k": [1]}, "new": {"k": [2]}}, DIFF_SCHEMA),
    ({"success": True, "message": "m", "rows": [{"a": {"b": 1}}], "meta": {"command": "c"}}, None),
    ({"content": [{"type": "text", "text": "t"}], "structuredContent": {"result": [{"x": {"y": 1}}]}}, None),
    ({"t": "x" * 70_000}, None),
])
def test_choosing_never_mutates_the_result(result, schema):
    before = copy.deepcopy(result)
    schema_before = copy.deepcopy(schema)
    card = choose_card(result, schema)
    card.to_dict()
    card.degrade()
    assert result == before
    assert schema == schema_before


def test_card_is_frozen():
    card = choose_card({"a": 1})
    with pytest.raises(AttributeError):
        card.form = "text"  # type: ignore[misc]


def test_every_form_degrades_to_text():
    for result, schema in [([{"a": 1}], None), ({"a": 1}, None), ({"path": "p", "old": "a", "new": "b"}, DIFF_SCHEMA)]:
        text = choose_card(result, schema).degrade()
        assert text.form == "text" and text.text
    kv = choose_card({"a": 1}).degrade()
    assert kv.text == "a: 1"


def test_contract_may_be_given_loaded():
    contract = load_contract({"type": "array", "items": {"properties": {"z": {}, "y": {}}}})
    assert choose_card([{"y": 1, "z": 2}], contract).columns == ("z", "y")
