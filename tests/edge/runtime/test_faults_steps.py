"""A full disk (or a database outage) inside a job's own bookkeeping steps loses nothing: a flow's start
and end, and a tool loop's end (its result), are DBOS steps retried under the same rule as a job's run
step (edge.runtime.step_retries), so the job ends once the journal takes writes again. Real processes,
real DBOS, a real SQLite journal whose writes are refused at the SQLite layer ("database or disk is
full"), a real MCP server and the stand-in model on loopback for the loop."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from engine_script import run_script
from flow_kit import flow_plugin
from loop_kit import loop_plugin
from model_standins import ModelStandin, Turn
from paths import SUPPORT
from plugin_kit import install_at

SCRIPT = SUPPORT / "fault_steps_engine.py"


def _env(home: Path, **extra: str) -> dict[str, str]:
    out = {k: v for k, v in os.environ.items() if not k.startswith("OZ0_")}
    out.update(OZ0_HOME=str(home), OZ0_REPLICA_ID="fault-steps",
               PYTHONPATH=os.pathsep.join([str(SUPPORT), os.environ.get("PYTHONPATH", "")]), **extra)
    return out


def test_a_flow_whose_start_and_end_meet_a_full_disk_ends_once_the_disk_takes_writes(tmp_path):
    install_at(tmp_path / "home", flow_plugin(tmp_path / "acme"))
    ended = run_script(SCRIPT, "flow", env=_env(tmp_path / "home"), timeout_s=120)
    assert ended["refused"] == ["running", "running", "succeeded", "succeeded"], ended
    assert ended["error"] is None, ended
    assert (ended["status"], ended["output"]) == ("succeeded", {
        "merged": True, "sha": "acme/api@42", "note": "reviewed approve"}), ended
    assert ended["children"] == [["acme-reviewer", "succeeded"], ["merger", "succeeded"], ["merger", "skipped"]]


def _run_loop(tmp_path: Path, mode: str, script_path: Path = SCRIPT) -> tuple[dict[str, Any], Path, ModelStandin]:
    calls = tmp_path / "calls.txt"
    script = [Turn(calls=(("ci_log", {"run_id": 4411}),)), Turn(text='{"verdict": "flaky", "run_id": 4411}')]
    env = _env(tmp_path / "home", OZ0_TEST_CALLS=str(calls), OZ0_TEST_MODEL_KEY="sk-test-faults-0123456789")
    with ModelStandin(script) as model:
        os.environ["OZ0_TEST_CALLS"] = str(calls)
        try:
            loop_plugin(tmp_path / "p", tmp_path / "home", model.url).close()
        finally:
            del os.environ["OZ0_TEST_CALLS"]
        ended = run_script(script_path, mode, env=env, timeout_s=120)
    return ended, calls, model


def test_a_tool_loop_whose_end_meets_a_full_disk_keeps_its_answer_and_calls_no_tool_again(tmp_path):
    ended, calls, model = _run_loop(tmp_path, "loop")
    assert ended["refused"] == ["succeeded", "succeeded"], ended
    assert ended["error"] is None, ended
    assert (ended["status"], ended["output"]) == ("succeeded", {"verdict": "flaky", "run_id": 4411}), ended
    assert calls.read_text().splitlines() == ['ci_log {"run_id": 4411}']  # the end was retried, not the loop
    assert len(model.requests) == 2


def test_a_tool_loop_whose_trace_rows_meet_a_full_disk_keeps_every_row_and_calls_nothing_again(tmp_path):
    ended, calls, model = _run_loop(tmp_path, "trace")
    assert ended["refused"] == ["trace", "trace"], ended
    assert ended["error"] is None, ended
    assert (ended["status"], ended["output"]) == ("succeeded", {"verdict": "flaky", "run_id": 4411}), ended
    assert [kind for kind, _ in ended["trace"]] == ["model", "tool", "model"], ended
    assert calls.read_text().splitlines() == ['ci_log {"run_id": 4411}']
    assert len(model.requests) == 2  # the turn's rows were retried inside the next request, before its call
