"""Confirmations of destructive tools, end to end: a real MCP server (the SDK's, over stdio) whose
`drop_table` says destructiveHint; a job of it asks its asker to Confirm or Cancel (naming the tool
and its arguments) before the tool runs, answered through the API over real HTTP; confirmed it runs,
cancelled it never does. readOnlyHint, `confirm: false` and a channel that cannot ask; annotations
declared in an agent file; and the annotations shown by `oz0 mcp tools`, /v1/agents and OpenAPI."""

from __future__ import annotations

import asyncio
import json
import shlex
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from console_plugin import ConsoleThread
from paths import SUPPORT

from oz0.adapters.cli import main
from oz0.edge.flows.engine import FLOW_ENGINE
from oz0.edge.mcp.pool import servers
from oz0.edge.plugins.manifest import load_plugin
from oz0.edge.runtime.install import install_plugin
from oz0.edge.runtime.runner import Runtime

SERVER = SUPPORT / "mcp_servers" / "elicit_server.py"


@pytest.fixture(scope="module")
def drops(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("drops") / "drops.txt"


@pytest.fixture(scope="module")
def console(tmp_path_factory, drops):
    root = tmp_path_factory.mktemp("confirm")
    plugin = root / "plugin"
    (plugin / "agents").mkdir(parents=True)
    shutil.copy(SERVER, plugin / "elicit_server.py")
    (plugin / "plugin.yaml").write_text("name: confirm-kit\nversion: 1.0.0\n")
    (plugin / "impl.py").write_text("def purge(text):\n    return 'purged ' + text\n")
    server = (f"server:\n  command: {json.dumps(sys.executable)}\n  args: [elicit_server.py]\n"
              f"  env: {{DROPS_FILE: {json.dumps(str(drops))}}}\n")
    agents = {
        "drop": f"kind: mcp\n{server}tool: drop_table\n",
        "drop-quietly": f"kind: mcp\n{server}tool: drop_table\nconfirm: false\n",
        "read": f"kind: mcp\n{server}tool: read_table\n",
        "purge": "kind: python\nentry: impl:purge\ninput: text\noutput: text\n"
                 "annotations: {title: Purge caches, destructiveHint: true}\n",
    }
    for name, text in agents.items():
        (plugin / "agents" / f"{name}.yaml").write_text(text)
    runtime = Runtime(root / "home", flow_engine=FLOW_ENGINE)
    install_plugin(runtime, load_plugin(plugin), actor="test")
    with ConsoleThread(runtime) as thread:
        yield thread
    servers().close()
    runtime.close()


@pytest.fixture
def http(console):
    with httpx.Client(base_url=console.url, timeout=30) as client:
        yield client


def dropped(drops: Path) -> list[str]:
    return drops.read_text().split() if drops.exists() else []


def ended(http: httpx.Client, job_id: str) -> dict:
    for _ in range(500):
        body = http.get(f"/v1/jobs/{job_id}").json()
        if body["job"]["status"] in ("succeeded", "failed", "interrupted"):
            return body
        time.sleep(0.02)
    raise AssertionError(f"job {job_id} did not end")


def confirmation(http: httpx.Client, agent: str, arguments: Any) -> tuple[str, dict]:
    r = http.post(f"/v1/agents/{agent}/runs", json=arguments)
    assert r.status_code == 202, r.text
    job = http.get(f"/v1/jobs/{r.json()['job']['id']}").json()["job"]
    assert job["status"] == "waiting" and job["question"]["step"] == "confirm"
    return job["id"], job["question"]


def test_a_destructive_tool_runs_once_confirmed(http, drops):
    job_id, question = confirmation(http, "drop", {"table": "users"})
    assert question["message"] == ('Run Drop table (tool drop_table of agent drop) with {"table": "users"}? '
                                   "It is marked destructive.")
    assert question["answer_schema"]["properties"]["choice"]["enum"] == ["Confirm", "Cancel"]
    assert dropped(drops) == []  # nothing ran yet
    assert http.post(f"/v1/jobs/{job_id}/answer", json={"choice": "Confirm"}).status_code == 202
    body = ended(http, job_id)
    assert body["job"]["status"] == "succeeded" and body["output"] == {"result": "dropped users"}
    assert dropped(drops) == ["users"]


@pytest.mark.parametrize("how, said", [("json", "api-local cancelled it"), ("decline", "api-local declined it")])
def test_a_destructive_tool_cancelled_never_runs(http, drops, how, said):
    before = dropped(drops)
    job_id, _ = confirmation(http, "drop", {"table": "orders"})
    if how == "json":
        assert http.post(f"/v1/jobs/{job_id}/answer", json={"choice": "Cancel"}).status_code == 202
    else:
        assert http.post(f"/v1/jobs/{job_id}/answer?action=decline").status_code == 202
    body = ended(http, job_id)
    assert body["job"]["status"] == "failed" and body["job"]["failure_kind"] == "Cancelled"
    assert body["job"]["failure_reason"] == f"Drop table was not run: {said}"
    assert dropped(drops) == before


def test_read_only_and_confirm_false_run_without_asking(http, drops):
    r = http.post("/v1/agents/read/runs", json={"table": "users"})
    assert r.status_code == 200 and r.json()["output"] == {"result": "rows of users"}
    r = http.post("/v1/agents/drop-quietly/runs", json={"table": "tmp"})
    assert r.status_code == 200 and r.json()["output"] == {"result": "dropped tmp"}
    assert dropped(drops)[-1] == "tmp"


def test_annotations_declared_in_an_agent_file_ask_too(http):
    job_id, question = confirmation(http, "purge", "all")
    assert question["message"].startswith("Run Purge caches (tool purge of agent purge) with all?")
    http.post(f"/v1/jobs/{job_id}/answer", json={"choice": "Confirm"})
    assert ended(http, job_id)["output"] == "purged all"


def test_a_channel_that_cannot_ask_does_not_run_a_destructive_tool(console, drops):
    before = dropped(drops)
    job = asyncio.run(console.runtime.run("drop", '{"table": "cli"}', requester="cli:me", channel="cli"))
    assert job.status == "failed" and job.failure_kind == "Cancelled"
    assert "this channel cannot ask" in job.failure_reason and "`confirm: false`" in job.failure_reason
    assert dropped(drops) == before


def test_annotations_are_shown_by_the_api_and_openapi(http):
    http.post("/v1/agents/read/runs", json={"table": "t"})  # the server's tools have been listed
    agents = {a["name"]: a for a in http.get("/v1/agents").json()["agents"]}
    assert agents["drop"]["annotations"] == {"title": "Drop table", "destructiveHint": True,
                                             "idempotentHint": False, "openWorldHint": False}
    assert agents["purge"]["annotations"] == {"title": "Purge caches", "destructiveHint": True}
    assert agents["read"]["annotations"] == {"readOnlyHint": True, "destructiveHint": True}
    doc = http.get("/openapi.json").json()
    assert doc["paths"]["/agents/drop/runs"]["post"]["x-annotations"]["destructiveHint"] is True
    page = http.get("/agents/drop").text
    assert "asks you to confirm before it runs" in page and "destructiveHint: true" in page
    assert "asks you to confirm" not in http.get("/agents/read").text


def test_oz0_mcp_tools_shows_the_annotations(capsys):
    code = main(["mcp", "tools", "--command", shlex.join([sys.executable, str(SERVER)])])
    out = capsys.readouterr().out
    assert code == 0
    block = out.split("drop_table", 1)[1].split("\n\n", 1)[0]
    assert 'hints:  title="Drop table", destructiveHint=true, idempotentHint=false, openWorldHint=false' in block
    code = main(["mcp", "tools", "--json", "--command", shlex.join([sys.executable, str(SERVER)])])
    tools = {t["name"]: t for t in json.loads(capsys.readouterr().out)["tools"]}
    assert tools["read_table"]["annotations"] == {"readOnlyHint": True, "destructiveHint": True}
    assert "annotations" not in tools["deploy"]
