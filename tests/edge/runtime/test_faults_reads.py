"""A database fault at a read a job's workflow makes to decide its way (is the job a tool loop, where
does a tick's job run) loses nothing: those reads are inside checkpointed steps retried under the one
rule of a job's steps (edge.runtime.step_retries), never between steps, where the fault would end the
workflow ERROR, the job left `queued` or `running` and no card posted. Real processes, real DBOS, a real SQLite
journal whose reads are refused at the SQLite layer ("database is locked"), a real MCP server and the
stand-in model on loopback for the loop."""

from __future__ import annotations

import os

from engine_script import run_script, run_script_logged
from loop_kit import loop_plugin
from model_standins import ModelStandin, Turn
from paths import SUPPORT
from replica_harness import install_replica_plugin
from test_faults_steps import _env as reads_env
from test_faults_steps import _run_loop as run_loop

SCRIPT = SUPPORT / "fault_reads_engine.py"


def test_a_tool_loop_whose_first_reads_meet_a_locked_database_still_runs_as_durable_steps(tmp_path):
    ended, calls, model = run_loop(tmp_path, "loop", SCRIPT)
    assert ended["refused"] == ["job", "job"], ended
    assert (ended["error"], ended["workflow"]) == (None, "SUCCESS"), ended
    assert (ended["status"], ended["output"]) == ("succeeded", {"verdict": "flaky", "run_id": 4411}), ended
    assert ended["posted"] == [True], ended  # one card
    # the loop ran as the workflow's own steps (resumable after a crash), not inside one step
    assert ended["steps"][0] == "oz0.run" and ended["steps"][-1] == "oz0.deliver" and "oz0.loop.end" not in ended["steps"], ended
    assert len(ended["steps"]) > 3, ended
    assert calls.read_text().splitlines() == ['ci_log {"run_id": 4411}']
    assert len(model.requests) == 2


def test_a_tick_whose_job_read_meets_a_locked_database_runs_its_job_and_posts_once(tmp_path):
    home = tmp_path / "home"
    never = {"schedules/pulse.yaml": 'cron: "0 0 1 1 *"\nagent: echo\ninput: pulse\nslack: {channel: C0GENERAL}\n'}
    install_replica_plugin(home, extra=never)  # fired by the script, once, not by the scheduler
    ended = run_script(SCRIPT, "tick", env=reads_env(home, OZ0_TEST_RUNS=str(tmp_path / "runs.txt")), timeout_s=120)
    assert ended["refused"] == ["job", "job"], ended
    assert ended["error"] is None, ended
    assert (ended["status"], ended["output"]) == ("succeeded", "echo: pulse"), ended
    assert ended["posted"] == [True], ended
    assert len((tmp_path / "runs.txt").read_text().splitlines()) == 2  # its agent ran once (start, end)


def test_a_tool_loop_whose_reads_between_its_steps_meet_a_locked_database_ends_once_with_its_calls_made_once(tmp_path):
    ended, calls, model = run_loop(tmp_path, "loopbody", SCRIPT)
    # its claim's re-read, the contracts' and the confirmation's reads of its job, its conversation's history
    assert ended["refused"] == ["job", "job", "job", "job", "turns"], ended
    assert (ended["error"], ended["workflow"]) == (None, "SUCCESS"), ended
    assert (ended["status"], ended["output"]) == ("succeeded", {"verdict": "flaky", "run_id": 4411}), ended
    assert ended["posted"] == [True], ended  # one card
    assert ended["steps"][0] == "oz0.run" and ended["steps"][-1] == "oz0.deliver" and "oz0.loop.end" not in ended["steps"], ended
    assert calls.read_text().splitlines() == ['ci_log {"run_id": 4411}']  # its tool called once
    assert len(model.requests) == 2


def test_a_tool_loop_stopped_while_its_cancel_path_meets_a_locked_database_ends_cancelled_once(tmp_path):
    calls = tmp_path / "calls.txt"
    script = [Turn(calls=(("ci_log", {"run_id": 4411}),)), Turn(text='{"verdict": "flaky", "run_id": 4411}')]
    env = reads_env(tmp_path / "home", OZ0_TEST_CALLS=str(calls), OZ0_TEST_MODEL_KEY="sk-test-faults-0123456789")
    with ModelStandin(script, hold_turn=1) as model:  # its second request waits: the loop is running when stopped
        os.environ["OZ0_TEST_CALLS"] = str(calls)
        try:
            loop_plugin(tmp_path / "p", tmp_path / "home", model.url).close()
        finally:
            del os.environ["OZ0_TEST_CALLS"]
        try:
            ended, logs = run_script_logged(SCRIPT, "loopcancel", env=env, timeout_s=120)
        finally:
            model.release()
    assert "job" in ended["refused"], ended  # its reads were refused once the stop was journaled
    assert (ended["error"], ended["stopped"]) == (None, "cancelled"), ended  # what `oz0 jobs cancel` says
    assert (ended["status"], ended["reason"]) == ("cancelled", "stopped by Ana Lima"), ended  # `oz0 jobs show`
    assert ended["cards"] == ["cancelled"], ended  # one card, and it says so
    assert ended["workflow"] == "SUCCESS", ended
    assert "Traceback" not in logs, logs[-3000:]
    assert "did not stop where it ran" not in logs, logs[-3000:]  # its own run ended it
    assert calls.read_text().splitlines() == ['ci_log {"run_id": 4411}']
