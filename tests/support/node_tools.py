"""The Node tools the suite runs (installed by `make node` from tests/support/node/package-lock.json): the
reference MCP server `@modelcontextprotocol/server-everything` and Redocly's OpenAPI linter. A test
that needs one skips, naming it, when Node or the installed package is missing."""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp_harness import serving
from ports import free_port

NODE_DIR = Path(__file__).resolve().parent / "node"
EVERYTHING = NODE_DIR / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"
REDOCLY = NODE_DIR / "node_modules" / "@redocly" / "cli" / "bin" / "cli.js"

# The tools server-everything 2026.8.31 lists to a client that declares no capability; with the
# elicitation capability it adds trigger-elicitation-request (and more: see test_mcp_everything).
EVERYTHING_TOOLS = {
    "echo", "get-annotated-message", "get-env", "get-resource-links", "get-resource-reference",
    "get-structured-content", "get-sum", "get-tiny-image", "gzip-file-as-resource", "toggle-simulated-logging",
    "toggle-subscriber-updates", "trigger-long-running-operation", "simulate-research-query",
}


def node() -> str:
    found = shutil.which("node")
    if found is None:
        pytest.skip("Node.js is not installed: the tests of @modelcontextprotocol/server-everything need it")
    return found


def installed(path: Path, package: str) -> Path:
    node()
    if not path.is_file():
        pytest.skip(f"{package} is not installed: run `make node` (npm ci in tests/support/node)")
    return path


def everything_argv() -> list[str]:
    """The stdio command of server-everything."""
    return [node(), str(installed(EVERYTHING, "@modelcontextprotocol/server-everything")), "stdio"]


@contextlib.contextmanager
def everything_http(log: Path) -> Iterator[str]:
    """server-everything over streamable HTTP on 127.0.0.1 (what it logs, such as each session it
    opens, written to `log`), stopped on exit."""
    argv = [node(), str(installed(EVERYTHING, "@modelcontextprotocol/server-everything")), "streamableHttp"]
    port = free_port()
    with serving(argv, port, env={**os.environ, "PORT": str(port)}, out=log) as url:
        yield url


def redocly_argv() -> list[str]:
    return [node(), str(installed(REDOCLY, "@redocly/cli"))]
