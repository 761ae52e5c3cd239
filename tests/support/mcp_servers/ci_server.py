"""An MCP server for the tool-loop tests: CI tools that count their calls, so a test can tell a call
made twice from one made once. Run it as `python ci_server.py CALLS_FILE` (stdio); each call appends
`TOOL ARGS-JSON` to CALLS_FILE.

- ci_log(run_id: int) -> {run_id, failed_step, log}
- delete_branch(name: str): destructiveHint true -> "deleted NAME"

A second argument names a file: while it exists when the server starts, the server lists no annotations
(a server that stopped saying what it said at install).
"""

from __future__ import annotations

import json
import os
import sys

from mcp.server.mcpserver import MCPServer
from mcp_types import ToolAnnotations
from pydantic import BaseModel

server = MCPServer("oz0-test-ci")


def _count(tool: str, args: dict) -> None:
    path = sys.argv[1] if len(sys.argv) > 1 else ""
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(f"{tool} {json.dumps(args, sort_keys=True)}\n")


class Log(BaseModel):
    run_id: int
    failed_step: str
    log: str


@server.tool(description="The log of a CI run: which step failed and its last lines")
def ci_log(run_id: int) -> Log:
    _count("ci_log", {"run_id": run_id})
    return Log(run_id=run_id, failed_step="test", log=f"run {run_id}: 1 test failed (flaky: timeout)")


HINTS = None if len(sys.argv) > 2 and os.path.exists(sys.argv[2]) else ToolAnnotations(destructiveHint=True)


@server.tool(description="Delete a git branch", annotations=HINTS)
def delete_branch(name: str) -> str:
    _count("delete_branch", {"name": name})
    return f"deleted {name}"


if __name__ == "__main__":
    server.run()
