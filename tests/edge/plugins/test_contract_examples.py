"""Issue 18's examples and contract hash, as users meet them: lint findings for a bad example, the hash
(a fixed value for a fixed contract, changed by each part), contract_version kept across versions that
keep the hash, the job's contract in `oz0 jobs show`, `If-Match` pins over real HTTP, and the examples in
chat help, the console page (one link fills the form) and the OpenAPI document."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from pathlib import Path
from types import MappingProxyType
from typing import Any

import httpx
import pytest
from console_plugin import ConsoleThread
from openapi_spec_validator import validate
from plugin_kit import make_plugin

from oz0.adapters.cli import main
from oz0.edge.contracts.schema import load_contract
from oz0.edge.documents.contract_hash import canonical_json, contract_hash, contract_parts
from oz0.edge.flows.engine import FLOW_ENGINE
from oz0.edge.model.agent import FailureKind, Limits
from oz0.edge.model.flow import FlowSpec, FlowStep
from oz0.edge.plugins.lint import lint_plugin
from oz0.edge.plugins.manifest import load_plugin
from oz0.edge.runtime.install import install_plugin
from oz0.edge.runtime.runner import Runtime

IN = {"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object", "required": ["service"],
      "properties": {"service": {"$ref": "#/$defs/name"}, "rows": {"type": "integer", "minimum": 1}},
      "additionalProperties": False, "$defs": {"name": {"type": "string", "minLength": 1}}}
OUT = {"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object", "required": ["owner"],
       "properties": {"owner": {"type": "string"}}}
EXAMPLES = [{"description": "Who owns api", "input": {"service": "api"}, "output": {"owner": "team-api"}},
            {"description": "Who owns search, 2 rows", "input": {"service": "search", "rows": 2}}]
IMPL = "def lookup(value):\n    return {'owner': 'team-' + value['service']}\n"


def agent(**extra: Any) -> dict[str, Any]:
    return {"kind": "python", "entry": "impl:lookup", "description": "Who owns a service",
            "input_schema": "schemas/in.json", "output_schema": "schemas/out.json",
            "failures": {"Upstream": {"retryable": True}}, "limits": {"timeout_s": 5},
            "examples": EXAMPLES, **extra}


def plugin(root: Path, *, version: str = "0.1.0", inp: Any = IN, **extra: Any) -> Path:
    return make_plugin(root, name="owners", version=version, agents={"lookup": agent(**extra)},
                       files={"schemas/in.json": inp, "schemas/out.json": OUT, "impl.py": IMPL})


def oz0(capsys: Any, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


# ---- lint ------------------------------------------------------------------------------------------

def test_lint_names_the_example_its_path_and_the_rule(tmp_path: Path) -> None:
    bad = [{"input": {"service": "api"}}, {"description": "no rows", "input": {"service": "", "rows": 0}},
           {"input": {"service": "x"}, "output": {"owner": 7}}]
    root = plugin(tmp_path / "p", examples=bad)
    found = [(f.severity, f.path, f.message) for f in lint_plugin(root).findings if "examples" in f.path]
    assert ("error", "$.examples[1].input.service",
            "example 1: the input breaks in.json at $.service (rule minLength): \"\" is shorter than 1 character") in found
    assert any(p == "$.examples[1].input.rows" and "rule minimum" in m for _, p, m in found)
    assert any(p == "$.examples[2].output.owner" and m.startswith("example 2: the output breaks out.json at "
                                                                  "$.owner (rule type)") for _, p, m in found)
    assert not any("examples[0]" in p for _, p, _ in found)
    assert [f for f in lint_plugin(plugin(tmp_path / "good")).findings if "examples" in f.path] == []


def test_an_example_of_a_text_agent_must_be_text(tmp_path: Path) -> None:
    root = make_plugin(tmp_path / "t", name="texts", agents={"say": {
        "kind": "python", "entry": "impl:say", "input": "text", "output": "text",
        "examples": [{"input": "hi", "output": "hi"}, {"input": {"not": "text"}}]}}, files={"impl.py": "def say(t):\n    return t\n"})
    found = [(f.path, f.message) for f in lint_plugin(root).findings if "examples" in f.path]
    assert found == [("$.examples[1].input", "example 1: the input is text but this input is dict")]


# ---- the hash --------------------------------------------------------------------------------------

def test_the_hash_is_a_fixed_value_for_a_fixed_contract(tmp_path: Path) -> None:
    spec = load_plugin(plugin(tmp_path / "p")).agent("lookup")
    assert contract_hash(spec) == FIXED_HASH
    parts = contract_parts(spec)
    assert parts["input"]["properties"]["service"] == {"$ref": "#/input/$defs/name"}  # a ref resolved to one pointer
    assert canonical_json({"b": 1, "a": [1, 2]}) == b'{"a":[1,2],"b":1}'
    # the words and the file names are not the contract
    again = load_plugin(plugin(tmp_path / "q", description="Other words")).agent("lookup")
    assert contract_hash(again) == FIXED_HASH


FIXED_HASH = "f88c60fd926adf0996c6a9f0416d0dbe2c1a2623ab67c466f8ff783c2356b468"


def test_each_contract_part_changes_the_hash(tmp_path: Path) -> None:
    spec = load_plugin(plugin(tmp_path / "p")).agent("lookup")
    wider = dict(IN, properties={**IN["properties"], "note": {"type": "string"}})
    variants = {
        "input": dataclasses.replace(spec, input=load_contract(wider)),
        "output": dataclasses.replace(spec, output=load_contract(dict(OUT, required=[]))),
        "annotations": dataclasses.replace(spec, config=MappingProxyType({**spec.config,
                                                                          "annotations": {"readOnlyHint": True}})),
        "failures": dataclasses.replace(spec, failures=(FailureKind("Upstream", retryable=False),)),
        "limits": dataclasses.replace(spec, limits=Limits(timeout_s=6)),
    }
    hashes = {part: contract_hash(v) for part, v in variants.items()}
    assert FIXED_HASH not in hashes.values() and len(set(hashes.values())) == len(hashes)

    def flow(answer: dict[str, Any]) -> FlowSpec:
        step = FlowStep(id="approve", ask="Go?", answer_schema=load_contract(answer))
        return FlowSpec(name="f", plugin="p", kind="flow", file="f.yaml", steps=(step,))

    yes = {"type": "object", "properties": {"ok": {"type": "boolean"}}}
    assert contract_hash(flow(yes)) == contract_hash(flow(dict(yes)))
    assert contract_hash(flow(yes)) != contract_hash(flow({"type": "object", "properties": {"ok": {"type": "string"}}}))


# ---- contract_version, jobs, plugin list, upgrade output -------------------------------------------

def test_contract_version_is_kept_while_the_hash_is_and_jobs_record_it(tmp_path: Path, oz0_home: Path,
                                                                         capsys: Any) -> None:
    code, out, _ = oz0(capsys, "plugin", "install", str(plugin(tmp_path / "v1")))
    assert code == 0 and "contract of" not in out
    code, out, _ = oz0(capsys, "plugin", "install", str(plugin(tmp_path / "v2", version="0.2.0",
                                                                 description="Reworded")))
    assert code == 0 and "contract of" not in out
    code, out, _ = oz0(capsys, "plugin", "list", "--json")
    row = json.loads(out)["plugins"][0]["agents"][0]
    assert (row["contract_hash"], row["contract_version"]) == (FIXED_HASH, "0.1.0")
    wider = dict(IN, properties={**IN["properties"], "note": {"type": "string"}})
    code, out, _ = oz0(capsys, "plugin", "install", str(plugin(tmp_path / "v3", version="0.3.0", inp=wider)))
    new_hash = contract_hash(load_plugin(tmp_path / "v3").agent("lookup"))
    assert code == 0 and f"contract of lookup changed: {FIXED_HASH} -> {new_hash}" in out
    code, out, _ = oz0(capsys, "plugin", "list")
    assert new_hash[:12] in out and "(since 0.3.0)" in out and FIXED_HASH[:12] not in out

    code, out, _ = oz0(capsys, "run", "lookup", '{"service": "api"}')
    assert code == 0
    runtime = Runtime(oz0_home, flow_engine=FLOW_ENGINE)
    try:
        job = runtime.jobs(limit=1)[0]
    finally:
        runtime.close()
    assert (job.contract_hash, job.contract_version) == (new_hash, "0.3.0")
    code, out, _ = oz0(capsys, "jobs", "show", job.id)
    assert code == 0 and f"{new_hash} (since 0.3.0)" in out


def test_plugin_diff_prints_each_agent_whose_hash_changed(tmp_path: Path, capsys: Any) -> None:
    old = plugin(tmp_path / "old")
    new = plugin(tmp_path / "new", version="0.2.0", limits={"timeout_s": 9})
    code, out, _ = oz0(capsys, "plugin", "diff", str(old), str(new))
    changed = contract_hash(load_plugin(new).agent("lookup"))
    assert code == 0 and f"contract of lookup changed: {FIXED_HASH} -> {changed}" in out


# ---- HTTP: pins, the agent list, the document, the console page -------------------------------------

@pytest.fixture(scope="module")
def console(tmp_path_factory: Any) -> Any:
    base = tmp_path_factory.mktemp("pins")
    runtime = Runtime(base / "home", backoff_s=0.01, flow_engine=FLOW_ENGINE)
    install_plugin(runtime, load_plugin(plugin(base / "src")), actor="test")
    with ConsoleThread(runtime) as server:
        yield server
    runtime.close()


@pytest.fixture
def http(console: Any) -> Any:
    with httpx.Client(base_url=console.url, timeout=20) as client:
        yield client


def test_a_stale_pin_is_412_with_both_hashes_and_starts_no_job(http: Any, console: Any) -> None:
    before = len(console.runtime.jobs(limit=1000))
    r = http.post("/v1/agents/lookup/runs", json={"service": "api"}, headers={"if-match": '"0123abcd"'})
    assert r.status_code == 412
    body = r.json()
    assert body["error_code"] == "contract_changed"
    assert body["details"] == {"agent": "lookup", "pinned": ["0123abcd"], "installed": FIXED_HASH,
                               "contract_version": "0.1.0"}
    assert FIXED_HASH in body["message"] and "0123abcd" in body["message"]
    assert len(console.runtime.jobs(limit=1000)) == before


def test_the_right_pin_runs_and_the_job_records_its_contract(http: Any) -> None:
    r = http.post("/v1/agents/lookup/runs?wait=false", json={"service": "api"},
                  headers={"if-match": f'"{FIXED_HASH}"'})
    assert r.status_code == 202
    assert r.json()["job"]["contract_hash"] == FIXED_HASH and r.json()["job"]["contract_version"] == "0.1.0"
    r = http.post("/v1/agents/lookup/runs", json={"service": "api"}, headers={"if-match": f'W/"{FIXED_HASH}"'})
    assert r.status_code == 200 and r.json()["output"] == {"owner": "team-api"}


def test_the_agent_list_and_the_document_carry_the_hash_and_the_examples(http: Any) -> None:
    listed = next(a for a in http.get("/v1/agents").json()["agents"] if a["name"] == "lookup")
    assert (listed["contract_hash"], listed["contract_version"]) == (FIXED_HASH, "0.1.0")
    assert listed["examples"] == EXAMPLES
    doc = http.get("/openapi.json").json()
    validate(doc)
    op = doc["paths"]["/agents/lookup/runs"]["post"]
    assert (op["x-contract-hash"], op["x-contract-version"]) == (FIXED_HASH, "0.1.0")
    assert op["requestBody"]["content"]["application/json"]["examples"] == {
        "example-0": {"summary": "Who owns api", "value": {"service": "api"}},
        "example-1": {"summary": "Who owns search, 2 rows", "value": {"service": "search", "rows": 2}}}
    assert op["responses"]["200"]["content"]["application/json"]["examples"] == {
        "example-0": {"summary": "Who owns api", "value": {"success": True, "output": {"owner": "team-api"}}}}
    assert "412" in op["responses"] and any(p["name"] == "If-Match" for p in op["parameters"])


def test_the_console_page_shows_the_contract_and_an_example_link_fills_the_form(http: Any) -> None:
    page = http.get("/agents/lookup").text
    assert FIXED_HASH in page and "since owners 0.1.0" in page
    assert 'href="/agents/lookup?example=1#run"' in page and "Who owns search, 2 rows" in page
    filled = http.get("/agents/lookup?example=1").text
    assert 'value="search"' in filled and 'value="2"' in filled
    assert 'value="search"' not in page


# ---- chat help -------------------------------------------------------------------------------------

def test_help_agent_lists_the_examples(tmp_path: Path, oz0_home: Path) -> None:
    from slack_harness import running_channel

    runtime = Runtime(oz0_home, flow_engine=FLOW_ENGINE)
    try:
        install_plugin(runtime, load_plugin(plugin(tmp_path / "p")), actor="test")
    finally:
        runtime.close()

    async def main() -> str:
        async with running_channel(oz0_home) as h:
            _, body, _ = await h.command("help lookup", trigger_id="H-1")
            return json.dumps(body["blocks"], ensure_ascii=False)

    shown = asyncio.run(asyncio.wait_for(main(), 60))
    assert 'Who owns api: /ask lookup {\\"service\\":\\"api\\"} -> {\\"owner\\":\\"team-api\\"}' in shown
    assert 'Who owns search, 2 rows: /ask lookup {\\"service\\":\\"search\\",\\"rows\\":2}' in shown


# ---- oz0 mcp tools ---------------------------------------------------------------------------------

def test_mcp_tools_shows_the_examples_an_installed_agent_declares(tmp_path: Path, oz0_home: Path,
                                                                  capsys: Any, monkeypatch: Any) -> None:
    import shlex
    import shutil
    import sys

    from mcp_harness import SERVER

    from oz0.edge.mcp.pool import servers

    src = tmp_path / "mcp-plugin"
    (src / "agents").mkdir(parents=True)
    shutil.copy(SERVER, src / "cards_server.py")
    (src / "plugin.yaml").write_text("name: mcp-cards\nversion: 1.0.0\n")
    (src / "agents" / "deploys.yaml").write_text(
        f"kind: mcp\nserver:\n  command: {json.dumps(sys.executable)}\n  args: [cards_server.py]\ntool: deploys\n"
        "examples:\n  - description: The api's deploys\n    input: {service: api}\n")
    runtime = Runtime(oz0_home, flow_engine=FLOW_ENGINE)
    try:
        install_plugin(runtime, load_plugin(src), actor="test")
    finally:
        runtime.close()
    monkeypatch.chdir(src)
    try:
        code, out, err = oz0(capsys, "mcp", "tools", "--command", shlex.join([sys.executable, "cards_server.py"]))
        assert code == 0, err
        block = out.split("\ndeploys\n", 1)[1].split("\n\n", 1)[0]
        assert '  example (agent deploys): The api\'s deploys: {"service":"api"}' in block
        assert out.count("example (agent") == 1
        code, out, err = oz0(capsys, "mcp", "tools", "--json", "--command", shlex.join([sys.executable, "cards_server.py"]))
        tools = {t["name"]: t for t in json.loads(out)["tools"]}
        assert tools["deploys"]["examples"] == [{"agent": "deploys", "description": "The api's deploys",
                                                 "input": {"service": "api"}}]
        assert all("examples" not in t for name, t in tools.items() if name != "deploys")
    finally:
        servers().close()


def test_a_flows_examples_are_linted_and_loaded(tmp_path: Path) -> None:
    root = plugin(tmp_path / "p")
    (root / "flows").mkdir()
    (root / "flows" / "owners-flow.yaml").write_text(
        "input_schema: schemas/in.json\noutput_schema: schemas/out.json\nsteps:\n  - {id: look, agent: lookup}\n"
        "examples:\n  - {description: fine, input: {service: api}, output: {owner: team-api}}\n"
        "  - {input: {service: api, colour: red}}\n")
    found = [(f.path, f.message) for f in lint_plugin(root).findings if "examples" in f.path]
    assert len(found) == 1 and found[0][0] == "$.examples[1].input"
    assert found[0][1].startswith("example 1: the input breaks in.json at $ (rule additionalProperties)")
    flow = load_plugin(root).flow("owners-flow")
    assert [e.description for e in flow.examples] == ["fine", ""] and flow.examples[0].output == {"owner": "team-api"}
