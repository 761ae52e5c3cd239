"""`oz0 mcp tools|call` and agents of kind `mcp`, run by the runtime, against the real test MCP server."""

from __future__ import annotations

import asyncio
import json
import shlex
import shutil
import sys
from collections.abc import Iterator

import pytest
from mcp_harness import SERVER, http_server, installed, mcp_plugin

from oz0.adapters.cli import main
from oz0.edge.mcp.pool import servers
from oz0.edge.runtime.runner import Runtime


@pytest.fixture(scope="module")
def http_url() -> Iterator[str]:
    with http_server() as url:
        yield url


COMMAND = shlex.join([sys.executable, str(SERVER), "--verbose"])


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


# oz0 mcp -------------------------------------------------------------------------------------------

def test_mcp_tools_lists_contracts_and_card_forms(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "mcp", "tools", "--command", COMMAND)
    assert code == 0, err
    block = out.split("\ndeploys\n", 1)[1].split("\n\n", 1)[0]
    assert "input:  {service?: string}" in block
    assert "output: {result: array of Deploy}" in block
    assert "card:   table: service, version, ok" in block
    assert "card:   diff of before -> after" in out
    assert "remote_ref" in out and "https://schemas.example.com/host.json" in out


def test_mcp_tools_json(capsys: pytest.CaptureFixture[str], http_url: str) -> None:
    code, out, _ = run_cli(capsys, "mcp", "tools", "--url", http_url, "--json")
    tools = {t["name"]: t for t in json.loads(out)["tools"]}
    assert code == 0 and tools["disk"]["card"] == "key-values: host, mount, used_percent"
    assert tools["disk"]["outputSchema"]["properties"]["used_percent"]["maximum"] == 100
    assert "outputSchema" not in tools["notes"]


def test_mcp_call_to_card_prints_the_neutral_card(capsys: pytest.CaptureFixture[str], http_url: str) -> None:
    code, out, _ = run_cli(capsys, "mcp", "call", "--url", http_url, "deploys", '{"service": "web"}', "--to", "card")
    card = json.loads(out)
    assert code == 0 and card["form"] == "table" and card["drawn"] is True
    assert card["columns"] == ["service", "version", "ok"] and card["rows"][0] == ["web", "1.4.2", True]


def test_mcp_call_draws_text_over_stdio(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "mcp", "call", "--command", COMMAND, "config_change")
    assert code == 0
    assert "-workers = 2" in out and "+workers = 4" in out


def test_mcp_call_of_a_result_that_breaks_its_schema(capsys: pytest.CaptureFixture[str], http_url: str) -> None:
    code, out, err = run_cli(capsys, "mcp", "call", "--url", http_url, "broken", "--to", "card")
    card = json.loads(out)
    assert code == 0 and "Traceback" not in err
    assert card["drawn"] is False
    assert card["violations"][0]["json_path"] == "$.used_percent"
    assert card["violations"][0]["keyword"] == "maximum"


@pytest.mark.parametrize("target", ["slack", "discord", "html"])
def test_mcp_call_to_a_channel(capsys: pytest.CaptureFixture[str], http_url: str, target: str) -> None:
    from oz0.renderers import RENDERERS

    if target not in RENDERERS:
        pytest.skip(f"no {target} renderer registered")
    code, out, _ = run_cli(capsys, "mcp", "call", "--url", http_url, "disk", '{"host": "db-7"}', "--to", target)
    assert code == 0 and "db-7" in out and "mount" in out


def test_mcp_call_of_a_failing_tool_exits_1_with_its_text(capsys: pytest.CaptureFixture[str], http_url: str) -> None:
    code, out, _ = run_cli(capsys, "mcp", "call", "--url", http_url, "fail", '{"reason": "disk on fire"}')
    assert code == 1 and "disk on fire" in out


def test_mcp_call_errors_are_one_line_with_exit_2(capsys: pytest.CaptureFixture[str], http_url: str) -> None:
    code, _, err = run_cli(capsys, "mcp", "call", "--url", http_url, "disk", '{"host": 3}')
    assert code == 2
    assert "the value at $.host breaks the rule 'type'" in err and "the tool was not called" in err
    code, _, err = run_cli(capsys, "mcp", "call", "--url", http_url, "remote_ref")
    assert code == 2 and "https://schemas.example.com/host.json" in err and "Traceback" not in err
    code, _, err = run_cli(capsys, "mcp", "call", "--url", http_url, "disk", "not json")
    assert code == 2 and "INPUT is not JSON" in err


def test_mcp_server_that_cannot_start_shows_its_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    command = shlex.join([sys.executable, "-c", "import sys; sys.stderr.write('fatal: port taken\\n'); sys.exit(1)"])
    code, out, err = run_cli(capsys, "mcp", "tools", "--command", command)
    assert code == 1 and out == ""
    assert "could not start" in err and "  | fatal: port taken" in err and "Traceback" not in err


# agents of kind mcp ----------------------------------------------------------------------------------

AGENTS = {
    "disk": "tool: disk",
    "broken": "tool: broken",
    "fail": "tool: fail",
    "config-change": "tool: config_change",
    "notes": "tool: notes",
    "own-schema": "tool: disk\noutput_schema: disk.schema.json",
}


@pytest.fixture(scope="module")
def runtime(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runtime]:
    """A plugin whose agents are tools of the test server, which runs from the plugin's folder."""
    root = tmp_path_factory.mktemp("mcp-plugin")
    shutil.copy(SERVER, root / "cards_server.py")
    (root / "disk.schema.json").write_text(json.dumps({
        "type": "object", "properties": {"used_percent": {"type": "number"}, "host": {"type": "string"}}}))
    mcp_plugin(root, "mcp-cards", [sys.executable, "cards_server.py"], AGENTS, timeout_s=20)
    with installed(tmp_path_factory.mktemp("home"), root) as rt:
        yield rt


def test_an_mcp_agent_gets_its_contracts_from_the_tool(runtime: Runtime) -> None:
    job = asyncio.run(runtime.run("disk", '{"host": "db-1"}'))
    assert job.status == "succeeded", job.failure_reason
    card = runtime.card(job)
    assert card.form == "key_values" and card.keys == ("host", "mount", "used_percent")
    bad = asyncio.run(runtime.run("disk", '{"host": 3}'))
    assert bad.status == "failed" and bad.failure_kind == "InvalidInput"
    assert "$.host" in (bad.failure_reason or "") and "'type'" in (bad.failure_reason or "")


def test_an_mcp_agent_answer_that_breaks_the_tool_schema_says_where(runtime: Runtime) -> None:
    job = asyncio.run(runtime.run("broken", "{}"))
    assert job.status == "failed" and job.failure_kind == "InvalidOutput"
    assert "$.used_percent" in (job.failure_reason or "") and "'maximum'" in (job.failure_reason or "")
    assert "outputSchema of tool 'broken'" in (job.failure_reason or "")


def test_an_mcp_agent_tool_error_is_a_failure_card(runtime: Runtime) -> None:
    job = asyncio.run(runtime.run("fail", '{"reason": "volume gone"}'))
    assert job.status == "failed" and job.failure_kind == "AgentError"
    card = runtime.card(job)
    assert card.status is not None and card.status.success is False and "volume gone" in card.status.message


def test_an_mcp_agent_card_uses_the_tools_schema(runtime: Runtime) -> None:
    job = asyncio.run(runtime.run("config-change", "{}"))
    assert job.status == "succeeded", job.failure_reason
    assert runtime.card(job).form == "diff"  # x-oz0-diff lives in the tool's outputSchema
    notes = asyncio.run(runtime.run("notes", "{}"))
    assert notes.status == "succeeded", notes.failure_reason
    card = runtime.card(notes)
    assert card.form == "text" and card.text.startswith("# Release 1.4")


def test_an_agent_file_that_declares_its_own_schema_keeps_it(runtime: Runtime) -> None:
    job = asyncio.run(runtime.run("own-schema", '{"host": "db-2"}'))
    assert job.status == "succeeded", job.failure_reason
    assert runtime.card(job).keys[:2] == ("used_percent", "host")  # the agent file's schema order


def test_mcp_agents_share_one_server_process(runtime: Runtime) -> None:
    from oz0.edge.mcp.kind import server_for_agent

    for _ in range(3):
        assert asyncio.run(runtime.run("disk", '{"host": "h"}')).status == "succeeded"
    assert servers().stdio_starts(server_for_agent(runtime.agent("disk"))) == 1
