"""A tool loop's person step is durable under the job engine: a destructive call waiting for Confirm
survives a SIGKILL of its process; the Confirm given after the restart resumes the loop, and the tool is
called once, after the answer, never before."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

from loop_kit import loop_plugin
from model_standins import ModelStandin, Turn
from paths import SUPPORT

SCRIPT = SUPPORT / "loop_engine.py"


def test_a_confirmation_answered_after_a_restart_resumes_the_loop(tmp_path, monkeypatch):
    calls_file = tmp_path / "calls.txt"
    monkeypatch.setenv("OZ0_TEST_CALLS", str(calls_file))
    script = [Turn(calls=(("delete_branch", {"name": "old"}),)), Turn(text='{"verdict": "broken"}')]
    with ModelStandin(script) as model:
        loop_plugin(tmp_path / "p", tmp_path / "h", model.url).close()
        env = {**os.environ, "OZ0_HOME": str(tmp_path / "h"), "OZ0_TEST_MODEL_KEY": "sk-test-durable-12345",
               "PYTHONPATH": os.pathsep.join([str(SUPPORT), os.environ.get("PYTHONPATH", "")])}
        env.pop("OZ0_DATABASE_URL", None)
        first = subprocess.Popen([sys.executable, str(SCRIPT), "ask"], env=env, stdout=subprocess.PIPE, text=True)
        try:
            job_id = first.stdout.readline().strip()
            assert job_id, "the loop never waited for its confirmation"
            assert not calls_file.exists()  # waiting: the destructive call is not made
        finally:
            first.send_signal(signal.SIGKILL)
            first.wait(timeout=10)
        second = subprocess.run([sys.executable, str(SCRIPT), "answer", job_id], env=env, capture_output=True,
                                text=True, timeout=120)
    assert second.returncode == 0, second.stderr[-3000:]
    ended = json.loads(second.stdout.strip().splitlines()[-1])
    assert (ended["status"], ended["output"]) == ("succeeded", {"verdict": "broken"}), ended
    assert ended["step"] == "confirm-2" and "delete_branch" in ended["message"]
    assert calls_file.read_text().splitlines() == ['delete_branch {"name": "old"}']
    assert [r["path"] for r in model.requests].count("/v1/chat/completions") == 2  # the first never asked again
