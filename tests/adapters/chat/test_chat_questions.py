"""A question's buttons, answered card and modals as plain data: which schemas get buttons, what a
modal holds within each platform's limits, and how a submission becomes the answer's JSON."""

from __future__ import annotations

import json

import pytest
from slack_standin import _view_problem

from oz0.adapters.chat import asking
from oz0.edge.runtime.questions import Answer, Question
from oz0.renderers import discord_modal, render, slack_modal

BOOL = {"type": "object", "properties": {"approved": {"type": "boolean"}}, "required": ["approved"]}
ENUM7 = {"type": "object", "properties": {"env": {"type": "string", "enum": [f"e{i}" for i in range(7)]}}}


def question(schema, *, step="approve", source=None) -> Question:
    return Question(job_id="0123456789ab", step=step, message="Merge #12?", answer_schema=schema, answerers={},
                    expires_at=None, source=source)


def test_one_boolean_gets_yes_and_no_a_small_enum_a_button_each_anything_else_answer():
    assert [a.label for a in asking.buttons("j", "s", BOOL)] == ["Yes", "No"]
    three = {"type": "object", "properties": {"env": {"type": "string", "enum": ["prod", "dev", "qa"]}}}
    assert [a.label for a in asking.buttons("j", "s", three)] == ["prod", "dev", "qa"]
    assert [a.label for a in asking.buttons("j", "s", ENUM7)] == ["Answer…"]      # above 5: a select in the modal
    two = {"type": "object", "properties": {"a": {"type": "boolean"}, "b": {"type": "string"}}}
    assert [a.label for a in asking.buttons("j", "s", two)] == ["Answer…"]
    ids = [a.id for a in asking.buttons("j", "s", three)]
    assert len(set(ids)) == len(ids)                                               # unique in a Slack block
    assert asking.content_of(three, "1") == {"env": "dev"} and asking.content_of(three, "9") is None


def test_a_button_of_an_earlier_step_does_not_name_a_later_one_and_fits_discord():
    [yes, _] = asking.buttons("0123456789ab", "x" * 500, BOOL)
    pick = asking.pick_of(yes.value)
    assert pick is not None and pick.digest == asking.step_digest("x" * 500) != asking.step_digest("other")
    assert len(f"{yes.id}:{yes.value}") <= 100
    assert render(asking.question_card("0123456789ab", question(BOOL, step="x" * 500)), "discord").payload
    assert asking.pick_of("not/ours") is None


def test_the_answered_card_says_what_was_decided_by_whom_and_when():
    card = asking.answered_card(question(BOOL), Answer("accept", {"approved": True}, "slack:U1", 0.0), platform="slack")
    assert card.title == "Yes — by @U1 at 00:00 UTC" and not card.actions
    card = asking.answered_card(question(ENUM7), Answer("accept", {"env": "e3"}, "console:admin", 60.0),
                                platform="slack")
    assert card.title == 'env: "e3" — by console:admin at 00:01 UTC'
    card = asking.answered_card(question(BOOL), Answer("timeout", None, "timeout", 0.0), platform="slack")
    assert card.title == "No answer in time (closed at 00:00 UTC)"


def test_a_submission_becomes_json_of_the_fields_types_and_stays_text_when_it_does_not_read_as_one():
    schema = {"type": "object", "required": ["n"], "properties": {"n": {"type": "integer"}, "x": {"type": "number"},
                                                                  "s": {"type": "string"}, "b": {"type": "boolean"}}}
    assert asking.content_from(schema, {"n": "3", "x": "2.5", "s": "", "b": True}) == {"n": 3, "x": 2.5, "b": True}
    assert asking.content_from(schema, {"n": "three"}) == {"n": "three"}   # the validator says where and why
    assert asking.content_from(schema, {"": '{"n": 1}'}) == {"n": 1}
    assert asking.content_from(schema, {"": "{not json"})[""].startswith("not JSON")


def test_the_slack_modal_is_valid_block_kit_with_an_input_per_field_and_cleaned_text():
    schema = {"type": "object", "required": ["why"], "properties": {
        "why": {"type": "string", "title": "Why \u202eevil", "maxLength": 50}, "n": {"type": "number", "minimum": 0},
        "ok": {"type": "boolean", "default": True}, "env": ENUM7["properties"]["env"]}}
    view = slack_modal.modal_for(message="Merge <!here>?", answer_schema=schema, metadata="{}", source="git\u200b")
    assert _view_problem(view) is None
    inputs = [b for b in view["blocks"] if b["type"] == "input"]
    assert [b["element"]["type"] for b in inputs] == ["plain_text_input", "number_input", "checkboxes",
                                                       "static_select"]
    assert "\u202e" not in inputs[0]["label"]["text"] and inputs[0]["element"]["multiline"] is False
    assert inputs[2]["element"]["initial_options"] and inputs[2]["optional"] is True
    assert view["blocks"][0]["text"] == {"type": "plain_text", "text": "Merge <!here>?", "emoji": False}
    state = {"oz0_f3": {"value": {"type": "static_select", "selected_option": {"value": "4"}}},
             "oz0_f2": {"value": {"type": "checkboxes", "selected_options": []}}}
    assert slack_modal.submitted(schema, state) == {"env": "e4", "ok": False}
    with pytest.raises(ValueError, match="3000"):
        slack_modal.modal_for(message="m", answer_schema=schema, metadata="x" * 3001)


def test_a_slack_refusal_is_shown_under_the_field_it_names():
    schema = {"type": "object", "properties": {"a": {"type": "string"}, "odd key": {"type": "integer"}}}
    said = slack_modal.errors_for(schema, "the answer at $[\"odd key\"] breaks the rule 'type' (...)")
    assert said == {"response_action": "errors",
                    "errors": {"oz0_f1": "the answer at $[\"odd key\"] breaks the rule 'type' (...)"}}
    assert list(slack_modal.errors_for(schema, "the answer at $ breaks the rule 'required' ('a' is a "
                                               "required property)")["errors"]) == ["oz0_f0"]


def test_the_discord_modal_holds_five_inputs_and_more_fields_are_one_json_answer():
    modal = discord_modal.modal_for(answer_schema=ENUM7 | {"required": ["env"]}, custom_id="c")
    [label] = modal["components"]
    assert label["component"]["type"] == 3 and len(label["component"]["options"]) == 7
    assert discord_modal.submitted(ENUM7, {"oz0_f0": "6"}) == {"env": "e6"}
    many = {"type": "object", "properties": {f"f{i}": {"type": "string"} for i in range(6)}}
    modal = discord_modal.modal_for(answer_schema=many, custom_id="c")
    [label] = modal["components"]
    assert label["component"]["custom_id"] == "oz0_json" and len(modal["components"]) <= discord_modal.COMPONENTS_MAX
    assert discord_modal.submitted(many, {"oz0_json": '{"f0": "x"}'}) == {"": '{"f0": "x"}'}
    big = {"type": "object", "properties": {"e": {"type": "string", "enum": [str(i) for i in range(30)]},
                                            "t": {"type": "string", "title": "x" * 80}}}
    comps = discord_modal.modal_for(answer_schema=big, custom_id="c")["components"]
    assert comps[0]["component"]["type"] == 4              # over 25 options: typed in
    assert len(comps[1]["label"]) == 45
    with pytest.raises(ValueError, match="100"):
        discord_modal.modal_for(answer_schema=big, custom_id="c" * 101)
    assert json.dumps(comps)


def test_the_ask_about_this_modal_is_plain_data_within_discords_limits():
    few = discord_modal.ask_modal(["deploys", "echo"], "why is **api** slow?")
    agent, text = few["components"]
    assert few["custom_id"] == discord_modal.ASK_MODAL_ID and few["title"] == "Ask an agent"
    assert [o["value"] for o in agent["component"]["options"]] == ["deploys", "echo"]
    assert text["component"] == {"type": 4, "custom_id": discord_modal.ASK_INPUT_ID, "style": 2, "required": False,
                                 "max_length": 4000, "value": "why is **api** slow?"}
    many = discord_modal.ask_modal([f"agent-{i}" for i in range(26)], "y" * 5000)
    agent, text = many["components"]
    assert agent["component"]["type"] == 4 and agent["component"]["custom_id"] == discord_modal.ASK_AGENT_ID
    assert len(text["component"]["value"]) == 4000                # a text input holds 4,000 characters
    assert "value" not in discord_modal.ask_modal(["echo"], "")["components"][1]["component"]
