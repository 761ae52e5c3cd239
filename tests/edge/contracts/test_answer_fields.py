"""MCP elicitation's form fields of the current spec (2025-11-25) in every channel that asks: multi-selects
(an array of enum), titled single- and multi-selects (`oneOf`/`anyOf` of `{const, title}`), legacy
`enumNames` labels and defaults; a field of another shape is free text with a note, never a refused
question. The schema is the one `@modelcontextprotocol/server-everything` sends."""

from __future__ import annotations

from oz0.adapters.console.forms import fields_for, form_input
from oz0.edge.contracts.answer_schema import check_answer_schema
from oz0.edge.contracts.schema import load_contract
from oz0.renderers import discord_modal, slack_modal

REQUESTED = {
    "type": "object",
    "properties": {
        "name": {"title": "String", "type": "string", "description": "Your full, legal name"},
        "integer": {"title": "Integer", "type": "integer", "minimum": 1, "maximum": 100, "default": 42},
        "untitledMultipleSelectEnum": {
            "type": "array", "title": "Untitled Multiple Select Enum", "minItems": 1, "maxItems": 3,
            "items": {"type": "string", "enum": ["Guitar", "Piano", "Violin", "Drums", "Bass"]},
            "default": ["Guitar"]},
        "titledSingleSelectEnum": {
            "type": "string", "title": "Titled Single Select Enum",
            "oneOf": [{"const": "hero-1", "title": "Superman"}, {"const": "hero-2", "title": "Green Lantern"},
                      {"const": "hero-3", "title": "Wonder Woman"}], "default": "hero-1"},
        "titledMultipleSelectEnum": {
            "type": "array", "title": "Titled Multiple Select Enum", "minItems": 1, "maxItems": 3,
            "items": {"anyOf": [{"const": "fish-1", "title": "Tuna"}, {"const": "fish-2", "title": "Salmon"},
                                {"const": "fish-3", "title": "Trout"}]},
            "default": ["fish-1"]},
        "legacyTitledEnum": {
            "type": "string", "title": "Legacy Titled Single Select Enum",
            "enum": ["pet-1", "pet-2", "pet-3"], "enumNames": ["Cats", "Dogs", "Birds"], "default": "pet-1"},
        "where": {"type": "object", "title": "Where", "description": "A nested object",
                  "properties": {"x": {"type": "number"}}},
    },
    "required": ["name"],
}


def test_every_field_kind_of_the_spec_is_read_into_one_shape() -> None:
    schema = check_answer_schema(REQUESTED)
    props = schema["properties"]
    assert props["titledSingleSelectEnum"] == {
        "type": "string", "title": "Titled Single Select Enum", "enum": ["hero-1", "hero-2", "hero-3"],
        "enumNames": ["Superman", "Green Lantern", "Wonder Woman"], "default": "hero-1"}
    assert props["titledMultipleSelectEnum"]["items"] == {
        "type": "string", "enum": ["fish-1", "fish-2", "fish-3"], "enumNames": ["Tuna", "Salmon", "Trout"]}
    assert props["titledMultipleSelectEnum"]["default"] == ["fish-1"]
    assert props["untitledMultipleSelectEnum"]["items"] == {"type": "string",
                                                             "enum": ["Guitar", "Piano", "Violin", "Drums", "Bass"]}
    assert props["legacyTitledEnum"]["enumNames"] == ["Cats", "Dogs", "Birds"]
    assert props["integer"] == {"type": "integer", "title": "Integer", "minimum": 1, "maximum": 100, "default": 42}
    contract = load_contract(schema)
    assert contract.validate({"name": "Ada", "titledMultipleSelectEnum": ["fish-2", "fish-3"],
                              "titledSingleSelectEnum": "hero-3"}) == ()
    assert contract.validate({"name": "Ada", "titledSingleSelectEnum": "Superman"})  # a label is not a value


def test_an_unsupported_field_is_free_text_with_a_note_and_the_rest_is_asked() -> None:
    where = check_answer_schema(REQUESTED)["properties"]["where"]
    assert where["type"] == "string" and where["title"] == "Where"
    assert where["description"] == ("A nested object (asked as free text: type 'object' is not one of string, "
                                    "number, integer, boolean or a list of choices)")
    odd = check_answer_schema({"type": "object", "properties": {"n": {"type": "string", "oneOf": [{"pattern": "a"}]}}})
    assert "asked as free text: its oneOf/anyOf options are not {const, title} choices" in \
        odd["properties"]["n"]["description"]


def test_slack_draws_labels_multi_selects_and_defaults() -> None:
    schema = check_answer_schema(REQUESTED)
    view = slack_modal.modal_for(message="Please provide inputs", answer_schema=schema, metadata="m")
    blocks = {b["label"]["text"]: b["element"] for b in view["blocks"] if b["type"] == "input"}
    hero = blocks["Titled Single Select Enum"]
    assert [o["text"]["text"] for o in hero["options"]] == ["Superman", "Green Lantern", "Wonder Woman"]
    assert hero["initial_option"]["text"]["text"] == "Superman"
    fish = blocks["Titled Multiple Select Enum"]
    assert fish["type"] == "multi_static_select" and fish["max_selected_items"] == 3
    assert [o["text"]["text"] for o in fish["initial_options"]] == ["Tuna"]
    assert [o["text"]["text"] for o in blocks["Legacy Titled Single Select Enum"]["options"]] == ["Cats", "Dogs", "Birds"]
    names = list(schema["properties"])
    state = {f"oz0_f{names.index('titledMultipleSelectEnum')}": {slack_modal.ACTION: {
        "type": "multi_static_select", "selected_options": [{"value": "1"}, {"value": "2"}]}}}
    assert slack_modal.submitted(schema, state) == {"titledMultipleSelectEnum": ["fish-2", "fish-3"]}


def test_discord_draws_labels_multi_selects_and_defaults() -> None:
    few = ("name", "titledSingleSelectEnum", "titledMultipleSelectEnum", "legacyTitledEnum")  # a modal holds 5
    schema = check_answer_schema({**REQUESTED, "properties": {k: REQUESTED["properties"][k] for k in few}})
    modal = discord_modal.modal_for(answer_schema=schema, custom_id="job/step")
    shown = {c["label"]: c["component"] for c in modal["components"]}
    fish = shown["Titled Multiple Select Enum"]
    assert fish["type"] == 3 and fish["max_values"] == 3
    assert [(o["label"], o.get("default", False)) for o in fish["options"]] == [
        ("Tuna", True), ("Salmon", False), ("Trout", False)]
    assert [o["label"] for o in shown["Titled Single Select Enum"]["options"]] == [
        "Superman", "Green Lantern", "Wonder Woman"]
    names = list(schema["properties"])
    values = {f"oz0_f{names.index('titledMultipleSelectEnum')}": "0,2",
              f"oz0_f{names.index('legacyTitledEnum')}": "1"}
    assert discord_modal.submitted(schema, values) == {"titledMultipleSelectEnum": ["fish-1", "fish-3"],
                                                       "legacyTitledEnum": "pet-2"}


def test_the_console_form_draws_checkboxes_for_a_multi_select() -> None:
    schema = check_answer_schema(REQUESTED)
    fields = {f.name: f for f in fields_for(load_contract(schema))}
    fish = fields["titledMultipleSelectEnum"]
    assert fish.widget == "multiselect" and fish.picked == ('"fish-1"',)
    assert [shown for _, shown in fish.choices] == ["Tuna", "Salmon", "Trout"]
    assert [shown for _, shown in fields["titledSingleSelectEnum"].choices] == [
        "Superman", "Green Lantern", "Wonder Woman"]
    form = {fields["name"].html_id: "Ada", fish.choice_id(0): "1", fish.choice_id(2): "1"}
    assert form_input(fields.values(), form) == {"name": "Ada", "titledMultipleSelectEnum": ["fish-1", "fish-3"]}


def test_chat_buttons_of_a_titled_select_show_its_titles() -> None:
    from oz0.adapters.chat.asking import buttons, content_of

    schema = check_answer_schema({"type": "object", "properties": {
        "titledSingleSelectEnum": REQUESTED["properties"]["titledSingleSelectEnum"]}})
    assert [b.label for b in buttons("job", "step", schema)] == ["Superman", "Green Lantern", "Wonder Woman"]
    assert content_of(schema, "1") == {"titledSingleSelectEnum": "hero-2"}
