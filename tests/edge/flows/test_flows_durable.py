"""A flow under the job engine is a durable workflow: killed while its person step waits, a new
process (same replica id, same SQLite journal) resumes it, and the answer given there finishes it,
each agent step having run once. Real processes, real DBOS, real SQLite."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from flow_kit import approval, flow_plugin
from paths import SUPPORT

from oz0.edge.flows.engine import FLOW_ENGINE
from oz0.edge.plugins.manifest import load_plugin
from oz0.edge.runtime.install import install_plugin
from oz0.edge.runtime.runner import Runtime

SCRIPT = SUPPORT / "flow_engine.py"


def env(home: Path) -> dict[str, str]:
    out = {k: v for k, v in os.environ.items() if not k.startswith("OZ0_")}
    out.update(OZ0_HOME=str(home), OZ0_REPLICA_ID="flow-test")
    return out


def test_an_answer_after_a_restart_resumes_the_flow(tmp_path):
    home = tmp_path / "home"
    runtime = Runtime(home, flow_engine=FLOW_ENGINE)
    install_plugin(runtime, load_plugin(flow_plugin(tmp_path / "acme", flows={"approval": approval()})), actor="test")
    runtime.close()
    first = subprocess.Popen([sys.executable, str(SCRIPT), "ask"], env=env(home), stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    try:
        line = first.stdout.readline().strip()
        assert line.startswith("waiting "), first.stderr.read() if first.poll() is not None else line
        job_id = line.split()[1]
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=10)
    runtime = Runtime(home, flow_engine=FLOW_ENGINE)
    try:
        assert runtime.job(job_id).status == "waiting"
        assert runtime.question(job_id).message == "Merge acme/api#42? The review says approve."
    finally:
        runtime.close()
    second = subprocess.run([sys.executable, str(SCRIPT), "resume", job_id], env=env(home), capture_output=True,
                            text=True, timeout=180)
    assert second.returncode == 0, second.stderr[-3000:]
    done = json.loads(second.stdout.strip().splitlines()[-1])
    assert done["status"] == "succeeded", done
    assert done["output"] == {"merged": True, "sha": "acme/api@42", "note": "approved"}
    assert done["steps"] == [["acme-reviewer", "succeeded"], ["merger", "succeeded"], ["merger", "skipped"]]
