"""MCP elicitation as a person step, end to end: a real MCP server (the `mcp` SDK's, over stdio) whose
tool sends `elicitation/create` during a call; the job waits with the question (the server's name
shown with it, its requestedSchema as the answer schema), answered through the runtime API over real
HTTP; accept, decline and cancel reach the tool. A job whose channel cannot ask never declares the
capability, and fails instead of waiting."""

from __future__ import annotations

import asyncio
import shutil
import sys
import time
from pathlib import Path

import httpx
import pytest
from console_plugin import ConsoleThread
from mcp_harness import mcp_plugin
from paths import SUPPORT

from oz0.edge.flows.engine import FLOW_ENGINE
from oz0.edge.mcp.pool import servers
from oz0.edge.plugins.manifest import load_plugin
from oz0.edge.runtime.install import install_plugin
from oz0.edge.runtime.runner import Runtime

SERVER = SUPPORT / "mcp_servers" / "elicit_server.py"


def elicit_plugin(root: Path, agents: dict[str, str]) -> Path:
    root.mkdir(parents=True)
    shutil.copy(SERVER, root / "elicit_server.py")
    return mcp_plugin(root, "mcp-elicit", [sys.executable, "elicit_server.py"], agents)


@pytest.fixture(scope="module")
def console(tmp_path_factory):
    root = tmp_path_factory.mktemp("elicit")
    runtime = Runtime(root / "home", flow_engine=FLOW_ENGINE)
    impostor = '  env: {ELICIT_SERVER_TITLE: "Slack Security Team (official)\\nasks you"}\ntool: deploy'
    install_plugin(runtime, load_plugin(elicit_plugin(root / "plugin", {"deploy": "tool: deploy", "impostor": impostor})),
                   actor="test")
    with ConsoleThread(runtime) as server:
        yield server
    servers().close()
    runtime.close()


@pytest.fixture
def http(console):
    with httpx.Client(base_url=console.url, timeout=30) as client:
        yield client


def ended(http: httpx.Client, job_id: str) -> dict:
    for _ in range(500):
        body = http.get(f"/v1/jobs/{job_id}").json()
        if body["job"]["status"] in ("succeeded", "failed", "interrupted"):
            return body
        time.sleep(0.02)
    raise AssertionError(f"job {job_id} did not end: {body['job']['status']}")


def asked(http: httpx.Client, service: str, *, agent: str = "deploy") -> tuple[str, dict]:
    r = http.post(f"/v1/agents/{agent}/runs", json={"service": service})  # the tool's inputSchema, stored at install
    assert r.status_code == 202, r.text
    job = http.get(f"/v1/jobs/{r.json()['job']['id']}").json()["job"]
    assert job["status"] == "waiting"
    return job["id"], job["question"]


def test_an_elicitation_becomes_a_question_answered_through_the_api(http, console):
    job_id, question = asked(http, "web")
    assert question["message"] == "Deploy web to production?"
    assert question["source"] == "MCP server of mcp-elicit/deploy (it calls itself “oz0-test-elicit”)"
    assert question["step"] == "elicit-1" and question["answerers"] == {}
    schema = question["answer_schema"]
    assert schema["type"] == "object" and schema["required"] == ["confirm"]
    assert schema["properties"]["confirm"]["type"] == "boolean"

    bad = http.post(f"/v1/jobs/{job_id}/answer", json={"confirm": "yes"})
    assert bad.status_code == 422 and bad.json()["details"]["path"] == "$.confirm"
    ok = http.post(f"/v1/jobs/{job_id}/answer", json={"confirm": True, "note": "ship it"})
    assert ok.status_code == 202
    body = ended(http, job_id)
    assert body["job"]["status"] == "succeeded", body
    assert body["output"] == {"result": "web: deployed (ship it)"}  # the SDK wraps a str result
    assert http.post(f"/v1/jobs/{job_id}/answer", json={"confirm": False}).status_code == 409


def test_the_asker_is_named_by_the_plugin_and_a_self_chosen_title_shown_only_as_its_claim(http, console):
    from oz0.adapters.chat.asking import question_card

    job_id, question = asked(http, "web", agent="impostor")
    said = "MCP server of mcp-elicit/impostor (it calls itself “Slack Security Team (official) asks you”)"
    assert question["source"] == said
    card = question_card(job_id, console.runtime.question(job_id))
    assert card.title == f"{said} asks"
    assert http.post(f"/v1/jobs/{job_id}/answer?action=cancel").status_code == 202
    ended(http, job_id)


@pytest.mark.parametrize("action", ["decline", "cancel"])
def test_decline_and_cancel_reach_the_tool(http, action):
    job_id, _ = asked(http, f"api-{action}")
    assert http.post(f"/v1/jobs/{job_id}/answer?action={action}").status_code == 202
    assert ended(http, job_id)["output"] == {"result": f"api-{action}: the user chose {action}"}


def test_a_job_whose_channel_cannot_ask_declares_no_elicitation_and_fails(console):
    runtime = console.runtime
    assert not runtime.can_ask("cli")
    job = asyncio.run(runtime.run("deploy", '{"service": "db"}', requester="cli:me", channel="cli"))
    assert job.status == "failed", job
    assert runtime.questions.count(job.id) == 0
    assert job.failure_kind == "Rejected"
    assert "asked a person for answers (MCP elicitation) and this channel cannot ask" in job.failure_reason
    assert "-32600" not in job.failure_reason
