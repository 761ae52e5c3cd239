"""A full disk (or a database outage) inside a job's own bookkeeping steps loses nothing: a flow's start
and end, and a tool loop's end (its result), are DBOS steps retried under the same rule as a job's run
step (edge.runtime.step_retries), so the job ends once the journal takes writes again. Real processes,
real DBOS, a real SQLite journal whose writes are refused at the SQLite layer ("database or disk is
full"), a real MCP server and the stand-in model on loopback for the loop."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from flow_kit import flow_plugin
from loop_kit import loop_plugin
from model_standins import ModelStandin, Turn
from paths import SUPPORT

from oz0.edge.flows.engine import FLOW_ENGINE
from oz0.edge.plugins.manifest import load_plugin
from oz0.edge.runtime.install import install_plugin
from oz0.edge.runtime.runner import Runtime

SCRIPT = SUPPORT / "fault_steps_engine.py"


def _env(home: Path, **extra: str) -> dict[str, str]:
    out = {k: v for k, v in os.environ.items() if not k.startswith("OZ0_")}
    out.update(OZ0_HOME=str(home), OZ0_REPLICA_ID="fault-steps",
               PYTHONPATH=os.pathsep.join([str(SUPPORT), os.environ.get("PYTHONPATH", "")]), **extra)
    return out


def _run(mode: str, env: dict[str, str]) -> dict:
    done = subprocess.run([sys.executable, str(SCRIPT), mode], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_flow_whose_start_and_end_meet_a_full_disk_ends_once_the_disk_takes_writes(tmp_path):
    home = tmp_path / "home"
    runtime = Runtime(home, flow_engine=FLOW_ENGINE)
    install_plugin(runtime, load_plugin(flow_plugin(tmp_path / "acme")), actor="test")
    runtime.close()
    ended = _run("flow", _env(home))
    assert ended["refused"] == ["running", "running", "succeeded", "succeeded"], ended
    assert ended["error"] is None, ended
    assert (ended["status"], ended["output"]) == ("succeeded", {
        "merged": True, "sha": "acme/api@42", "note": "reviewed approve"}), ended
    assert ended["children"] == [["acme-reviewer", "succeeded"], ["merger", "succeeded"], ["merger", "skipped"]]


def test_a_tool_loop_whose_end_meets_a_full_disk_keeps_its_answer_and_calls_no_tool_again(tmp_path):
    calls = tmp_path / "calls.txt"
    script = [Turn(calls=(("ci_log", {"run_id": 4411}),)), Turn(text='{"verdict": "flaky", "run_id": 4411}')]
    env = _env(tmp_path / "home", OZ0_TEST_CALLS=str(calls), OZ0_TEST_MODEL_KEY="sk-test-faults-0123456789")
    with ModelStandin(script) as model:
        os.environ["OZ0_TEST_CALLS"] = str(calls)
        try:
            loop_plugin(tmp_path / "p", tmp_path / "home", model.url).close()
        finally:
            del os.environ["OZ0_TEST_CALLS"]
        ended = _run("loop", env)
    assert ended["refused"] == ["succeeded", "succeeded"], ended
    assert ended["error"] is None, ended
    assert (ended["status"], ended["output"]) == ("succeeded", {"verdict": "flaky", "run_id": 4411}), ended
    assert calls.read_text().splitlines() == ['ci_log {"run_id": 4411}']  # the end was retried, not the loop
    assert len(model.requests) == 2
