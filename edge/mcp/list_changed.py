"""`notifications/tools/list_changed`: a server says its tools changed; the edge lists them again and
tells whoever watches (the runtime, which compares the new schemas with the contracts it stored).

At protocol 2026-07-28 a server sends change notifications only on a `subscriptions/listen` stream the
client opened, so a long-lived session opens one (`listening`); on earlier versions they arrive on the
session as they are. Either way they reach the session's message handler, which must not wait on the
session itself (the SDK runs it in its read loop): it starts the re-listing as a task of its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol

from oz0.edge.mcp.session import describe

if TYPE_CHECKING:
    from mcp.client.session import MessageHandlerFnT
from oz0.edge.mcp.spec import ServerSpec, ToolInfo

__all__ = ["ToolsChanged", "ToolsWatcher", "listening"]

log = logging.getLogger(__name__)


class ToolsWatcher(Protocol):
    def __call__(self, server: ServerSpec, tools: dict[str, ToolInfo]) -> None: ...


@contextlib.asynccontextmanager
async def listening(client: Any) -> AsyncIterator[None]:
    """Keep a `subscriptions/listen` stream for tool changes open on `client` (2026-07-28 sessions;
    an earlier session gets its notifications without one). The events themselves are read by the
    message handler, which the SDK hands every one of them; the stream is drained here."""
    from mcp.client.subscriptions import ListenNotSupportedError
    from mcp.shared.exceptions import MCPError

    try:
        stream = client.listen(tools_list_changed=True)
        sub = await stream.__aenter__()
    except ListenNotSupportedError:
        yield
        return
    except (MCPError, RuntimeError, TimeoutError) as exc:
        log.info("the MCP server does not stream tool changes (%s); its tools are listed again on a restart",
                 describe(exc))
        yield
        return

    async def drain() -> None:
        try:
            async for _ in sub:
                pass
        except Exception as exc:  # the stream ended with the server; the session's owner reports that
            log.debug("tool change stream ended: %s", describe(exc))

    task = asyncio.create_task(drain())
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(BaseException):
            await stream.__aexit__(None, None, None)


class ToolsChanged:
    """The watchers of tool changes, and the message handler each session of the pool gets."""

    def __init__(self, relist: Callable[[ServerSpec, Any], Awaitable[dict[str, ToolInfo] | None]]) -> None:
        self._relist = relist
        self._watchers: list[weakref.WeakMethod[Any] | Callable[..., Any]] = []
        self._tasks: set[asyncio.Task[None]] = set()

    def watch(self, watcher: ToolsWatcher) -> None:
        """Call `watcher(server, tools)` (in a worker thread) each time a server's tools changed.
        A bound method is held weakly, so a closed runtime is not kept alive by the pool."""
        self._watchers.append(weakref.WeakMethod(watcher) if hasattr(watcher, "__self__") else watcher)

    def unwatch(self, watcher: ToolsWatcher) -> None:
        self._watchers = [w for w in self._watchers if self._live(w) not in (None, watcher)]

    @staticmethod
    def _live(entry: Any) -> Any:
        return entry() if isinstance(entry, weakref.WeakMethod) else entry

    def handler(self, server: ServerSpec, client_of: Callable[[], Any]) -> MessageHandlerFnT:
        """The session's `message_handler`: a tools list_changed notification starts a re-listing."""
        import mcp_types as types

        async def on_message(message: Any) -> None:
            if isinstance(message, types.ToolListChangedNotification):
                task = asyncio.create_task(self.refresh(server, client_of()))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)

        return on_message

    async def refresh(self, server: ServerSpec, client: Any) -> None:
        """List `server`'s tools again and hand them to every watcher; a failure is logged, not raised
        (no caller waits for it: the next call lists the tools again anyway)."""
        try:
            tools = await self._relist(server, client)
        except Exception as exc:
            log.warning("the tools of MCP server %s changed and cannot be listed again: %s", server.label(),
                        getattr(exc, "reason", None) or describe(exc))
            return
        if tools is None:  # the session it came on has ended: the next one lists the tools anyway
            return
        for entry in list(self._watchers):
            watcher = self._live(entry)
            if watcher is None:
                continue
            try:
                await asyncio.to_thread(watcher, server, tools)
            except Exception as exc:
                log.error("a watcher of the tools of MCP server %s failed: %s", server.label(), describe(exc))
