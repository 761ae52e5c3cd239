"""One MCP client session as the edge uses it: listing tools, calling one, and reading the SDK's
errors (nested exception groups) into an `McpFailure`, never a bare SDK exception.

The SDK client checks `structuredContent` against the tool's `outputSchema` itself (python-jsonschema)
and raises, dropping the result. The edge checks with its own validator (edge.contracts: no remote
`$ref`, the same rules as every other contract) so that a result that breaks its schema is still
shown as a card that says which value broke which rule; the SDK's check is turned off on our sessions.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Iterator, Mapping
from typing import Any, TypeVar

from oz0.edge.mcp.spec import McpFailure, ServerSpec, ToolInfo
from oz0.edge.model.progress import Progress, ProgressSink

__all__ = [
    "MAX_TOOL_PAGES",
    "call_tool",
    "describe",
    "edge_session",
    "is_connection_error",
    "leaves",
    "list_tools",
    "pick",
    "protocol_failure",
    "timed",
]

MAX_TOOL_PAGES = 50

_T = TypeVar("_T")


def leaves(exc: BaseException) -> Iterator[BaseException]:
    """The exceptions inside (nested) exception groups, as anyio task groups raise them."""
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            yield from leaves(inner)
    else:
        yield exc


def describe(exc: BaseException) -> str:
    found = list(leaves(exc))
    return "; ".join(f"{type(e).__name__}: {e}" if str(e) else type(e).__name__ for e in found[:3])


def is_connection_error(exc: BaseException) -> bool:
    import httpx2
    from mcp.shared.exceptions import MCPError
    from mcp_types import CONNECTION_CLOSED

    for leaf in leaves(exc):
        if isinstance(leaf, (httpx2.ConnectError, httpx2.ConnectTimeout, ConnectionError)):
            return True
        if isinstance(leaf, MCPError) and leaf.code == CONNECTION_CLOSED:
            return True
    return False


async def _skip_sdk_validation(name: str, result: Any) -> None:
    """Stands in for ClientSession.validate_tool_result: the edge validates with its own contracts."""


def edge_session(client: Any) -> None:
    client.session.validate_tool_result = _skip_sdk_validation


def _tool_info(tool: Any) -> ToolInfo:
    wire = tool.model_dump(by_alias=True, exclude_none=True, mode="json")
    return ToolInfo(name=wire["name"], description=wire.get("description") or "", title=wire.get("title"),
                    input_schema=wire.get("inputSchema"), output_schema=wire.get("outputSchema"),
                    annotations=wire.get("annotations") or None)


async def list_tools(client: Any) -> dict[str, ToolInfo]:
    tools: dict[str, ToolInfo] = {}
    cursor = None
    for _ in range(MAX_TOOL_PAGES):
        page = await client.list_tools(cursor=cursor)
        for tool in page.tools:
            tools[tool.name] = _tool_info(tool)
        cursor = page.next_cursor
        if cursor is None:
            return tools
    raise McpFailure("Crashed", f"the tool listing did not end after {MAX_TOOL_PAGES} pages")


async def call_tool(client: Any, name: str, arguments: Mapping[str, Any], *,
                    on_progress: ProgressSink | None = None) -> dict[str, Any]:
    """tools/call, the result as its wire-shaped (camelCase) dict; an input_required result is returned, not driven.

    With `on_progress` the request carries `_meta.progressToken` (the SDK uses the request id) and
    each `notifications/progress` for it (progress, total, message) reaches `on_progress` as a Progress.
    """
    async def forward(progress: float, total: float | None, message: str | None) -> None:
        if on_progress is not None:
            on_progress(Progress.of(message or f"tool {name}", progress, total))

    result = await client.session.call_tool(name, dict(arguments),
                                            progress_callback=forward if on_progress is not None else None,
                                            allow_input_required=True)
    dumped: dict[str, Any] = result.model_dump(by_alias=True, exclude_none=True, mode="json")
    return dumped


async def timed(awaitable: Awaitable[_T], timeout_s: float, doing: str) -> _T:
    try:
        return await asyncio.wait_for(awaitable, timeout_s)
    except TimeoutError:
        raise McpFailure("Timeout", f"no answer within {timeout_s:g} s while {doing}") from None


def pick(tools: Mapping[str, ToolInfo], name: str, server: ServerSpec) -> ToolInfo:
    if name not in tools:
        known = ", ".join(sorted(tools)) or "none"
        raise McpFailure("Misconfigured", f"the MCP server `{server.label()}` has no tool {name!r}; its tools: {known}")
    return tools[name]


def protocol_failure(exc: BaseException, tool: str | None, server: ServerSpec) -> McpFailure:
    from mcp.shared.exceptions import MCPError

    leaf = next((e for e in leaves(exc) if isinstance(e, MCPError)), None)
    what = f"tool {tool!r}" if tool else "the tool listing"
    if leaf is not None and tool and "elicitation/create" in leaf.message:  # the SDK's words for a missing back-channel
        return McpFailure("Rejected", f"tool {tool!r} of `{server.label()}` asked a person for answers (MCP "
                                      "elicitation) and this channel cannot ask, so the tool stopped; run it from "
                                      "the console, Slack or Discord")
    if leaf is not None:
        return McpFailure("Rejected", f"the MCP server `{server.label()}` refused {what}: "
                                           f"{leaf.message} (error {leaf.code})")
    return McpFailure("Crashed", f"the MCP server `{server.label()}` answered {what} with something "
                                       f"the client cannot read: {describe(exc)}")
