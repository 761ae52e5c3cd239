"""A command agent that sleeps with a child of its own, for the cancel tests: `sleeper` starts `sleep
300` in its process group, writes {job, pgid, pids} to $OZ0_TEST_PIDS, reports progress, and sleeps. A test stops its
job and checks that every process of the group is gone."""

from __future__ import annotations

import json
import os
import textwrap
import time
from pathlib import Path

from oz0.edge.flows.engine import FLOW_ENGINE
from oz0.edge.plugins.manifest import load_plugin
from oz0.edge.runtime.install import install_plugin
from oz0.edge.runtime.runner import Runtime

__all__ = ["SLEEPER_FILES", "alive", "install_sleeper", "started", "wait_gone"]

SLEEPER_FILES = {
    "agents/sleeper.yaml": """\
        description: Sleeps (with a child process) until it is stopped
        kind: command
        command: [python, sleeper.py]
        input: text
        output: text
        limits: {timeout_s: 300, max_attempts: 1}
        """,
    "flows/nap.yaml": """\
        description: Naps through its one step, the sleeper
        input: text
        output: text
        steps:
          - id: nap
            agent: sleeper
        """,
    "sleeper.py": """\
        import json, os, subprocess, sys, time
        child = subprocess.Popen(["sleep", "300"])
        with open(os.environ["OZ0_TEST_PIDS"], "a", encoding="utf-8") as f:
            f.write(json.dumps({"job": os.environ["OZ0_JOB_ID"], "pgid": os.getpgid(0),
                                "pids": [os.getpid(), child.pid]}) + "\\n")
        sys.stdin.read()
        print("sleeping until stopped", file=sys.stderr, flush=True)
        time.sleep(300)
        """,
}


def started(path: Path, *, timeout: float = 30.0) -> dict:
    """The first sleeper's record, once it has started."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and path.read_text(encoding="utf-8").strip():
            return json.loads(path.read_text(encoding="utf-8").splitlines()[0])
        time.sleep(0.05)
    raise AssertionError("the sleeper never started")


def alive(pid: int) -> bool:
    """Whether the process runs (a zombie waiting for a reaper has ended)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


def wait_gone(pids: list[int], *, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while any(alive(p) for p in pids):
        if time.monotonic() > deadline:
            raise AssertionError(f"still running: {[p for p in pids if alive(p)]}")
        time.sleep(0.05)
    os.sched_yield()


def install_sleeper(home: Path, *, database_url: str | None = None) -> None:
    """Install the `sleepers` plugin (the sleeper agent) under `home`."""
    runtime = Runtime(home, database_url=database_url, flow_engine=FLOW_ENGINE)
    where = home.parent / f"{home.name}-plugin"
    files = {"plugin.yaml": "name: sleepers\nversion: 1.0.0\ndescription: agents for the cancel tests\n",
             **SLEEPER_FILES}
    for relative, text in files.items():
        (where / relative).parent.mkdir(parents=True, exist_ok=True)
        (where / relative).write_text(textwrap.dedent(text), encoding="utf-8")
    try:
        install_plugin(runtime, load_plugin(where), actor="test")
    finally:
        runtime.close()
