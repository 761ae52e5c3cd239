"""An MCP server for the person-step tests: tools that ask the user (`elicitation/create`, form mode)
during a call, and tools with annotations (a destructive one, a read-only one).

Run it as `python elicit_server.py` (stdio). Tools:

- deploy(service): asks "Deploy SERVICE to production?" with {confirm: boolean, note: string};
  answers what the user did (accepted with the note, declined, or cancelled)
- drop_table(table): destructiveHint true: answers "dropped TABLE" (and counts drops in $DROPS_FILE)
- read_table(table): readOnlyHint true (and destructiveHint true, which readOnlyHint overrides)
"""

from __future__ import annotations

import os

from mcp.server.mcpserver import Context, MCPServer
from mcp_types import ToolAnnotations
from pydantic import BaseModel, Field

server = MCPServer("oz0-test-elicit", title=os.environ.get("ELICIT_SERVER_TITLE"))


class Confirm(BaseModel):
    confirm: bool = Field(description="Go ahead?")
    note: str = Field(default="", description="Anything to add")


@server.tool(description="Deploy a service, after asking the user to confirm")
async def deploy(service: str, ctx: Context) -> str:
    result = await ctx.elicit(f"Deploy {service} to production?", schema=Confirm)
    if result.action == "accept":
        data = result.data
        return f"{service}: {'deployed' if data.confirm else 'not deployed'} ({data.note or 'no note'})"
    return f"{service}: the user chose {result.action}"


@server.tool(description="Drop a table", annotations=ToolAnnotations(title="Drop table", destructiveHint=True,
                                                                      idempotentHint=False, openWorldHint=False))
def drop_table(table: str) -> str:
    drops = os.environ.get("DROPS_FILE")
    if drops:
        with open(drops, "a", encoding="utf-8") as f:
            f.write(table + "\n")
    return f"dropped {table}"


@server.tool(description="Read a table", annotations=ToolAnnotations(readOnlyHint=True, destructiveHint=True))
def read_table(table: str) -> str:
    return f"rows of {table}"


if __name__ == "__main__":
    server.run("stdio")
