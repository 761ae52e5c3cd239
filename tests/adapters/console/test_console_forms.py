"""Run forms from input contracts: field order, widgets, required marks, and typed values back."""

from __future__ import annotations

import pytest
from console_plugin import DEPLOYS_IN

from oz0.adapters.console.forms import FormError, fields_for, form_input
from oz0.edge.contracts.schema import load_contract


def test_fields_follow_x_oz0_order_then_schema_order_with_types_enums_and_required_marks():
    fields = fields_for(load_contract(DEPLOYS_IN))
    assert [f.name for f in fields] == ["environment", "service", "limit", "include_failed", "note"]
    by_name = {f.name: f for f in fields}
    assert by_name["environment"].widget == "select" and by_name["environment"].required
    assert [shown for _, shown in by_name["environment"].choices] == ["staging", "production"]
    assert by_name["service"].widget == "text" and by_name["service"].required
    assert by_name["service"].label == "Service" and by_name["service"].description == "Which service to list."
    assert by_name["limit"].widget == "integer" and not by_name["limit"].required
    assert by_name["limit"].default == "3"
    assert by_name["include_failed"].widget == "select"  # optional boolean: unset, true or false
    assert by_name["note"].widget == "textarea"  # maxLength over 200


def test_a_text_agent_gets_one_textarea_and_its_text_back_unchanged():
    (field,) = fields_for(None)
    assert field.widget == "textarea" and field.required
    assert form_input((field,), {field.html_id: "  hello\nworld "}) == "  hello\nworld "


def test_properties_are_found_through_ref_and_allof():
    schema = {
        "$defs": {"base": {"type": "object", "properties": {"a": {"type": "number"}}, "required": ["a"]}},
        "allOf": [{"$ref": "#/$defs/base"}, {"properties": {"b": {"type": "array", "items": {"type": "string"}}}}],
        "x-oz0-order": ["b"],
    }
    fields = fields_for(load_contract(schema))
    assert [(f.name, f.widget, f.required) for f in fields] == [("b", "lines", False), ("a", "number", True)]
    value = form_input(fields, {"f-a": "2.5", "f-b": "x\n\n y \n"})
    assert value == {"a": 2.5, "b": ["x", "y"]}


def test_submitted_values_are_typed_and_empty_optional_fields_left_out():
    fields = fields_for(load_contract(DEPLOYS_IN))
    value = form_input(fields, {"f-environment": '"production"', "f-service": "api", "f-limit": "7",
                                "f-include_failed": "false", "f-note": ""})
    assert value == {"environment": "production", "service": "api", "limit": 7, "include_failed": False}


@pytest.mark.parametrize(("form", "message"), [
    ({"f-limit": "seven"}, "limit: 'seven' is not a whole number"),
    ({"f-environment": '"moon"'}, "environment: is not one of the listed choices"),
])
def test_an_unreadable_value_names_the_field(form, message):
    with pytest.raises(FormError) as info:
        form_input(fields_for(load_contract(DEPLOYS_IN)), {"f-service": "api", **form})
    assert str(info.value) == message


def test_objects_without_a_simple_widget_take_json_and_bad_json_says_where():
    contract = load_contract({"type": "object", "properties": {"filter": {"type": "object"}}})
    (field,) = fields_for(contract)
    assert field.widget == "json"
    assert form_input((field,), {field.html_id: '{"team": "core"}'}) == {"filter": {"team": "core"}}
    with pytest.raises(FormError, match=r"filter: is not valid JSON: .* line 1 column 2"):
        form_input((field,), {field.html_id: "{nope"})


def test_a_non_object_input_schema_is_one_json_field():
    (field,) = fields_for(load_contract({"type": "array", "items": {"type": "integer"}}))
    assert field.widget == "json"
    assert form_input((field,), {field.html_id: "[1, 2]"}) == [1, 2]


def test_field_ids_are_safe_for_html_even_for_odd_property_names():
    contract = load_contract({"type": "object", "properties": {'a"b <c>': {"type": "string"}}})
    (field,) = fields_for(contract)
    assert all(c.isalnum() or c in "-_" for c in field.html_id)
    assert form_input((field,), {field.html_id: "v"}) == {'a"b <c>': "v"}


def test_fields_through_allof_and_ref_come_in_written_order_like_the_card():
    from oz0.edge.cards.choice import choose_card

    schema = {"allOf": [{"$ref": "#/$defs/base"}], "properties": {"name": {"type": "string"}},
              "required": ["id"], "$defs": {"base": {"properties": {"id": {"type": "integer"}}}}}
    contract = load_contract(schema)
    assert [f.name for f in fields_for(contract)] == ["id", "name"]
    assert list(choose_card({"name": "n", "id": 1}, contract).keys) == ["id", "name"]
    assert [f.widget for f in fields_for(contract)] == ["integer", "text"]
