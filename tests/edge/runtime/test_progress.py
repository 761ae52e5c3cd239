"""A long job says what it is doing: one Progress value from every source (a python agent's
ctx.progress, MCP notifications/progress over stdio and HTTP, a flow's "step 2 of 3"), journaled for
the console on any replica, and drawn by `oz0 run` as plain lines or, on a terminal, a rich bar.
Real parts: MCP servers on stdio and loopback HTTP, SQLite files, subprocesses, a pty."""

from __future__ import annotations

import asyncio
import json
import os
import pty
import select
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from console_plugin import ConsoleThread
from flow_kit import RELEASE, approval, flow_plugin
from mcp_harness import SERVER, http_server
from paths import SUPPORT
from plugin_kit import make_plugin

from oz0.adapters.chat.cards import agent_help_card, help_card
from oz0.adapters.chat.slack_wire import SlackWire
from oz0.edge.flows.engine import FLOW_ENGINE
from oz0.edge.mcp.pool import servers
from oz0.edge.model.progress import Progress
from oz0.edge.plugins.manifest import load_plugin
from oz0.edge.runtime.install import install_plugin
from oz0.edge.runtime.progress import JOURNAL_EVERY_S, JournalProgress
from oz0.edge.runtime.runner import Runtime

COUNTER_PY = """
import os, time
from pathlib import Path

def count(text, ctx):
    n = int(text)
    for i in range(1, n + 1):
        ctx.progress(f"counting {i}", i, n)
        time.sleep(0.01)
    return f"counted {n}"

def hold(text, ctx):
    ctx.progress("warming up", 3, 10)
    release = Path(os.environ["OZ0_TEST_RELEASE"])
    deadline = time.monotonic() + 30
    while not release.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    return "released"
"""
TEXT = {"input": "text", "output": "text"}


def counter_plugin(root: Path) -> Path:
    return make_plugin(root, name="counter", agents={
        "count": {"kind": "python", "entry": "agents:count", **TEXT},
        "hold": {"kind": "python", "entry": "agents:hold", **TEXT},
        "helpful": {"kind": "python", "entry": "agents:count", **TEXT, "description": "Counts",
                    "examples": [{"description": "to three", "input": "3"}, {"input": "5"}]},
    }, files={"agents.py": COUNTER_PY})


@pytest.fixture
def counter(oz0_home: Path, tmp_path: Path) -> Runtime:
    runtime = Runtime(oz0_home, flow_engine=FLOW_ENGINE)
    install_plugin(runtime, load_plugin(counter_plugin(tmp_path / "counter")), actor="test")
    yield runtime
    runtime.close()


# ---- the value ---------------------------------------------------------------------------------

def test_a_progress_value_draws_its_counts_and_drops_bad_numbers() -> None:
    assert Progress.of("reading", 3, 10).line() == "reading (3/10)"
    assert Progress.of("reading", 3, 10).summary() == "reading · 3/10 ▓▓▓░░░░░░░"
    assert Progress.of("reading", 2.5).line() == "reading (2.5)"
    assert Progress.of("x" * 5000).message == "x" * 1000
    assert Progress.of("odd", float("nan"), -1) == Progress("odd")
    assert Progress.of("odd", True, "10") == Progress("odd")
    assert Progress.of("over", 12, 10).bar(4) == "12/10 ▓▓▓▓"
    assert Progress.from_dict({"message": "m", "done": 1, "total": 2}) == Progress("m", 1.0, 2.0)


def test_a_python_agent_reports_done_of_total_and_a_line_still_works(counter: Runtime) -> None:
    seen: list[Progress] = []
    job = asyncio.run(counter.run("count", "4", on_progress=seen.append))
    assert job.status == "succeeded"
    assert seen == [Progress(f"counting {i}", float(i), 4.0) for i in range(1, 5)]


def test_the_journal_keeps_the_latest_progress_at_most_every_window(counter: Runtime) -> None:
    job, _ = counter.submit("count", "1", requester="t", channel="t")
    counter.store.update_job(job.id, status="running")
    writes: list[Any] = []
    real = counter.store.update_job
    counter.store.update_job = lambda job_id, **kw: writes.append(kw.get("progress")) or real(job_id, **kw)
    try:
        sink = JournalProgress(counter.store, job.id, every_s=1.5)
        for i in range(1, 6):
            sink(Progress.of(f"at {i}"))
        assert [w["message"] for w in writes] == ["at 1"]   # the rest came inside the window
        deadline = time.monotonic() + 5
        while (counter.job(job.id).progress or {}).get("message") != "at 5" and time.monotonic() < deadline:
            time.sleep(0.02)
    finally:
        counter.store.update_job = real
    assert [w["message"] for w in writes] == ["at 1", "at 5"]   # the latest, when the window ended
    assert counter.job(job.id).progress == {"message": "at 5", "done": None, "total": None}


def test_no_progress_is_written_after_the_run_that_reported_it_has_ended(counter: Runtime) -> None:
    """The last reports of a run inside the journal's window were written by a timer thread after the
    job had ended: a write for nothing, and at a shutdown "could not journal the progress ... unable to
    open database file" once the store was gone."""
    job = asyncio.run(counter.run("count", "4"))
    assert job.status == "succeeded"
    writes: list[Any] = []
    real = counter.store.update_job
    counter.store.update_job = lambda job_id, **kw: writes.append(kw) or real(job_id, **kw)
    try:
        time.sleep(JOURNAL_EVERY_S + 0.5)  # past the window the last reports waited in
    finally:
        counter.store.update_job = real
    assert writes == []
    assert counter.job(job.id).progress == {"message": "counting 1", "done": 1.0, "total": 4.0}


# ---- MCP ---------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def http_url() -> Any:
    with http_server() as url:
        yield url


def mcp_runtime(root: Path, home: Path, server: str) -> Runtime:
    (root / "agents").mkdir(parents=True)
    shutil.copy(SERVER, root / "cards_server.py")
    (root / "plugin.yaml").write_text("name: mcp-progress\nversion: 1.0.0\n")
    (root / "agents" / "count.yaml").write_text(f"kind: mcp\nserver:\n{server}\ntool: count\nlimits:\n  timeout_s: 20\n")
    runtime = Runtime(home, flow_engine=FLOW_ENGINE)
    install_plugin(runtime, load_plugin(root), actor="test")
    return runtime


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_mcp_progress_notifications_reach_the_job(tmp_path: Path, transport: str, request: Any) -> None:
    server = (f"  command: {json.dumps(sys.executable)}\n  args: [cards_server.py]" if transport == "stdio"
              else f"  url: {request.getfixturevalue('http_url')}")
    runtime = mcp_runtime(tmp_path / "plugin", tmp_path / "home", server)
    try:
        seen: list[Progress] = []
        job = asyncio.run(runtime.run("count", '{"items": 4}', on_progress=seen.append))
        assert job.status == "succeeded" and job.output == {"result": "counted 4"}, job.failure_reason
        assert seen[0].message.startswith("calling tool count")
        counted = [p for p in seen if p.message.startswith("counted")]
        assert counted == [Progress(f"counted {i}", float(i), 4.0) for i in range(1, 5)]
    finally:
        servers().close()
        runtime.close()


# ---- flows -------------------------------------------------------------------------------------

def test_a_flow_reports_which_step_of_how_many_it_is_at(oz0_home: Path, tmp_path: Path) -> None:
    runtime = Runtime(oz0_home, flow_engine=FLOW_ENGINE)
    flows = {"release": RELEASE, "approval": approval()}
    install_plugin(runtime, load_plugin(flow_plugin(tmp_path / "acme", flows=flows)), actor="test")
    try:
        seen: list[str] = []
        job = asyncio.run(runtime.run("release", '{"repo": "acme/api", "pr": 42}',
                                      on_progress=lambda p: seen.append(p.message)))
        assert job.status == "succeeded"
        assert seen == ["step 1 of 3: review (acme-reviewer)", "step 2 of 3: merge (merger)"]

        async def until_asked() -> list[str]:
            asked: list[str] = []
            job, _ = runtime.submit("approval", '{"repo": "acme/api", "pr": 42}', requester="console:maria",
                                    channel="console")
            task = asyncio.ensure_future(runtime.execute(job.id, on_progress=lambda p: asked.append(p.message)))
            while runtime.job(job.id).status != "waiting":
                await asyncio.sleep(0.02)
            runtime.answer(job.id, "approve", action="accept", content={"approved": False}, by="console:maria")
            await task
            return asked

        assert asyncio.run(until_asked()) == ["step 1 of 4: review (acme-reviewer)", "step 2 of 4: approve",
                                              "step 4 of 4: done (merger)"]
    finally:
        runtime.close()


def test_a_durable_flow_journals_its_step_for_the_console(tmp_path: Path) -> None:
    """Under the job engine (a real DBOS workflow in its own process) the flow's job row says where it is."""
    home = tmp_path / "home"
    runtime = Runtime(home, flow_engine=FLOW_ENGINE)
    install_plugin(runtime, load_plugin(flow_plugin(tmp_path / "acme", flows={"approval": approval()})), actor="test")
    runtime.close()
    env = {k: v for k, v in os.environ.items() if not k.startswith("OZ0_")}
    env.update(OZ0_HOME=str(home), OZ0_REPLICA_ID="progress-test")
    proc = subprocess.Popen([sys.executable, str(SUPPORT / "flow_engine.py"), "ask"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline().strip()
        assert line.startswith("waiting "), proc.stderr.read() if proc.poll() is not None else line
        job_id = line.split()[1]
        reader = Runtime(home, flow_engine=FLOW_ENGINE)
        try:
            deadline = time.monotonic() + 15
            while (reader.job(job_id).progress or {}).get("message") != "step 2 of 4: approve":
                assert time.monotonic() < deadline, reader.job(job_id).progress
                time.sleep(0.1)
        finally:
            reader.close()
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)


def test_under_the_engine_a_step_s_own_reports_follow_its_line(oz0_home: Path, tmp_path: Path) -> None:
    root = counter_plugin(tmp_path / "counter")
    (root / "flows").mkdir()
    (root / "flows" / "twice.yaml").write_text(
        "description: Counts twice\ninput: text\noutput: text\n"
        "steps:\n  - {id: first, agent: count}\n  - {id: second, agent: count, input: \"'2'\"}\n")
    runtime = Runtime(oz0_home, flow_engine=FLOW_ENGINE)
    install_plugin(runtime, load_plugin(root), actor="test")
    runtime.close()
    env = {k: v for k, v in os.environ.items() if not k.startswith("OZ0_")}
    env.update(OZ0_HOME=str(oz0_home), OZ0_REPLICA_ID="progress-engine")
    done = subprocess.run([sys.executable, str(SUPPORT / "progress_engine.py"), "twice", "3"],
                          env=env, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["status"] == "succeeded", out
    assert out["progress"] == ["step 1 of 2: first (count)",
                               *[f"step 1 of 2: first (count) · counting {i}" for i in (1, 2, 3)],
                               "step 2 of 2: second (count)",
                               *[f"step 2 of 2: second (count) · counting {i}" for i in (1, 2)]]


# ---- the console, on another replica ----------------------------------------------------------

def test_the_console_job_page_shows_the_latest_progress_while_the_job_runs(counter: Runtime, oz0_home: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    release = oz0_home.parent / "release"
    monkeypatch.setenv("OZ0_TEST_RELEASE", str(release))
    job, _ = counter.submit("hold", "go", requester="t", channel="cli")
    worker = threading.Thread(target=lambda: asyncio.run(counter.execute(job.id)))
    worker.start()
    console = Runtime(oz0_home, flow_engine=FLOW_ENGINE)   # another runtime over the same journal, as another replica's console is
    try:
        with ConsoleThread(console) as server, httpx.Client(base_url=server.url, timeout=20) as http:
            deadline = time.monotonic() + 15
            while "warming up" not in (page := http.get(f"/jobs/{job.id}").text):
                assert time.monotonic() < deadline, page
                time.sleep(0.05)
            assert '<dd id="job-progress">warming up · 3/10 ▓▓▓░░░░░░░</dd>' in page
            assert '<meta http-equiv="refresh" content="2">' in page
            api = http.get(f"/v1/jobs/{job.id}").json()
            assert api["job"]["progress"] == {"message": "warming up", "done": 3, "total": 10}
            release.write_text("go")
            worker.join(30)
            done = http.get(f"/jobs/{job.id}").text
            assert "job-progress" not in done and 'http-equiv="refresh"' not in done and "released" in done
    finally:
        release.write_text("go")
        worker.join(30)
        console.close()


# ---- oz0 run -----------------------------------------------------------------------------------

def oz0_run(home: Path, *args: str) -> tuple[list[str], dict[str, str]]:
    env = {**os.environ, "OZ0_HOME": str(home)}
    env.pop("OZ0_DATABASE_URL", None)
    return [sys.executable, "-m", "oz0.adapters.cli", "run", *args], env


def test_oz0_run_prints_plain_progress_lines_when_stderr_is_not_a_terminal(counter: Runtime, oz0_home: Path) -> None:
    argv, env = oz0_run(oz0_home, "count", "3")
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    assert lines[:3] == ["… counting 1 (1/3)", "… counting 2 (2/3)", "… counting 3 (3/3)"]
    assert "\x1b" not in done.stderr and "counted 3" in done.stdout


def test_oz0_run_draws_a_rich_bar_on_a_terminal(counter: Runtime, oz0_home: Path) -> None:
    argv, env = oz0_run(oz0_home, "count", "40")
    env.update(COLUMNS="100", TERM="xterm")
    leader, follower = pty.openpty()
    proc = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=follower)
    os.close(follower)
    seen = b""
    try:
        while True:
            ready, _, _ = select.select([leader], [], [], 60)
            if not ready:
                break
            try:
                chunk = os.read(leader, 65536)
            except OSError:   # the pty closes when the process exits
                break
            if not chunk:
                break
            seen += chunk
    finally:
        out = proc.stdout.read().decode()
        proc.wait(30)
        os.close(leader)
    text = seen.decode("utf-8", "replace")
    assert proc.returncode == 0 and "counted 40" in out
    assert "counting" in text and "━" in text and "/40" in text, text[-2000:]
    assert "… counting" not in text   # a bar, not plain lines


# ---- help --------------------------------------------------------------------------------------

def test_help_falls_back_to_the_first_of_examples_when_there_is_no_example(counter: Runtime) -> None:
    from slack_sdk.web.async_client import AsyncWebClient

    from oz0.edge.runtime.access import AccessPolicy

    syntax = SlackWire(AsyncWebClient(token="x"), AccessPolicy()).syntax
    spec = counter.agent("helpful")
    card = agent_help_card(spec, syntax)
    assert dict(zip(card.keys, card.values))["example"] == "/ask helpful 3"
    assert help_card([spec], syntax).rows[0][3] == "/ask helpful 3"
