"""A stdio MCP server: one process and its session, owned by one task, restarted after a crash.

When it dies it is restarted on the next call, after a backoff that doubles with each consecutive
crash. What it writes to stderr is kept (its last bytes only) to explain a failure.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import time
from typing import TYPE_CHECKING, Any

from oz0.edge.mcp.list_changed import listening
from oz0.edge.mcp.session import describe, edge_session, is_connection_error, leaves
from oz0.edge.mcp.spec import ELICIT_OPTIONS, McpFailure, ServerSpec, ToolInfo

if TYPE_CHECKING:
    from oz0.edge.mcp.pool import McpServers

__all__ = [
    "MAX_STDERR_TAIL_BYTES",
    "STOP_TIMEOUT_S",
    "StderrTail",
    "StdioServer",
]

log = logging.getLogger(__name__)

STOP_TIMEOUT_S = 10.0
MAX_STDERR_TAIL_BYTES = 8192


class StderrTail:
    """The last bytes a server wrote to stderr, pumped from a pipe by a thread so memory stays bounded.

    EOF on the pipe also tells that the server process has ended.
    """

    def __init__(self, limit: int = MAX_STDERR_TAIL_BYTES) -> None:
        read_fd, write_fd = os.pipe()
        self.writer = os.fdopen(write_fd, "w")
        self.ended = threading.Event()
        self._limit = limit
        self._buf = bytearray()
        self._lock = threading.Lock()
        threading.Thread(target=self._pump, args=(read_fd,), name="oz0-mcp-stderr", daemon=True).start()

    def _pump(self, fd: int) -> None:
        try:
            while chunk := os.read(fd, 4096):
                with self._lock:
                    self._buf += chunk
                    del self._buf[:-self._limit]
        finally:
            os.close(fd)
            self.ended.set()

    def release_writer(self) -> None:
        """Close our copy of the pipe's write end once the child holds its own."""
        if not self.writer.closed:
            self.writer.close()

    def text(self) -> str:
        with self._lock:
            return bytes(self._buf).decode("utf-8", "replace").strip()


class StdioServer:
    """One stdio server process and its session, owned by one task, restarted after a crash."""

    def __init__(self, spec: ServerSpec, pool: McpServers, *, eliciting: bool = False) -> None:
        self.spec = spec
        self.pool = pool
        self.eliciting = eliciting  # serves one call at a time and answers its elicitation (edge.mcp.elicit)
        self.elicitor: Any = None
        self.client: Any = None
        self.tools: dict[str, ToolInfo] | None = None
        self.stderr: StderrTail | None = None
        self.starts = 0
        self._owner: asyncio.Task[None] | None = None
        self._stop: asyncio.Event | None = None
        self._lock = asyncio.Lock()
        self._failures = 0
        self._last_failure = 0.0

    def _alive(self) -> bool:
        return self.client is not None and self.stderr is not None and not self.stderr.ended.is_set()

    async def session(self) -> Any:
        async with self._lock:
            if self.client is not None and not self._alive():
                await self._teardown()
                self._failed()
            if self.client is None:
                await self._backoff()
                await self._start()
            return self.client

    def _failed(self) -> None:
        self._failures += 1
        self._last_failure = time.monotonic()

    def succeeded(self) -> None:
        self._failures = 0

    async def _backoff(self) -> None:
        if self._failures:
            delay = min(self.pool.backoff_base_s * 2 ** (self._failures - 1), self.pool.backoff_max_s)
            remaining = self._last_failure + delay - time.monotonic()
            if remaining > 0:
                await asyncio.sleep(remaining)

    def _transport(self) -> Any:
        """The transport a session opens: the server's process over stdio, its stderr kept (`stderr`)."""
        from mcp import StdioServerParameters
        from mcp.client.stdio import stdio_client

        env = self.spec.resolved_env()
        params = StdioServerParameters(command=self.spec.command[0], args=list(self.spec.command[1:]),
                                       env=env or None, cwd=self.spec.cwd)
        self.stderr = StderrTail()
        return stdio_client(params, errlog=self.stderr.writer)

    async def _start(self) -> None:
        from mcp import Client

        transport = self._transport()
        stderr = self.stderr
        ready: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        stop = asyncio.Event()

        async def own() -> None:
            try:
                async with Client(transport, cache=None,
                                  message_handler=self.pool.changes.handler(self.spec, lambda: self.client),
                                  **self._elicit_options()) as client:
                    edge_session(client)
                    async with listening(client):
                        ready.set_result(client)
                        await stop.wait()
            except BaseException as exc:  # reported to the caller through `ready`, or logged at teardown
                if not ready.done():
                    ready.set_exception(exc)
                elif not isinstance(exc, asyncio.CancelledError):
                    log.warning("MCP server %s ended with %s", self.spec.label(), describe(exc))
            finally:
                if stderr is not None:
                    stderr.release_writer()

        self.starts += 1
        self._stop = stop
        self._owner = asyncio.create_task(own(), name=f"oz0-mcp {self.spec.label()}")
        try:
            client = await asyncio.wait_for(asyncio.shield(ready), self.pool.start_timeout_s)
            if stderr is not None:
                stderr.release_writer()
            self.client = client
            self.tools = await self.pool._list(client, self.spec, self.pool.start_timeout_s, eliciting=self.eliciting)
        except BaseException as exc:
            await self._teardown()
            self._failed()
            if stderr is not None:
                await asyncio.to_thread(stderr.ended.wait, 1.0)
            if isinstance(exc, McpFailure):
                raise
            raise self._start_failure(exc, stderr.text() if stderr is not None else "") from None

    def _start_failure(self, exc: BaseException, tail: str) -> McpFailure:
        """Why the server could not start, in words."""
        if isinstance(exc, asyncio.TimeoutError):
            why = f"it did not finish the MCP handshake within {self.pool.start_timeout_s:g} s"
        elif any(isinstance(e, FileNotFoundError) for e in leaves(exc)):
            why = f"{self.spec.command[0]!r} was not found (is it installed and on PATH?)"
        elif any(isinstance(e, PermissionError) for e in leaves(exc)):
            why = f"{self.spec.command[0]!r} is not executable"
        elif is_connection_error(exc):
            why = "it exited before finishing the MCP handshake"
        else:
            why = describe(exc)
        return McpFailure("Unavailable", f"the MCP server `{self.spec.label()}` could not start: {why}",
                          stderr_tail=tail)

    def _elicit_options(self) -> dict[str, Any]:
        if not self.eliciting:
            return {}
        return {"elicitation_callback": self._elicit, **ELICIT_OPTIONS}

    async def _elicit(self, context: Any, params: Any) -> Any:
        import mcp_types as types

        if self.elicitor is None:
            return types.ErrorData(code=types.INVALID_REQUEST, message="no tool call is running to ask for")
        return await self.elicitor(context, params)

    async def _teardown(self) -> None:
        owner, stop = self._owner, self._stop
        self.client = None
        self.tools = None
        self._owner = None
        if owner is None or stop is None:
            return
        stop.set()
        try:
            await asyncio.wait_for(owner, STOP_TIMEOUT_S)
        except (TimeoutError, asyncio.CancelledError):
            log.warning("MCP server %s did not stop within %s s", self.spec.label(), STOP_TIMEOUT_S)

    async def crashed(self, during: str, client: Any) -> McpFailure:
        """The failure for a server that died while serving `during` over `client`; the next call
        restarts it (unless another caller already has: then the new process is left alone)."""
        async with self._lock:
            stderr = self.stderr
            if self.client is client:
                await self._teardown()
                self._failed()
        tail = ""
        if stderr is not None:
            await asyncio.to_thread(stderr.ended.wait, 1.0)
            tail = stderr.text()
        return McpFailure("Crashed", self._crash_reason(during), stderr_tail=tail)

    async def forgotten(self, client: Any) -> bool:
        """Whether the server no longer knows this session, so a refused request never ran (an HTTP
        server that restarted); a stdio session lives as long as its process."""
        return False

    def _crash_reason(self, during: str) -> str:
        return f"the MCP server `{self.spec.label()}` died during {during}; it is restarted on the next call"

    async def close(self) -> None:
        async with self._lock:
            await self._teardown()
