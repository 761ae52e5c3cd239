"""`oz0 serve` as a user runs it: a subprocess that answers on its port and stops cleanly on a signal."""

from __future__ import annotations

import asyncio
import logging
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from console_plugin import installed_runtime

from oz0.edge.flows.engine import FLOW_ENGINE

OZ0 = str(Path(sys.executable).with_name("oz0"))


def clean_env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("SLACK_", "DISCORD_", "OZ0_CONSOLE_"))}
    env.update(OZ0_HOME=str(home), **extra)
    env.pop("OZ0_DATABASE_URL", None)
    return env


def start(home: Path, *args: str, **env: str) -> tuple[subprocess.Popen, str, list[str]]:
    """`oz0 serve` started; returns the process, the console URL it logged, and the log lines so far."""
    proc = subprocess.Popen([OZ0, "serve", "--port", "0", *args], env=clean_env(home, **env),
                            stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    lines: list[str] = []
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if not line:
            break
        lines.append(line.rstrip())
        found = re.search(r"console listening on (http://\S+)", line)
        if found:
            return proc, found.group(1), lines
    proc.kill()
    raise AssertionError("oz0 serve did not log its address:\n" + "\n".join(lines))


@pytest.fixture
def home(tmp_path):
    runtime = installed_runtime(tmp_path / "home")
    runtime.close()
    return tmp_path / "home"


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_serve_answers_on_its_port_and_exits_0_on_a_signal(home, sig):
    proc, url, lines = start(home)
    try:
        assert url.startswith("http://127.0.0.1:")
        assert any("slack: not configured" in line for line in lines)
        assert any("discord: not configured" in line for line in lines)
        assert any("agent(s) installed: deploys, echo" in line for line in lines)
        r = httpx.post(f"{url}/v1/agents/echo/runs", json="over the wire", timeout=20)
        assert r.status_code == 200 and r.json()["output"] == "You said: **over the wire**"
        assert "Agents" in httpx.get(url, timeout=20).text
        proc.send_signal(sig)
        assert proc.wait(timeout=20) == 0
        rest = proc.stderr.read()
        assert "stopping cleanly" in rest and "console stopped" in rest and "Traceback" not in rest
    finally:
        proc.kill()
        proc.stderr.close()
    with pytest.raises(httpx.ConnectError):
        httpx.get(url, timeout=2)


def test_off_loopback_without_a_token_refuses_to_start(home):
    proc = subprocess.run([OZ0, "serve", "--host", "0.0.0.0", "--port", "0"], env=clean_env(home),
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode == 2
    assert "oz0: error: OZ0_CONSOLE_HOST=0.0.0.0 is not a loopback address" in proc.stderr
    assert "OZ0_CONSOLE_TOKEN" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.parametrize(("env", "message"), [
    ({"OZ0_CONSOLE_TOKEN": "short"}, "oz0: error: OZ0_CONSOLE_TOKEN is 5 characters; use at least 16"),
    ({"OZ0_CONSOLE_PORT": "eighty"}, "oz0: error: OZ0_CONSOLE_PORT='eighty' is not a port number (0 to 65535)"),
    ({"OZ0_CONSOLE_PORT": "70000"}, "oz0: error: OZ0_CONSOLE_PORT=70000 is not a port number (0 to 65535)"),
])
def test_bad_console_settings_name_the_variable_and_exit_2(home, monkeypatch, capsys, env, message):
    from oz0.adapters.cli import main

    for key, value in clean_env(home, **env).items():
        monkeypatch.setenv(key, value)
    assert main(["serve"]) == 2
    assert capsys.readouterr().err.startswith(message)


def test_a_port_in_use_is_one_clear_error_and_exit_1(home):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        proc = subprocess.run([OZ0, "serve", "--port", str(port)], env=clean_env(home),
                              capture_output=True, text=True, timeout=30)
    assert proc.returncode == 1
    assert f"the console could not listen on 127.0.0.1:{port}" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_missing_channel_module_is_a_log_line_not_a_crash(home, caplog):
    from oz0.adapters.cli.serve import serve_channels
    from oz0.edge.runtime.runner import Runtime

    runtime = Runtime(home, flow_engine=FLOW_ENGINE)

    async def main() -> int:
        task = asyncio.create_task(serve_channels(
            runtime, env={"OZ0_CONSOLE_PORT": "0"},
            channels={"console": "oz0.adapters.console.server", "pager": "oz0.adapters.no_such_pager"}))
        for _ in range(200):
            if any("console listening on" in r.getMessage() for r in caplog.records):
                break
            await asyncio.sleep(0.02)
        os.kill(os.getpid(), signal.SIGINT)  # serve_channels owns SIGINT while it runs
        return await task

    with caplog.at_level(logging.INFO):
        code = asyncio.run(main())
    runtime.close()
    assert code == 0
    messages = [r.getMessage() for r in caplog.records]
    assert "pager: channel module oz0.adapters.no_such_pager is not available; skipped" in messages
    assert any(m.startswith("console listening on http://127.0.0.1:") for m in messages)
