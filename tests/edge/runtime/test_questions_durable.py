"""A person step inside a DBOS workflow waits durably: the process is killed while the question is
open, a new process (same replica id, same SQLite journal) recovers the workflow, the answer given
there resumes it; a question left unanswered times out. Real processes, real DBOS, real SQLite."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from paths import SUPPORT

from oz0.edge.flows.engine import FLOW_ENGINE
from oz0.edge.runtime.runner import Runtime

SCRIPT = SUPPORT / "person_workflow.py"


def env(home: Path) -> dict[str, str]:
    out = {k: v for k, v in os.environ.items() if not k.startswith("OZ0_")}
    out.update(OZ0_HOME=str(home), OZ0_REPLICA_ID="person-test",
               PYTHONPATH=os.pathsep.join([str(SCRIPT.parent), os.environ.get("PYTHONPATH", "")]))
    return out


def a_job(home: Path) -> str:
    runtime = Runtime(home, flow_engine=FLOW_ENGINE)
    try:
        job, _ = runtime.submit("someflow", "{}", requester="console:maria")
        runtime.store.update_job(job.id, status="running")
        return job.id
    finally:
        runtime.close()


def test_an_answer_given_after_a_restart_resumes_the_workflow(oz0_home: Path) -> None:
    job_id = a_job(oz0_home)
    first = subprocess.Popen([sys.executable, str(SCRIPT), "ask", job_id], env=env(oz0_home),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert first.stdout.readline().strip() == "waiting", first.stderr.read()
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=10)
    runtime = Runtime(oz0_home, flow_engine=FLOW_ENGINE)
    try:
        assert runtime.job(job_id).status == "waiting"
        assert runtime.question(job_id).message == "Merge?"
    finally:
        runtime.close()
    second = subprocess.run([sys.executable, str(SCRIPT), "resume", job_id], env=env(oz0_home),
                            capture_output=True, text=True, timeout=120)
    assert second.returncode == 0, second.stderr
    answer = json.loads(second.stdout.strip().splitlines()[-1])
    assert (answer["action"], answer["content"], answer["by"]) == ("accept", {"approved": True}, "console:maria")
    runtime = Runtime(oz0_home, flow_engine=FLOW_ENGINE)
    try:
        assert runtime.job(job_id).status == "running"
        assert [r.detail["step"] for r in runtime.audit_log() if r.action == "flow.answered"] == ["approve"]
    finally:
        runtime.close()


def test_an_unanswered_durable_question_times_out(oz0_home: Path) -> None:
    job_id = a_job(oz0_home)
    done = subprocess.run([sys.executable, str(SCRIPT), "expire", job_id], env=env(oz0_home),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout.strip().splitlines()[-1])
    assert (answer["action"], answer["by"]) == ("timeout", "timeout")


def test_a_job_waiting_inside_its_step_when_the_engine_stops_ends_interrupted_once(oz0_home: Path, tmp_path: Path) -> None:
    from plugin_kit import make_plugin

    from oz0.edge.plugins.manifest import load_plugin
    from oz0.edge.runtime.install import install_plugin

    runtime = Runtime(oz0_home, flow_engine=FLOW_ENGINE)
    try:
        make_plugin(tmp_path / "asks", name="asks", files={"impl.py": """
            async def ask(text, ctx):
                answer = await ctx.ask_person("Go?", {"type": "object", "properties": {"go": {"type": "boolean"}}})
                return answer.action
            """, "schemas/go.json": {"type": "object", "properties": {"go": {"type": "boolean"}}}},
            agents={"asks": {"description": "asks", "kind": "python", "entry": "impl:ask", "input": "text",
                             "output": "text", "asks": {"ask-1": {"answer_schema": "schemas/go.json"}}}})
        install_plugin(runtime, load_plugin(tmp_path / "asks"), actor="test")
        job, _ = runtime.submit("asks", "x", requester="console:maria")
    finally:
        runtime.close()
    first = subprocess.Popen([sys.executable, str(SCRIPT), "job", job.id], env=env(oz0_home),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert first.stdout.readline().strip() == "waiting", first.stderr.read()
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=10)
    for _ in range(2):  # the second relaunch finds nothing left to do
        again = subprocess.run([sys.executable, str(SCRIPT), "relaunch", job.id], env=env(oz0_home),
                               capture_output=True, text=True, timeout=120)
        assert again.returncode == 0, again.stderr
        seen = json.loads(again.stdout.strip().splitlines()[-1])
        assert seen["status"] == "interrupted" and "waited for an answer" in seen["reason"]
        assert seen["open"] == [] and (seen["closed"]["action"], seen["closed"]["by"]) == ("cancel", "interrupted")
    runtime = Runtime(oz0_home, flow_engine=FLOW_ENGINE)
    try:
        assert [r.detail["action"] for r in runtime.audit_log() if r.action == "flow.answered"] == ["cancel"]
    finally:
        runtime.close()
