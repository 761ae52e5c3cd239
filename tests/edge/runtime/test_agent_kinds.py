"""Each agent kind against real parts: subprocesses for `command`, loopback HTTP servers started by
the test for `http` and `model` (an OpenAI-compatible chat-completions stand-in)."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path
from typing import Any

import pytest
from loopback import Loopback, chat
from plugin_kit import make_plugin

from oz0.edge.flows.engine import FLOW_ENGINE
from oz0.edge.plugins.manifest import load_plugin
from oz0.edge.runtime.install import install_plugin
from oz0.edge.runtime.kinds import AGENT_KINDS
from oz0.edge.runtime.runner import Runtime
from oz0.renderers import RENDERERS


def test_the_kinds_table_is_explicit():
    assert {"python", "command", "http", "model"} <= set(AGENT_KINDS)


# loopback HTTP (tests/support/loopback.py) -----------------------------------------------------------

def runtime_with(tmp_path: Path, agents: dict[str, Any], files: dict[str, Any] | None = None) -> Runtime:
    root = make_plugin(tmp_path / "plugin", agents=agents, files=files or {})
    rt = Runtime(tmp_path / "home", backoff_s=0.01, flow_engine=FLOW_ENGINE)
    install_plugin(rt, load_plugin(root))
    return rt


def run(rt: Runtime, agent: str, text: str, **kw: Any):
    return asyncio.run(rt.run(agent, text, **kw))


# command ---------------------------------------------------------------------------------------

QZX_TOOL = """
import json, sys
request = json.load(sys.stdin)
print("looking at", request["path"], file=sys.stderr, flush=True)
if request["path"] == "/missing":
    print(json.dumps({"success": False, "message": "Nothing at /missing.", "error": "no such path",
                      "error_code": "not_found"}))
    sys.exit(1)
print(json.dumps({"success": True, "message": "Listed 2 files.",
                  "files": [{"name": "a.txt", "size": 3}, {"name": "b.txt", "size": 5}]}))
"""

CHILD_SLEEPER = """
import subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
open(sys.argv[1], "w").write(str(child.pid))
print("started a child", file=sys.stderr, flush=True)
time.sleep(60)
"""

PATH_SCHEMA = {"type": "object", "required": ["path"], "properties": {"path": {"type": "string"}}}
FILES_SCHEMA = {"type": "object", "required": ["success", "message"], "properties": {
    "success": {"type": "boolean"}, "message": {"type": "string"},
    "files": {"type": "array", "items": {"type": "object", "properties": {
        "name": {"type": "string"}, "size": {"type": "integer"}}}}}}


def command_agents(tmp_path: Path) -> dict[str, Any]:
    pid_file = tmp_path / "child.pid"
    return {
        "upper": {"kind": "command", "input": "text", "output": "text",
                  "command": ["python", "-c", "import sys; print(sys.stdin.read().upper())"]},
        "files": {"kind": "command", "command": ["python", "tools/files.py"], "input_schema": "schemas/path.json",
                  "output_schema": "schemas/files.json", "failures": {"NotFound": {"person": True}}},
        "sleeper": {"kind": "command", "input": "text", "output": "text", "limits": {"timeout_s": 1},
                    "command": ["python", "tools/sleeper.py", str(pid_file)]},
        "flood": {"kind": "command", "input": "text", "output": "text", "limits": {"max_output_bytes": 100_000},
                  "command": ["python", "-c", "import sys\nwhile True: sys.stdout.write('x' * 65536)"]},
        "dies": {"kind": "command", "input": "text", "output": "text",
                 "command": ["python", "-c", "import sys; print('disk on fire', file=sys.stderr); sys.exit(3)"]},
        "killed": {"kind": "command", "input": "text", "output": "text",
                   "command": ["python", "-c", "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"]},
        "noisy": {"kind": "command", "input": "text", "output_schema": "schemas/files.json",
                  "command": ["python", "-c", "print('progress on stdout'); print('{}')"]},
        "deaf": {"kind": "command", "input": "text", "output": "text",
                 "command": ["python", "-c", "print('ignored my input')"]},
    }


@pytest.fixture
def cmd_runtime(tmp_path):
    rt = runtime_with(tmp_path, command_agents(tmp_path), {
        "tools/files.py": QZX_TOOL, "tools/sleeper.py": CHILD_SLEEPER,
        "schemas/path.json": PATH_SCHEMA, "schemas/files.json": FILES_SCHEMA})
    yield rt
    rt.close()


def test_command_gets_its_input_on_stdin(cmd_runtime):
    job = run(cmd_runtime, "upper", "make me loud")
    assert (job.status, job.output) == ("succeeded", "MAKE ME LOUD")


def test_command_qzx_producer_json_in_stderr_progress_result_out(cmd_runtime):
    lines: list[str] = []
    job = run(cmd_runtime, "files", '{"path": "/srv"}', on_progress=lambda p: lines.append(p.message))
    assert job.status == "succeeded" and lines == ["looking at /srv"]
    text = RENDERERS["text"](cmd_runtime.card(job)).payload
    assert "✔ success: Listed 2 files." in text and "a.txt" in text and "b.txt" in text


def test_command_qzx_failure_is_a_failed_job_of_the_declared_kind(cmd_runtime):
    job = run(cmd_runtime, "files", '{"path": "/missing"}')
    assert (job.status, job.failure_kind, job.failure_reason) == ("failed", "NotFound", "no such path")
    text = RENDERERS["text"](cmd_runtime.card(job)).payload
    assert "✘ failure: Nothing at /missing." in text and "not_found" in text


def test_command_that_hangs_is_killed_with_its_children(cmd_runtime, tmp_path):
    t0 = time.monotonic()
    job = run(cmd_runtime, "sleeper", "x")
    assert time.monotonic() - t0 < 10
    assert (job.status, job.failure_kind) == ("failed", "Timeout")
    child = int((tmp_path / "child.pid").read_text())
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            break
        # a killed child of a killed parent is reaped by init; give it a moment
        time.sleep(0.05)
    else:
        status = Path(f"/proc/{child}/stat").read_text().split()[2] if Path(f"/proc/{child}/stat").exists() else "gone"
        assert status == "Z", f"child {child} still alive ({status})"


def test_command_that_floods_stdout_is_stopped(cmd_runtime):
    t0 = time.monotonic()
    job = run(cmd_runtime, "flood", "x")
    assert time.monotonic() - t0 < 10
    assert (job.status, job.failure_kind) == ("failed", "OutputTooLarge")
    assert "more than 100,000 bytes" in job.failure_reason


def test_command_that_crashes_says_how_and_its_last_words(cmd_runtime):
    job = run(cmd_runtime, "dies", "x")
    assert (job.failure_kind, job.failure_reason) == (
        "Crashed", "the command exited with code 3; its last words on stderr: disk on fire")
    killed = run(cmd_runtime, "killed", "x")
    assert killed.failure_reason == "the command was killed by signal SIGKILL"


def test_command_with_an_output_schema_must_print_json(cmd_runtime):
    job = run(cmd_runtime, "noisy", "x")
    assert job.failure_kind == "InvalidOutput"
    assert "stdout is not one JSON document" in job.failure_reason and "stderr" in job.failure_reason


def test_command_that_ignores_its_input_still_answers(cmd_runtime):
    job = run(cmd_runtime, "deaf", "x" * 200_000)
    assert (job.status, job.output) == ("succeeded", "ignored my input")


# http ------------------------------------------------------------------------------------------

def test_http_agent_posts_json_with_headers_from_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("ACME_TOKEN", "s3cret")

    def answer(data, headers, path):
        return 200, {"verdict": "approve", "pr": data["pr"]}

    with Loopback(answer) as server:
        rt = runtime_with(tmp_path, {"reviewer": {
            "kind": "http", "url": server.url + "/review", "headers": {"Authorization": "Bearer ${ACME_TOKEN}"},
            "input_schema": "schemas/in.json", "output_schema": "schemas/out.json"}}, {
            "schemas/in.json": {"type": "object", "properties": {"pr": {"type": "integer"}}},
            "schemas/out.json": {"type": "object", "properties": {"verdict": {"type": "string"}}}})
        job = run(rt, "reviewer", '{"pr": 42}')
    assert (job.status, job.output) == ("succeeded", {"verdict": "approve", "pr": 42})
    (request,) = server.requests
    assert request["path"] == "/review" and request["json"] == {"pr": 42}
    assert request["headers"]["authorization"] == "Bearer s3cret"
    assert request["headers"]["x-oz0-job"] == job.id
    assert request["headers"]["idempotency-key"] == job.id  # the same key if the job runs again after a crash


def test_http_agent_missing_env_and_server_errors_are_typed(tmp_path, monkeypatch):
    monkeypatch.delenv("NOT_SET_TOKEN", raising=False)
    statuses = iter([503, 503, 200])

    def answer(data, headers, path):
        status = next(statuses)
        return status, ("overloaded" if status != 200 else "fine now")

    with Loopback(answer) as server:
        rt = runtime_with(tmp_path, {
            "keyless": {"kind": "http", "url": server.url, "headers": {"X-Key": "${NOT_SET_TOKEN}"},
                        "input": "text", "output": "text"},
            "wobbly": {"kind": "http", "url": server.url, "input": "text", "output": "text",
                       "failures": {"Unavailable": {"retryable": True}}},
        })
        keyless = run(rt, "keyless", "x")
        wobbly = run(rt, "wobbly", "x")
    assert keyless.failure_kind == "Misconfigured" and "${NOT_SET_TOKEN}" in keyless.failure_reason
    assert (wobbly.status, wobbly.output, wobbly.attempts) == ("succeeded", "fine now", 3)
    assert len(server.requests) == 3  # the keyless agent never called out


# model -----------------------------------------------------------------------------------------

REVIEW_SCHEMA = {"type": "object", "required": ["verdict", "risk"], "additionalProperties": False,
                 "properties": {"verdict": {"enum": ["approve", "request changes"]},
                                "risk": {"enum": ["low", "high"]}}}


def model_agent(url: str) -> dict[str, Any]:
    return {"kind": "model", "base_url": url + "/v1", "model": "reviewer-1", "api_key_env": "OZ0_TEST_MODEL_KEY",
            "system": "You review pull requests.", "input": "text", "output_schema": "schemas/review.json"}


@pytest.fixture
def model_key(monkeypatch):
    monkeypatch.setenv("OZ0_TEST_MODEL_KEY", "sk-test-123")


def test_model_wrong_twice_then_right(tmp_path, model_key):
    answers = iter(['{"verdict": "maybe"}', "not json at all", '{"verdict": "approve", "risk": "low"}'])
    with Loopback(lambda data, headers, path: (200, chat(next(answers)))) as server:
        rt = runtime_with(tmp_path, {"reviewer": model_agent(server.url)}, {"schemas/review.json": REVIEW_SCHEMA})
        job = run(rt, "reviewer", "please review acme/api#42")
    assert (job.status, job.output) == ("succeeded", {"verdict": "approve", "risk": "low"})
    assert len(server.requests) == 3
    first, second, third = (r["json"] for r in server.requests)
    assert all(r["path"] == "/v1/chat/completions" for r in server.requests)
    assert server.requests[0]["headers"]["authorization"] == "Bearer sk-test-123"
    assert first["model"] == "reviewer-1"
    assert first["response_format"]["type"] == "json_schema"
    assert first["response_format"]["json_schema"]["schema"] == REVIEW_SCHEMA
    assert first["messages"] == [{"role": "system", "content": "You review pull requests."},
                                 {"role": "user", "content": "please review acme/api#42"}]
    # the wrong answer goes back with the validation reason
    assert second["messages"][2] == {"role": "assistant", "content": '{"verdict": "maybe"}'}
    assert "$.verdict" in second["messages"][3]["content"] and '"risk" is a required property' in \
        second["messages"][3]["content"]
    assert "not JSON" in third["messages"][5]["content"]


def test_model_always_wrong_fails_after_exactly_three_requests_quoting_the_last_reason(tmp_path, model_key):
    with Loopback(lambda data, headers, path: (200, chat('{"verdict": "approve", "risk": "extreme"}'))) as server:
        rt = runtime_with(tmp_path, {"reviewer": model_agent(server.url)}, {"schemas/review.json": REVIEW_SCHEMA})
        job = run(rt, "reviewer", "review it")
    assert len(server.requests) == 3
    assert (job.status, job.failure_kind, job.attempts) == ("failed", "InvalidOutput", 1)
    assert job.failure_reason.startswith("the model's answer did not match the output schema after 3 tries; "
                                         "the last reason: $.risk:")
    assert "extreme" in job.failure_reason
    text = RENDERERS["text"](rt.card(job)).payload
    assert "✘ failure: the model's answer did not match the output schema after 3 tries" in text


def test_model_text_answer_and_missing_key(tmp_path, monkeypatch):
    monkeypatch.delenv("OZ0_TEST_MODEL_KEY", raising=False)
    with Loopback(lambda data, headers, path: (200, chat("**Looks good.**"))) as server:
        agent = dict(model_agent(server.url), output="text")
        del agent["output_schema"]
        rt = runtime_with(tmp_path, {"writer": agent, "plain": {
            "kind": "model", "base_url": server.url + "/v1", "model": "m", "input": "text", "output": "text"}})
        missing = run(rt, "writer", "x")
        plain = run(rt, "plain", "x")
    assert missing.failure_kind == "Misconfigured" and "$OZ0_TEST_MODEL_KEY" in missing.failure_reason
    assert "sk-" not in missing.failure_reason
    assert (plain.status, plain.output) == ("succeeded", "**Looks good.**")
    assert "response_format" not in server.requests[0]["json"]
    assert "authorization" not in server.requests[0]["headers"]


def test_model_http_errors_are_typed(tmp_path, model_key):
    def answer(data, headers, path):  # a server that quotes the key it refuses
        return 401, {"error": {"message": f"bad key: {headers['authorization']}"}}

    with Loopback(answer) as server:
        rt = runtime_with(tmp_path, {"reviewer": model_agent(server.url)}, {"schemas/review.json": REVIEW_SCHEMA})
        job = run(rt, "reviewer", "x")
    assert job.failure_kind == "Misconfigured" and "HTTP 401" in job.failure_reason
    assert "bad key: Bearer [redacted]" in job.failure_reason
    assert "sk-test-123" not in job.failure_reason


def test_http_agent_failures_never_quote_a_credential(tmp_path, monkeypatch):
    """Neither a server echoing the header back nor httpx refusing a header value (a stray newline
    from a .env file) puts the token in the failure reason people see."""
    monkeypatch.setenv("ECHO_TOKEN", "tok-echoed-1234")
    monkeypatch.setenv("BROKEN_TOKEN", "tok-broken-5678\n")

    def answer(data, headers, path):
        return 400, f"no thanks, {headers['authorization']}"

    with Loopback(answer) as server:
        rt = runtime_with(tmp_path, {
            "echo": {"kind": "http", "url": server.url, "headers": {"Authorization": "Bearer ${ECHO_TOKEN}"},
                     "input": "text", "output": "text"},
            "broken": {"kind": "http", "url": server.url, "headers": {"Authorization": "Bearer ${BROKEN_TOKEN}"},
                       "input": "text", "output": "text"}})
        echo = run(rt, "echo", "x")
        broken = run(rt, "broken", "x")
    assert (echo.failure_kind, broken.failure_kind) == ("Rejected", "Unavailable")
    assert "no thanks, Bearer [redacted]" in echo.failure_reason
    assert "[redacted]" in broken.failure_reason
    for job in (echo, broken):
        assert "tok-" not in job.failure_reason and "tok-" not in RENDERERS["text"](rt.card(job)).payload


def test_python_sync_agent_runs_off_the_event_loop(tmp_path):
    """A slow sync agent does not stop other work on the loop."""
    rt = runtime_with(tmp_path, {"slow": {"kind": "python", "entry": "agent:slow", "input": "text",
                                          "output": "text"}},
                      {"agent.py": "import time\ndef slow(text):\n    time.sleep(0.5)\n    return 'slept'\n"})
    ticks = []

    async def main():
        async def ticker():
            for _ in range(5):
                ticks.append(time.monotonic())
                await asyncio.sleep(0.05)
        job, _ = await asyncio.gather(rt.run("slow", "x"), ticker())
        return job

    job = asyncio.run(main())
    assert job.output == "slept" and len(ticks) == 5 and ticks[-1] - ticks[0] < 0.45


def test_python_entry_from_a_stdlib_module_and_missing_module(tmp_path):
    rt = runtime_with(tmp_path, {
        "quote": {"kind": "python", "entry": "shlex:quote", "input": "text", "output": "text"},
        "gone": {"kind": "python", "entry": "no_such_module_here:fn", "input": "text", "output": "text"},
    })
    assert run(rt, "quote", "a b").output == "'a b'"
    gone = run(rt, "gone", "x")
    assert gone.failure_kind == "Misconfigured" and "'no_such_module_here' not found" in gone.failure_reason


def test_two_plugins_with_the_same_module_name_do_not_collide(tmp_path):
    rt = Runtime(tmp_path / "home", flow_engine=FLOW_ENGINE)
    for n in ("one", "two"):
        root = make_plugin(tmp_path / n, name=f"p-{n}", agents={f"say-{n}": {
            "kind": "python", "entry": "agent:say", "input": "text", "output": "text"}},
            files={"agent.py": f"def say(text):\n    return '{n}'\n"})
        install_plugin(rt, load_plugin(root))
    assert [run(rt, f"say-{n}", "x").output for n in ("one", "two")] == ["one", "two"]

