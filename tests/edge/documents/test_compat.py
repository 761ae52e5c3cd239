"""The upgrade check, rule by rule: one old/new plugin pair per row of COMPATIBILITY.md.

Every schema rule runs in both directions (the contract as the agent's input, then as its output)
and asserts the verdict and the words. The plugins are real folders loaded by `load_plugin`, so the
rows go through the same path as `oz0 plugin diff` and `oz0 plugin install`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from oz0.edge.contracts.changes import Change, CompatError
from oz0.edge.documents.compat import is_major_bump, refusal_message, required_version_bump
from oz0.edge.documents.diff import compare_agents, compare_documents
from oz0.edge.plugins.manifest import load_plugin

TEXT = "text"


def write_plugin(root: Path, *, name: str = "team", version: str = "0.1.0",
                 agents: dict[str, dict[str, Any]] | None = None) -> Path:
    """A plugin folder: `agents` maps a name to {input, output, failures, description}, where input
    and output are "text" or a JSON Schema (written to schemas/NAME.DIRECTION.json)."""
    (root / "agents").mkdir(parents=True, exist_ok=True)
    (root / "schemas").mkdir(exist_ok=True)
    (root / "plugin.yaml").write_text(f"name: {name}\nversion: {version}\n")
    (root / "helper.py").write_text("def run(value, ctx=None):\n    return value\n")
    for agent, spec in (agents or {}).items():
        lines = ["kind: python", "entry: helper:run"]
        if spec.get("description"):
            lines.append(f"description: {json.dumps(spec['description'])}")
        for direction in ("input", "output"):
            contract = spec.get(direction, TEXT)
            if contract == TEXT:
                lines.append(f"{direction}: text")
            else:
                file = f"schemas/{agent}.{direction}.json"
                (root / file).write_text(json.dumps(contract))
                lines.append(f"{direction}_schema: {file}")
        if spec.get("failures"):
            lines.append(f"failures: {json.dumps(spec['failures'])}")
        (root / "agents" / f"{agent}.yaml").write_text("\n".join(lines) + "\n")
    return root


def diff_plugins(tmp_path: Path, old: dict[str, dict[str, Any]], new: dict[str, dict[str, Any]]) -> list[Change]:
    a = load_plugin(write_plugin(tmp_path / "old", agents=old))
    b = load_plugin(write_plugin(tmp_path / "new", version="0.1.1", agents=new))
    return compare_agents(a.agents, b.agents)


def obj(props: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"type": "object", "properties": props, **extra}


# Each row: (rule, old schema, new schema, (input verdict, output verdict), (input words, output words)).
# The words are the change's `what`; one change per row.
B, OK = True, False
SCHEMA_ROWS: list[tuple[str, Any, Any, tuple[bool, bool], tuple[str, str]]] = [
    ("type changed to something unrelated",
     obj({"n": {"type": "integer"}}), obj({"n": {"type": "string"}}), (B, B),
     ("type of $.n changed from integer to string",) * 2),
    ("type widened: integer -> number",
     obj({"n": {"type": "integer"}}), obj({"n": {"type": "number"}}), (OK, B),
     ("type of $.n widened from integer to number",) * 2),
    ("type widened: a type added",
     obj({"n": {"type": "string"}}), obj({"n": {"type": ["string", "boolean"]}}), (OK, B),
     ("type of $.n widened from string to boolean or string",) * 2),
    ("type widened: null added",
     obj({"n": {"type": "string"}}), obj({"n": {"type": ["string", "null"]}}), (OK, B),
     ("type of $.n widened from string to null or string",) * 2),
    ("type narrowed",
     obj({"n": {"type": "number"}}), obj({"n": {"type": "integer"}}), (B, OK),
     ("type of $.n narrowed from number to integer",) * 2),
    ("type narrowed: added where there was none",
     obj({"n": {}}), obj({"n": {"type": "string"}}), (B, OK),
     ("type of $.n narrowed from any type to string",) * 2),
    ("property added to required",
     obj({"repo": {"type": "string"}}), obj({"repo": {"type": "string"}}, required=["repo"]), (B, OK),
     ("$.repo is newly required",) * 2),
    ("property removed from required",
     obj({"repo": {"type": "string"}}, required=["repo"]), obj({"repo": {"type": "string"}}), (OK, B),
     ("$.repo is no longer required", "$.repo may now be missing")),
    ("optional property added",
     obj({"a": {"type": "string"}}), obj({"a": {"type": "string"}, "b": {"type": "integer"}}), (OK, OK),
     ("$.b is a new optional property", "$.b is a new property")),
    ("optional property added to a closed object",
     obj({"a": {"type": "string"}}, additionalProperties=False),
     obj({"a": {"type": "string"}, "b": {"type": "integer"}}, additionalProperties=False), (OK, B),
     ("$.b is a new optional property",
      "$.b is a new property of an object that was closed (additionalProperties: false)")),
    ("new required property",
     obj({"a": {"type": "string"}}), obj({"a": {"type": "string"}, "b": {"type": "integer"}}, required=["b"]),
     (B, OK), ("$.b is a new required property",) * 2),
    ("property removed",
     obj({"a": {"type": "string"}, "b": {"type": "integer"}}), obj({"a": {"type": "string"}}), (B, B),
     ("$.b was removed",) * 2),
    ("additionalProperties closed",
     obj({"a": {"type": "string"}}), obj({"a": {"type": "string"}}, additionalProperties=False), (B, OK),
     ("$ no longer allows additional properties",) * 2),
    ("additionalProperties narrowed",
     obj({}, additionalProperties={"type": ["string", "integer"]}), obj({}, additionalProperties={"type": "string"}),
     (B, OK), ("type of $.* narrowed from integer or string to string",) * 2),
    ("additionalProperties opened",
     obj({"a": {"type": "string"}}, additionalProperties=False), obj({"a": {"type": "string"}}), (OK, B),
     ("$ now allows additional properties",) * 2),
    ("additionalProperties widened",
     obj({}, additionalProperties={"type": "integer"}), obj({}, additionalProperties={"type": "number"}),
     (OK, B), ("type of $.* widened from integer to number",) * 2),
    ("enum value removed",
     obj({"status": {"enum": ["ok", "bad"]}}), obj({"status": {"enum": ["ok"]}}), (B, OK),
     ("$.status no longer accepts the enum value 'bad'", "$.status no longer holds the enum value 'bad'")),
    ("enum added",
     obj({"status": {"type": "string"}}), obj({"status": {"type": "string", "enum": ["ok", "bad"]}}), (B, OK),
     ("$.status is now limited to the values 'ok', 'bad'",) * 2),
    ("enum value added",
     obj({"status": {"enum": ["ok"]}}), obj({"status": {"enum": ["ok", "x"]}}), (OK, B),
     ("$.status accepts a new enum value 'x'", "$.status may hold a new enum value 'x'")),
    ("enum removed",
     obj({"status": {"type": "string", "enum": ["ok"]}}), obj({"status": {"type": "string"}}), (OK, B),
     ("$.status is no longer limited to the values 'ok'",) * 2),
    ("const added",
     obj({"v": {"type": "integer"}}), obj({"v": {"type": "integer", "const": 2}}), (B, OK),
     ("$.v must now be 2", "$.v is now always 2")),
    ("const changed",
     obj({"v": {"const": "a"}}), obj({"v": {"const": "b"}}), (B, B),
     ("$.v changed from 'a' to 'b'",) * 2),
    ("const removed",
     obj({"v": {"type": "string", "const": "a"}}), obj({"v": {"type": "string"}}), (OK, B),
     ("$.v is no longer fixed to 'a'",) * 2),
    ("multipleOf added",
     obj({"n": {"type": "integer"}}), obj({"n": {"type": "integer", "multipleOf": 5}}), (B, OK),
     ("$.n must now be a multiple of 5",) * 2),
    # The new value divides the old (4 -> 2): the input accepts more, so it breaks no caller; the
    # output may now hold 6, which the old contract excluded, so it breaks callers. COMPATIBILITY.md's
    # output cell says "not breaking if the old value is a multiple of the new", which contradicts its
    # own rule for outputs ("must not allow anything the old one excluded"); we follow the rule.
    ("multipleOf changed to a divisor of the old value",
     obj({"n": {"type": "integer", "multipleOf": 4}}), obj({"n": {"type": "integer", "multipleOf": 2}}), (OK, B),
     ("multipleOf of $.n changed from 4 to 2",) * 2),
    ("multipleOf changed to a multiple of the old value",
     obj({"n": {"type": "number", "multipleOf": 0.5}}), obj({"n": {"type": "number", "multipleOf": 1.5}}), (B, OK),
     ("multipleOf of $.n changed from 0.5 to 1.5",) * 2),
    ("multipleOf changed to an unrelated value",
     obj({"n": {"type": "integer", "multipleOf": 4}}), obj({"n": {"type": "integer", "multipleOf": 6}}), (B, B),
     ("multipleOf of $.n changed from 4 to 6",) * 2),
    ("multipleOf removed",
     obj({"n": {"type": "integer", "multipleOf": 4}}), obj({"n": {"type": "integer"}}), (OK, B),
     ("$.n no longer has to be a multiple of 4",) * 2),
    ("pattern added",
     obj({"s": {"type": "string"}}), obj({"s": {"type": "string", "pattern": "^a"}}), (B, OK),
     ("$.s must now match pattern '^a'",) * 2),
    ("pattern changed",
     obj({"s": {"type": "string", "pattern": "^a"}}), obj({"s": {"type": "string", "pattern": "^b"}}), (B, B),
     ("pattern of $.s changed from '^a' to '^b'",) * 2),
    ("pattern removed",
     obj({"s": {"type": "string", "pattern": "^a"}}), obj({"s": {"type": "string"}}), (OK, B),
     ("$.s no longer has to match pattern '^a'",) * 2),
    ("format added",
     obj({"s": {"type": "string"}}), obj({"s": {"type": "string", "format": "email"}}), (B, OK),
     ("$.s must now match format 'email'",) * 2),
    ("format changed",
     obj({"s": {"type": "string", "format": "email"}}), obj({"s": {"type": "string", "format": "uri"}}), (B, B),
     ("format of $.s changed from 'email' to 'uri'",) * 2),
    ("format removed",
     obj({"s": {"type": "string", "format": "email"}}), obj({"s": {"type": "string"}}), (OK, B),
     ("$.s no longer has to match format 'email'",) * 2),
    ("items compared recursively",
     obj({"list": {"type": "array", "items": {"type": "integer"}}}),
     obj({"list": {"type": "array", "items": {"type": "number"}}}), (OK, B),
     ("type of $.list[*] widened from integer to number",) * 2),
    ("prefixItems compared recursively",
     obj({"pair": {"type": "array", "prefixItems": [{"type": "string"}, {"type": "number"}]}}),
     obj({"pair": {"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}]}}), (B, OK),
     ("type of $.pair[1] narrowed from number to integer",) * 2),
    ("properties compared recursively",
     obj({"a": obj({"b": obj({"c": {"type": "string"}})})}),
     obj({"a": obj({"b": obj({"c": {"type": "string"}}, required=["c"])})}), (B, OK),
     ("$.a.b.c is newly required",) * 2),
    ("anyOf branch added",
     obj({"v": {"anyOf": [{"type": "string"}]}}), obj({"v": {"anyOf": [{"type": "string"}, {"type": "null"}]}}),
     (B, B), ('$.v has a new anyOf branch: {"type": "null"}'
            " (the check does not compare anyOf, so any change to it counts as breaking)",) * 2),
    ("anyOf branch removed",
     obj({"v": {"anyOf": [{"type": "string"}, {"type": "null"}]}}), obj({"v": {"anyOf": [{"type": "string"}]}}),
     (B, B), ('$.v lost an anyOf branch: {"type": "null"}'
            " (the check does not compare anyOf, so any change to it counts as breaking)",) * 2),
    ("oneOf branch added",
     obj({"v": {"oneOf": [{"type": "string"}]}}), obj({"v": {"oneOf": [{"type": "string"}, {"title": "n", "type": "integer"}]}}),
     (B, B), ("$.v has a new oneOf branch: 'n'"
            " (the check does not compare oneOf, so any change to it counts as breaking)",) * 2),
    ("oneOf branch removed",
     obj({"v": {"oneOf": [{"type": "string"}, {"type": "integer"}]}}), obj({"v": {"oneOf": [{"type": "integer"}]}}),
     (B, B), ('$.v lost a oneOf branch: {"type": "string"}'
            " (the check does not compare oneOf, so any change to it counts as breaking)",) * 2),
    ("allOf changed",
     obj({"v": {"allOf": [{"type": "string"}]}}), obj({"v": {"allOf": [{"type": "string"}, {"minLength": 1}]}}),
     (B, B), ("allOf of $.v changed (the check does not compare allOf)",) * 2),
    ("not added",
     obj({"v": {}}), obj({"v": {"not": {"type": "null"}}}), (B, B),
     ("not added to $.v (the check does not compare not)",) * 2),
    ("if/then/else changed",
     obj({"v": {"if": {"type": "string"}, "then": {"minLength": 1}}}),
     obj({"v": {"if": {"type": "string"}, "then": {"minLength": 2}}}), (B, B),
     ("then of $.v changed (the check does not compare then)",) * 2),
    ("$ref target changed",
     obj({"v": {"$ref": "#/$defs/a"}}, **{"$defs": {"a": {"type": "string"}, "b": {"type": "string"}}}),
     obj({"v": {"$ref": "#/$defs/b"}}, **{"$defs": {"a": {"type": "string"}, "b": {"type": "string"}}}), (B, B),
     ("$.v now refers to #/$defs/b instead of #/$defs/a",) * 2),
    ("$dynamicRef added",
     obj({"v": {}}, **{"$defs": {"t": {"$dynamicAnchor": "t", "type": "string"}}}),
     obj({"v": {"$dynamicRef": "#/$defs/t"}}, **{"$defs": {"t": {"$dynamicAnchor": "t", "type": "string"}}}), (B, B),
     ("$dynamicRef added to $.v (the check does not compare $dynamicRef)",) * 2),
    ("a keyword the check does not compare",
     obj({"list": {"type": "array"}}), obj({"list": {"type": "array", "uniqueItems": True}}), (B, B),
     ("uniqueItems added to $.list (the check does not compare uniqueItems)",) * 2),
    ("description changed",
     obj({"a": {"type": "string", "description": "old"}}), obj({"a": {"type": "string", "description": "new"}}),
     (OK, OK), ("description of $.a changed",) * 2),
    ("title changed",
     obj({"a": {"type": "string"}}, title="Old"), obj({"a": {"type": "string"}}, title="New"), (OK, OK),
     ("title of $ changed",) * 2),
    ("examples changed",
     obj({"a": {"type": "string", "examples": ["x"]}}), obj({"a": {"type": "string", "examples": ["y"]}}),
     (OK, OK), ("examples of $.a changed",) * 2),
    ("x-oz0-order changed",
     obj({"a": {}, "b": {}}, **{"x-oz0-order": ["a"]}), obj({"a": {}, "b": {}}, **{"x-oz0-order": ["b"]}),
     (OK, OK), ("x-oz0-order of $ changed",) * 2),
]

_BOUNDS = [
    # keyword, a value, a lower one, the property's type
    ("maximum", 10, 5, "number"), ("exclusiveMaximum", 10, 5, "number"), ("maxLength", 10, 5, "string"),
    ("maxItems", 10, 5, "array"), ("maxProperties", 10, 5, "object"),
    ("minimum", 10, 5, "number"), ("exclusiveMinimum", 10, 5, "number"), ("minLength", 10, 5, "string"),
    ("minItems", 10, 5, "array"), ("minProperties", 10, 5, "object"),
]
for _kw, _high, _low, _type in _BOUNDS:
    _upper = _kw.startswith(("max", "exclusiveMax"))
    _plain = {"type": _type}
    _at = lambda v, kw=_kw, t=_type: {"type": t, kw: v}  # noqa: E731
    SCHEMA_ROWS += [
        (f"{_kw} lowered", obj({"n": _at(_high)}), obj({"n": _at(_low)}), (B, OK) if _upper else (OK, B),
         (f"{_kw} of $.n lowered from {_high} to {_low}",) * 2),
        (f"{_kw} raised", obj({"n": _at(_low)}), obj({"n": _at(_high)}), (OK, B) if _upper else (B, OK),
         (f"{_kw} of $.n raised from {_low} to {_high}",) * 2),
        (f"{_kw} added", obj({"n": _plain}), obj({"n": _at(_low)}), (B, OK),
         (f"$.n now has {_kw} {_low}",) * 2),
        (f"{_kw} removed", obj({"n": _at(_low)}), obj({"n": _plain}), (OK, B),
         (f"$.n no longer has {_kw} (it was {_low})",) * 2),
    ]


@pytest.mark.parametrize("direction", ["input", "output"])
@pytest.mark.parametrize("rule,old,new,verdicts,words", SCHEMA_ROWS, ids=[r[0] for r in SCHEMA_ROWS])
def test_schema_rule(tmp_path, rule, old, new, verdicts, words, direction):
    changes = diff_plugins(tmp_path, {"helper": {direction: old}}, {"helper": {direction: new}})
    i = 0 if direction == "input" else 1
    assert changes == [Change("helper", direction, changes[0].json_path if changes else "$", words[i], verdicts[i])]
    if verdicts[i]:
        assert refusal_message("team", "0.1.0", "0.1.1", changes) == (
            f"team 0.1.1 breaks the contracts of 0.1.0: helper: {direction}: {words[i]}; "
            "give it a new major version, or install it with --allow-breaking")


@pytest.mark.parametrize("direction,old,new,breaking,words", [
    ("input", TEXT, {"type": "object"}, True, "takes JSON that matches a schema instead of text"),
    ("output", TEXT, {"type": "object"}, False, "returns JSON that matches a schema instead of text"),
    ("input", {"type": "object"}, TEXT, False, "takes text instead of JSON"),
    ("output", {"type": "object"}, TEXT, True, "returns text instead of JSON"),
])
def test_text_and_json(tmp_path, direction, old, new, breaking, words):
    changes = diff_plugins(tmp_path, {"helper": {direction: old}}, {"helper": {direction: new}})
    assert changes == [Change("helper", direction, "$", words, breaking)]


def test_the_example_message_exactly(tmp_path):
    changes = diff_plugins(tmp_path, {"helper": {"input": TEXT}},
                           {"helper": {"input": obj({"q": {"type": "string"}})}})
    assert "Error: invalid_argument: invalid request: " + refusal_message("team", "0.1.0", "0.1.1", changes) == (
        "Error: invalid_argument: invalid request: team 0.1.1 breaks the contracts of 0.1.0: helper: input: "
        "takes JSON that matches a schema instead of text; give it a new major version, or install it with "
        "--allow-breaking")


def test_several_breaking_changes_are_joined_and_the_rest_left_out(tmp_path):
    changes = diff_plugins(
        tmp_path,
        {"helper": {"input": obj({"repo": {"type": "string"}}), "output": obj({"status": {"enum": ["ok"]}})}},
        {"helper": {"input": obj({"repo": {"type": "string", "description": "owner/name"}}, required=["repo"]),
                    "output": obj({"status": {"enum": ["ok", "x"]}})}},
    )
    assert [c.breaking for c in changes] == [False, True, True]
    assert refusal_message("team", "0.1.0", "0.1.1", changes) == (
        "team 0.1.1 breaks the contracts of 0.1.0: helper: input: $.repo is newly required; "
        "helper: output: $.status may hold a new enum value 'x'; "
        "give it a new major version, or install it with --allow-breaking")


@pytest.mark.parametrize("old_agents,new_agents,expected", [
    ({"helper": {}, "other": {}}, {"helper": {}}, [Change("other", "agent", "$", "agent removed", True)]),
    ({"helper": {}}, {"helper": {}, "other": {}}, [Change("other", "agent", "$", "agent added", False)]),
    ({"helper": {"description": "a"}}, {"helper": {"description": "b"}},
     [Change("helper", "agent", "$", "description changed", False)]),
    ({"helper": {}}, {"helper": {}}, []),
])
def test_agents_added_removed_described(tmp_path, old_agents, new_agents, expected):
    assert diff_plugins(tmp_path, old_agents, new_agents) == expected


FAILURE_ROWS = [
    ({}, {"RateLimited": {"retryable": True}}, "new failure kind RateLimited", True),
    ({"RateLimited": {}}, {}, "failure kind RateLimited removed", False),
    ({"RateLimited": {"retryable": True}}, {"RateLimited": {"retryable": False}}, "RateLimited is no longer retryable", True),
    ({"RateLimited": {}}, {"RateLimited": {"retryable": True}}, "RateLimited is now retryable", False),
    ({"RateLimited": {}}, {"RateLimited": {"partial": True}}, "RateLimited may now leave partial output", True),
    ({"RateLimited": {"partial": True}}, {"RateLimited": {}}, "RateLimited no longer leaves partial output", False),
    ({"RateLimited": {}}, {"RateLimited": {"person": True}}, "RateLimited now asks a person to act", True),
    ({"RateLimited": {"person": True}}, {"RateLimited": {}}, "RateLimited no longer asks a person to act", False),
    ({"RateLimited": {"description": "a"}}, {"RateLimited": {"description": "b"}}, "description of RateLimited changed", False),
]


@pytest.mark.parametrize("old,new,words,breaking", FAILURE_ROWS, ids=[r[2] for r in FAILURE_ROWS])
def test_failure_rule(tmp_path, old, new, words, breaking):
    changes = diff_plugins(tmp_path, {"helper": {"failures": old}}, {"helper": {"failures": new}})
    assert changes == [Change("helper", "failure", "$", words, breaking)]


def test_a_declaration_that_took_the_place_of_a_runtime_kind_falls_back_to_it(tmp_path):
    """The runtime's Timeout is not retryable: dropping a declaration that made it so breaks callers."""
    changes = diff_plugins(tmp_path, {"helper": {"failures": {"Timeout": {"retryable": True}}}},
                           {"helper": {"failures": {}}})
    assert [(c.what, c.breaking) for c in changes] == [("Timeout is no longer retryable", True),
                                                       ("description of Timeout changed", False)]


def test_several_failure_kinds_compare_independently(tmp_path):
    changes = diff_plugins(tmp_path, {"helper": {"failures": {"A": {}, "B": {"retryable": True}}}},
                           {"helper": {"failures": {"B": {"retryable": True}, "C": {}}}})
    assert [(c.what, c.breaking) for c in changes] == [("failure kind A removed", False),
                                                       ("new failure kind C", True)]


# $ref ----------------------------------------------------------------------------------------

DEFS = {"repo": obj({"name": {"type": "string"}, "owner": {"type": "string"}})}


def test_a_change_behind_a_ref_is_found_at_its_instance_path(tmp_path):
    old = obj({"repo": {"$ref": "#/$defs/repo"}}, **{"$defs": DEFS})
    new_defs = {"repo": obj({"name": {"type": "string"}, "owner": {"type": "string"}}, required=["owner"])}
    new = obj({"repo": {"$ref": "#/$defs/repo"}}, **{"$defs": new_defs})
    changes = diff_plugins(tmp_path, {"helper": {"input": old}}, {"helper": {"input": new}})
    assert changes == [Change("helper", "input", "$.repo.owner", "$.repo.owner is newly required", True)]


def test_moving_a_schema_behind_a_ref_is_no_change(tmp_path):
    inline = obj({"repo": DEFS["repo"]})
    behind = obj({"repo": {"$ref": "#/$defs/repo"}}, **{"$defs": DEFS})
    for direction in ("input", "output"):
        assert diff_plugins(tmp_path / direction, {"helper": {direction: inline}},
                            {"helper": {direction: behind}}) == []


def test_a_ref_with_an_id_and_an_anchor_resolves_in_its_own_document(tmp_path):
    old = {"$id": "urn:example:review", "type": "object",
           "properties": {"tag": {"$ref": "#tag"}}, "$defs": {"tag": {"$anchor": "tag", "type": "string"}}}
    new = json.loads(json.dumps(old))
    new["$defs"]["tag"]["maxLength"] = 20
    changes = diff_plugins(tmp_path, {"helper": {"input": old}}, {"helper": {"input": new}})
    assert changes == [Change("helper", "input", "$.tag", "$.tag now has maxLength 20", True)]


TREE = {"$ref": "#/$defs/node", "$defs": {"node": obj({"name": {"type": "string"},
                                                       "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}})}}


def test_recursive_schemas_terminate_and_compare(tmp_path):
    assert diff_plugins(tmp_path / "same", {"helper": {"output": TREE}}, {"helper": {"output": TREE}}) == []
    new = json.loads(json.dumps(TREE))
    new["$defs"]["node"]["properties"]["name"]["enum"] = ["a"]
    changes = diff_plugins(tmp_path / "changed", {"helper": {"input": TREE}}, {"helper": {"input": new}})
    assert changes == [Change("helper", "input", "$.name", "$.name is now limited to the values 'a'", True)]


def _document(schema: Any) -> dict[str, Any]:
    return {"openapi": "3.1.0", "info": {"title": "t", "version": "1"}, "paths": {"/agents/helper/runs": {"post": {
        "x-oz0-agent": "helper",
        "requestBody": {"content": {"application/json": {"schema": schema}}},
        "responses": {"200": {"description": "ok", "content": {"text/plain": {"schema": {"type": "string"}}}}},
    }}}}


def test_a_remote_ref_is_an_error_never_anything_goes():
    old = _document({"$ref": "https://example.com/schemas/review.json"})
    new = _document({"type": "object"})
    with pytest.raises(CompatError, match="leaves the document"):
        compare_documents(old, new)
    with pytest.raises(CompatError, match="leaves the document"):
        compare_documents(old, old)


def test_a_ref_that_points_at_nothing_is_an_error():
    with pytest.raises(CompatError, match="points at nothing"):
        compare_documents(_document({"$ref": "#/components/schemas/gone"}), _document({"type": "object"}))


def test_too_deep_to_compare_counts_as_breaking():
    old: dict[str, Any] = {"type": "string"}
    new: dict[str, Any] = {"type": "integer"}
    for _ in range(80):
        old, new = obj({"a": old}), obj({"a": new})
    changes = compare_documents(_document(old), _document(new))
    assert [(c.breaking, c.what.endswith("nests deeper than 64 levels")) for c in changes] == [(True, True)]


# versions ------------------------------------------------------------------------------------

@pytest.mark.parametrize("old,least", [
    ("1.4.0", "2.0.0"), ("0.2.1", "0.3.0"), ("0.0.3", "0.0.4"), ("0.0.0", "0.0.1"), ("0.1.0", "0.2.0"),
    ("10.0.7", "11.0.0"), ("1.0.0-rc.1", "2.0.0"), ("0.9.9+build.5", "0.10.0"),
])
def test_required_version_bump(old, least):
    assert required_version_bump(old) == least


@pytest.mark.parametrize("old,new,major", [
    ("1.4.0", "2.0.0", True), ("1.4.0", "1.5.0", False), ("1.4.0", "1.4.1", False), ("1.4.0", "3.1.2", True),
    ("1.4.0", "2.0.0-rc.1", True), ("1.4.0", "2.1.0", True), ("2.0.0-rc.1", "2.0.0", False),
    ("0.2.1", "0.3.0", True), ("0.2.1", "0.2.9", False), ("0.2.1", "1.0.0", True), ("0.2.1", "0.4.0", True),
    ("0.1.0", "0.1.1", False), ("0.0.3", "0.0.4", True), ("0.0.3", "0.1.0", True), ("0.0.3", "0.0.3", False),
    ("2.0.0", "1.0.0", False), ("0.3.0", "0.2.9", False),
])
def test_is_major_bump(old, new, major):
    assert is_major_bump(old, new) is major


@pytest.mark.parametrize("bad", ["1.4", "v1.4.0", "01.2.3", "", "1.2.3.4"])
def test_a_version_that_is_not_semver_is_refused(bad):
    with pytest.raises(ValueError, match="not a semantic version"):
        is_major_bump(bad, "1.0.0")
