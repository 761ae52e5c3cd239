"""`oz0 run` of a tool loop whose destructive tool asks for Confirm: on a real terminal (a pty) the
question is asked there and the answer typed decides the call; off a terminal the job is left waiting
with its id and the command that answers it, and `oz0 jobs answer` (copied from what it printed) resumes
it. A real `oz0` process, the stand-in model on loopback, the CI MCP server over stdio counting calls."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

from loop_kit import loop_plugin
from model_standins import ModelStandin, Turn
from terminal import on_a_pty

OZ0 = [sys.executable, "-m", "oz0.adapters.cli"]
SCRIPT = [Turn(calls=(("delete_branch", {"name": "old"}),)), Turn(text='{"verdict": "broken"}')]


def _home(tmp_path: Path, url: str) -> dict[str, str]:
    os.environ["OZ0_TEST_CALLS"] = str(tmp_path / "calls.txt")
    try:
        loop_plugin(tmp_path / "p", tmp_path / "h", url).close()
    finally:
        del os.environ["OZ0_TEST_CALLS"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("OZ0_")}
    env.update(OZ0_HOME=str(tmp_path / "h"), OZ0_TEST_MODEL_KEY="sk-test-terminal-0123456789",
               OZ0_TEST_CALLS=str(tmp_path / "calls.txt"))
    env.pop("PYTEST_VERSION", None)  # a user's terminal: no test run's quiet defaults
    return env


def _calls(tmp_path: Path) -> list[str]:
    path = tmp_path / "calls.txt"
    return path.read_text().splitlines() if path.exists() else []


def test_on_a_terminal_the_confirmation_is_asked_there(tmp_path):
    with ModelStandin(SCRIPT) as model:
        code, text = on_a_pty([*OZ0, "run", "triage", "clean up the old branch"], _home(tmp_path, model.url),
                              [(b"Run it? (Confirm, Cancel): ", 1, b"Confirm\n")])
        results = model.tool_results(1)
    assert code == 0, text
    assert '? triage wants to run delete_branch with {"name": "old"}. It is marked destructive: run it?' in text
    assert "verdict  broken" in text and "succeeded" in text, text
    assert "pydantic-ai" not in text.lower()  # the terminal is the command's: no library banner
    assert _calls(tmp_path) == ['delete_branch {"name": "old"}']  # typed Confirm: made once, not declined
    assert "The person declined" not in results[-1] and "deleted old" in results[-1]


def test_off_a_terminal_the_job_waits_and_oz0_jobs_answer_resumes_it(tmp_path):
    with ModelStandin(SCRIPT) as model:
        env = _home(tmp_path, model.url)
        done = subprocess.run([*OZ0, "run", "triage", "clean up the old branch"], stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, env=env, timeout=90)
        assert done.returncode == 3, done.stderr
        assert _calls(tmp_path) == []  # waiting: the destructive call is not made
        waiting = [line for line in done.stderr.splitlines() if line.startswith("job ")][0]
        job_id = waiting.split()[1]
        assert waiting.endswith("is waiting for an answer to step 'confirm-2': triage wants to run delete_branch "
                                'with {"name": "old"}. It is marked destructive: run it?'), waiting
        told = [line for line in done.stderr.splitlines() if line.startswith("answer it with: ")][0]
        command = shlex.split(told.removeprefix("answer it with: ").split("  (or")[0])
        assert command[:4] == ["oz0", "jobs", "answer", job_id], command
        command[-3] = '{"choice": "Confirm"}'  # the example answer's shape, with the choice made
        answered = subprocess.run([*OZ0, *command[1:]], stdin=subprocess.DEVNULL, capture_output=True, text=True,
                                  env=env, timeout=90)
    assert answered.returncode == 0, answered.stderr
    assert "verdict  broken" in answered.stdout and f"job {job_id} succeeded" in answered.stderr
    assert _calls(tmp_path) == ['delete_branch {"name": "old"}']
