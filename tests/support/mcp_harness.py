"""Shared by the MCP tests: the test server's path, a loopback streamable HTTP instance of it (or of any
server), and a plugin whose agents are a stdio server's tools."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from ports import free_port

if TYPE_CHECKING:
    from oz0.edge.runtime.runner import Runtime

SERVER = Path(__file__).resolve().parent / "mcp_servers" / "cards_server.py"


def wait_listening(port: int, proc: subprocess.Popen[bytes], *, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the HTTP MCP server exited with {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"the HTTP MCP server did not listen on {port} within {timeout} s")


@contextlib.contextmanager
def serving(argv: list[str], port: int, *, env: Mapping[str, str] | None = None,
            out: Path | None = None) -> Iterator[str]:
    """A streamable HTTP MCP server started as `argv` on 127.0.0.1:`port` (what it prints written to
    `out`), its URL yielded once it listens, stopped on exit."""
    with (out.open("wb") if out else open(os.devnull, "wb")) as sink:
        proc = subprocess.Popen(argv, env=dict(env) if env is not None else None, stdout=sink,
                                stderr=subprocess.STDOUT)
    try:
        wait_listening(port, proc)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        proc.wait(10)


@contextlib.contextmanager
def http_server() -> Iterator[str]:
    """The test server over streamable HTTP on 127.0.0.1 (uvicorn in a subprocess), stopped on exit."""
    port = free_port()
    with serving([sys.executable, str(SERVER), "http", str(port)], port) as url:
        yield url


def mcp_plugin(root: Path, name: str, argv: list[str], agents: Mapping[str, str], *, timeout_s: int = 30) -> Path:
    """A plugin folder at `root` named `name`, whose agents (agent name -> more lines of its file, such
    as `tool: NAME`) are tools of the stdio server started as `argv` in the plugin's folder."""
    (root / "agents").mkdir(parents=True, exist_ok=True)
    (root / "plugin.yaml").write_text(f"name: {name}\nversion: 1.0.0\n")
    for agent, extra in agents.items():
        (root / "agents" / f"{agent}.yaml").write_text(
            f"kind: mcp\nserver:\n  command: {json.dumps(argv[0])}\n  args: {json.dumps(argv[1:])}\n{extra}\n"
            f"limits:\n  timeout_s: {timeout_s}\n")
    return root


@contextlib.contextmanager
def installed(home: Path, plugin: Path) -> Iterator[Runtime]:
    """A runtime under `home` with `plugin` installed; its MCP servers and the runtime closed on exit."""
    from oz0.edge.flows.engine import FLOW_ENGINE
    from oz0.edge.mcp.pool import servers
    from oz0.edge.plugins.manifest import load_plugin
    from oz0.edge.runtime.install import install_plugin
    from oz0.edge.runtime.runner import Runtime

    runtime = Runtime(home, flow_engine=FLOW_ENGINE)
    try:
        install_plugin(runtime, load_plugin(plugin), actor="test")
        yield runtime
    finally:
        servers().close()
        runtime.close()
