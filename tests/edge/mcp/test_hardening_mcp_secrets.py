"""An MCP agent's credentials never show (issue 29 item 8): a `${NAME}` value in its server's `env`
(stdio) or `headers` (HTTP) is hidden by the one Redactor in progress lines, the job's row (what
GET /v1/jobs shows), its card on every platform, a failure's reason (the server's stderr too) and an
elicitation's question. The server is a real MCP server (the SDK's) that quotes the token everywhere."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from typing import Any

import pytest
from mcp_harness import wait_listening
from paths import SUPPORT
from ports import free_port
from test_agent_kinds import run, runtime_with
from test_hardening_secrets import KEY, leaks, shown

from oz0.edge.mcp.pool import servers

LEAKY = SUPPORT / "mcp_servers" / "leaky_server.py"


@pytest.fixture(autouse=True)
def key(monkeypatch):
    monkeypatch.setenv("OZ0_TEST_KEY", KEY)
    yield
    servers().close()


def stdio_agent(tool: str, *args: str, **env: str) -> dict[str, Any]:
    return {"kind": "mcp", "tool": tool, "limits": {"timeout_s": 20}, "server": {
        "command": sys.executable, "args": [str(LEAKY), *args], "env": {"API_TOKEN": "${OZ0_TEST_KEY}", **env}}}


def test_a_stdio_servers_env_secret_never_shows_in_progress_the_row_or_the_card(tmp_path):
    rt = runtime_with(tmp_path, {"leak": stdio_agent("leak")})
    progress: list[str] = []   # what a Slack working message or the console's progress line shows
    job = run(rt, "leak", "{}", on_progress=lambda p: progress.append(p.message))
    assert job.status == "succeeded", job.failure_reason
    assert "using token [redacted]" in progress
    seen = shown(rt, job)
    assert "API_TOKEN=[redacted]" in seen
    assert leaks(seen + "\n".join(progress)) == []


def test_a_failure_and_the_servers_stderr_never_show_the_secret(tmp_path):
    crash_if = tmp_path / "crash-now"
    rt = runtime_with(tmp_path, {"fail": stdio_agent("fail"), "crash": stdio_agent("leak", CRASH_IF=str(crash_if))})
    failed = run(rt, "fail", "{}")
    assert failed.status == "failed" and "auth failed for [redacted]" in failed.failure_reason
    crash_if.touch()
    servers().close()   # the next call starts the server again, which now dies saying why
    crashed = run(rt, "crash", "{}")
    assert crashed.status == "failed" and "cannot log in with [redacted]" in crashed.failure_reason
    assert leaks(shown(rt, failed)) == [] and leaks(shown(rt, crashed)) == []


def test_an_install_refused_for_a_server_that_cannot_start_never_shows_the_secret(tmp_path):
    from oz0.edge.plugins.manifest import PluginError

    with pytest.raises(PluginError) as refused:
        runtime_with(tmp_path, {"crash": stdio_agent("leak", "crash")})
    assert "cannot log in with [redacted]" in str(refused.value) and leaks(str(refused.value)) == []


def test_an_elicitation_quoting_the_secret_is_asked_without_it(tmp_path):
    rt = runtime_with(tmp_path, {"ask": stdio_agent("ask")})
    rt.shows_questions("cli")

    async def scenario() -> tuple[Any, Any]:
        job, _ = rt.submit("ask", "{}", requester="cli:me", channel="cli")
        run_it = asyncio.create_task(rt.execute(job.id))
        while (question := rt.question(job.id)) is None:
            assert not run_it.done(), run_it.result().failure_reason
            await asyncio.sleep(0.05)
        await asyncio.to_thread(rt.answer, job.id, question.step, action="decline", content=None, by="cli:me")
        return question, await asyncio.wait_for(run_it, 30)

    question, job = asyncio.run(scenario())
    assert job.status == "succeeded", job.failure_reason
    assert question.message == "Paste a new token to replace [redacted]"
    assert "[redacted]" in repr(question.answer_schema)
    assert leaks(question.message + repr(question.answer_schema)) == [] and leaks(shown(rt, job)) == []


def test_an_http_servers_header_secret_never_shows(tmp_path):
    port = free_port()
    proc = subprocess.Popen([sys.executable, str(LEAKY), "http", str(port)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env={**os.environ, "API_TOKEN": KEY})
    try:
        wait_listening(port, proc)
        rt = runtime_with(tmp_path, {"leak": {"kind": "mcp", "tool": "leak", "server": {
            "url": f"http://127.0.0.1:{port}/mcp", "headers": {"Authorization": "Bearer ${OZ0_TEST_KEY}"}}}})
        job = run(rt, "leak", "{}")
        assert job.status == "succeeded", job.failure_reason
        seen = shown(rt, job)
        assert "API_TOKEN=[redacted]" in seen and leaks(seen) == []
    finally:
        servers().close()   # the pool's HTTP session first, so the server can stop at once
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
