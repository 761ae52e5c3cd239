"""QZX MCP profiles and tool-definition outputSchema modes: a passing and a failing case per rule."""

from __future__ import annotations

import copy
import json

import pytest
from paths import SHARED, shared

from oz0.edge.contracts.bundled import CONTRACT_SCHEMA_URL
from oz0.edge.results.qzx_profiles import validate_document
from oz0.edge.results.qzx_tools import check_output_schema

OFFICIAL = json.loads(shared("spec/result-contract-v1.schema.json").read_text())
MCP_EXAMPLES = SHARED / "fixtures" / "mcp-spec" / "examples-2026-07-28"

OK = {"success": True, "message": "Weather read.", "temperature": 22.5}
FAIL = {"success": False, "message": "City unknown.", "error_code": "city_unknown"}


def call_result(structured, **extra):
    doc = {"content": [{"type": "text", "text": json.dumps(structured)}], "structuredContent": structured}
    doc.update(extra)
    return doc


def rpc(result=None, **extra):
    doc = {"jsonrpc": "2.0", "id": 7}
    if result is not None:
        doc["result"] = result
    doc.update(extra)
    return doc


def findings(doc, profile, **kw):
    verdict = validate_document(doc, profile=profile, **kw)
    return [str(f) for f in verdict.violations], [str(f) for f in verdict.warnings], verdict


P25, P25B, P26 = "mcp-2025-06-18", "mcp-2025-11-25", "mcp-2026-07-28"

# (rule, profile, passing document, failing document, expected words with path)
RULES = [
    ("bare CallToolResult", P25, call_result(OK), {"structuredContent": OK},
     "$.content: is required: an array"),
    ("content is an array", P25, call_result(OK), call_result(OK) | {"content": "hi"},
     "$.content: must be an array, got string"),
    ("structuredContent is present", P25, call_result(OK), {"content": [{"type": "text", "text": "hi"}]},
     "$.structuredContent: is required: the complete QZX result object"),
    ("structuredContent conforms to the core", P25B, call_result(OK), call_result({"success": True, "message": " "}),
     "$.structuredContent.message: must contain a non-blank character"),
    ("structuredContent is an object", P25B, call_result(OK), call_result([OK]),
     "$.structuredContent: a QZX result must be a JSON object, got array"),
    ("isError is a boolean", P25, call_result(OK, isError=False), call_result(OK, isError="false"),
     "$.isError: must be a boolean, got string"),
    ("a failure sends isError true", P25, call_result(FAIL, isError=True), call_result(FAIL),
     "$.isError: effective isError is false (absent) but structuredContent.success is false; it must equal "
     "!success, so a failure must send isError: true"),
    ("explicit false on a failure", P25B, call_result(FAIL, isError=True), call_result(FAIL, isError=False),
     "effective isError is false but structuredContent.success is false"),
    ("a success must not send isError true", P26, call_result(OK, resultType="complete"),
     call_result(OK, isError=True, resultType="complete"),
     "$.isError: effective isError is true but structuredContent.success is true"),
    ("2026-07-28 requires resultType", P26, call_result(OK, resultType="complete"), call_result(OK),
     '$.resultType: is required by MCP 2026-07-28: "complete"'),
    ("resultType must be complete", P26, call_result(OK, resultType="complete"),
     call_result(OK, resultType="input_required"), '$.resultType: must be "complete" for a completed result, '
                                                   'got "input_required"'),
    ("2025 profiles accept only complete when present", P25, call_result(OK, resultType="complete"),
     call_result(OK, resultType="partial"), '$.resultType: must be "complete"'),
    ("JSON-RPC response wraps a CallToolResult", P25, rpc(call_result(OK)), rpc(call_result(FAIL)),
     "$.result.isError: effective isError is false (absent)"),
    ("jsonrpc is 2.0", P25, rpc(call_result(OK)), rpc(call_result(OK)) | {"jsonrpc": "1.0"},
     '$.jsonrpc: must be "2.0", got "1.0"'),
    ("id is a string", P25, rpc(call_result(OK)) | {"id": "a-1"}, rpc(call_result(OK)) | {"id": True},
     "$.id: must be a string or an integer, got true"),
    ("id is an integer", P25, rpc(call_result(OK)) | {"id": 3}, rpc(call_result(OK)) | {"id": 1.5},
     "$.id: must be a string or an integer, got 1.5"),
    ("id is required", P25, rpc(call_result(OK)), {"jsonrpc": "2.0", "result": call_result(OK)},
     "$.id: is required"),
    ("a JSON-RPC error is a protocol error", P25, rpc(call_result(OK)),
     rpc(error={"code": -32602, "message": "Unknown tool: weather"}),
     "$.error: a JSON-RPC error response is an MCP protocol error, not a completed tool result"),
    ("exactly one of result and error", P25, rpc(call_result(OK)),
     rpc(call_result(OK), error={"code": -1, "message": "x"}),
     "$: a JSON-RPC response carries exactly one of `result` and `error`"),
    ("a JSON-RPC response with neither", P25, rpc(call_result(OK)), {"jsonrpc": "2.0", "id": 1},
     "this one has neither"),
    ("result is an object", P25, rpc(call_result(OK)), rpc([1]),
     "$.result: a CallToolResult must be a JSON object, got array"),
    ("the document is an object", P25, call_result(OK), [call_result(OK)],
     "$: an MCP result must be a JSON object, got array"),
]


@pytest.mark.parametrize("rule,profile,good,bad,expected", RULES, ids=[r[0] for r in RULES])
def test_each_mcp_rule_passes_and_fails(rule, profile, good, bad, expected):
    ok, _, verdict = findings(good, profile)
    assert ok == [] and verdict.conforms
    found, _, verdict = findings(bad, profile)
    assert not verdict.conforms
    assert any(expected in line for line in found), found


def test_a_json_rpc_error_never_yields_a_completed_result():
    _, _, verdict = findings(rpc(error={"code": -32603, "message": "boom"}), P26)
    assert verdict.actual_success is None
    assert "mcp_is_error_effective" not in verdict.facts


@pytest.mark.parametrize("profile", [P25, P25B])
def test_2025_profiles_accept_resulttype_absent(profile):
    assert findings(call_result(OK), profile)[0] == []


def test_missing_text_mirror_is_a_warning_not_a_violation():
    doc = {"content": [{"type": "text", "text": "Weather read: 22.5 C"}], "structuredContent": OK}
    violations, warnings, verdict = findings(doc, P25)
    assert violations == []
    assert warnings == ["$.content: no text content block holds the same JSON as structuredContent; clients "
                        "without structured output will not see the result"]
    assert verdict.facts["backcompat_text_matches"] is False
    same_json_other_layout = {"content": [{"type": "text", "text": json.dumps(OK, indent=4, sort_keys=True)}],
                              "structuredContent": OK}
    assert findings(same_json_other_layout, P25)[1] == []


def test_profile_facts_record_the_mcp_error_state():
    _, _, verdict = findings(call_result(FAIL, isError=True, resultType="complete"), P26)
    assert verdict.facts == {
        "mcp_specification": "2026-07-28",
        "mcp_tools_spec": "https://modelcontextprotocol.io/specification/2026-07-28/server/tools",
        "contract": CONTRACT_SCHEMA_URL, "output_schema_checked": False, "output_schema_mode": None,
        "mcp_is_error_explicit": True, "mcp_is_error_effective": True, "backcompat_text_matches": True,
    }
    assert verdict.actual_success is False


@pytest.mark.parametrize("value", ["true", 1, None, {"error": True}])
def test_a_non_boolean_is_error_is_recorded_as_effectively_false(value):
    found, _, verdict = findings(call_result(FAIL, isError=value), P25)
    assert verdict.facts["mcp_is_error_explicit"] is True
    assert verdict.facts["mcp_is_error_effective"] is False
    assert any(f.startswith("$.isError: must be a boolean") for f in found)


def test_the_specs_own_call_tool_results_are_not_qzx_results():
    for path in sorted((MCP_EXAMPLES / "CallToolResult").glob("*.json")):
        violations, _, _ = findings(json.loads(path.read_text()), P26)
        assert violations, path.name


# Tool definitions

def tool(output_schema):
    return {"name": "weather", "inputSchema": {"type": "object"}, "outputSchema": output_schema}


def _without(schema, *path):
    schema = copy.deepcopy(schema)
    node = schema
    for key in path[:-1]:
        node = node[key]
    del node[path[-1]]
    return schema


STRUCTURAL = {
    "type": "object", "required": ["success", "message"],
    "properties": {"success": {"type": "boolean"},
                   "message": {"type": "string", "minLength": 1, "pattern": "\\S"},
                   "error_code": {"type": "string", "pattern": "^[a-z][a-z0-9_]*$"}},
}


@pytest.mark.parametrize("schema,mode", [
    ({"$ref": CONTRACT_SCHEMA_URL}, "canonical_ref"),
    ({"$ref": CONTRACT_SCHEMA_URL, "description": "QZX result"}, "canonical_ref"),
    (copy.deepcopy(OFFICIAL), "canonical_inline"),
    (json.loads(json.dumps(OFFICIAL, sort_keys=True)), "canonical_inline"),
    ({"allOf": [{"$ref": CONTRACT_SCHEMA_URL}, {"properties": {"temperature": {"type": "number"}}}]},
     "canonical_allof"),
    ({"allOf": [{"type": "object"}, copy.deepcopy(OFFICIAL)]}, "canonical_allof"),
    (STRUCTURAL, "structural_core"),
    (_without(OFFICIAL, "allOf"), "structural_core"),
    (_without(OFFICIAL, "properties", "warnings", "items"), "structural_core"),
    (STRUCTURAL | {"properties": STRUCTURAL["properties"] | {"error": {"type": "string"}}}, "structural_core"),
])
def test_output_schema_modes(schema, mode):
    verdict = check_output_schema(tool(schema))
    assert verdict.mode == mode and verdict.violations == ()
    assert bool(verdict.warnings) == (mode == "structural_core")


def _changed(schema, value, *path):
    schema = copy.deepcopy(schema)
    node = schema
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return schema


@pytest.mark.parametrize("schema", [
    _changed(OFFICIAL, "A QZX result.", "description"),
    _changed(OFFICIAL, "True when it worked.", "properties", "success", "description"),
    _without(OFFICIAL, "examples"),
    _without(OFFICIAL, "title"),
    _changed(OFFICIAL, "https://example.com/mine.schema.json", "$id"),
    __import__("oz0.edge.results.qzx_tools", fromlist=["canonical_schema"]).canonical_schema(),
], ids=["description", "nested-description", "no-examples", "no-title", "other-id", "oz0s-own-copy"])
def test_an_inline_schema_that_differs_in_any_keyword_is_structural_core(schema):
    verdict = check_output_schema(tool(schema))
    assert verdict.mode == "structural_core" and verdict.violations == ()
    assert [str(w) for w in verdict.warnings] == [
        "$.outputSchema: matches only the structural core of the contract (mode structural_core); reference "
        f"{CONTRACT_SCHEMA_URL} to declare the full contract"]


def test_an_inline_canonical_schema_in_any_key_order_is_canonical_inline():
    reordered = json.loads(json.dumps(OFFICIAL, sort_keys=True))
    reordered = dict(reversed(list(reordered.items())))
    assert check_output_schema(tool(reordered)).mode == "canonical_inline"
    assert check_output_schema(tool(_changed(OFFICIAL, 1.0, "properties", "meta", "properties",
                                             "schema_version", "const"))).mode == "canonical_inline"


@pytest.mark.parametrize("schema,expected", [
    (_without(STRUCTURAL, "type"), 'needs "type": "object"'),
    (STRUCTURAL | {"required": ["success"]}, '"message" must be required'),
    (_without(STRUCTURAL, "properties", "success"), 'properties.success needs "type": "boolean"'),
    (_without(STRUCTURAL, "properties", "message", "pattern"), 'properties.message needs "type": "string"'),
    (STRUCTURAL | {"properties": STRUCTURAL["properties"] | {"message": {"type": "string", "minLength": 0,
                                                                          "pattern": "\\S"}}},
     '"minLength" >= 1'),
    (_without(STRUCTURAL, "properties", "error_code", "pattern"), "declare properties.error or a "
                                                                  "properties.error_code"),
    ({"$ref": "https://example.com/other.schema.json"}, 'needs "type": "object"'),
    ({"$ref": CONTRACT_SCHEMA_URL, "required": ["temperature"]}, 'needs "type": "object"'),
    ({"type": "array"}, 'needs "type": "object"'),
])
def test_weaker_output_schemas_are_violations(schema, expected):
    verdict = check_output_schema(tool(schema))
    assert verdict.mode is None
    assert any(expected in str(f) for f in verdict.violations), verdict.violations
    assert all(str(f).startswith("$.outputSchema: ") for f in verdict.violations)


def test_a_tool_without_output_schema_is_a_violation():
    spec_tool = json.loads((MCP_EXAMPLES / "Tool" / "with-no-parameters.json").read_text())
    verdict = check_output_schema(spec_tool)
    assert [str(f) for f in verdict.violations] == [
        "$.outputSchema: is required: the tool must declare the schema of its structuredContent"]
    spec_tool = json.loads((MCP_EXAMPLES / "Tool" / "with-output-schema-for-structured-content.json").read_text())
    assert check_output_schema(spec_tool).mode is None
    assert check_output_schema([]).violations


def test_tool_definition_findings_are_labelled_in_a_verdict():
    violations, _, verdict = findings(call_result(OK), P25, tool_definition=tool({"type": "object"}))
    assert verdict.facts["output_schema_checked"] is True and verdict.facts["output_schema_mode"] is None
    assert violations and all(v.startswith("tool definition.outputSchema: ") for v in violations)
