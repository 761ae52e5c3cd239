"""Traces of asks (edge/tracing.py), read from a loopback OTLP/HTTP receiver that decodes the exporter's
protobufs: a Slack ask is one trace from the chat event through the job to the delivery; the trace id is
on the job as `oz0 jobs show --json` and the API show it; a job run on another replica joins its ask's
trace; nothing is exported, nor the SDK imported, without an endpoint; JSON logs carry the job, the
trace and no secret."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from loop_kit import loop_plugin
from model_standins import ModelStandin, Turn
from otlp_receiver import OtlpReceiver
from plugin_kit import make_plugin
from slack_harness import install_test_plugin, running_channel

from oz0.adapters.cli import main as cli
from oz0.adapters.console.app import create_app
from oz0.edge import tracing
from oz0.edge.plugins.manifest import load_plugin
from oz0.edge.runtime.install import install_plugin
from oz0.edge.runtime.json_logs import JsonFormatter
from oz0.edge.runtime.runner import Runtime

REPLICA_B = """
import asyncio, sys
from oz0.edge import tracing
from oz0.edge.runtime.runner import Runtime

runtime = Runtime(sys.argv[1], database_url=sys.argv[2])
job = asyncio.run(runtime.execute(sys.argv[3]))
runtime.close()
tracing.flush()
print(job.status, job.output)
"""


@pytest.fixture
def home(oz0_home: Path) -> Path:
    install_test_plugin(oz0_home)
    return oz0_home


@pytest.fixture
def otlp(monkeypatch):
    with OtlpReceiver() as receiver:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint)
        monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "50")
        monkeypatch.setenv("OTEL_SERVICE_NAME", "oz0-under-test")
        yield receiver


def test_a_slack_ask_is_one_trace_from_the_chat_event_through_the_job_to_the_delivery(home, otlp, capsys):
    async def ask():
        async with running_channel(home) as h:
            status, _, _ = await h.command("echo traced")
            assert status == 200
            await h.slack.wait_for("response")
            [job] = h.runtime.jobs()
            return job

    job = asyncio.run(asyncio.wait_for(ask(), 60))
    tracing.flush()
    spans = otlp.wait_for("oz0.chat.event", "oz0.job", "oz0.delivery")
    [event], [ran], [delivered] = otlp.named("oz0.chat.event"), otlp.named("oz0.job"), otlp.named("oz0.delivery")
    assert {s.trace_id for s in spans} == {event.trace_id}, [(s.name, s.trace_id) for s in spans]  # one trace
    assert event.parent_id is None and event.attributes["oz0.platform"] == "slack"
    assert ran.parent_id == event.span_id and ran.attributes["oz0.job_id"] == job.id
    assert ran.attributes["oz0.agent"] == "echo" and ran.attributes["oz0.status"] == "succeeded"
    assert delivered.parent_id == event.span_id and delivered.attributes["oz0.job_id"] == job.id
    assert {s.service for s in spans} == {"oz0-under-test"}  # the SDK's own OTEL_SERVICE_NAME

    assert job.trace_id == event.trace_id
    capsys.readouterr()
    assert cli(["jobs", "show", job.id, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["job"]["trace_id"] == event.trace_id
    assert cli(["jobs", "show", job.id]) == 0
    [line] = [line for line in capsys.readouterr().out.splitlines() if "trace id" in line]
    assert line.split() == ["trace", "id", event.trace_id]


def test_the_api_and_the_console_job_page_show_the_trace_id(home, otlp):
    runtime = Runtime(home)
    try:
        async def scenario() -> tuple[str, dict, str]:
            job = await runtime.run("echo", "via the api")
            transport = httpx.ASGITransport(app=create_app(runtime))
            async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
                api = (await http.get(f"/v1/jobs/{job.id}")).json()
                page = (await http.get(f"/jobs/{job.id}")).text
            return job.trace_id, api, page

        trace_id, api, page = asyncio.run(scenario())
    finally:
        runtime.close()
    assert trace_id is not None and len(trace_id) == 32
    assert api["job"]["trace_id"] == trace_id
    assert f'<code id="job-trace">{trace_id}</code>' in page


def test_a_job_run_on_replica_b_after_replica_a_journaled_it_joins_a_s_trace(otlp, postgres_url, tmp_path):
    a = Runtime(tmp_path / "a", database_url=postgres_url)
    try:
        folder = make_plugin(tmp_path / "plugin", name="traced", files={"impl.py": "def echo(text):\n    return 'echo: ' + text\n"},
                             agents={"echo": {"description": "echo", "kind": "python", "entry": "impl:echo",
                                              "input": "text", "output": "text"}})
        install_plugin(a, load_plugin(folder), actor="test")
        job, _ = a.submit("echo", "over there", requester="cli:me")  # asked on A, not run there
    finally:
        a.close()
    assert job.trace_id is not None and job.status == "queued"
    env = {**os.environ, "OZ0_REPLICA_ID": "replica-b"}
    done = subprocess.run([sys.executable, "-c", REPLICA_B, str(tmp_path / "b"), postgres_url, job.id],
                          capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "succeeded echo: over there"
    tracing.flush()
    otlp.wait_for("oz0.ask", "oz0.job")
    [asked], [ran] = otlp.named("oz0.ask"), otlp.named("oz0.job")
    assert asked.trace_id == ran.trace_id == job.trace_id
    assert ran.parent_id == asked.span_id and asked.parent_id is None
    assert ran.attributes["oz0.replica"] == "replica-b" and ran.attributes["oz0.job_id"] == job.id


def test_a_tool_loop_traces_each_model_request_tool_call_mcp_call_and_step_job(otlp, tmp_path, monkeypatch):
    monkeypatch.setenv("OZ0_TEST_MODEL_KEY", "sk-test-trace-0123456789")
    script = [Turn(calls=(("ci-runs", {"branch": "main"}),)), Turn(calls=(("ci_log", {"run_id": 4411}),)),
              Turn(text='{"verdict": "flaky", "run_id": 4411}')]
    with ModelStandin(script) as model:
        runtime = loop_plugin(tmp_path / "p", tmp_path / "h", model.url)
        try:
            job = asyncio.run(asyncio.wait_for(runtime.run("triage", "why did main fail?"), 60))
        finally:
            runtime.close()
    assert job.status == "succeeded"
    tracing.flush()
    spans = otlp.wait_for("oz0.job", "oz0.loop.model", "oz0.loop.tool", "oz0.mcp.call", "oz0.step")
    by_id = {s.span_id: s for s in spans}
    [ran] = [s for s in otlp.named("oz0.job") if s.attributes["oz0.job_id"] == job.id]
    assert {s.trace_id for s in spans} == {job.trace_id}
    models, tools = otlp.named("oz0.loop.model"), otlp.named("oz0.loop.tool")
    assert len(models) == 3 and len(tools) == 2 and {s.parent_id for s in models + tools} == {ran.span_id}
    [mcp] = otlp.named("oz0.mcp.call")
    assert mcp.attributes["oz0.tool"] == "ci_log" and by_id[mcp.parent_id].name == "oz0.loop.tool"
    [step] = otlp.named("oz0.step")  # the ci-runs agent as a tool: a job of its own, below its tool call
    assert step.attributes["oz0.agent"] == "ci-runs" and by_id[step.parent_id].name == "oz0.loop.tool"
    assert "sk-test-trace" not in json.dumps([s.attributes for s in spans])


def test_without_an_endpoint_nothing_is_traced_and_the_sdk_is_not_imported(oz0_home):
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    code = ("import sys\nfrom oz0.edge.runtime.runner import Runtime\nfrom oz0.edge import tracing\n"
            "r = Runtime(sys.argv[1])\nwith tracing.span('x') as s: pass\n"
            "print(tracing.carrier(), tracing.current_trace_id(), "
            "sorted(m for m in sys.modules if m.startswith('opentelemetry.sdk') or 'otlp' in m))\nr.close()")
    done = subprocess.run([sys.executable, "-c", code, str(oz0_home)], capture_output=True, text=True, env=env,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "None None []"


def test_a_json_log_line_has_the_job_agent_replica_and_trace_and_no_secret(otlp, monkeypatch):
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-1234567890-very-secret-token")
    monkeypatch.setenv("OZ0_REPLICA_ID", "replica-a")
    formatter = JsonFormatter()
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(formatter)
    log = logging.getLogger("oz0.test.json")
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    try:
        with tracing.job_known("j123", "echo"), tracing.span("oz0.job"):
            trace = tracing.current_trace_id()
            log.warning("Slack said no to xoxb-1234567890-very-secret-token")
        log.info("outside")
    finally:
        log.removeHandler(handler)
    first, second = (json.loads(line) for line in stream.getvalue().splitlines())
    assert first["level"] == "warning" and first["logger"] == "oz0.test.json"
    assert (first["job_id"], first["agent"], first["trace_id"]) == ("j123", "echo", trace) and len(trace) == 32
    assert "very-secret" not in json.dumps(first) and "[redacted]" in first["message"]
    assert first["time"].endswith("Z") and first["replica"]
    assert "job_id" not in second and "trace_id" not in second
    with contextlib.suppress(Exception):
        tracing.flush()
