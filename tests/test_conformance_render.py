"""Issue 19, "Results drawn wrongly": real producers' answers drawn by `oz0 render` as a user runs it.

The JSON-RPC responses are captured from the real test MCP server over stdio (the form MCP traffic is
logged in), not written by hand.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from mcp_harness import SERVER

OZ0 = [sys.executable, "-m", "oz0.adapters.cli"]


def oz0(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*OZ0, *args], capture_output=True, text=True, timeout=60)


def card_of(path: Path, *extra: str) -> dict:
    done = oz0("render", str(path), "--to", "card", *extra)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def exchange(*requests: dict) -> list[dict]:
    """Each request sent to the real MCP server over stdio, after the initialize handshake; the raw
    JSON-RPC responses, as logged."""
    hello = [{"jsonrpc": "2.0", "id": 0, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                         "clientInfo": {"name": "test", "version": "1"}}},
             {"jsonrpc": "2.0", "method": "notifications/initialized"}]
    proc = subprocess.Popen([sys.executable, str(SERVER)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    try:
        proc.stdin.write("".join(json.dumps(m) + "\n" for m in [*hello, *requests]))
        proc.stdin.flush()
        by_id: dict = {}
        while not all(r["id"] in by_id for r in requests):
            line = proc.stdout.readline()
            assert line, "the MCP server closed its output before answering every request"
            answer = json.loads(line)
            by_id[answer.get("id")] = answer
    finally:
        proc.stdin.close()
        proc.wait(20)
    return [by_id[r["id"]] for r in requests]


@pytest.fixture(scope="module")
def logged(tmp_path_factory) -> dict[str, Path]:
    calls = {"fail": {"name": "fail", "arguments": {}}, "disk": {"name": "disk", "arguments": {"host": "db-1"}}}
    requests = [{"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": p}
                for i, p in enumerate(calls.values(), start=1)]
    requests.append({"jsonrpc": "2.0", "id": 9, "method": "no/such/method", "params": {}})
    folder = tmp_path_factory.mktemp("logged")
    out = {}
    for name, answer in zip([*calls, "protocol_error"], exchange(*requests)):
        out[name] = folder / f"{name}.json"
        out[name].write_text(json.dumps(answer))
    return out


@pytest.mark.parametrize("flag", [(), ("--mcp",)], ids=["auto", "mcp"])
def test_a_logged_tools_call_failure_is_drawn_as_the_failure_inside(logged, flag):
    card = card_of(logged["fail"], *flag)
    assert card["status"]["success"] is False
    assert "Cannot read disk use: the backup volume is offline" in card["status"]["message"]
    assert card["form"] != "table"


@pytest.mark.parametrize("flag", [(), ("--mcp",)], ids=["auto", "mcp"])
def test_a_logged_tools_call_success_is_drawn_from_its_structured_content(logged, flag):
    card = card_of(logged["disk"], *flag)
    assert card["form"] == "key_values" and card["drawn"] is True
    assert dict(zip(card["keys"], card["values"]))["host"] == "db-1"


@pytest.mark.parametrize("flag", [(), ("--mcp",)], ids=["auto", "mcp"])
def test_a_json_rpc_error_is_a_protocol_error_never_a_success(logged, flag):
    answer = json.loads(logged["protocol_error"].read_text())
    assert "error" in answer
    card = card_of(logged["protocol_error"], *flag)
    assert card["status"]["success"] is False
    assert card["status"]["message"].startswith("MCP protocol error: ")
    assert answer["error"]["message"] in card["status"]["message"]
    assert f"JSON-RPC error {answer['error']['code']}" in card["status"]["error"]
    slack = json.loads(oz0("render", str(logged["protocol_error"]), "--to", "slack", *flag).stdout)
    assert slack["text"].startswith("Failed: MCP protocol error: ")
