"""The runtime with real plugins on disk, a real SQLite journal and real subprocesses: input checks,
limits, typed failures, retries with backoff, deduplication and crash recovery."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from plugin_kit import make_plugin

from oz0.edge.flows.engine import FLOW_ENGINE
from oz0.edge.model.job import JobFailure, UnknownAgent
from oz0.edge.model.reply_ref import ReplyRef
from oz0.edge.plugins.manifest import load_plugin
from oz0.edge.runtime.install import install_plugin
from oz0.edge.runtime.runner import Runtime
from oz0.renderers import RENDERERS

AGENT_PY = """
import asyncio, json, os, time
from pathlib import Path
from oz0.edge.model.job import JobFailure

CALLS = {}

def echo(text):
    return text

async def shout(text, ctx):
    ctx.progress("half way")
    return text.upper()

def hang(text):
    time.sleep(30)

async def ahang(text):
    await asyncio.sleep(30)

def crash(text):
    raise ValueError("the widget is bent")

def big(text):
    return "x" * 5000

def flaky(text):
    CALLS[text] = CALLS.get(text, 0) + 1
    if CALLS[text] < 3:
        raise JobFailure("Busy", f"busy (call {CALLS[text]})")
    return f"done after {CALLS[text]} calls"

def busy(text):
    raise JobFailure("Busy", "the queue is full")

def fatal(text):
    CALLS["fatal"] = CALLS.get("fatal", 0) + 1
    raise JobFailure("Fatal", "the disk is gone")

def mystery(text):
    raise JobFailure("Mystery", "something odd")

def not_text(text):
    return {"a": 1}

def counted(value):
    Path(os.environ["OZ0_TEST_MARKER"]).write_text("started")
    return {"count": value["n"] * 2}

def wrong(value):
    return {"count": "many"}

def quota(text):
    return {"success": False, "message": "Quota used up for today.", "error": "quota exhausted",
            "error_code": "quota_exceeded"}

def table(text):
    return {"rows": [{"name": "a", "n": 1}, {"name": "b", "n": 2}]}

def not_json(text):
    return {"when": object()}

def once(text):
    CALLS["once"] = CALLS.get("once", 0) + 1
    return f"call {CALLS['once']}"
"""

COUNT_SCHEMA = {"type": "object", "required": ["n"], "properties": {"n": {"type": "integer", "minimum": 0}}}
COUNT_OUT = {"type": "object", "required": ["count"], "properties": {"count": {"type": "integer"}}}
ROWS_OUT = {"type": "object", "x-oz0-order": ["n"], "properties": {
    "rows": {"type": "array", "items": {"type": "object", "x-oz0-order": ["n"],
                                        "properties": {"name": {"type": "string"}, "n": {"type": "integer"}}}}}}


def py(entry: str, **extra):
    return {"kind": "python", "entry": f"agent:{entry}", "input": "text", "output": "text", **extra}


AGENTS = {
    "echo": py("echo"),
    "shout": py("shout"),
    "hang": py("hang", limits={"timeout_s": 0.3}),
    "ahang": py("ahang", limits={"timeout_s": 0.3}),
    "crash": py("crash"),
    "big": py("big", limits={"max_output_bytes": 1000}),
    "flaky": py("flaky", failures={"Busy": {"retryable": True}}, limits={"max_attempts": 3}),
    "busy": py("busy", failures={"Busy": {"retryable": True}}, limits={"max_attempts": 2}),
    "fatal": py("fatal", failures={"Fatal": {"retryable": False, "person": True}}),
    "mystery": py("mystery"),
    "not-text": py("not_text"),
    "counted": {"kind": "python", "entry": "agent:counted", "input_schema": "schemas/count.json",
                "output_schema": "schemas/count-out.json", "failures": {"Busy": {"retryable": True}}},
    "wrong": {"kind": "python", "entry": "agent:wrong", "input_schema": "schemas/count.json",
              "output_schema": "schemas/count-out.json"},
    "quota": py("quota", failures={"QuotaExceeded": {"person": True}}),
    "table": {"kind": "python", "entry": "agent:table", "input": "text", "output_schema": "schemas/rows.json"},
    "once": py("once"),
    "not-json": {"kind": "python", "entry": "agent:not_json", "input": "text", "output_schema": "schemas/rows.json"},
}


@pytest.fixture
def runtime(tmp_path):
    root = make_plugin(tmp_path / "plugin", agents=AGENTS, files={
        "agent.py": AGENT_PY, "schemas/count.json": COUNT_SCHEMA, "schemas/count-out.json": COUNT_OUT,
        "schemas/rows.json": ROWS_OUT})
    rt = Runtime(tmp_path / "home", backoff_s=0.05, flow_engine=FLOW_ENGINE)
    install_plugin(rt, load_plugin(root))
    yield rt
    rt.close()


def run(rt: Runtime, agent: str, text: str, **kw):
    return asyncio.run(rt.run(agent, text, **kw))


def test_a_job_is_journaled_with_who_where_what_and_when(runtime):
    job = run(runtime, "echo", "hello", requester="slack:U1", channel="slack:C9")
    again = runtime.job(job.id)
    assert again == job
    assert (job.status, job.output, job.requester, job.channel, job.input) == (
        "succeeded", "hello", "slack:U1", "slack:C9", "hello")
    assert job.created <= job.started <= job.ended
    assert job.attempts == 1 and job.failure_kind is None
    assert job.plugin == "testkit" and job.plugin_version == "0.1.0"
    assert runtime.jobs(limit=5)[0].id == job.id
    assert runtime.job(job.id[:6]) == job  # a unique prefix finds it


def test_async_agent_gets_its_context_and_reports_progress(runtime):
    lines = []
    job = run(runtime, "shout", "quiet", on_progress=lambda p: lines.append(p.message))
    assert (job.status, job.output, lines) == ("succeeded", "QUIET", ["half way"])


def test_invalid_input_fails_before_the_agent_starts_and_is_never_retried(runtime, tmp_path, monkeypatch):
    marker = tmp_path / "started"
    monkeypatch.setenv("OZ0_TEST_MARKER", str(marker))
    job = run(runtime, "counted", '{"n": "three"}')
    assert job.status == "failed" and job.failure_kind == "InvalidInput"
    assert job.failure_reason.startswith("the input at $.n breaks the rule 'type' of schemas/count.json")
    assert job.attempts == 0 and not marker.exists()
    not_json = run(runtime, "counted", "three")
    assert not_json.failure_kind == "InvalidInput" and "is not JSON" in not_json.failure_reason
    ok = run(runtime, "counted", '{"n": 4}')
    assert (ok.status, ok.output) == ("succeeded", {"count": 8}) and marker.exists()


def test_parse_input_names_path_and_rule(runtime):
    spec = runtime.agent("counted")
    with pytest.raises(JobFailure) as caught:
        runtime.parse_input(spec, '{"n": -1}')
    assert caught.value.kind == "InvalidInput"
    assert "$.n" in caught.value.reason and "'minimum'" in caught.value.reason
    assert runtime.parse_input(runtime.agent("echo"), '{"n": -1}') == '{"n": -1}'  # text stays text


def test_sync_and_async_agents_that_hang_end_with_timeout(runtime):
    for agent in ("hang", "ahang"):
        t0 = time.monotonic()
        job = run(runtime, agent, "x")
        assert time.monotonic() - t0 < 5
        assert (job.status, job.failure_kind) == ("failed", "Timeout")
        assert "within 0.3 s" in job.failure_reason and "limits.timeout_s" in job.failure_reason


def test_a_crash_is_a_typed_failure_with_its_reason_and_no_traceback(runtime):
    job = run(runtime, "crash", "x")
    assert (job.status, job.failure_kind) == ("failed", "Crashed")
    assert job.failure_reason == "the agent raised ValueError: the widget is bent"
    text = RENDERERS["text"](runtime.card(job)).payload
    assert "Traceback" not in text and "✘ failure: the agent raised ValueError: the widget is bent" in text
    assert "error: crashed" in text


def test_an_answer_over_the_output_limit_fails(runtime):
    job = run(runtime, "big", "x")
    assert (job.status, job.failure_kind) == ("failed", "OutputTooLarge")
    assert "5,000 bytes" in job.failure_reason and "(1,000)" in job.failure_reason


def test_retryable_failures_are_retried_with_growing_backoff(runtime):
    lines = []
    t0 = time.monotonic()
    job = run(runtime, "flaky", "k1", on_progress=lambda p: lines.append(p.message))
    assert (job.status, job.output, job.attempts) == ("succeeded", "done after 3 calls", 3)
    assert time.monotonic() - t0 >= 0.05 + 0.1
    assert [ln.split(" — ")[1] for ln in lines] == ["retrying in 0.05s (attempt 2 of 3)",
                                                   "retrying in 0.1s (attempt 3 of 3)"]


def test_retries_stop_at_the_declared_bound(runtime):
    job = run(runtime, "busy", "x")
    assert (job.status, job.failure_kind, job.attempts) == ("failed", "Busy", 2)
    assert job.failure_reason == "the queue is full"


def test_non_retryable_failures_are_not_retried(runtime):
    job = run(runtime, "fatal", "x")
    assert (job.status, job.failure_kind, job.attempts) == ("failed", "Fatal", 1)
    card = runtime.card(job)
    assert card.status.error_code == "fatal" and "a person needs to act" in card.notes[0]


def test_an_undeclared_failure_kind_becomes_agent_error(runtime):
    job = run(runtime, "mystery", "x")
    assert job.failure_kind == "AgentError"
    assert job.failure_reason == "Mystery (not a failure kind the agent declares): something odd"


def test_output_is_checked_against_the_contract(runtime):
    job = run(runtime, "wrong", '{"n": 1}')
    assert (job.status, job.failure_kind) == ("failed", "InvalidOutput")
    assert "$.count" in job.failure_reason and "schemas/count-out.json" in job.failure_reason
    text_job = run(runtime, "not-text", "x")
    assert text_job.failure_kind == "InvalidOutput"
    assert "declares output: text but answered a JSON object" in text_job.failure_reason


def test_a_qzx_failure_answer_ends_the_job_with_the_declared_kind(runtime):
    job = run(runtime, "quota", "x")
    assert (job.status, job.failure_kind, job.failure_reason) == ("failed", "QuotaExceeded", "quota exhausted")
    text = RENDERERS["text"](runtime.card(job)).payload
    assert "✘ failure: Quota used up for today." in text and "quota_exceeded" in text


def test_card_of_a_success_follows_the_output_contract(runtime):
    job = run(runtime, "table", "x")
    card = runtime.card(job)
    assert (card.form, card.title, card.columns) == ("table", "table", ("n", "name"))


def test_an_answer_is_checked_against_its_contract_once(runtime, monkeypatch):
    from oz0.edge.contracts.schema import Contract

    job = run(runtime, "table", "x")
    calls = []
    real = Contract.validate
    monkeypatch.setattr(Contract, "validate", lambda self, value, **kw: calls.append(value) or real(self, value, **kw))
    assert runtime.card(job).form == "table" and calls == []  # checked when the job ran, not again
    other = Runtime(runtime.home, flow_engine=FLOW_ENGINE)  # another process did not check this answer, so its card does
    try:
        assert other.card(job).form == "table" and calls.count(job.output) == 1
    finally:
        other.close()


def test_unknown_agent_is_a_failed_job_listing_the_agents(runtime):
    job = run(runtime, "nope", "x")
    assert job.failure_kind == "UnknownAgent" and "installed agents: ahang, big" in job.failure_reason
    with pytest.raises(UnknownAgent, match="no agent named 'nope'"):
        runtime.agent("nope")


def test_dedupe_key_journals_once_and_runs_once(runtime):
    first = run(runtime, "once", "x", dedupe_key="slack:evt-1")
    second = run(runtime, "once", "x", dedupe_key="slack:evt-1")
    assert first.id == second.id and second.output == "call 1"
    job, created = runtime.submit("once", "x", dedupe_key="slack:evt-1")
    assert (job.id, created) == (first.id, False)
    assert len([j for j in runtime.jobs() if j.dedupe_key == "slack:evt-1"]) == 1


def test_two_executions_of_one_job_run_it_once(runtime):
    job, _ = runtime.submit("once", "y")

    async def both():
        return await asyncio.gather(runtime.execute(job.id), runtime.execute(job.id))

    a, b = asyncio.run(both())
    assert runtime.job(job.id).output == "call 1"
    assert {a.status, b.status} <= {"running", "succeeded"}


def test_reply_to_is_kept_as_an_opaque_versioned_reference(runtime):
    job, _ = runtime.submit("echo", "x", reply_to=ReplyRef("slack", 1, {"channel": "C1"}), workspace="T1",
                            channel_id="C1")
    runtime.set_reply_to(job.id, ReplyRef("slack", 1, {"channel": "C1", "ts": "123.4"}))
    job = runtime.job(job.id)
    assert job.reply_to == ReplyRef("slack", 1, {"channel": "C1", "ts": "123.4"})
    assert (job.platform, job.workspace, job.channel_id) == ("slack", "T1", "C1")
    assert job.to_dict()["reply_to"] == {"platform": "slack", "workspace": "T1", "channel": "C1"}


def test_jobs_of_a_live_process_are_not_recovered(runtime):
    job, _ = runtime.submit("echo", "x")
    assert runtime.recover_interrupted() == []
    assert runtime.job(job.id).status == "queued"


CRASHER = """
import asyncio, sys
from oz0.edge.runtime.runner import Runtime
rt = Runtime(sys.argv[1])
from oz0.edge.model.reply_ref import ReplyRef
job, _ = rt.submit("hang", "x", reply_to=ReplyRef("slack", 1, {"thread": "T1"}))
print(job.id, flush=True)
asyncio.run(rt.execute(job.id))
"""


def test_a_job_left_running_by_a_crash_is_marked_interrupted_on_the_next_start(runtime, tmp_path):
    import yaml
    # a longer timeout so the process is killed while the job runs
    stored = Path(runtime.installed()[0].path) / "agents" / "hang.yaml"
    data = yaml.safe_load(stored.read_text())
    data["limits"]["timeout_s"] = 30
    stored.write_text(yaml.safe_dump(data))
    proc = subprocess.Popen([sys.executable, "-c", CRASHER, str(runtime.home)], stdout=subprocess.PIPE, text=True)
    job_id = proc.stdout.readline().strip()
    deadline = time.monotonic() + 10
    while runtime.job(job_id).status != "running" and time.monotonic() < deadline:
        time.sleep(0.05)
    assert runtime.job(job_id).status == "running"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    fresh = Runtime(runtime.home, flow_engine=FLOW_ENGINE)
    recovered = fresh.recover_interrupted()
    assert [j.id for j in recovered] == [job_id]
    job = fresh.job(job_id)
    assert (job.status, job.failure_kind, job.reply_to) == ("interrupted", "Interrupted",
                                                            ReplyRef("slack", 1, {"thread": "T1"}))
    assert job.failure_reason.startswith("the bot stopped before this job ended (it was running)")
    assert job.failed
    assert fresh.recover_interrupted() == []


def test_database_url_moves_the_journal(tmp_path, monkeypatch):
    other = tmp_path / "elsewhere.db"
    monkeypatch.setenv("OZ0_DATABASE_URL", f"sqlite:///{other}")
    rt = Runtime(tmp_path / "home", flow_engine=FLOW_ENGINE)
    rt.submit("any", "x")
    rt.close()
    assert other.is_file() and not (tmp_path / "home" / "oz0.db").exists()


def test_audit_log_records_installs_and_custom_actions(runtime):
    runtime.audit("access.denied", actor="slack:U1", detail={"agent": "echo"})
    log = runtime.audit_log()
    assert [r.action for r in log][:2] == ["access.denied", "plugin.install"]
    assert log[1].detail["plugin"] == "testkit" and log[1].detail["version"] == "0.1.0"


def test_job_to_dict_is_json(runtime):
    job = run(runtime, "echo", "x")
    assert json.loads(json.dumps(job.to_dict()))["id"] == job.id


def test_a_job_of_another_host_is_recovered_only_past_any_deadline(runtime):
    fresh, _ = runtime.submit("echo", "x")
    old, _ = runtime.submit("echo", "y")
    for job, started in ((fresh, time.time()), (old, time.time() - 7 * 3600)):
        runtime.store.update_job(job.id, status="running", started=started, runner="replica-2:4242:abc")
    assert [j.id for j in runtime.recover_interrupted()] == [old.id]
    assert runtime.job(fresh.id).status == "running"


def test_an_answer_that_is_not_json_data_is_invalid_output(runtime):
    job = run(runtime, "not-json", "x")
    assert (job.status, job.failure_kind) == ("failed", "InvalidOutput")
    assert job.failure_reason.startswith("the answer is not JSON data (Type is not JSON serializable: object)")


def test_an_input_over_the_cap_is_invalid_input_with_the_number(runtime):
    from oz0.edge.runtime.runner import MAX_INPUT_CHARS

    job = run(runtime, "echo", "x" * (MAX_INPUT_CHARS + 1))
    assert (job.status, job.failure_kind, job.attempts) == ("failed", "InvalidInput", 0)
    assert f"{MAX_INPUT_CHARS + 1:,} characters" in job.failure_reason
    assert f"at most {MAX_INPUT_CHARS:,}" in job.failure_reason
    assert run(runtime, "echo", "x" * MAX_INPUT_CHARS).status == "succeeded"
