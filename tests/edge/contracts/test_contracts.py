"""Contracts: checked at load, compiled once, never fetching a `$ref`; errors are data."""

from __future__ import annotations

import http.server
import json
import re
import threading

import pytest

from oz0.edge.contracts.schema import ContractError, compile_count, load_contract


@pytest.fixture
def recording_server():
    """A loopback HTTP server that serves a schema and records every request it gets."""
    requests: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            requests.append(self.path)
            body = json.dumps({"type": "integer"}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/schema+json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", requests
    server.shutdown()
    server.server_close()


def test_remote_ref_is_refused_at_load_and_never_fetched(recording_server):
    base, requests = recording_server
    ref = f"{base}/remote.json"
    schema = {"type": "object", "properties": {"n": {"$ref": ref}}}
    with pytest.raises(ContractError) as info:
        load_contract(schema, source="tool.json")
    assert requests == []
    assert ref in str(info.value)
    assert info.value.location == "/properties/n/$ref"
    assert str(info.value).startswith("tool.json at /properties/n/$ref: ")


def test_remote_ref_in_an_unreached_branch_is_still_refused(recording_server):
    base, requests = recording_server
    schema = {"anyOf": [{"type": "string"}, {"$ref": f"{base}/never-reached.json"}]}
    with pytest.raises(ContractError, match=re.escape("never-reached.json")):
        load_contract(schema)
    assert requests == []


def test_file_ref_is_refused_and_the_file_is_not_used(tmp_path):
    target = tmp_path / "other.json"
    target.write_text(json.dumps({"type": "integer"}))
    ref = target.as_uri()
    with pytest.raises(ContractError) as info:
        load_contract({"$ref": ref})
    assert ref in str(info.value)
    assert "file://" in info.value.message


def test_relative_ref_that_leaves_the_document_is_refused(tmp_path):
    with pytest.raises(ContractError, match=r"'common.json#/\$defs/x'"):
        load_contract({"properties": {"a": {"$ref": "common.json#/$defs/x"}}})


def test_dangling_local_pointer_is_refused():
    with pytest.raises(ContractError, match="points at nothing") as info:
        load_contract({"items": {"$ref": "#/$defs/missing"}, "$defs": {}})
    assert info.value.location == "/items/$ref"


@pytest.mark.parametrize("schema, good, bad", [
    ({"$defs": {"n": {"type": "integer"}}, "items": {"$ref": "#/$defs/n"}}, [1], ["a"]),
    ({"definitions": {"n": {"type": "integer"}}, "items": {"$ref": "#/definitions/n"},
      "$schema": "http://json-schema.org/draft-07/schema#"}, [1], ["a"]),
    ({"$defs": {"n": {"$anchor": "num", "type": "integer"}}, "items": {"$ref": "#num"}}, [1], ["a"]),
    ({"$id": "https://example.com/root.json", "items": {"$ref": "part.json"},
      "$defs": {"p": {"$id": "https://example.com/part.json", "type": "integer"}}}, [1], ["a"]),
    ({"$id": "https://example.com/root.json", "items": {"$ref": "https://example.com/root.json#/$defs/n"},
      "$defs": {"n": {"type": "integer"}}}, [1], ["a"]),
    ({"$defs": {"a b": {"type": "integer"}}, "items": {"$ref": "#/$defs/a%20b"}}, [1], ["a"]),
])
def test_refs_inside_the_document_resolve(schema, good, bad):
    contract = load_contract(schema)
    assert contract.validate(good) == ()
    assert contract.validate(bad)[0].json_path == "$[0]"


def test_known_meta_schema_resolves_locally(recording_server):
    _, requests = recording_server
    contract = load_contract({"$ref": "https://json-schema.org/draft/2020-12/schema"})
    assert contract.is_valid({"type": "string"})
    assert not contract.is_valid({"type": 12})
    assert requests == []


@pytest.mark.parametrize("dialect", [
    "https://json-schema.org/draft/2020-12/schema",
    "https://json-schema.org/draft/2019-09/schema",
    "http://json-schema.org/draft-07/schema#",
    "http://json-schema.org/draft-07/schema",
])
def test_allowed_dialects(dialect):
    assert load_contract({"$schema": dialect, "type": "string"}).is_valid("x")


@pytest.mark.parametrize("dialect", ["http://json-schema.org/draft-04/schema#", "https://example.com/my-dialect"])
def test_other_dialects_fail_clearly(dialect):
    with pytest.raises(ContractError, match="unsupported \\$schema") as info:
        load_contract({"$schema": dialect})
    assert info.value.location == "/$schema"
    assert "2020-12" in str(info.value)


def test_invalid_schema_names_where():
    with pytest.raises(ContractError, match="not a valid JSON Schema") as info:
        load_contract({"properties": {"a": {"type": "strnig"}}}, source="bad.json")
    assert info.value.location == "/properties/a/type"


def test_errors_are_data():
    contract = load_contract({
        "type": "object", "required": ["rows"],
        "properties": {"rows": {"type": "array", "items": {"$ref": "#/$defs/row"}}},
        "$defs": {"row": {"type": "object", "properties": {"age": {"type": "integer", "minimum": 0}}}},
    })
    (v,) = contract.validate({"rows": [{"age": 1}, {"age": -3}]})
    assert v.json_path == "$.rows[1].age"
    assert v.keyword == "minimum"
    assert v.schema_path == "/$defs/row/properties/age/minimum"
    assert "-3" in v.message
    (missing,) = contract.validate({})
    assert (missing.keyword, missing.json_path) == ("required", "$")
    (odd,) = load_contract({"properties": {"odd key": {"type": "string"}}}).validate({"odd key": 1})
    assert odd.json_path == '$["odd key"]'


def test_compiled_once_per_schema_content():
    schema = {"type": "object", "properties": {"unique_for_this_test": {"type": "string"}}}
    before = compile_count()
    first = load_contract(schema)
    again = load_contract(json.loads(json.dumps(schema)))
    assert first is again
    assert compile_count() == before + 1


def test_schema_file_errors_name_the_file(tmp_path):
    missing = tmp_path / "nope.json"
    with pytest.raises(ContractError, match=re.escape("nope.json: cannot read schema")):
        load_contract(missing)
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    with pytest.raises(ContractError, match=re.escape("broken.json: not valid JSON")):
        load_contract(broken)


def test_regex_engine_is_bounded():
    # fancy-regex: lookaround works; patterns without it run on the linear engine; backtracking is capped.
    lookahead = load_contract({"type": "string", "pattern": "^(?=.*[0-9])[a-z0-9]+$"})
    assert lookahead.is_valid("abc1") and not lookahead.is_valid("abc")
    nested = load_contract({"type": "string", "pattern": "^(a+)+$"})
    assert nested.is_valid("a" * 50)
    assert not nested.is_valid("a" * 5000 + "!")
    backref = load_contract({"type": "string", "pattern": "^(a|aa)+\\1$"})
    assert not backref.is_valid("a" * 40 + "b")
