"""A streamable HTTP MCP server: one session kept across calls, like a stdio server's process.

MCP's streamable HTTP transport is stateful: the server hands out an `Mcp-Session-Id` at `initialize`
and expects every later request of that client on it. Opening a session per call costs a handshake
(and, against a server of an earlier protocol, a refused discovery request) each time, and loses what
the session negotiated. So the pool keeps one `HttpServer` per server spec, as it keeps a
`StdioServer`: opened on first use, with a bounded number of attempts to connect; opened again on the
next call when it has ended (the connection broke), or at once when the server refuses a call because
it no longer knows the session (it restarted): that call never ran, so it is made again, once.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from oz0.edge.mcp.session import describe, is_connection_error
from oz0.edge.mcp.spec import McpFailure, ServerSpec
from oz0.edge.mcp.stdio import StdioServer

if TYPE_CHECKING:
    from oz0.edge.mcp.pool import McpServers

__all__ = ["HTTP_CONNECT_TIMEOUT_S", "HTTP_RETRY_DELAY_S", "HTTP_STREAM_READ_TIMEOUT_S", "HttpServer", "session_for"]

HTTP_RETRY_DELAY_S = 0.25
HTTP_CONNECT_TIMEOUT_S = 10.0
HTTP_STREAM_READ_TIMEOUT_S = 300.0  # the server may hold a response stream open; each call has its own timeout


class HttpServer(StdioServer):
    """One streamable HTTP session with a server, kept across calls and opened again once it has ended."""

    _start_error: BaseException | None = None

    def _alive(self) -> bool:
        return self.client is not None and self._owner is not None and not self._owner.done()

    def _transport(self) -> Any:
        return _http_transport(self.spec.url or "", self.spec.resolved_headers())

    async def _start(self) -> None:
        attempts = self.pool.http_attempts
        for attempt in range(1, attempts + 1):
            self._start_error = None
            try:
                await super()._start()
                return
            except McpFailure:
                error = self._start_error
                if error is None or not is_connection_error(error):
                    raise
                if attempt == attempts:
                    raise McpFailure("Unavailable", f"cannot connect to the MCP server `{self.spec.label()}` "
                                                    f"({attempts} attempts): {describe(error)}") from None
                await asyncio.sleep(HTTP_RETRY_DELAY_S * 2 ** (attempt - 1))

    async def forgotten(self, client: Any) -> bool:
        """Whether the session is gone on the server's side: a listing over it is refused too (a server
        that restarted answers every request of an old session with an error, 404 or 400)."""
        try:
            await asyncio.wait_for(client.list_tools(), HTTP_CONNECT_TIMEOUT_S)
        except Exception:  # any refusal means the same here: the session cannot carry the call
            return True
        return False

    def _crash_reason(self, during: str) -> str:
        return (f"the connection to the MCP server `{self.spec.label()}` broke during {during}; a new session "
                "is opened on the next call")

    def _start_failure(self, exc: BaseException, tail: str) -> McpFailure:
        self._start_error = exc
        if isinstance(exc, asyncio.TimeoutError):
            why = f"it did not finish the MCP handshake within {self.pool.start_timeout_s:g} s"
        else:
            why = describe(exc)
        return McpFailure("Unavailable", f"cannot open a session with the MCP server `{self.spec.label()}`: {why}")


@contextlib.asynccontextmanager
async def _http_transport(url: str, headers: dict[str, str]) -> AsyncIterator[Any]:
    """The SDK's streamable HTTP transport over an HTTP client of our own (headers, timeouts), closed with it."""
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    timeout = httpx2.Timeout(HTTP_CONNECT_TIMEOUT_S, read=HTTP_STREAM_READ_TIMEOUT_S)
    async with httpx2.AsyncClient(headers=headers, timeout=timeout) as http:
        async with streamable_http_client(url, http_client=http) as streams:
            yield streams


def session_for(server: ServerSpec, pool: McpServers, *, eliciting: bool = False) -> StdioServer:
    """A new session of `server` for `pool`: its process over stdio, or an HTTP session."""
    return (StdioServer if server.is_stdio else HttpServer)(server, pool, eliciting=eliciting)
