"""The OpenAPI 3.1 document of a plugin's agents: valid, one operation per agent, contracts intact."""

from __future__ import annotations

import json

import pytest
from jsonschema import Draft202012Validator
from openapi_spec_validator import validate
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012
from test_compat import write_plugin

from oz0.edge.documents.openapi import openapi_document
from oz0.edge.plugins.manifest import load_plugin

REVIEW_INPUT = {
    "$id": "urn:example:review-input",
    "type": "object",
    "required": ["repo", "pr"],
    "properties": {
        "repo": {"$ref": "#/$defs/repo"},
        "pr": {"type": "integer", "minimum": 1},
        "labels": {"type": "array", "items": {"$ref": "#label"}},
        "odd key/with~chars": {"type": "string"},
    },
    "$defs": {
        "repo": {"type": "string", "pattern": "^[a-z]+/[a-z]+$"},
        "label": {"$anchor": "label", "type": "string", "maxLength": 5},
    },
}
TREE_OUTPUT = {"$ref": "#/$defs/node", "$defs": {"node": {
    "type": "object", "required": ["name"],
    "properties": {"name": {"type": "string"}, "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
}}}
DRAFT7_TUPLE = {"$schema": "http://json-schema.org/draft-07/schema", "type": "object", "properties": {
    "pair": {"type": "array", "items": [{"type": "string"}, {"$ref": "#/properties/pair/items/0"}],
             "additionalItems": False},
}}


@pytest.fixture
def plugin(tmp_path):
    return load_plugin(write_plugin(tmp_path / "p", version="1.2.0", agents={
        "reviewer": {"input": REVIEW_INPUT, "output": TREE_OUTPUT, "description": "Reviews a PR.",
                     "failures": {"Timeout": {"retryable": True}, "NeedsOwner": {"person": True, "partial": True,
                                                                                      "description": "ask"}}},
        "echo": {},
        "pairs": {"input": DRAFT7_TUPLE},
    }))


def _document(plugin):
    return openapi_document(plugin.agents, title=plugin.name, version=plugin.version)


def test_the_document_is_valid_openapi_3_1(plugin):
    document = _document(plugin)
    validate(document)
    assert document["openapi"] == "3.1.0"
    assert (document["info"]["title"], document["info"]["version"]) == ("team", "1.2.0")


def test_one_run_operation_per_agent(plugin):
    paths = _document(plugin)["paths"]
    assert sorted(paths) == ["/agents/echo/runs", "/agents/pairs/runs", "/agents/reviewer/runs"]
    assert all(list(item) == ["post"] for item in paths.values())
    reviewer = paths["/agents/reviewer/runs"]["post"]
    assert reviewer["x-oz0-agent"] == "reviewer" and reviewer["description"] == "Reviews a PR."


def test_text_agents_take_and_answer_text_plain(plugin):
    echo = _document(plugin)["paths"]["/agents/echo/runs"]["post"]
    assert echo["requestBody"]["content"] == {"text/plain": {"schema": {"type": "string"}}}
    assert echo["responses"]["200"]["content"] == {"text/plain": {"schema": {"type": "string"}}}


def test_failure_kinds_are_error_responses_with_their_flags(plugin):
    responses = _document(plugin)["paths"]["/agents/reviewer/runs"]["post"]["responses"]
    invalid = responses["400"]["content"]["application/json"]["schema"]
    assert invalid["properties"]["kind"] == {"const": "InvalidInput"}
    assert (invalid["x-retryable"], invalid["x-partial"], invalid["x-person"]) == (False, False, False)
    kinds = {b["title"]: b for b in responses["502"]["content"]["application/json"]["schema"]["oneOf"]}
    assert sorted(kinds) == ["AgentError", "BudgetExhausted", "Cancelled", "Crashed", "Interrupted", "InvalidOutput",
                             "InvalidResultContract",
                             "LimitExceeded", "Misconfigured", "NeedsOwner", "OutputTooLarge", "Rejected", "Timeout",
                             "Unavailable"]
    assert (kinds["LimitExceeded"]["x-retryable"], kinds["LimitExceeded"]["x-partial"]) == (False, True)
    assert (kinds["Interrupted"]["x-partial"], kinds["Misconfigured"]["x-person"]) == (True, True)
    assert (kinds["BudgetExhausted"]["x-retryable"], kinds["BudgetExhausted"]["x-partial"]) == (False, True)
    assert (kinds["Timeout"]["x-retryable"], kinds["Timeout"]["x-partial"], kinds["Timeout"]["x-person"]) == (
        True, False, False)
    assert (kinds["NeedsOwner"]["x-retryable"], kinds["NeedsOwner"]["x-partial"],
            kinds["NeedsOwner"]["x-person"]) == (False, True, True)
    assert kinds["NeedsOwner"]["description"] == "ask"
    echo = _document(plugin)["paths"]["/agents/echo/runs"]["post"]["responses"]
    assert sorted(echo) == ["200", "400", "502"]


def _validator(document, pointer):
    registry = Registry().with_resource("urn:doc", Resource.from_contents(document, default_specification=DRAFT202012))
    return Draft202012Validator({"$ref": f"urn:doc{pointer}"}, registry=registry)


@pytest.mark.parametrize("agent,direction,instance", [
    ("reviewer", "input", {"repo": "acme/api", "pr": 42, "labels": ["bug"]}),
    ("reviewer", "input", {"repo": "Acme", "pr": 0, "labels": ["toolong"]}),
    ("reviewer", "input", {"repo": "acme/api"}),
    ("reviewer", "input", {"repo": "acme/api", "pr": 1, "odd key/with~chars": 3}),
    ("reviewer", "output", {"name": "a", "kids": [{"name": "b", "kids": [{"kids": []}]}]}),
    ("reviewer", "output", {"name": "a", "kids": [{"name": "b"}]}),
    ("pairs", "input", {"pair": ["a", "b"]}),
    ("pairs", "input", {"pair": ["a", 1]}),
    ("pairs", "input", {"pair": ["a", "b", "c"]}),
])
def test_embedded_contracts_judge_instances_as_the_contract_does(plugin, agent, direction, instance):
    """The `$ref`s are rewritten to pointers from the document root; nothing about validity changes."""
    spec = plugin.agent(agent)
    contract = spec.input if direction == "input" else spec.output
    document = _document(plugin)
    content = document["paths"][f"/agents/{agent}/runs"]["post"]
    content = (content["requestBody"] if direction == "input" else content["responses"]["200"])["content"]
    pointer = content["application/json"]["schema"]["$ref"]
    expected = contract.is_valid(instance)
    assert _validator(document, pointer).is_valid(instance) is expected


def test_no_ids_anchors_or_dialects_are_left_to_confuse_the_pointers(plugin):
    schemas = json.dumps(_document(plugin)["components"]["schemas"])
    for keyword in ('"$id"', '"$anchor"', '"$schema"'):
        assert keyword not in schemas
    assert '"$ref": "#/components/schemas/reviewer.input/$defs/label"' in schemas


def test_the_document_is_a_function_of_the_contracts(plugin, tmp_path):
    again = load_plugin(plugin.path)
    assert json.dumps(_document(plugin)) == json.dumps(_document(again))
    reordered = openapi_document(reversed(plugin.agents), title="team", version="1.2.0")
    assert json.dumps(reordered) == json.dumps(_document(plugin))


def test_an_empty_plugin_is_still_a_valid_document(tmp_path):
    document = openapi_document([], title="empty", version="0.0.1")
    validate(document)
    assert document["paths"] == {}
