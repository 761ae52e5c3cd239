"""The reference MCP server `@modelcontextprotocol/server-everything` (pinned in tests/support/node) behind
installed `mcp` agents and `oz0 mcp call`: its image and resource-link blocks reach every card, the
same as `oz0 mcp call` shows them."""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp_harness import installed, mcp_plugin
from node_tools import EVERYTHING_TOOLS, everything_argv, everything_http

from oz0.adapters.cli import main
from oz0.edge.flows.engine import FLOW_ENGINE
from oz0.edge.mcp.pool import McpServers, servers
from oz0.edge.mcp.spec import ServerSpec
from oz0.edge.plugins.manifest import load_plugin
from oz0.edge.runtime.install import install_plugin
from oz0.edge.runtime.runner import Runtime
from oz0.renderers import RENDERERS

PNG = b"\x89PNG\r\n\x1a\n"

AGENTS = {
    "tiny-image": "tool: get-tiny-image",
    "links": "tool: get-resource-links",
}


def everything_plugin(root: Path, agents: dict[str, str]) -> Path:
    """A plugin whose agents are tools of server-everything over stdio."""
    return mcp_plugin(root, "everything", everything_argv(), agents)


@pytest.fixture(scope="module")
def runtime(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runtime]:
    with installed(tmp_path_factory.mktemp("home"), everything_plugin(tmp_path_factory.mktemp("plugin"), AGENTS)) as rt:
        yield rt


def test_an_installed_agent_keeps_the_tools_image(runtime: Runtime) -> None:
    job = asyncio.run(runtime.run("tiny-image", "{}"))
    assert job.status == "succeeded", job.failure_reason
    card = runtime.card(job)
    assert [f.filename for f in card.files] == ["2-image.png"]
    assert card.files[0].content_type == "image/png" and card.files[0].data.startswith(PNG)
    assert "Here's the image you requested:" in card.text and "The image above is the MCP logo." in card.text
    assert any("image (image/png, 4,033 bytes), attached as 2-image.png" in n for n in card.notes)
    assert [u.filename for u in RENDERERS["slack"](card).uploads] == ["2-image.png"]


def test_an_installed_agent_lists_the_tools_resource_links(runtime: Runtime) -> None:
    job = asyncio.run(runtime.run("links", '{"count": 2}'))
    assert job.status == "succeeded", job.failure_reason
    card = runtime.card(job)
    assert "Here are 2 resource links" in card.text
    assert card.notes == ("resource link: Blob Resource 1 — demo://resource/dynamic/blob/1 (text/plain)",
                          "resource link: Text Resource 2 — demo://resource/dynamic/text/2 (text/plain)")


def test_oz0_mcp_call_and_an_installed_agent_draw_the_same_card(runtime: Runtime, capsys) -> None:
    code = main(["mcp", "call", "--command", shlex.join(everything_argv()), "get-resource-links", '{"count": 2}',
                 "--to", "card"])
    called = json.loads(capsys.readouterr().out)
    job = asyncio.run(runtime.run("links", '{"count": 2}'))
    agent = runtime.card(job).to_dict()
    assert code == 0
    assert {k: v for k, v in called.items() if k != "title"} == {k: v for k, v in agent.items() if k != "title"}


def test_an_http_server_keeps_one_session_across_calls(tmp_path: Path) -> None:
    log = tmp_path / "everything.log"
    with everything_http(log) as url:
        pool = McpServers()
        spec = ServerSpec.from_url(url)
        try:
            assert set(asyncio.run(pool.tools(spec))) >= EVERYTHING_TOOLS
            for word in ("one", "two", "three"):
                _, result = asyncio.run(pool.call(spec, "echo", {"message": word}))
                assert result["content"][0]["text"] == f"Echo: {word}"
        finally:
            pool.close()
        said = log.read_text()
    assert said.count("Session initialized with ID") == 1, said
    assert "Bad Request" not in said and "Error handling MCP request" not in said


# elicitation: server-everything offers trigger-elicitation-request only to a client that declares it

@pytest.fixture(scope="module")
def console(tmp_path_factory: pytest.TempPathFactory):
    from console_plugin import ConsoleThread

    rt = Runtime(tmp_path_factory.mktemp("home"), flow_engine=FLOW_ENGINE)
    plugin = everything_plugin(tmp_path_factory.mktemp("plugin"), {"elicit": "tool: trigger-elicitation-request"})
    install_plugin(rt, load_plugin(plugin), actor="test")  # listed as a client that can ask: it is offered
    with ConsoleThread(rt) as server:
        yield server
    servers().close()
    rt.close()


def test_the_eliciting_tool_asks_the_person_and_gets_the_answer(console) -> None:
    import httpx

    with httpx.Client(base_url=console.url, timeout=30) as http:
        started = http.post("/v1/agents/elicit/runs", json={})
        assert started.status_code == 202, started.text
        job_id = started.json()["job"]["id"]
        job = http.get(f"/v1/jobs/{job_id}").json()["job"]
        assert job["status"] == "waiting", job
        question = job["question"]
        assert question["message"] == "Please provide inputs for the following fields:"
        # named by the plugin (issue 29 item 7); the server's own title only as its claim
        assert question["source"] == "MCP server of everything/elicit (it calls itself “Everything Reference Server”)"
        fields = question["answer_schema"]["properties"]
        assert fields["titledSingleSelectEnum"]["enumNames"] == ["Superman", "Green Lantern", "Wonder Woman"]
        assert fields["titledMultipleSelectEnum"]["type"] == "array"
        answered = http.post(f"/v1/jobs/{job_id}/answer", json={
            "name": "Ada Lovelace", "check": True, "integer": 7, "titledMultipleSelectEnum": ["fish-2"]})
        assert answered.status_code == 202, answered.text
        for _ in range(500):
            body = http.get(f"/v1/jobs/{job_id}").json()
            if body["job"]["status"] not in ("queued", "running", "waiting"):
                break
            time.sleep(0.02)
    assert body["job"]["status"] == "succeeded", body
    assert "User provided the requested information!" in body["output"]
    assert "- Name: Ada Lovelace" in body["output"] and "- Favorite Integer: 7" in body["output"]
    assert '"titledMultipleSelectEnum": [\n      "fish-2"\n    ]' in body["output"]


def test_a_channel_that_cannot_ask_is_told_so_and_nothing_runs(console) -> None:
    runtime = console.runtime
    assert not runtime.can_ask("cli")
    job = asyncio.run(runtime.run("elicit", "{}", requester="cli:me", channel="cli"))
    assert (job.status, job.failure_kind) == ("failed", "Cancelled"), job
    assert "asks a person for answers (MCP elicitation), and this channel cannot ask" in job.failure_reason
    assert runtime.questions.count(job.id) == 0


def test_the_pinned_server_lists_the_tools_these_tests_use() -> None:
    pool = McpServers()
    spec = ServerSpec(command=tuple(everything_argv()))
    try:
        plain = set(asyncio.run(pool.tools(spec)))
        eliciting = set(asyncio.run(pool.tools(spec, eliciting=True)))
    finally:
        pool.close()
    assert plain == EVERYTHING_TOOLS
    assert eliciting - plain >= {"trigger-elicitation-request", "trigger-url-elicitation"}


def test_the_console_offers_the_tools_image_for_download(runtime: Runtime) -> None:
    import httpx
    from console_plugin import ConsoleThread

    job = asyncio.run(runtime.run("tiny-image", "{}"))
    with ConsoleThread(runtime) as console, httpx.Client(base_url=console.url, timeout=30) as http:
        page = http.get(f"/jobs/{job.id}").text
        assert f'href="/jobs/{job.id}/files/2-image.png"' in page and "Attached: 2-image.png" in page
        got = http.get(f"/jobs/{job.id}/files/2-image.png")
        assert got.status_code == 200 and got.content.startswith(PNG)
        assert got.headers["content-type"] == "application/octet-stream"
        assert http.get(f"/jobs/{job.id}/files/nothing.png").status_code == 404
        api = http.get(f"/v1/jobs/{job.id}").json()
    assert api["output"]["content"][1]["type"] == "image"  # the API's output is the tool's result, kept whole


def test_an_http_session_the_server_forgot_is_opened_again(tmp_path: Path) -> None:
    from mcp_harness import serving
    from node_tools import EVERYTHING, node
    from ports import free_port

    argv = [node(), str(EVERYTHING), "streamableHttp"]
    port = free_port()
    env = {**os.environ, "PORT": str(port)}
    pool = McpServers()
    spec = ServerSpec.from_url(f"http://127.0.0.1:{port}/mcp")
    try:
        with serving(argv, port, env=env):
            assert asyncio.run(pool.call(spec, "echo", {"message": "before"}))[1]["content"][0]["text"] == "Echo: before"
        with serving(argv, port, env=env, out=tmp_path / "restarted.log"):  # a new process: the session is unknown
            for word in ("after", "again"):
                assert asyncio.run(pool.call(spec, "echo", {"message": word}))[1]["content"][0]["text"] == f"Echo: {word}"
            said = (tmp_path / "restarted.log").read_text()
    finally:
        pool.close()
    assert said.count("Session initialized with ID") == 1, said
