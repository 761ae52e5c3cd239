"""OZ0_DATABASE_URL=postgresql://... moves the journal, plugin store and audit log to a real Postgres,
started by the test in a temporary folder (skipped where the Postgres server binaries are missing)."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from oz0.edge.plugins.manifest import load_plugin
from oz0.edge.plugins.install import install_plugin
from oz0.edge.runtime.runner import Runtime
from plugin_kit import make_plugin


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def postgres_url():
    if shutil.which("initdb") is None or shutil.which("postgres") is None:
        pytest.skip("the Postgres server binaries (initdb, postgres) are not installed")
    pytest.importorskip("psycopg")
    folder = Path(tempfile.mkdtemp(prefix="oz0-pg-"))  # not under pytest's 0700 tmp: Postgres runs as its own user
    data = folder / "data"
    as_user: list[str] = []
    if os.geteuid() == 0:  # Postgres refuses to run as root
        if shutil.which("runuser") is None:
            pytest.skip("running as root without runuser to start Postgres as another user")
        shutil.chown(folder, "postgres")
        as_user = ["runuser", "-u", "postgres", "--"]
    made = subprocess.run([*as_user, "initdb", "-D", str(data), "-U", "oz0", "--auth=trust", "-E", "UTF8"],
                          capture_output=True, text=True, timeout=120)
    assert made.returncode == 0, made.stderr
    port = _free_port()
    server = subprocess.Popen([*as_user, "postgres", "-D", str(data), "-p", str(port), "-h", "127.0.0.1",
                               "-k", str(folder)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"postgresql://oz0@127.0.0.1:{port}/postgres"
    import psycopg
    deadline = time.monotonic() + 30
    while True:
        try:
            psycopg.connect(f"host=127.0.0.1 port={port} user=oz0 dbname=postgres").close()
            break
        except psycopg.OperationalError:
            if time.monotonic() > deadline or server.poll() is not None:
                server.kill()
                pytest.fail("Postgres did not start")
            time.sleep(0.2)
    yield url
    postmaster = int((data / "postmaster.pid").read_text().split()[0])
    os.kill(postmaster, signal.SIGINT)  # Postgres's fast shutdown (runuser does not pass signals on)
    server.wait(timeout=30)
    shutil.rmtree(folder, ignore_errors=True)


def test_the_journal_the_plugin_store_and_the_audit_log_live_in_postgres(tmp_path, postgres_url, monkeypatch):
    monkeypatch.setenv("OZ0_DATABASE_URL", postgres_url)
    root = make_plugin(tmp_path / "plugin", agents={"echo": {
        "kind": "python", "entry": "agent:echo", "input_schema": "schemas/in.json", "output": "text"}},
        files={"agent.py": "def echo(value):\n    return value['say']\n",
               "schemas/in.json": {"type": "object", "required": ["say"], "properties": {"say": {"type": "string"}}}})
    one = Runtime(tmp_path / "home-a")
    install_plugin(one, load_plugin(root))
    job = asyncio.run(one.run("echo", '{"say": "from postgres"}', dedupe_key="evt-1", reply_to={"ts": "1.2"}))
    assert (job.status, job.output) == ("succeeded", "from postgres")
    # a second replica with its own OZ0_HOME sees the same journal, store and audit log
    two = Runtime(tmp_path / "home-b")
    assert two.job(job.id) == job
    again, created = two.submit("echo", '{"say": "x"}', dedupe_key="evt-1")
    assert (again.id, created) == (job.id, False)
    assert [v.plugin for v in two.installed()] == ["testkit"]
    assert two.installed()[0].agents[0].input_schema["required"] == ["say"]
    assert two.audit_log()[0].action == "plugin.install"
    bad = asyncio.run(two.run("echo", '{"say": 1}'))
    assert bad.failure_kind == "InvalidInput"
    assert not (tmp_path / "home-a" / "oz0.db").exists()
    one.close()
    two.close()
