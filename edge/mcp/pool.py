"""The pool of MCP server connections every job shares.

A stdio server is started once and reused across jobs (edge.mcp.stdio); a streamable HTTP server's
session is opened once and reused the same way (edge.mcp.http), with a bounded retry when the
connection cannot be made. Every call has a timeout.

All connections live on one event loop in a thread of their own: the SDK's sessions are bound to the
loop that opened them, while the edge is called from many loops (each CLI command, each adapter).
"""

from __future__ import annotations

import asyncio
import atexit
import threading
from collections.abc import Coroutine, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from oz0.edge import tracing
from oz0.edge.mcp.elicit import ElicitingSessions, Elicitor
from oz0.edge.mcp.http import session_for
from oz0.edge.mcp.list_changed import ToolsChanged
from oz0.edge.mcp.session import call_tool, is_connection_error, list_tools, pick, protocol_failure, timed
from oz0.edge.mcp.spec import McpFailure, ServerSpec, ToolInfo
from oz0.edge.mcp.stdio import STOP_TIMEOUT_S, StdioServer
from oz0.edge.model.progress import ProgressSink

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
    """The pool: one session per server spec (a stdio process, an HTTP session), reused by every job."""

    start_timeout_s: float = START_TIMEOUT_S
    backoff_base_s: float = RESTART_BACKOFF_BASE_S
    backoff_max_s: float = RESTART_BACKOFF_MAX_S
    http_attempts: int = HTTP_ATTEMPTS
    _sessions: dict[ServerSpec, StdioServer] = field(default_factory=dict, repr=False)
    _listed: dict[ServerSpec, dict[str, ToolInfo]] = field(default_factory=dict, repr=False)
    _listed_eliciting: dict[ServerSpec, dict[str, ToolInfo]] = field(default_factory=dict, repr=False)
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
        entry = self._sessions.get(server)
        return entry.starts if entry else 0

    async def tools(self, server: ServerSpec, *, timeout_s: float = DEFAULT_CALL_TIMEOUT_S,
                    eliciting: bool = False) -> dict[str, ToolInfo]:
        """The server's tools by name, with their schemas. A server may offer some tools only to a client
        that declares the elicitation capability: `eliciting` lists them over a session that declares it."""
        return await self._loop().run(self._on_loop(server, None, None, timeout_s, listing_elicits=eliciting))

    def tools_sync(self, server: ServerSpec, *, timeout_s: float = DEFAULT_CALL_TIMEOUT_S,
                   eliciting: bool = False) -> dict[str, ToolInfo]:
        """`tools` for a synchronous caller (installing a plugin), from any thread but the pool's own."""
        return self._loop().run_sync(self._on_loop(server, None, None, timeout_s, listing_elicits=eliciting))

    def listed(self, server: ServerSpec) -> dict[str, ToolInfo] | None:
        """The server's tools as last listed, without reaching it (None if never listed): those listed
        to a client that declares elicitation too (edge.mcp.elicit)."""
        plain, eliciting = self._listed.get(server), self._listed_eliciting.get(server)
        if plain is None and eliciting is None:
            return None
        return {**(eliciting or {}), **(plain or {})}

    async def tool(self, server: ServerSpec, name: str, *, timeout_s: float = DEFAULT_CALL_TIMEOUT_S,
                   eliciting: bool = False) -> ToolInfo:
        """The tool as the server offers it to a client that can (`eliciting`) or cannot ask its user.
        A tool offered only to a client that can ask, asked for by one that cannot, is refused in words
        (Cancelled: nothing ran), not as a tool the server lacks."""
        tools = await self.tools(server, timeout_s=timeout_s, eliciting=eliciting)
        if name not in tools and not eliciting and name in await self.tools(server, timeout_s=timeout_s,
                                                                            eliciting=True):
            raise McpFailure("Cancelled", f"tool {name!r} of `{server.label()}` asks a person for answers (MCP "
                                          "elicitation), and this channel cannot ask: its server offers the tool "
                                          "only to a client that can. Nothing ran; run it from the console, "
                                          "Slack or Discord")
        return pick(tools, name, server)

    async def call(self, server: ServerSpec, tool: str, arguments: Mapping[str, Any], *,
                   timeout_s: float = DEFAULT_CALL_TIMEOUT_S,
                   elicit: Elicitor | None = None,
                   on_progress: ProgressSink | None = None) -> tuple[ToolInfo, dict[str, Any]]:
        """Call `tool` and return it as listed with its wire-shaped CallToolResult (camelCase keys).
        With `elicit`, the call may ask its job's person (edge.mcp.elicit); with `on_progress`, the
        server's progress notifications for this call reach it (on the MCP loop's thread)."""
        with tracing.span("oz0.mcp.call", tool=tool, server=server.label()):
            return await self._loop().run(self._on_loop(server, tool, arguments, timeout_s, elicit, on_progress))

    async def _on_loop(self, server: ServerSpec, tool: str | None, arguments: Mapping[str, Any] | None,
                       timeout_s: float, elicit: Elicitor | None = None,
                       on_progress: ProgressSink | None = None, *, listing_elicits: bool = False) -> Any:
        if elicit is not None or listing_elicits:
            if self._eliciting is None:
                self._eliciting = ElicitingSessions(self)
            async with self._eliciting.borrow(server, elicit) as entry:
                return await self._session_call(server, tool, arguments, timeout_s, entry=entry,
                                                on_progress=on_progress)
        return await self._session_call(server, tool, arguments, timeout_s, on_progress=on_progress)

    async def _list(self, client: Any, server: ServerSpec, timeout_s: float, *,
                    eliciting: bool = False) -> dict[str, ToolInfo]:
        tools = await timed(list_tools(client), timeout_s, f"listing the tools of `{server.label()}`")
        (self._listed_eliciting if eliciting else self._listed)[server] = tools
        return tools

    async def _relist(self, server: ServerSpec, client: Any) -> dict[str, ToolInfo] | None:
        """The tools again, after a list_changed notification, over the session that got it (then all
        the server lists, as `listed`); None when that session has ended meanwhile (the next lists them)."""
        def holders() -> list[StdioServer]:
            return [entry for entry in (self._sessions.get(server),
                                        *(self._eliciting.entries() if self._eliciting else ()))
                    if entry is not None and client is not None and entry.client is client]

        if not holders():
            return None
        try:
            tools = await self._list(client, server, DEFAULT_CALL_TIMEOUT_S, eliciting=holders()[0].eliciting)
        except Exception:
            if not holders():  # the session closed while it listed: not a failure to report
                return None
            raise
        for entry in holders():
            entry.tools = tools
        return self.listed(server)  # a tool offered only to eliciting clients is not gone for the watchers

    async def _session_call(self, server: ServerSpec, tool: str | None, arguments: Mapping[str, Any] | None,
                            timeout_s: float, *, entry: StdioServer | None = None,
                            on_progress: ProgressSink | None = None, fresh: bool = False) -> Any:
        """List or call over the server's session. An HTTP server that refuses a call because it no
        longer knows the session (it restarted) gets the call once more over a new session (`fresh`)."""
        entry = entry or self._sessions.get(server)
        if entry is None:
            entry = self._sessions[server] = session_for(server, self)
        client = await entry.session()
        tools = entry.tools or {}
        if tool is None:
            return tools
        if tool not in tools:
            tools = entry.tools = await self._list(client, server, timeout_s, eliciting=entry.eliciting)
        info = pick(tools, tool, server)
        try:
            result = await timed(call_tool(client, tool, arguments or {}, on_progress=on_progress), timeout_s,
                                  f"calling tool {tool!r} on `{server.label()}`")
        except McpFailure:
            raise
        except Exception as exc:
            if is_connection_error(exc) or not entry._alive():
                raise await entry.crashed(f"a call of tool {tool!r}", client) from None
            if not fresh and await entry.forgotten(client):  # the server restarted: the call never ran
                await entry.crashed(f"a call of tool {tool!r}", client)
                return await self._session_call(server, tool, arguments, timeout_s, entry=entry,
                                                on_progress=on_progress, fresh=True)
            raise protocol_failure(exc, tool, server) from None
        entry.succeeded()
        return info, result

    async def aclose(self) -> None:
        """Stop every stdio server this pool started and end its HTTP sessions."""
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
        entries = list(self._sessions.values())
        self._sessions.clear()
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
