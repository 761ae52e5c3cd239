"""The pool of MCP server connections every job shares.

A stdio server is started once and reused across jobs (edge.mcp.stdio). Streamable HTTP servers are
reached per call, with a bounded retry when the connection cannot be made. Every call has a timeout.

All connections live on one event loop in a thread of their own: the SDK's sessions are bound to the
loop that opened them, while the edge is called from many loops (each CLI command, each adapter).
"""

from __future__ import annotations

import asyncio
import atexit
import threading
from dataclasses import dataclass, field
from typing import Any, Coroutine, Mapping, TypeVar

from oz0.edge.mcp.elicit import Elicitor, ElicitingSessions
from oz0.edge.mcp.spec import ELICIT_OPTIONS
from oz0.edge.mcp.list_changed import ToolsChanged
from oz0.edge.mcp.session import call_tool, describe, edge_session, is_connection_error, leaves, list_tools, pick, \
    protocol_failure, timed
from oz0.edge.mcp.spec import McpFailure, ServerSpec, ToolInfo
from oz0.edge.model.progress import ProgressSink
from oz0.edge.mcp.stdio import STOP_TIMEOUT_S, StdioServer

__all__ = [
    "DEFAULT_CALL_TIMEOUT_S",
    "HTTP_ATTEMPTS",
    "START_TIMEOUT_S",
    "LoopThread",
    "McpServers",
    "servers",
]

DEFAULT_CALL_TIMEOUT_S = 60.0
START_TIMEOUT_S = 20.0
RESTART_BACKOFF_BASE_S = 0.5
RESTART_BACKOFF_MAX_S = 8.0
HTTP_ATTEMPTS = 3
HTTP_RETRY_DELAY_S = 0.25
HTTP_CONNECT_TIMEOUT_S = 10.0

_T = TypeVar("_T")


class LoopThread:
    """An event loop in a daemon thread, where every MCP session lives."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="oz0-mcp", daemon=True)
        self.thread.start()

    async def run(self, coro: Coroutine[Any, Any, _T]) -> _T:
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is self.loop:
            return await coro
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, self.loop))

    def run_sync(self, coro: Coroutine[Any, Any, _T], timeout: float | None = None) -> _T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)


@dataclass
class McpServers:
    """The pool: one stdio session per server spec, reused by every job; HTTP servers reached per call."""

    start_timeout_s: float = START_TIMEOUT_S
    backoff_base_s: float = RESTART_BACKOFF_BASE_S
    backoff_max_s: float = RESTART_BACKOFF_MAX_S
    http_attempts: int = HTTP_ATTEMPTS
    _stdio: dict[ServerSpec, StdioServer] = field(default_factory=dict, repr=False)
    _listed: dict[ServerSpec, dict[str, ToolInfo]] = field(default_factory=dict, repr=False)
    _thread: LoopThread | None = field(default=None, repr=False)
    _guard: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _eliciting: ElicitingSessions | None = field(default=None, repr=False)
    changes: ToolsChanged = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.changes = ToolsChanged(self._relist)

    def _loop(self) -> LoopThread:
        with self._guard:
            if self._thread is None:
                self._thread = LoopThread()
            return self._thread

    def stdio_starts(self, server: ServerSpec) -> int:
        """How many times this server's process was started (1 while it has not crashed)."""
        entry = self._stdio.get(server)
        return entry.starts if entry else 0

    async def tools(self, server: ServerSpec, *, timeout_s: float = DEFAULT_CALL_TIMEOUT_S) -> dict[str, ToolInfo]:
        """The server's tools by name, with their schemas."""
        return await self._loop().run(self._on_loop(server, None, None, timeout_s))

    def tools_sync(self, server: ServerSpec, *, timeout_s: float = DEFAULT_CALL_TIMEOUT_S) -> dict[str, ToolInfo]:
        """`tools` for a synchronous caller (installing a plugin), from any thread but the pool's own."""
        return self._loop().run_sync(self._on_loop(server, None, None, timeout_s))

    def listed(self, server: ServerSpec) -> dict[str, ToolInfo] | None:
        """The server's tools as last listed, without reaching it (None if never listed)."""
        return self._listed.get(server)

    async def tool(self, server: ServerSpec, name: str, *, timeout_s: float = DEFAULT_CALL_TIMEOUT_S) -> ToolInfo:
        tools = await self.tools(server, timeout_s=timeout_s)
        return pick(tools, name, server)

    async def call(self, server: ServerSpec, tool: str, arguments: Mapping[str, Any], *,
                   timeout_s: float = DEFAULT_CALL_TIMEOUT_S,
                   elicit: Elicitor | None = None,
                   on_progress: ProgressSink | None = None) -> tuple[ToolInfo, dict[str, Any]]:
        """Call `tool` and return it as listed with its wire-shaped CallToolResult (camelCase keys).
        With `elicit`, the call may ask its job's person (edge.mcp.elicit); with `on_progress`, the
        server's progress notifications for this call reach it (on the MCP loop's thread)."""
        return await self._loop().run(self._on_loop(server, tool, arguments, timeout_s, elicit, on_progress))

    async def _on_loop(self, server: ServerSpec, tool: str | None, arguments: Mapping[str, Any] | None,
                       timeout_s: float, elicit: Elicitor | None = None,
                       on_progress: ProgressSink | None = None) -> Any:
        if server.is_stdio and elicit is not None:
            if self._eliciting is None:
                self._eliciting = ElicitingSessions(self)
            async with self._eliciting.borrow(server, elicit) as entry:
                return await self._stdio_call(server, tool, arguments, timeout_s, entry=entry,
                                              on_progress=on_progress)
        if server.is_stdio:
            return await self._stdio_call(server, tool, arguments, timeout_s, on_progress=on_progress)
        return await self._http_call(server, tool, arguments, timeout_s, elicit=elicit, on_progress=on_progress)

    async def _list(self, client: Any, server: ServerSpec, timeout_s: float) -> dict[str, ToolInfo]:
        tools = await timed(list_tools(client), timeout_s, f"listing the tools of `{server.label()}`")
        self._listed[server] = tools
        return tools

    async def _relist(self, server: ServerSpec, client: Any) -> dict[str, ToolInfo]:
        """The tools again, after a list_changed notification: over the session that got it (a stdio
        server's), or a new connection (an HTTP server's sessions last one call)."""
        if server.is_stdio and client is not None:
            tools = await self._list(client, server, DEFAULT_CALL_TIMEOUT_S)
            for entry in (self._stdio.get(server), *(self._eliciting.entries() if self._eliciting else ())):
                if entry is not None and entry.client is client:
                    entry.tools = tools
            return tools
        if server.is_stdio:
            raise McpFailure("Unavailable", f"the session of `{server.label()}` has ended")
        return await self._http_call(server, None, None, DEFAULT_CALL_TIMEOUT_S)

    async def _stdio_call(self, server: ServerSpec, tool: str | None, arguments: Mapping[str, Any] | None,
                          timeout_s: float, *, entry: StdioServer | None = None,
                          on_progress: ProgressSink | None = None) -> Any:
        entry = entry or self._stdio.get(server)
        if entry is None:
            entry = self._stdio[server] = StdioServer(server, self)
        client = await entry.session()
        tools = entry.tools or {}
        if tool is None:
            return tools
        if tool not in tools:
            tools = entry.tools = await self._list(client, server, timeout_s)
        info = pick(tools, tool, server)
        try:
            result = await timed(call_tool(client, tool, arguments or {}, on_progress=on_progress), timeout_s,
                                  f"calling tool {tool!r} on `{server.label()}`")
        except McpFailure:
            raise
        except Exception as exc:
            if is_connection_error(exc) or not entry._alive():
                raise await entry.crashed(f"a call of tool {tool!r}", client) from None
            raise protocol_failure(exc, tool, server) from None
        entry.succeeded()
        return info, result

    async def _http_call(self, server: ServerSpec, tool: str | None, arguments: Mapping[str, Any] | None,
                         timeout_s: float, *, elicit: Elicitor | None = None,
                         on_progress: ProgressSink | None = None) -> Any:
        from mcp import Client
        from mcp.client.streamable_http import streamable_http_client
        import httpx2

        headers = server.resolved_headers()
        last: BaseException | None = None
        for attempt in range(1, self.http_attempts + 1):
            sent = False
            try:
                http = httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(
                    HTTP_CONNECT_TIMEOUT_S, read=timeout_s + 5.0))
                options = {"elicitation_callback": elicit, **ELICIT_OPTIONS} if elicit is not None else {}
                if tool is not None:  # a listing is the re-listing itself: a change it hears is not chased
                    options["message_handler"] = self.changes.handler(server, lambda: None)
                async with http, Client(streamable_http_client(server.url or "", http_client=http),
                                        cache=None, **options) as client:
                    edge_session(client)
                    tools = await self._list(client, server, timeout_s)
                    if tool is None:
                        return tools
                    info = pick(tools, tool, server)
                    sent = True
                    result = await timed(call_tool(client, tool, arguments or {}, on_progress=on_progress), timeout_s,
                                          f"calling tool {tool!r} on `{server.label()}`")
                    return info, result
            except McpFailure:
                raise
            except Exception as exc:
                own = next((e for e in leaves(exc) if isinstance(e, McpFailure)), None)
                if own is not None:  # raised inside the SDK's task group, which wraps it
                    raise own from None
                if not is_connection_error(exc):
                    raise protocol_failure(exc, tool, server) from None
                if sent:
                    raise McpFailure("Crashed", f"the connection to `{server.label()}` broke during a call "
                                                      f"of tool {tool!r}: {describe(exc)}") from None
                last = exc
                if attempt < self.http_attempts:
                    await asyncio.sleep(HTTP_RETRY_DELAY_S * 2 ** (attempt - 1))
        raise McpFailure("Unavailable", f"cannot connect to the MCP server `{server.label()}` "
                                              f"({self.http_attempts} attempts): {describe(last) if last else ''}")

    async def aclose(self) -> None:
        """Stop every stdio server this pool started."""
        if self._thread is None:
            return
        await self._thread.run(self._close_all())

    def close(self) -> None:
        """Stop every stdio server and the pool's thread (for synchronous callers and exit)."""
        with self._guard:
            thread, self._thread = self._thread, None
        if thread is None:
            return
        try:
            thread.run_sync(self._close_all(), timeout=STOP_TIMEOUT_S * 2)
        finally:
            thread.stop()

    async def _close_all(self) -> None:
        entries = list(self._stdio.values())
        self._stdio.clear()
        if self._eliciting is not None:
            entries += self._eliciting.entries()
            self._eliciting.clear()
        await asyncio.gather(*(e.close() for e in entries), return_exceptions=True)


_pool: McpServers | None = None
_pool_guard = threading.Lock()


def servers() -> McpServers:
    """The process-wide pool (stopped at exit)."""
    global _pool
    with _pool_guard:
        if _pool is None:
            _pool = McpServers()
            atexit.register(_pool.close)
        return _pool
