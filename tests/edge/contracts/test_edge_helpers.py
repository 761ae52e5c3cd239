"""The edge's single helpers, through what their callers show: the JSON Pointer resolver, the schema
view (local `$ref` by the resource's base, `allOf`, written order), the CallToolResult reader and the
"first violation (and N more)" sentence."""

from __future__ import annotations

import asyncio
import json

import pytest
from plugin_kit import make_plugin

from oz0.adapters.console.forms import fields_for
from oz0.edge import choose_card, load_contract
from oz0.edge.contracts.changes import CompatError
from oz0.edge.contracts.changes import resolve_pointer as compat_pointer
from oz0.edge.contracts.pointer import PointerError, format_pointer, fragment_pointer, locate, resolve_pointer
from oz0.edge.contracts.schema import ContractError, violation_sentence
from oz0.edge.contracts.view import DocumentRefs, SchemaDepthError, SchemaView, walk_schema
from oz0.edge.documents.diff import compare_documents
from oz0.edge.flows.engine import FLOW_ENGINE
from oz0.edge.mcp.cards import card_form
from oz0.edge.mcp.kind import tool_output
from oz0.edge.mcp.spec import McpFailure, ToolInfo
from oz0.edge.model.job import JobFailure
from oz0.edge.plugins.lint import lint_plugin
from oz0.edge.plugins.manifest import load_plugin
from oz0.edge.results.tool_result import is_call_tool_result, kept_value, read_tool_result
from oz0.edge.runtime.install import install_plugin
from oz0.edge.runtime.runner import Runtime

# --- JSON Pointer ----------------------------------------------------------------------------------

DOC = {"a/b": [{"m~n": 1}, {"": "empty key"}], "a b": True, "list": [10, 20]}


def test_pointer_tokens_unescape_and_indexes_are_typed():
    assert resolve_pointer(DOC, "") is DOC
    assert resolve_pointer(DOC, "/a~1b/0/m~0n") == 1
    assert resolve_pointer(DOC, "/a~1b/1/") == "empty key"
    assert locate(DOC, "/list/1") == (("list", 1), 20)
    assert format_pointer(("a/b", 0, "m~n")) == "/a~1b/0/m~0n"
    assert fragment_pointer("/a%20b") == "/a b"


@pytest.mark.parametrize("pointer, token, at", [
    ("/list/2", "2", "/list"), ("/list/-", "-", "/list"), ("/a~1b/0/missing", "missing", "/a~1b/0"),
    ("nope", "nope", ""),
])
def test_a_pointer_to_nothing_names_the_token_and_where(pointer, token, at):
    with pytest.raises(PointerError) as caught:
        resolve_pointer(DOC, pointer)
    assert (caught.value.token, caught.value.at) == (token, at)
    assert str(caught.value) == f"pointer {pointer!r} points at nothing: no {token!r} at {at or '/'}"


def test_contracts_and_the_upgrade_check_read_a_percent_encoded_fragment_the_same_way():
    schema = {"$defs": {"a b": {"type": "integer"}}, "$ref": "#/$defs/a%20b"}
    contract = load_contract(schema)
    assert contract.is_valid(3) and not contract.is_valid("3")
    assert compat_pointer(schema, "#/$defs/a%20b") == {"type": "integer"}
    with pytest.raises(CompatError, match="points at nothing in the document"):
        compat_pointer(schema, "#/$defs/a%2Fb")
    with pytest.raises(ContractError, match="points at nothing") as caught:
        load_contract({"$ref": "#/$defs/none"})
    assert caught.value.location == "/$ref"


def test_lint_turns_a_schema_location_pointer_into_the_json_path_it_names(tmp_path):
    root = make_plugin(tmp_path / "p", agents={"a": {"kind": "command", "command": ["true"],
                                                     "input_schema": "schemas/in.json", "output": "text"}},
                       files={"schemas/in.json": {"type": "object", "properties": {
                           "a/b": {"$ref": "https://example.com/x.json"}}}})
    (finding,) = [f for f in lint_plugin(root).errors if f.file == "schemas/in.json"]
    assert finding.path == '$.properties["a/b"]["$ref"]'
    assert "points outside this document" in finding.message

# --- the schema view -------------------------------------------------------------------------------


EMBEDDED = {
    "type": "object",
    "properties": {"rows": {"$ref": "https://example.com/rows.json"}},
    "$defs": {
        "rows": {
            "$id": "https://example.com/rows.json",
            "type": "array",
            "items": {"$ref": "#/$defs/row"},
            "$defs": {"row": {"allOf": [{"properties": {"zeta": {"type": "string", "title": "Zeta"}}}],
                              "properties": {"alpha": {"type": "integer"}}}},
        },
        "row": {"properties": {"wrong": {"type": "string"}}},
    },
}


def test_a_ref_inside_an_embedded_resource_resolves_against_that_resource():
    """`#/$defs/row` inside rows.json is rows.json's row (zeta, alpha), not the root's (wrong)."""
    contract = load_contract(EMBEDDED)
    rows = SchemaView(contract, contract.schema, contract.base).property("rows")
    assert (rows.base, rows.deref().base) == ("urn:oz0:root", "https://example.com/rows.json")
    assert list(rows.items().properties()) == ["zeta", "alpha"]
    card = choose_card({"rows": [{"alpha": 1, "zeta": "z", "extra": 0}]}, contract)
    assert (card.form, card.columns) == ("table", ("zeta", "alpha", "extra"))
    assert card_form(ToolInfo("t", output_schema=EMBEDDED)) == "table: zeta, alpha"


def test_properties_follow_allof_and_ref_in_written_order_for_cards_forms_and_mcp():
    schema = {"$defs": {"base": {"properties": {"b": {"type": "integer", "title": "Bee"}}}},
              "allOf": [{"$ref": "#/$defs/base"}],
              "properties": {"c": {"type": "boolean"}, "a": {"type": "string"}}, "type": "object"}
    contract = load_contract(schema)
    assert list(SchemaView(contract, schema, contract.base).properties()) == ["b", "c", "a"]
    assert choose_card({"a": "x", "c": True, "b": 2}, contract).keys == ("b", "c", "a")
    fields = fields_for(contract)
    assert [(f.name, f.widget, f.label) for f in fields] == [("b", "integer", "Bee"), ("c", "select", "c"),
                                                             ("a", "text", "a")]
    assert card_form(ToolInfo("t", output_schema=schema)) == "key-values: b, c, a"


def test_layers_give_the_nearest_keyword_and_a_view_without_refs_follows_none():
    schema = {"$defs": {"t": {"title": "far", "type": "string"}}, "allOf": [{"$ref": "#/$defs/t"}], "title": "near"}
    contract = load_contract(schema)
    view = SchemaView(contract, schema, contract.base)
    assert (view.keyword("title"), view.keyword("type")) == ("near", "string")
    assert [layer.get("title") for layer in view.layers()] == ["near", None, "far"]
    assert SchemaView(None, schema).keyword("type") is None


def test_the_upgrade_check_follows_refs_to_failure_schemas_and_refuses_ones_that_find_nothing():
    def document(failure: dict) -> dict:
        return {"openapi": "3.1.0", "components": {"schemas": {"Busy": failure}},
                "paths": {"/agents/a/runs": {"post": {"x-oz0-agent": "a", "responses": {
                    "502": {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/Busy"}}}}}}}}}

    busy = {"title": "Busy", "x-retryable": False}
    retried = compare_documents(document(busy), document({**busy, "x-retryable": True}))
    assert [c.clause() for c in retried] == ["a: failure: Busy is now retryable"]
    broken = document(busy)
    broken["paths"]["/agents/a/runs"]["post"]["responses"]["502"]["content"]["application/json"]["schema"] = {
        "$ref": "#/components/schemas/Gone"}
    with pytest.raises(CompatError, match=r"\$ref '#/components/schemas/Gone' points at nothing"):
        compare_documents(document(busy), broken)
    with pytest.raises(LookupError, match="leaves the document"):
        DocumentRefs({}).lookup("other.json#/x")


def test_the_walk_visits_every_schema_with_its_base_and_stops_past_its_depth():
    walked = [(base, format_pointer(path)) for _, base, path in walk_schema(EMBEDDED, "urn:oz0:root")]
    assert ("https://example.com/rows.json", "/$defs/rows/$defs/row/allOf/0") in walked
    assert ("urn:oz0:root", "/$defs/row") in walked
    deep: dict = {}
    node = deep
    for _ in range(5):
        node["not"] = {}
        node = node["not"]
    with pytest.raises(SchemaDepthError) as caught:
        list(walk_schema(deep, "urn:x", max_depth=3))
    assert caught.value.path == ("not",) * 4

# --- the CallToolResult reader ---------------------------------------------------------------------


def test_the_reader_gives_cards_and_jobs_the_same_facts():
    result = {"content": [{"type": "text", "text": "one"}, {"type": "image", "data": ""},
                          {"type": "text", "text": "two"}], "isError": 1}
    read = read_tool_result(result)
    assert (read.text, read.is_error, read.has_structured, read.complete) == ("one\n\ntwo", False, False, True)
    assert is_call_tool_result(result) and not is_call_tool_result({**result, "extra": 1})
    kept = tool_output(result, tool="t")  # an image beside the text: the job keeps the whole result
    assert kept == result and kept_value(kept) == "one\n\ntwo"
    assert tool_output({"content": result["content"][::2]}, tool="t") == "one\n\ntwo"
    assert choose_card(result, source="mcp").text == "one\n\ntwo"


def test_structured_content_wins_even_when_it_is_null():
    result = {"content": [{"type": "text", "text": '{"n": 1}'}], "structuredContent": None}
    read = read_tool_result(result)
    assert (read.has_structured, read.structured, read.text_value()) == (True, None, {"n": 1})
    assert tool_output(result, tool="t") is None
    assert tool_output({"content": [{"type": "text", "text": '{"n": 1}'}]}, tool="t") == {"n": 1}
    assert choose_card({"content": [{"type": "text", "text": '{"n": 1}'}]}, source="mcp").keys == ("n",)


def test_an_error_or_an_incomplete_result_reads_the_same_for_cards_and_jobs():
    failed = {"content": [{"type": "text", "text": "disk full\nat /var"}], "isError": True}
    card = choose_card(failed, source="mcp")
    assert (card.status.success, card.status.message, card.text) == (False, "disk full", "disk full\nat /var")
    with pytest.raises(McpFailure) as caught:
        tool_output(failed, tool="df")
    assert (caught.value.kind, caught.value.reason) == ("AgentError", "tool 'df' reported an error: disk full\nat /var")
    waiting = {"content": [], "resultType": "input_required"}
    assert "resultType 'input_required'" in choose_card(waiting, source="mcp").reason
    with pytest.raises(McpFailure, match="resultType 'input_required', not 'complete'"):
        tool_output(waiting, tool="ask")

# --- the violation sentence ------------------------------------------------------------------------


COUNT = {"type": "object", "properties": {"n": {"type": "integer", "minimum": 0}, "s": {"type": "string"}}}


def test_one_sentence_for_the_first_violation_and_how_many_more():
    contract = load_contract(COUNT)
    one, two = contract.validate({"n": -1}), contract.validate({"n": -1, "s": 5})
    assert violation_sentence(one) == "the value at $.n breaks the rule 'minimum' (-1 is less than the minimum of 0)"
    assert violation_sentence(two).endswith("(-1 is less than the minimum of 0) (and 1 more)")
    assert violation_sentence(two, subject="the input", rules_of="in.json") == (
        "the input at $.n breaks the rule 'minimum' of in.json: -1 is less than the minimum of 0 (and 1 more)")
    card = choose_card({"n": -1, "s": 5}, contract)
    assert card.reason == (f"The result does not match its contract: {violation_sentence(two)}; "
                           "the raw result is attached.")


def test_jobs_say_the_same_sentence_for_input_and_answer(tmp_path):
    root = make_plugin(tmp_path / "kit", agents={
        "count": {"kind": "python", "entry": "agent:count", "input_schema": "schemas/count.json",
                  "output_schema": "schemas/count.json"}},
        files={"schemas/count.json": COUNT, "agent.py": "def count(value):\n    return {'n': -1, 's': 5}\n"})
    runtime = Runtime(tmp_path / "home", flow_engine=FLOW_ENGINE)
    install_plugin(runtime, load_plugin(root))
    spec = runtime.agent("count")
    with pytest.raises(JobFailure) as caught:
        runtime.parse_input(spec, json.dumps({"n": -1, "s": 5}))
    assert caught.value.reason == ("the input at $.n breaks the rule 'minimum' of schemas/count.json: "
                                   "-1 is less than the minimum of 0 (and 1 more)")
    done = asyncio.run(runtime.run("count", '{"n": 1}'))
    assert (done.failure_kind, done.failure_reason) == (
        "InvalidOutput", "the answer at $.n breaks the rule 'minimum' of schemas/count.json: "
                         "-1 is less than the minimum of 0 (and 1 more)")
