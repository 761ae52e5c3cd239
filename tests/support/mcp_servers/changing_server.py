"""An MCP server for the tests whose tool `lookup` changes its inputSchema when asked, and says so
(`notifications/tools/list_changed`, on the client's listen stream). Run as `python changing_server.py`.

- lookup(host) -> {host, zone}
- evolve(step): "compatible" gives lookup an optional `verbose`; "breaking" a required `region`
"""

from __future__ import annotations

from mcp.server.mcpserver import Context, MCPServer
from pydantic import BaseModel

server = MCPServer("oz0-test-changing")


class Place(BaseModel):
    host: str
    zone: str


def lookup(host: str) -> Place:
    return Place(host=host, zone="eu-1")


def lookup_verbose(host: str, verbose: bool = False) -> Place:
    return Place(host=host, zone="eu-1 (verbose)" if verbose else "eu-1")


def lookup_region(host: str, region: str) -> Place:
    return Place(host=host, zone=region)


STEPS = {"compatible": lookup_verbose, "breaking": lookup_region}
server.add_tool(lookup, name="lookup")


@server.tool()
async def evolve(step: str, ctx: Context) -> str:
    """Replace tool lookup by the version `step` names and tell the client its tools changed."""
    server.remove_tool("lookup")
    server.add_tool(STEPS[step], name="lookup")
    await ctx.notify_tools_changed()
    return f"lookup is now {step}"


if __name__ == "__main__":
    server.run()
