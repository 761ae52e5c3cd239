"""Stopping a job whose agent is a tool of a real stdio MCP server, in the middle of its call: the
server receives `notifications/cancelled` for that call's request id (its own record says so), the
call never runs to its end, and the job ends `cancelled`, "stopped by ...". `POST /v1/jobs/{id}/cancel`
over real HTTP."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
from cancel_kit import console_url
from console_plugin import ConsoleThread
from mcp_harness import installed, mcp_plugin
from paths import SUPPORT

OZ0 = str(Path(sys.executable).with_name("oz0"))
SLOW = SUPPORT / "mcp_servers" / "slow_server.py"


def _lines(record: Path, prefix: str, *, timeout: float = 30.0) -> list[str]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = [line for line in (record.read_text().splitlines() if record.exists() else [])
                 if line.startswith(prefix)]
        if found:
            return found
        time.sleep(0.05)
    raise AssertionError(f"the MCP server never recorded {prefix!r}: {record.read_text() if record.exists() else ''}")


def test_a_stopped_mcp_call_is_cancelled_on_the_wire_and_the_job_ends_cancelled(tmp_path: Path) -> None:
    record = tmp_path / "record.txt"
    plugin = mcp_plugin(tmp_path / "slowmcp", "slowmcp", [sys.executable, str(SLOW), str(record)],
                        {"slowpoke": "tool: slow"}, timeout_s=120)
    with installed(tmp_path / "home", plugin) as runtime, ConsoleThread(runtime) as console, \
            httpx.Client(base_url=console.url, timeout=30) as http:
        r = http.post("/v1/agents/slowpoke/runs?wait=false", json={"seconds": 60})
        assert r.status_code == 202, r.text
        job_id = r.json()["job"]["id"]
        [started] = _lines(record, "start ")
        request_id = started.split()[1]
        r = http.post(f"/v1/jobs/{job_id}/cancel")
        assert r.status_code == 200, r.text
        assert r.json()["job"]["status"] == "cancelled"
        assert r.json()["job"]["failure_reason"] == "stopped by api-local"
        [cancelled] = _lines(record, "cancelled ")
        assert cancelled.split()[1] == request_id  # the call that was running, by its JSON-RPC id
        time.sleep(0.5)
        assert not [line for line in record.read_text().splitlines() if line.startswith("end ")]
        job = runtime.job(job_id)
        assert job is not None and (job.status, job.failure_kind) == ("cancelled", "Cancelled")


def test_oz0_jobs_cancel_cancels_the_mcp_call_of_a_job_running_in_oz0_serve(tmp_path: Path) -> None:
    """The job runs as a durable workflow in `oz0 serve`; the CLI's stop reaches it through the journal."""
    record = tmp_path / "record.txt"
    home = tmp_path / "home"
    plugin = mcp_plugin(tmp_path / "slowmcp", "slowmcp", [sys.executable, str(SLOW), str(record)],
                        {"slowpoke": "tool: slow"}, timeout_s=120)
    with installed(home, plugin):
        pass
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLACK_", "DISCORD_", "OZ0_"))}
    env.update(OZ0_HOME=str(home))
    serve = subprocess.Popen([OZ0, "serve", "--port", "0"], env=env, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, text=True)
    try:
        with httpx.Client(base_url=console_url(serve), timeout=30) as http:
            r = http.post("/v1/agents/slowpoke/runs?wait=false", json={"seconds": 60})
            assert r.status_code == 202, r.text
            job_id = r.json()["job"]["id"]
            [started] = _lines(record, "start ")
            done = subprocess.run([OZ0, "jobs", "cancel", job_id], env=env, capture_output=True, text=True,
                                  timeout=60)
            assert done.returncode == 0, done.stderr
            assert f"job {job_id} (slowpoke) cancelled: stopped by " in done.stdout
            [cancelled] = _lines(record, "cancelled ")
            assert cancelled.split()[1] == started.split()[1]
            shown = http.get(f"/v1/jobs/{job_id}").json()["job"]
            assert (shown["status"], shown["failure_kind"]) == ("cancelled", "Cancelled")
    finally:
        serve.terminate()
        serve.wait(timeout=30)
