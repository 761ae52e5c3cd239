"""The one-line contract text chat help and `oz0 mcp tools` show: what an agent takes and an example."""

from __future__ import annotations

import json
from pathlib import Path

from oz0.edge.documents.summary import example_input, input_summary, schema_example, schema_summary, type_name
from oz0.edge.plugins.manifest import load_plugin

DEPLOYS_IN = {"type": "object", "required": ["service"],
              "properties": {"service": {"type": "string"}, "rows": {"type": "integer"}}}


def _agent(tmp_path: Path, manifest: str, schema: dict | None = None):
    (tmp_path / "agents").mkdir()
    (tmp_path / "plugin.yaml").write_text("name: t\nversion: 1.0.0\n")
    (tmp_path / "agents" / "a.yaml").write_text(manifest)
    (tmp_path / "impl.py").write_text("def run(x):\n    return x\n")
    if schema is not None:
        (tmp_path / "in.json").write_text(json.dumps(schema))
    return load_plugin(tmp_path).agents[0]


def test_a_text_agent_takes_text_and_shows_its_example_or_a_placeholder(tmp_path: Path) -> None:
    spec = _agent(tmp_path, "kind: python\nentry: impl:run\ninput: text\noutput: text\n")
    assert input_summary(spec) == "text"
    assert example_input(spec) == "some text"


def test_a_schema_agent_lists_its_properties_with_optional_ones_marked(tmp_path: Path) -> None:
    spec = _agent(tmp_path, "kind: python\nentry: impl:run\ninput_schema: in.json\noutput: text\n", DEPLOYS_IN)
    assert input_summary(spec) == "JSON {service: string, rows?: integer}"
    assert example_input(spec) == '{"service": "..."}'


def test_a_declared_example_wins_over_the_schema(tmp_path: Path) -> None:
    spec = _agent(tmp_path, 'kind: python\nentry: impl:run\ninput_schema: in.json\noutput: text\n'
                  'example: {"service": "api", "rows": 3}\n', DEPLOYS_IN)
    assert json.loads(example_input(spec)) == {"service": "api", "rows": 3}


def test_a_schema_without_properties_names_its_file(tmp_path: Path) -> None:
    spec = _agent(tmp_path, "kind: python\nentry: impl:run\ninput_schema: in.json\noutput: text\n",
                  {"type": "array", "items": {"type": "string"}})
    assert input_summary(spec) == "JSON (in.json)"


def test_schema_examples_come_first_then_placeholders_by_type() -> None:
    assert schema_example({"examples": [{"q": "été"}], "properties": {"x": {"type": "integer"}}}) == '{"q": "été"}'
    assert json.loads(schema_example({"properties": {"n": {"type": "integer"}, "b": {"type": "boolean"},
                                                     "s": {"type": "string"}, "odd": True}})) == \
        {"n": 1, "b": True, "s": "...", "odd": "..."}
    assert schema_example(True) == "{}"


def test_type_names_read_as_a_person_would() -> None:
    assert type_name({"type": ["string", "null"]}) == "string | null"
    assert type_name({"type": "array", "items": {"$ref": "#/$defs/Deploy"}}) == "array of Deploy"
    assert type_name({"enum": list(range(8))}) == "0 | 1 | 2 | 3 | 4 | 5 | ..."
    assert type_name(True) == "any" and type_name(False) == "nothing"
    assert schema_summary({"type": "object"}) == "{} (no named fields)"
    assert schema_summary(DEPLOYS_IN, legend=True) == "{service: string, rows?: integer}  (? optional)"
    assert schema_summary({"properties": {"a": {}}, "required": ["a", "ghost"]}, legend=True) == "{a: any}"
