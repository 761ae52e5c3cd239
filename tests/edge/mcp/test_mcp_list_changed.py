"""notifications/tools/list_changed: an installed mcp agent's stored contracts follow a compatible tool
change (the OpenAPI document and validation show it); a breaking one is audited and not applied.
Against a real MCP server over stdio that changes its tool during a call."""

from __future__ import annotations

import asyncio
import json
import shutil
import sys
import time
from pathlib import Path

import pytest
from paths import SUPPORT

from oz0.adapters.console.api_doc import api_document
from oz0.edge.documents.openapi import agent_path
from oz0.edge.flows.engine import FLOW_ENGINE
from oz0.edge.mcp.pool import servers
from oz0.edge.plugins.manifest import load_plugin
from oz0.edge.runtime.install import install_plugin
from oz0.edge.runtime.runner import Runtime

SERVER = SUPPORT / "mcp_servers" / "changing_server.py"


def agent(name: str, tool: str) -> str:
    return (f"description: {name}\nkind: mcp\nserver:\n  command: {json.dumps(sys.executable)}\n"
            f"  args: [changing_server.py]\ntool: {tool}\nlimits:\n  timeout_s: 20\n")


@pytest.fixture()
def runtime(tmp_path: Path):
    root = tmp_path / "plugin"
    (root / "agents").mkdir(parents=True)
    shutil.copy(SERVER, root / "changing_server.py")
    (root / "plugin.yaml").write_text("name: changing\nversion: 1.0.0\n")
    (root / "agents" / "lookup.yaml").write_text(agent("lookup", "lookup"))
    (root / "agents" / "evolve.yaml").write_text(agent("evolve", "evolve"))
    servers().close()
    rt = Runtime(tmp_path / "home", flow_engine=FLOW_ENGINE)
    install_plugin(rt, load_plugin(root), actor="test")
    yield rt
    servers().close()
    rt.close()


def input_properties(rt: Runtime) -> dict:
    doc = api_document(rt.agents())
    schema = doc["paths"][agent_path("lookup")]["post"]["requestBody"]["content"]["application/json"]["schema"]
    while "$ref" in schema:
        schema = doc["components"]["schemas"][schema["$ref"].rsplit("/", 1)[1]]
    return schema["properties"]


def wait_for(check, seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, "the tool change was not picked up"
        time.sleep(0.05)


def test_a_compatible_tool_change_updates_the_stored_contract(runtime: Runtime) -> None:
    assert set(input_properties(runtime)) == {"host"}
    (before,) = [a for a in runtime.installed()[0].agents if a.name == "lookup"]
    job = asyncio.run(runtime.run("evolve", '{"step": "compatible"}'))
    assert job.status == "succeeded", job.failure_reason
    wait_for(lambda: "verbose" in input_properties(runtime))
    (row,) = [a for a in runtime.installed()[0].agents if a.name == "lookup"]
    assert "verbose" in row.input_schema["properties"]
    assert row.contract_hash != before.contract_hash  # the contract it now promises has its own hash
    done = asyncio.run(runtime.run("lookup", '{"host": "db-1", "verbose": true}'))
    assert done.status == "succeeded" and done.output["zone"] == "eu-1 (verbose)"
    assert not [r for r in runtime.audit_log() if r.action == "mcp.tools.breaking"]


def test_a_breaking_tool_change_is_audited_once_and_not_applied(runtime: Runtime,
                                                                 caplog: pytest.LogCaptureFixture) -> None:
    job = asyncio.run(runtime.run("evolve", '{"step": "breaking"}'))
    assert job.status == "succeeded", job.failure_reason
    wait_for(lambda: any(r.action == "mcp.tools.breaking" for r in runtime.audit_log()))
    (record,) = [r for r in runtime.audit_log() if r.action == "mcp.tools.breaking"]
    assert record.detail["agent"] == "lookup" and record.detail["tool"] == "lookup"
    assert "changing_server.py" in record.detail["server"]
    assert any("region" in c["json_path"] + c["what"] and c["breaking"] for c in record.detail["changes"])
    assert set(input_properties(runtime)) == {"host"}  # callers keep the contract they were promised
    (row,) = [a for a in runtime.installed()[0].agents if a.name == "lookup"]
    assert row.input_schema["required"] == ["host"]
    asyncio.run(runtime.run("evolve", '{"step": "breaking"}'))  # the same change heard again
    time.sleep(1.0)
    assert len([r for r in runtime.audit_log() if r.action == "mcp.tools.breaking"]) == 1
    assert len([r for r in caplog.records if "breaks agent lookup" in r.getMessage()]) == 1
