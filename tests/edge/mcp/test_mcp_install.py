"""Issue 19 item 9: `mcp`-kind agents' contracts taken from their tools at install, stored with the plugin,
shown by the OpenAPI document, not called contract-less by lint, and compared by the upgrade check.
Against the real test MCP server over stdio."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
from mcp_harness import SERVER

from oz0.adapters.console.api_doc import api_document
from oz0.edge.documents.compat import UpgradeRefused
from oz0.edge.documents.openapi import agent_path
from oz0.edge.flows.engine import FLOW_ENGINE
from oz0.edge.mcp.pool import servers
from oz0.edge.plugins.declared import PluginError
from oz0.edge.plugins.lint import lint_plugin
from oz0.edge.plugins.manifest import load_plugin
from oz0.edge.runtime.install import install_plugin
from oz0.edge.runtime.runner import Runtime


def plugin(root: Path, version: str, tool: str, *, command: str = sys.executable) -> Path:
    (root / "agents").mkdir(parents=True, exist_ok=True)
    shutil.copy(SERVER, root / "cards_server.py")
    (root / "plugin.yaml").write_text(f"name: mcp-install\nversion: {version}\n")
    (root / "agents" / "disk.yaml").write_text(
        f"description: Disk use of a host\nkind: mcp\nserver:\n  command: {json.dumps(command)}\n"
        f"  args: [cards_server.py]\ntool: {tool}\nlimits:\n  timeout_s: 20\n")
    return root


@pytest.fixture()
def runtime(tmp_path: Path):
    rt = Runtime(tmp_path / "home", flow_engine=FLOW_ENGINE)
    yield rt
    servers().close()
    rt.close()


def test_install_stores_the_tools_contracts(runtime: Runtime, tmp_path: Path) -> None:
    install_plugin(runtime, load_plugin(plugin(tmp_path / "p1", "1.0.0", "disk")), actor="test")
    (row,) = runtime.installed()[0].agents
    assert row.input_schema_file == "the inputSchema of tool 'disk'"
    assert row.input_schema["required"] == ["host"]
    assert row.output_schema_file == "the outputSchema of tool 'disk'"
    assert row.output_schema["properties"]["used_percent"]["maximum"] == 100
    spec = runtime.agent("disk")
    assert spec.input is not None and spec.output is not None


def test_the_openapi_document_shows_json_bodies_for_an_mcp_agent(runtime: Runtime, tmp_path: Path) -> None:
    install_plugin(runtime, load_plugin(plugin(tmp_path / "p1", "1.0.0", "disk")), actor="test")
    operation = api_document(runtime.agents())["paths"][agent_path("disk")]["post"]
    assert list(operation["requestBody"]["content"]) == ["application/json"]
    assert list(operation["responses"]["200"]["content"]) == ["application/json"]


def test_lint_does_not_call_an_mcp_agent_contract_less(tmp_path: Path) -> None:
    report = lint_plugin(plugin(tmp_path / "p1", "1.0.0", "disk"))
    assert [f for f in report.findings if "declares no contract" in f.message] == []


def test_the_upgrade_check_compares_the_tools_schemas_between_versions(runtime: Runtime, tmp_path: Path) -> None:
    install_plugin(runtime, load_plugin(plugin(tmp_path / "p1", "1.0.0", "disk")), actor="test")
    with pytest.raises(UpgradeRefused) as refused:  # the same agent now calls a tool with other schemas
        install_plugin(runtime, load_plugin(plugin(tmp_path / "p2", "1.1.0", "health")), actor="test")
    assert "disk" in str(refused.value) and refused.value.changes
    assert any(c.breaking for c in refused.value.changes)
    assert runtime.installed()[0].version == "1.0.0"
    done = install_plugin(runtime, load_plugin(plugin(tmp_path / "p3", "2.0.0", "health")), actor="test")
    assert done.changes and runtime.installed()[0].agents[0].output_schema_file == "the outputSchema of tool 'health'"


def test_an_mcp_agent_whose_server_cannot_be_listed_refuses_the_install(runtime: Runtime, tmp_path: Path) -> None:
    root = plugin(tmp_path / "p1", "1.0.0", "disk", command=str(tmp_path / "no-such-python"))
    with pytest.raises(PluginError) as refused:
        install_plugin(runtime, load_plugin(root), actor="test")
    assert "agent 'disk' takes its contracts from its MCP tool" in str(refused.value)
    assert runtime.installed() == []
