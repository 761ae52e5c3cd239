"""An MCP server for the cancel tests: a tool that takes its time, and a record of what the client said.
Run it as `python slow_server.py RECORD_FILE` (stdio); it appends to RECORD_FILE:

- `start ID` when the tool `slow` starts on request ID, `end ID` if it runs to its end;
- `cancelled ID REASON` for each `notifications/cancelled` the client sends (a middleware sees it
  before the SDK interrupts the call), so a test can tell that the call was cancelled on the wire.

- slow(seconds: float) -> "slept SECONDS s"
"""

from __future__ import annotations

import sys
from typing import Any

import anyio
from mcp.server.mcpserver import Context, MCPServer


def _note(line: str) -> None:
    with open(sys.argv[1], "a", encoding="utf-8") as f:
        f.write(line + "\n")


class RecordCancels:
    """Context-tier middleware: writes each notifications/cancelled the client sends."""

    async def __call__(self, ctx: Any, call_next: Any) -> Any:
        if ctx.method == "notifications/cancelled":
            params = dict(ctx.params or {})
            _note(f"cancelled {params.get('requestId')} {params.get('reason') or ''}".rstrip())
        return await call_next(ctx)


server = MCPServer("oz0-test-slow", middleware=[RecordCancels()])


@server.tool(description="Sleeps for a while, then says how long")
async def slow(seconds: float, ctx: Context) -> str:
    _note(f"start {ctx.request_id}")
    await anyio.sleep(seconds)
    _note(f"end {ctx.request_id}")
    return f"slept {seconds} s"


if __name__ == "__main__":
    server.run()
