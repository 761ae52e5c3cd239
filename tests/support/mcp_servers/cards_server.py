"""An MCP server for the tests: one tool per card the edge draws, plus tools that fail on purpose.

Run it as `python cards_server.py` (stdio) or `python cards_server.py http PORT` (streamable HTTP
on 127.0.0.1). Tools:

- deploys: a list (the SDK wraps it as {"result": [...]}) -> table
- disk: an object -> key-values
- config_change: an object whose schema has x-oz0-diff -> diff
- health: a QZX Result Contract envelope -> status header
- fail: raises -> isError with the tool's text
- broken: an object that breaks its own outputSchema (the schema says maximum 100) -> not drawn
- notes: plain text, no outputSchema -> markdown text
- json_text: JSON as text, no outputSchema -> drawn as that JSON
- remote_ref: its outputSchema has a remote $ref -> a clear error naming it
- approve: answers resultType input_required -> reported, not drawn
- sleep: sleeps, to test call timeouts
- crash: exits the server process, to test restarts
- count: sends `notifications/progress` (i of N, "counted i") for each of N items, when the call
  carried a progressToken; answers how many it counted
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import InputRequiredResult
from pydantic import BaseModel, ConfigDict, Field

server = MCPServer("oz0-test-cards")


class Deploy(BaseModel):
    model_config = ConfigDict(json_schema_extra={"x-oz0-order": ["service", "version"]})
    version: str
    service: str
    ok: bool


class Disk(BaseModel):
    host: str
    mount: str
    used_percent: float = Field(json_schema_extra={"maximum": 100})


class ConfigChange(BaseModel):
    model_config = ConfigDict(json_schema_extra={"x-oz0-diff": {"before": "before", "after": "after"}})
    file: str
    before: str
    after: str


class Remote(BaseModel):
    host: str = Field(json_schema_extra={"$ref": "https://schemas.example.com/host.json"})


class HealthMeta(BaseModel):
    command: str
    duration_ms: float


class Health(BaseModel):
    success: bool
    message: str
    warnings: list[str] = []
    meta: HealthMeta
    checks: list[dict[str, Any]]


@server.tool()
def deploys(service: str = "api") -> list[Deploy]:
    """Recent deploys of a service."""
    return [Deploy(version="1.4.2", service=service, ok=True), Deploy(version="1.4.3", service=service, ok=False)]


@server.tool()
def disk(host: str) -> Disk:
    """Disk use of one host."""
    return Disk(host=host, mount="/var", used_percent=71.5)


@server.tool()
def config_change(file: str = "app.ini") -> ConfigChange:
    """The last change to a config file."""
    return ConfigChange(file=file, before="workers = 2\ntimeout = 30\n", after="workers = 4\ntimeout = 30\n")


@server.tool()
def health() -> Health:
    """Health checks, as a QZX result."""
    return Health(success=True, message="All 2 checks passed", warnings=["cache warming"],
                  meta=HealthMeta(command="health", duration_ms=12.5),
                  checks=[{"name": "db", "ok": True}, {"name": "queue", "ok": True}])


@server.tool()
def fail(reason: str = "the backup volume is offline") -> Disk:
    """Always fails with a tool error."""
    raise ToolError(f"Cannot read disk use: {reason}")


@server.tool()
def broken(host: str = "db-1") -> Disk:
    """Answers with a value its own outputSchema forbids (used_percent over the maximum of 100)."""
    return Disk(host=host, mount="/data", used_percent=140.5)


@server.tool(structured_output=False)
def notes() -> str:
    """Release notes as markdown text."""
    return "# Release 1.4\n\n- faster *search*\n- fixed login"


@server.tool(structured_output=False)
def json_text() -> str:
    """JSON, but as text content only."""
    return '{"queue": "mail", "depth": 12}'


@server.tool()
def remote_ref() -> Remote:
    """Its outputSchema points at a remote $ref, which the edge refuses to fetch."""
    return Remote(host="db-1")


@server.tool()
def approve(change: str = "restart db-1") -> InputRequiredResult:
    """Asks for more input before it answers (resultType input_required)."""
    return InputRequiredResult(request_state=f"approval needed for {change}")


@server.tool()
def sleep(seconds: float) -> str:
    """Sleeps, then answers."""
    time.sleep(seconds)
    return "awake"


@server.tool()
async def count(items: int, ctx: Context, every_s: float = 0.05) -> str:
    """Counts to `items`, reporting progress after each one."""
    for i in range(1, items + 1):
        await asyncio.sleep(every_s)
        await ctx.report_progress(i, items, f"counted {i}")
    return f"counted {items}"


@server.tool()
def crash() -> str:
    """Ends the server process at once, as a crash would."""
    print("cards_server: crashing on purpose", file=sys.stderr, flush=True)
    os._exit(3)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "http":
        import uvicorn  # as server.run("streamable-http") does, but a client's open session ends it within 1 s

        uvicorn.run(server.streamable_http_app(host="127.0.0.1"), host="127.0.0.1", port=int(sys.argv[2]),
                    log_level="warning", timeout_graceful_shutdown=1)
    else:
        print("cards_server: ready on stdio", file=sys.stderr, flush=True)
        server.run()
