"""An MCP server that leaks its credential everywhere it can, for the redaction tests.

Its credential is $API_TOKEN (the agent file sets it from `${OZ0_TEST_KEY}` in the server's `env`, or
the test starts the HTTP server with it, the agent sending it as a `${OZ0_TEST_KEY}` header). Run it as
`python leaky_server.py` (stdio) or `python leaky_server.py http PORT`; with `crash`, or once the file
$CRASH_IF exists, it prints the token to stderr and exits before the handshake. Tools:

- leak(): a progress notification and the answer quoting the token (base64 too)
- fail(): an isError result quoting it
- ask(): an elicitation whose message and field title quote it
"""

from __future__ import annotations

import base64
import os
import sys

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel, Field

TOKEN = os.environ.get("API_TOKEN", "")
server = MCPServer("leaky")


@server.tool(description="Leak the token in progress and in the answer")
async def leak(ctx: Context) -> dict:
    await ctx.report_progress(1, 2, f"using token {TOKEN}")
    return {"echo": f"env API_TOKEN={TOKEN}", "b64": base64.b64encode(TOKEN.encode()).decode()}


@server.tool(description="Fail quoting the token")
def fail() -> str:
    raise ToolError(f"auth failed for {TOKEN}")


class Token(BaseModel):
    ok: bool = Field(description=f"Is {TOKEN} yours?")


@server.tool(description="Ask the user, quoting the token")
async def ask(ctx: Context) -> str:
    result = await ctx.elicit(f"Paste a new token to replace {TOKEN}", schema=Token)
    return result.action


if __name__ == "__main__":
    if sys.argv[1:2] == ["crash"] or os.path.exists(os.environ.get("CRASH_IF") or "/nonexistent"):
        print(f"fatal: cannot log in with {TOKEN}", file=sys.stderr, flush=True)
        sys.exit(3)
    if sys.argv[1:2] == ["http"]:
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run()
