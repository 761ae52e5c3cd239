"""Real `oz0 serve` replicas for the replica and crash tests and bench/replicas.py: subprocesses with the
Slack channel in HTTP mode against the loopback stand-in, one OZ0_HOME each, one journal (a SQLite file
or a Postgres database). Agents append to a runs file, so a test counts agent runs across processes."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from chat_plugin import install_chat_plugin
from slack_standin import BOT_TOKEN, SIGNING_SECRET

from oz0.edge.flows.engine import FLOW_ENGINE
from oz0.edge.runtime.runner import Runtime

__all__ = ["IMPL", "Replica", "bench_replicas", "install_replica_plugin", "runs"]

OZ0 = str(Path(sys.executable).with_name("oz0"))

# `echo` records each start and end of a run (its process id too) in $OZ0_TEST_RUNS; `sleep N` is slow.
IMPL = """\
    import asyncio, os

    def _note(what, text):
        with open(os.environ["OZ0_TEST_RUNS"], "a", encoding="utf-8") as f:
            f.write(f"{what} {os.getpid()} {text}\\n")

    async def echo(text):
        _note("start", text)
        if text.startswith("sleep "):
            await asyncio.sleep(float(text.split()[1]))
        _note("end", text)
        return "echo: " + text

    def noop(text):
        return text

    def deploys(value):
        return [{"service": value["service"], "n": i, "status": "ok"} for i in range(value.get("rows", 3))]

    def boom(text):
        raise RuntimeError("the database is on fire")
    """

EXTRA = {"agents/noop.yaml": "description: Answers its input at once\nkind: python\nentry: impl:noop\n"
                             "input: text\noutput: text\n",
         "agents/single.yaml": "description: Like echo, one job at a time across every replica\nkind: python\n"
                               "entry: impl:echo\ninput: text\noutput: text\nlimits: {concurrency: 1}\n"}


def install_replica_plugin(home: Path, *, database_url: str | None = None,
                           extra: dict[str, str] | None = None) -> None:
    runtime = Runtime(home, database_url=database_url, flow_engine=FLOW_ENGINE)
    try:
        install_chat_plugin(runtime, home.parent / f"{home.name}-plugin", name="replicas", impl=IMPL,
                            extra={**EXTRA, **(extra or {})})
    finally:
        runtime.close()


def runs(path: Path) -> list[tuple[str, int, str]]:
    """The runs file: (start|end, pid, input) lines."""
    if not path.exists():
        return []
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        what, pid, text = line.split(" ", 2)
        out.append((what, int(pid), text))
    return out


@dataclass
class Replica:
    """One `oz0 serve` process; its log lines are read on a thread (so the pipe never fills)."""

    name: str
    home: Path
    env: dict[str, str]
    port: int = 0   # where the channel it was started for listens: read from that channel's ready line
    process: subprocess.Popen | None = None
    lines: list[str] = field(default_factory=list)

    @classmethod
    def make(cls, name: str, home: Path, *, api_url: str, runs_file: Path,
             database_url: str | None = None, **extra: str) -> Replica:
        """A replica whose Slack channel listens on a port the system picks when it starts (a port picked
        here and handed over could be taken by then: the replica would fail to bind it)."""
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("SLACK_", "DISCORD_", "OZ0_"))}
        env.update(OZ0_HOME=str(home), OZ0_REPLICA_ID=name, SLACK_BOT_TOKEN=BOT_TOKEN,
                   SLACK_SIGNING_SECRET=SIGNING_SECRET, SLACK_API_URL=api_url, OZ0_SLACK_HOST="127.0.0.1",
                   OZ0_SLACK_PORT="0", OZ0_TEST_RUNS=str(runs_file), **extra)
        if database_url:
            env["OZ0_DATABASE_URL"] = database_url
        return cls(name, home, env)

    @property
    def events_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/slack/events"

    def start(self, *, timeout: float = 60.0, ready: str = r"Slack channel: HTTP events at") -> Replica:
        """Start `oz0 serve`; return once its channel listens (the log line `ready`: Slack's by default),
        with `port` the one that line names (a restart listens on a new one)."""
        self.lines = []
        mark = len(self.lines)
        self.process = subprocess.Popen([OZ0, "serve", "--port", "0"], env=self.env, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.PIPE, text=True)
        threading.Thread(target=self._read, args=(self.process,), daemon=True).start()
        line = self.wait_log(ready, timeout=timeout, since=mark)
        named = re.search(r"http://[^\s/]+:(\d+)", line)
        if named is not None:
            self.port = int(named.group(1))
        return self

    def _read(self, process: subprocess.Popen) -> None:
        assert process.stderr is not None
        for line in process.stderr:
            self.lines.append(line.rstrip())

    def wait_log(self, pattern: str, *, timeout: float = 30.0, since: int = 0) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for line in self.lines[since:]:
                if re.search(pattern, line):
                    return line
            if self.process is not None and self.process.poll() is not None:
                time.sleep(0.2)
                raise AssertionError(f"{self.name} exited ({self.process.returncode}):\n" + "\n".join(self.lines))
            time.sleep(0.05)
        raise AssertionError(f"{self.name} never logged {pattern!r}:\n" + "\n".join(self.lines))

    def kill(self) -> None:
        """SIGKILL: no chance to journal, drain or report anything."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(timeout=10)

    def stop(self) -> int | None:
        if self.process is None:
            return None
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        return self.process.returncode


def bench_replicas(tmp: Path, *, api_url: str, database_url: str, **extra: str) -> list[Replica]:
    """The two replicas of the benchmarks (bench-a, bench-b), each with the plugin installed, not started."""
    made = []
    for name in ("bench-a", "bench-b"):
        home = tmp / f"home-{name}"
        install_replica_plugin(home, database_url=database_url)
        made.append(Replica.make(name, home, api_url=api_url, runs_file=tmp / "runs.txt",
                                 database_url=database_url, **extra))
    return made
