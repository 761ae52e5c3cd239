"""Stopping a job (edge.runtime.cancel) as a user does it: `POST /v1/jobs/{id}/cancel` over real HTTP,
`oz0 jobs cancel` as a subprocess, on a command agent that sleeps with a child process of its own;
its whole process group is gone afterwards and the job ends `cancelled`, "stopped by ..."."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from cancel_kit import alive, console_url, install_sleeper, started, wait_gone
from console_plugin import ConsoleThread

from oz0.edge.flows.engine import FLOW_ENGINE
from oz0.edge.runtime.runner import Runtime

OZ0 = str(Path(sys.executable).with_name("oz0"))
ADMIN = "a" * 32


@pytest.fixture
def api(tmp_path, monkeypatch):
    monkeypatch.setenv("OZ0_TEST_PIDS", str(tmp_path / "pids.jsonl"))
    install_sleeper(tmp_path / "home")
    runtime = Runtime(tmp_path / "home", flow_engine=FLOW_ENGINE)
    with ConsoleThread(runtime, admin_token=ADMIN) as server, httpx.Client(base_url=server.url, timeout=30) as http:
        yield runtime, http, tmp_path / "pids.jsonl"
    runtime.close()


def test_the_api_stops_a_sleeping_command_agent_its_process_group_gone(api):
    runtime, http, pids = api
    r = http.post("/v1/agents/sleeper/runs?wait=false", content="zzz", headers={"content-type": "text/plain"})
    assert r.status_code == 202
    job_id = r.json()["job"]["id"]
    sleeper = started(pids)
    assert sleeper["job"] == job_id and all(alive(p) for p in sleeper["pids"])
    r = http.post(f"/v1/jobs/{job_id}/cancel")
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["success"] is True and body["meta"]["command"] == "jobs.cancel"
    assert body["job"]["status"] == "cancelled"
    assert body["job"]["failure_kind"] == "Cancelled"
    assert body["message"] == f"job {job_id} cancelled: stopped by api-local"
    wait_gone(sleeper["pids"])  # the command and its own child: each ended (at most a zombie left to reap)
    audit = [a for a in runtime.audit_log(limit=20) if a.action == "job.cancel"]
    assert len(audit) == 1 and audit[0].actor == "api-local" and audit[0].detail["job"] == job_id
    # a second stop: the job has ended
    r = http.post(f"/v1/jobs/{job_id}/cancel")
    assert r.status_code == 409
    assert r.json()["error_code"] == "already_ended"
    assert r.json()["error"] == f"job {job_id} has already ended (cancelled); there is nothing to stop"


def test_an_unknown_job_is_404_and_another_askers_job_403_unless_admin(api):
    runtime, http, _ = api
    r = http.post("/v1/jobs/nosuchjob/cancel")
    assert r.status_code == 404 and r.json()["error_code"] == "unknown_job"
    job, _ = runtime.submit("sleeper", "zzz", requester="slack:U123", channel="slack")  # queued, never run
    r = http.post(f"/v1/jobs/{job.id}/cancel")
    assert r.status_code == 403 and r.json()["error_code"] == "forbidden"
    assert r.json()["error"] == f"only the asker of job {job.id} or an admin may stop it"
    assert runtime.job(job.id).status == "queued"
    r = http.post(f"/v1/jobs/{job.id}/cancel", headers={"authorization": f"Bearer {ADMIN}"})
    assert r.status_code == 200
    assert r.json()["job"]["status"] == "cancelled"
    assert runtime.job(job.id).failure_reason == "stopped by api-token"


def test_stopping_a_flow_stops_its_running_step_too(api):
    runtime, http, pids = api
    r = http.post("/v1/flows/nap/runs?wait=false", content="zzz", headers={"content-type": "text/plain"})
    assert r.status_code == 202, r.text
    flow_id = r.json()["job"]["id"]
    sleeper = started(pids)
    step = runtime.job(sleeper["job"])
    assert step.parent_id == flow_id and step.status == "running"
    r = http.post(f"/v1/jobs/{flow_id}/cancel")
    assert r.status_code == 200, r.text
    assert r.json()["job"]["status"] == "cancelled"
    wait_gone(sleeper["pids"])
    assert (runtime.job(step.id).status, runtime.job(step.id).failure_reason) == ("cancelled", "stopped by api-local")
    [audit] = [a for a in runtime.audit_log(limit=20) if a.action == "job.cancel"]
    assert audit.detail["job"] == flow_id and audit.detail["children"] == [step.id]


def test_oz0_jobs_cancel_stops_a_job_running_in_oz0_serve(tmp_path):
    """The CLI and `oz0 serve` share the journal (SQLite) and nothing else: the serving process reads
    the stop request from the journal and stops the job where it runs."""
    home = tmp_path / "home"
    install_sleeper(home)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLACK_", "DISCORD_", "OZ0_"))}
    env.update(OZ0_HOME=str(home), OZ0_TEST_PIDS=str(tmp_path / "pids.jsonl"))
    serve = subprocess.Popen([OZ0, "serve", "--port", "0"], env=env, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, text=True)
    try:
        url = console_url(serve)
        with httpx.Client(base_url=url, timeout=30) as http:
            r = http.post("/v1/agents/sleeper/runs?wait=false", content="zzz",
                          headers={"content-type": "text/plain"})
            assert r.status_code == 202, r.text
            job_id = r.json()["job"]["id"]
            sleeper = started(tmp_path / "pids.jsonl")
            done = subprocess.run([OZ0, "jobs", "cancel", job_id], env=env, capture_output=True, text=True,
                                  timeout=60)
            assert done.returncode == 0, done.stderr
            who = done.stdout.rsplit("stopped by ", 1)[-1].strip()
            assert done.stdout.strip() == f"job {job_id} (sleeper) cancelled: stopped by {who}" and who
            wait_gone(sleeper["pids"])
            shown = http.get(f"/v1/jobs/{job_id}").json()
            assert shown["job"]["status"] == "cancelled" and shown["job"]["failure_reason"] == f"stopped by {who}"
            again = subprocess.run([OZ0, "jobs", "cancel", job_id, "--json"], env=env, capture_output=True,
                                   text=True, timeout=60)
            assert again.returncode == 1
            result = json.loads(again.stdout)
            assert result["success"] is False and result["error_code"] == "already_ended"
            gone = subprocess.run([OZ0, "jobs", "cancel", "nosuchjob"], env=env, capture_output=True, text=True,
                                  timeout=60)
            assert gone.returncode == 1 and "no job has the id 'nosuchjob'" in gone.stderr
    finally:
        serve.terminate()
        serve.wait(timeout=30)


def test_a_run_whose_cancel_path_fails_raises_that_error_and_is_not_taken_for_ended(tmp_path):
    """The stop watch cancelled the run and, when the run's cancel path failed, dropped that error and
    handed back the job still `running`: its workflow then posted a `running` card."""
    import asyncio

    install_sleeper(tmp_path / "home")
    runtime = Runtime(tmp_path / "home", flow_engine=FLOW_ENGINE)
    try:
        job, _ = runtime.submit("sleeper", "zzz", requester="slack:U123", channel="slack")
        runtime.store.update_job(job.id, status="running")

        async def work():
            try:  # asked to stop once it runs (by another process: read in the journal)
                runtime.store.update_job(job.id, stop_request={"by": "slack:U123", "name": "Ana", "at": 1.0})
                await asyncio.sleep(30)
            except asyncio.CancelledError:
                raise RuntimeError("the journal refused the cancelled end") from None

        with pytest.raises(RuntimeError, match="the journal refused the cancelled end"):
            asyncio.run(runtime.stops.guard(job.id, work()))
    finally:
        runtime.close()


def test_an_end_whose_read_back_meets_a_fault_stays_held_to_be_written_again(tmp_path):
    """The end was let go before the job was read back: a database fault at that read left nothing held,
    so the engine had no end to write again and the job's workflow ended without a card."""
    from sqlalchemy.exc import OperationalError

    install_sleeper(tmp_path / "home")
    runtime = Runtime(tmp_path / "home", flow_engine=FLOW_ENGINE)
    try:
        job, _ = runtime.submit("sleeper", "zzz", requester="slack:U123", channel="slack")
        runtime.store.update_job(job.id, status="running")
        real, reads = runtime.store.job, []

        def refusing(job_id):  # the first read once the end is written: the read back
            row = real(job_id)
            if row["status"] == "failed" and not reads:
                reads.append(job_id)
                raise OperationalError("SELECT", {}, Exception("database is locked"))
            return row

        runtime.store.job = refusing
        with pytest.raises(OperationalError):
            runtime.journal.end(job.id, "failed", attempts=1, kind="AgentError", reason="it broke")
        runtime.store.job = real
        assert runtime.holds_end(job.id)
        ended = runtime.write_held_end(job.id)
        assert (ended.status, ended.failure_reason) == ("failed", "it broke")
        assert not runtime.holds_end(job.id)
    finally:
        runtime.close()
