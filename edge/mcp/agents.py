"""MCP tools as agents: a pool of MCP server connections, tool listings as contracts, results as cards.

A stdio server is started once and reused across jobs; when it dies it is restarted on the next
call, after a backoff that doubles with each consecutive crash. Streamable HTTP servers are reached
per call, with a bounded retry when the connection cannot be made. Every call has a timeout. Every
failure is an `McpFailure` with a kind (and, for stdio, the tail of the server's stderr), never a
bare SDK exception.

All connections live on one event loop in a thread of their own: the SDK's sessions are bound to the
loop that opened them, while the edge is called from many loops (each CLI command, each adapter).

The SDK client checks `structuredContent` against the tool's `outputSchema` itself (python-jsonschema)
and raises, dropping the result. The edge checks with its own validator (edge.contracts: no remote
`$ref`, the same rules as every other contract) so that a result that breaks its schema is still
shown as a card that says which value broke which rule; the SDK's check is turned off on our sessions.
"""

from __future__ import annotations

import asyncio
import atexit
import logging
import os
import re
import shlex
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Awaitable, Coroutine, Iterator, Mapping, TypeVar
from urllib.parse import urlsplit, urlunsplit

from oz0.edge.cards.choice import choose_card
from oz0.edge.cards.model import Card
from oz0.edge.contracts.json_data import loads_exact
from oz0.edge.contracts.schema import Contract, ContractError, load_contract
from oz0.edge.runtime.jobs import JobFailure

__all__ = [
    "DEFAULT_CALL_TIMEOUT_S",
    "HTTP_ATTEMPTS",
    "MAX_STDERR_TAIL_BYTES",
    "START_TIMEOUT_S",
    "McpFailure",
    "McpServers",
    "ServerSpec",
    "ToolInfo",
    "card_form",
    "result_card",
    "run_mcp_agent",
    "server_for_agent",
    "tool_output",
    "servers",
    "with_known_contracts",
    "with_tool_contracts",
]

log = logging.getLogger(__name__)

DEFAULT_CALL_TIMEOUT_S = 60.0
START_TIMEOUT_S = 20.0
STOP_TIMEOUT_S = 10.0
MAX_STDERR_TAIL_BYTES = 8192
REASON_TAIL_LINES = 5
RESTART_BACKOFF_BASE_S = 0.5
RESTART_BACKOFF_MAX_S = 8.0
HTTP_ATTEMPTS = 3
HTTP_RETRY_DELAY_S = 0.25
HTTP_CONNECT_TIMEOUT_S = 10.0
MAX_TOOL_PAGES = 50

_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_T = TypeVar("_T")


class McpFailure(JobFailure):
    """A typed failure of an MCP server or call: a JobFailure of a built-in kind, so the runtime reports it.

    Unavailable (cannot start or reach the server), Crashed (it died during the call, or answered
    something unreadable), Timeout, Misconfigured (no such tool, an unusable tool schema, a missing
    setting), InvalidInput, AgentError (the tool answered isError, or a result that is not complete),
    Rejected (the server refused the request with a protocol error). `summary` is the reason without
    the server's stderr; `reason` adds its last lines.
    """

    def __init__(self, kind: str, reason: str, *, stderr_tail: str = "", partial_output: Any = None) -> None:
        self.summary = reason
        self.stderr_tail = stderr_tail
        if stderr_tail:
            lines = stderr_tail.splitlines()[-REASON_TAIL_LINES:]
            reason = f"{reason}. The server's stderr ended with: " + " | ".join(ln.strip() for ln in lines)
        super().__init__(kind, reason, partial_output=partial_output)

    def __str__(self) -> str:
        return self.reason


def _expand_env(value: str, *, what: str) -> str:
    """`${NAME}` replaced by the environment variable; a missing one is an error naming it (never its value)."""
    def sub(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in os.environ:
            raise McpFailure("Misconfigured", f"{what} names the environment variable ${{{name}}}, which is not set")
        return os.environ[name]
    return _ENV_REF.sub(sub, value)


@dataclass(frozen=True)
class ServerSpec:
    """Where an MCP server is: a command to start (stdio) or a URL (streamable HTTP).

    Header and env values may name environment variables as `${NAME}`; they are read when the server
    is reached, so secrets stay in the environment and out of agent files and messages.
    """

    command: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    cwd: str | None = None
    url: str | None = None
    headers: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        if bool(self.command) == bool(self.url):
            raise McpFailure("Misconfigured", "an MCP server is named by a command (stdio) or by a url "
                                              "(streamable HTTP): exactly one of the two")
        if self.url and urlsplit(self.url).scheme not in ("http", "https"):
            raise McpFailure("Misconfigured", f"an MCP server url must start with http:// or https://, "
                                              f"not {self.label()!r}")

    @classmethod
    def from_command_line(cls, text: str, *, cwd: str | None = None,
                          env: Mapping[str, str] | None = None) -> "ServerSpec":
        """A command given as one shell-quoted string (`python server.py --verbose`), split as a shell would."""
        try:
            argv = shlex.split(text)
        except ValueError as exc:
            raise McpFailure("Misconfigured", f"cannot split the server command {text!r}: {exc}") from None
        if not argv:
            raise McpFailure("Misconfigured", "the server command is empty")
        return cls(command=tuple(argv), cwd=cwd, env=tuple(sorted((env or {}).items())))

    @classmethod
    def from_url(cls, url: str, *, headers: Mapping[str, str] | None = None) -> "ServerSpec":
        return cls(url=url, headers=tuple(sorted((headers or {}).items())))

    @classmethod
    def from_config(cls, server: Mapping[str, Any], *, cwd: str | None = None) -> "ServerSpec":
        """The `server:` block of an agent file: `command` and `args`, or `url` and `headers`."""
        if not isinstance(server, Mapping):
            raise McpFailure("Misconfigured", "an mcp agent's `server` must be a mapping with command/args or url")
        if server.get("command") and server.get("url"):
            raise McpFailure("Misconfigured", "an mcp agent's `server` has both command and url; name one")
        if server.get("url"):
            return cls(url=str(server["url"]), headers=tuple(sorted(dict(server.get("headers") or {}).items())))
        if not server.get("command"):
            raise McpFailure("Misconfigured", "an mcp agent's `server` needs `command` (stdio) or `url` (HTTP)")
        argv = (str(server["command"]), *(str(a) for a in server.get("args") or ()))
        return cls(command=argv, cwd=cwd, env=tuple(sorted(dict(server.get("env") or {}).items())))

    @property
    def is_stdio(self) -> bool:
        return bool(self.command)

    def label(self) -> str:
        """How messages name the server: the command line, or the URL without credentials or query."""
        if self.command:
            return shlex.join(self.command)
        parts = urlsplit(self.url or "")
        host = parts.netloc.rpartition("@")[2]
        return urlunsplit((parts.scheme, host, parts.path, "", ""))

    def resolved_env(self) -> dict[str, str]:
        return {k: _expand_env(v, what=f"server env {k}") for k, v in self.env}

    def resolved_headers(self) -> dict[str, str]:
        return {k: _expand_env(v, what=f"header {k}") for k, v in self.headers}


@dataclass(frozen=True)
class ToolInfo:
    """One tool as its server lists it, with its schemas as the wire carries them."""

    name: str
    description: str = ""
    title: str | None = None
    input_schema: Mapping[str, Any] | None = None
    output_schema: Mapping[str, Any] | None = None

    def input_contract(self) -> Contract | None:
        """The tool's inputSchema as a contract; ContractError names the tool (e.g. a remote $ref)."""
        return self._contract(self.input_schema, "inputSchema")

    def output_contract(self) -> Contract | None:
        return self._contract(self.output_schema, "outputSchema")

    def _contract(self, schema: Mapping[str, Any] | None, which: str) -> Contract | None:
        if schema is None:
            return None
        return load_contract(dict(schema), source=f"tool {self.name!r} {which}")

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name}
        if self.title:
            out["title"] = self.title
        out["description"] = self.description
        out["inputSchema"] = self.input_schema
        if self.output_schema is not None:
            out["outputSchema"] = self.output_schema
        return out


def _leaves(exc: BaseException) -> Iterator[BaseException]:
    """The exceptions inside (nested) exception groups, as anyio task groups raise them."""
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            yield from _leaves(inner)
    else:
        yield exc


def _describe(exc: BaseException) -> str:
    leaves = list(_leaves(exc))
    return "; ".join(f"{type(e).__name__}: {e}" if str(e) else type(e).__name__ for e in leaves[:3])


def _is_connection_error(exc: BaseException) -> bool:
    from mcp.shared.exceptions import MCPError
    from mcp_types import CONNECTION_CLOSED
    import httpx2

    for leaf in _leaves(exc):
        if isinstance(leaf, (httpx2.ConnectError, httpx2.ConnectTimeout, ConnectionError)):
            return True
        if isinstance(leaf, MCPError) and leaf.code == CONNECTION_CLOSED:
            return True
    return False


async def _skip_sdk_validation(name: str, result: Any) -> None:
    """Stands in for ClientSession.validate_tool_result: the edge validates with its own contracts."""


def _edge_session(client: Any) -> None:
    client.session.validate_tool_result = _skip_sdk_validation


def _tool_info(tool: Any) -> ToolInfo:
    wire = tool.model_dump(by_alias=True, exclude_none=True, mode="json")
    return ToolInfo(name=wire["name"], description=wire.get("description") or "", title=wire.get("title"),
                    input_schema=wire.get("inputSchema"), output_schema=wire.get("outputSchema"))


async def _list_tools(client: Any) -> dict[str, ToolInfo]:
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


async def _call(client: Any, name: str, arguments: Mapping[str, Any]) -> dict[str, Any]:
    """tools/call, the result as its wire-shaped (camelCase) dict; an input_required result is returned, not driven."""
    result = await client.session.call_tool(name, dict(arguments), allow_input_required=True)
    return result.model_dump(by_alias=True, exclude_none=True, mode="json")


class _StderrTail:
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


class _StdioServer:
    """One stdio server process and its session, owned by one task, restarted after a crash."""

    def __init__(self, spec: ServerSpec, pool: "McpServers") -> None:
        self.spec = spec
        self.pool = pool
        self.client: Any = None
        self.tools: dict[str, ToolInfo] | None = None
        self.stderr: _StderrTail | None = None
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

    async def _start(self) -> None:
        from mcp import Client, StdioServerParameters
        from mcp.client.stdio import stdio_client

        env = self.spec.resolved_env()
        params = StdioServerParameters(command=self.spec.command[0], args=list(self.spec.command[1:]),
                                       env=env or None, cwd=self.spec.cwd)
        stderr = _StderrTail()
        self.stderr = stderr
        ready: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        stop = asyncio.Event()

        async def own() -> None:
            try:
                async with Client(stdio_client(params, errlog=stderr.writer), cache=None) as client:
                    _edge_session(client)
                    ready.set_result(client)
                    await stop.wait()
            except BaseException as exc:  # reported to the caller through `ready`, or logged at teardown
                if not ready.done():
                    ready.set_exception(exc)
                elif not isinstance(exc, asyncio.CancelledError):
                    log.warning("MCP server %s ended with %s", self.spec.label(), _describe(exc))
            finally:
                stderr.release_writer()

        self.starts += 1
        self._stop = stop
        self._owner = asyncio.create_task(own(), name=f"oz0-mcp {self.spec.label()}")
        try:
            client = await asyncio.wait_for(asyncio.shield(ready), self.pool.start_timeout_s)
            stderr.release_writer()
            self.client = client
            self.tools = await self.pool._list(client, self.spec, self.pool.start_timeout_s)
        except BaseException as exc:
            await self._teardown()
            self._failed()
            await asyncio.to_thread(stderr.ended.wait, 1.0)
            if isinstance(exc, McpFailure):
                raise
            if isinstance(exc, asyncio.TimeoutError):
                why = f"it did not finish the MCP handshake within {self.pool.start_timeout_s:g} s"
            elif any(isinstance(e, FileNotFoundError) for e in _leaves(exc)):
                why = f"{self.spec.command[0]!r} was not found (is it installed and on PATH?)"
            elif any(isinstance(e, PermissionError) for e in _leaves(exc)):
                why = f"{self.spec.command[0]!r} is not executable"
            elif _is_connection_error(exc):
                why = "it exited before finishing the MCP handshake"
            else:
                why = _describe(exc)
            raise McpFailure("Unavailable", f"the MCP server `{self.spec.label()}` could not start: {why}",
                             stderr_tail=stderr.text()) from None

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
        except (asyncio.TimeoutError, asyncio.CancelledError):
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
        return McpFailure("Crashed", f"the MCP server `{self.spec.label()}` died during {during}; "
                                           "it is restarted on the next call", stderr_tail=tail)

    async def close(self) -> None:
        async with self._lock:
            await self._teardown()


class _LoopThread:
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
    _stdio: dict[ServerSpec, _StdioServer] = field(default_factory=dict, repr=False)
    _listed: dict[ServerSpec, dict[str, ToolInfo]] = field(default_factory=dict, repr=False)
    _thread: _LoopThread | None = field(default=None, repr=False)
    _guard: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def _loop(self) -> _LoopThread:
        with self._guard:
            if self._thread is None:
                self._thread = _LoopThread()
            return self._thread

    def stdio_starts(self, server: ServerSpec) -> int:
        """How many times this server's process was started (1 while it has not crashed)."""
        entry = self._stdio.get(server)
        return entry.starts if entry else 0

    async def tools(self, server: ServerSpec, *, timeout_s: float = DEFAULT_CALL_TIMEOUT_S) -> dict[str, ToolInfo]:
        """The server's tools by name, with their schemas."""
        return await self._loop().run(self._on_loop(server, None, None, timeout_s))

    def listed(self, server: ServerSpec) -> dict[str, ToolInfo] | None:
        """The server's tools as last listed, without reaching it (None if never listed)."""
        return self._listed.get(server)

    async def tool(self, server: ServerSpec, name: str, *, timeout_s: float = DEFAULT_CALL_TIMEOUT_S) -> ToolInfo:
        tools = await self.tools(server, timeout_s=timeout_s)
        return _pick(tools, name, server)

    async def call(self, server: ServerSpec, tool: str, arguments: Mapping[str, Any], *,
                   timeout_s: float = DEFAULT_CALL_TIMEOUT_S) -> tuple[ToolInfo, dict[str, Any]]:
        """Call `tool` and return it as listed with its wire-shaped CallToolResult (camelCase keys)."""
        return await self._loop().run(self._on_loop(server, tool, arguments, timeout_s))

    async def _on_loop(self, server: ServerSpec, tool: str | None, arguments: Mapping[str, Any] | None,
                       timeout_s: float) -> Any:
        if server.is_stdio:
            return await self._stdio_call(server, tool, arguments, timeout_s)
        return await self._http_call(server, tool, arguments, timeout_s)

    async def _list(self, client: Any, server: ServerSpec, timeout_s: float) -> dict[str, ToolInfo]:
        tools = await _timed(_list_tools(client), timeout_s, f"listing the tools of `{server.label()}`")
        self._listed[server] = tools
        return tools

    async def _stdio_call(self, server: ServerSpec, tool: str | None, arguments: Mapping[str, Any] | None,
                          timeout_s: float) -> Any:
        entry = self._stdio.get(server)
        if entry is None:
            entry = self._stdio[server] = _StdioServer(server, self)
        client = await entry.session()
        tools = entry.tools or {}
        if tool is None:
            return tools
        if tool not in tools:
            tools = entry.tools = await self._list(client, server, timeout_s)
        info = _pick(tools, tool, server)
        try:
            result = await _timed(_call(client, tool, arguments or {}), timeout_s,
                                  f"calling tool {tool!r} on `{server.label()}`")
        except McpFailure:
            raise
        except Exception as exc:
            if _is_connection_error(exc) or not entry._alive():
                raise await entry.crashed(f"a call of tool {tool!r}", client) from None
            raise _protocol_failure(exc, tool, server) from None
        entry.succeeded()
        return info, result

    async def _http_call(self, server: ServerSpec, tool: str | None, arguments: Mapping[str, Any] | None,
                         timeout_s: float) -> Any:
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
                async with http, Client(streamable_http_client(server.url or "", http_client=http),
                                        cache=None) as client:
                    _edge_session(client)
                    tools = await self._list(client, server, timeout_s)
                    if tool is None:
                        return tools
                    info = _pick(tools, tool, server)
                    sent = True
                    result = await _timed(_call(client, tool, arguments or {}), timeout_s,
                                          f"calling tool {tool!r} on `{server.label()}`")
                    return info, result
            except McpFailure:
                raise
            except Exception as exc:
                own = next((e for e in _leaves(exc) if isinstance(e, McpFailure)), None)
                if own is not None:  # raised inside the SDK's task group, which wraps it
                    raise own from None
                if not _is_connection_error(exc):
                    raise _protocol_failure(exc, tool, server) from None
                if sent:
                    raise McpFailure("Crashed", f"the connection to `{server.label()}` broke during a call "
                                                      f"of tool {tool!r}: {_describe(exc)}") from None
                last = exc
                if attempt < self.http_attempts:
                    await asyncio.sleep(HTTP_RETRY_DELAY_S * 2 ** (attempt - 1))
        raise McpFailure("Unavailable", f"cannot connect to the MCP server `{server.label()}` "
                                              f"({self.http_attempts} attempts): {_describe(last) if last else ''}")

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
        await asyncio.gather(*(e.close() for e in entries), return_exceptions=True)


async def _timed(awaitable: Awaitable[_T], timeout_s: float, doing: str) -> _T:
    try:
        return await asyncio.wait_for(awaitable, timeout_s)
    except asyncio.TimeoutError:
        raise McpFailure("Timeout", f"no answer within {timeout_s:g} s while {doing}") from None


def _pick(tools: Mapping[str, ToolInfo], name: str, server: ServerSpec) -> ToolInfo:
    if name not in tools:
        known = ", ".join(sorted(tools)) or "none"
        raise McpFailure("Misconfigured", f"the MCP server `{server.label()}` has no tool {name!r}; its tools: {known}")
    return tools[name]


def _protocol_failure(exc: BaseException, tool: str | None, server: ServerSpec) -> McpFailure:
    from mcp.shared.exceptions import MCPError

    leaf = next((e for e in _leaves(exc) if isinstance(e, MCPError)), None)
    what = f"tool {tool!r}" if tool else "the tool listing"
    if leaf is not None:
        return McpFailure("Rejected", f"the MCP server `{server.label()}` refused {what}: "
                                           f"{leaf.message} (error {leaf.code})")
    return McpFailure("Crashed", f"the MCP server `{server.label()}` answered {what} with something "
                                       f"the client cannot read: {_describe(exc)}")


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


def result_card(result: Mapping[str, Any], tool: ToolInfo, *, title: str | None = None) -> Card:
    """The card for a tool's CallToolResult, checked against the tool's outputSchema by the edge's validator.

    Raises ContractError when the tool's own outputSchema is unusable (e.g. it has a remote $ref).
    """
    return choose_card(dict(result), tool.output_contract(), source="mcp", title=title or tool.name)


def card_form(tool: ToolInfo) -> str:
    """The card the tool's output would be drawn as, read from its outputSchema (what `oz0 mcp tools` shows)."""
    try:
        contract = tool.output_contract()
    except ContractError as exc:
        return f"none: the outputSchema cannot be used ({exc.message})"
    if contract is None:
        return "from its text: JSON drawn as JSON, other text as markdown"
    node = _deref(contract, contract.schema)
    props = _props(contract, node)
    header = ""
    if "success" in props and "message" in props:
        header = "status header + "
        props = {k: v for k, v in props.items() if k not in ("success", "message", "error", "error_code",
                                                              "warnings", "meta")}
        if len(props) == 1:
            node = _deref(contract, next(iter(props.values())))
            props = _props(contract, node)
        elif not props:
            return "status header"
        else:
            return header + "key-values: " + ", ".join(props)
    diff = node.get("x-oz0-diff") if isinstance(node, dict) else None
    if isinstance(diff, dict) and diff.get("before") in props and diff.get("after") in props:
        return header + f"diff of {diff['before']} -> {diff['after']}"
    rows = None
    if isinstance(node, dict) and node.get("type") == "array":
        rows = _deref(contract, node.get("items"))
    elif len(props) == 1:
        only = _deref(contract, next(iter(props.values())))
        if isinstance(only, dict) and only.get("type") == "array":
            rows = _deref(contract, only.get("items"))
    if isinstance(rows, dict) and (rows.get("type") == "object" or "properties" in rows):
        columns = list(_props(contract, rows))
        order = rows.get("x-oz0-order") if isinstance(rows.get("x-oz0-order"), list) else []
        columns = [c for c in order if c in columns] + [c for c in columns if c not in order]
        return header + ("table: " + ", ".join(columns) if columns else "table (columns from the rows)")
    if props:
        return header + "key-values: " + ", ".join(props)
    return header + "text"


def _deref(contract: Contract, node: Any) -> Any:
    for _ in range(16):
        if not (isinstance(node, dict) and isinstance(node.get("$ref"), str)):
            return node
        try:
            node = contract.resolve(node["$ref"])
        except LookupError:
            return node
    return node


def _props(contract: Contract, node: Any) -> dict[str, Any]:
    if not isinstance(node, dict):
        return {}
    props = dict(node.get("properties") or {}) if isinstance(node.get("properties"), dict) else {}
    for branch in node.get("allOf") or ():
        for name, sub in _props(contract, _deref(contract, branch)).items():
            props.setdefault(name, sub)
    return props


# --- the `mcp` agent kind -------------------------------------------------------------------------

def server_for_agent(spec: Any) -> ServerSpec:
    """The server an agent file names; a stdio command runs in the plugin's folder."""
    config = spec.config
    plugin_dir = str(Path(spec.file).resolve().parent.parent) if getattr(spec, "file", None) else None
    server = config.get("server")
    if server is None and (config.get("url") or config.get("command")):
        server = {"url": config.get("url"), "headers": config.get("headers"), "command": config.get("command")}
    return ServerSpec.from_config(server or {}, cwd=plugin_dir)


async def with_tool_contracts(spec: Any, *, pool: McpServers | None = None) -> Any:
    """An `mcp` agent with its tool's inputSchema/outputSchema as contracts where its file declares none.

    Lists the server's tools once (then reuses the listing); any other agent is returned as it is.
    The runtime calls this before it checks a job's input. Raises McpFailure (Misconfigured) for a
    tool schema the edge cannot use, such as one with a remote $ref.
    """
    if getattr(spec, "kind", None) != "mcp" or (spec.input is not None and spec.output is not None):
        return spec
    info = await (pool or servers()).tool(server_for_agent(spec), _tool_name(spec), timeout_s=spec.limits.timeout_s)
    return _with_contracts(spec, info)


def with_known_contracts(spec: Any, *, pool: McpServers | None = None) -> Any:
    """Like `with_tool_contracts` from the last listing only, without reaching the server: for drawing
    a finished job's card. Returns the agent unchanged when its tool was never listed or its schemas
    cannot be used (the job that tried already failed, saying why)."""
    if getattr(spec, "kind", None) != "mcp" or (spec.input is not None and spec.output is not None):
        return spec
    try:
        info = ((pool or servers()).listed(server_for_agent(spec)) or {}).get(_tool_name(spec))
        return _with_contracts(spec, info) if info is not None else spec
    except McpFailure as exc:
        log.info("agent %s keeps its declared contracts: %s", spec.name, exc.reason)
        return spec


def _with_contracts(spec: Any, info: ToolInfo) -> Any:
    """A tool without an outputSchema answers text or JSON (its text parsed): its output contract is then
    the schema that allows any value, so the runtime accepts either and the card draws it as it is.
    An agent file that names its own schema keeps it (`input: text` cannot be told from no declaration)."""
    from dataclasses import replace

    changes: dict[str, Any] = {}
    try:
        if spec.input is None and info.input_schema is not None:
            changes.update(input=info.input_contract(), input_schema_file=f"the inputSchema of tool {info.name!r}")
        if spec.output is None:
            changes.update(output=info.output_contract() or load_contract({}, source=f"tool {info.name!r}"),
                           output_schema_file=f"the outputSchema of tool {info.name!r}")
    except ContractError as exc:
        raise McpFailure("Misconfigured", str(exc)) from None
    return replace(spec, **changes)


def _tool_name(spec: Any) -> str:
    tool = spec.config.get("tool")
    if not isinstance(tool, str) or not tool:
        raise McpFailure("Misconfigured", f"agent {spec.name!r} names no tool")
    return tool


async def run_mcp_agent(spec: Any, value: Any, ctx: Any = None, *, pool: McpServers | None = None) -> Any:
    """Run one job of an `mcp` agent: call its tool with `value` and return what the tool answered.

    The answer is the tool's structuredContent (checked by the runtime against the tool's outputSchema
    as the agent's output contract), or its text (parsed when it is JSON). `isError` and a result that
    is not complete are failures. A JSON string input is parsed; the tool's inputSchema is checked here
    with the edge's validator when the runtime has not already done so.
    """
    import orjson

    pool = pool or servers()
    server = server_for_agent(spec)
    tool = _tool_name(spec)
    info = await pool.tool(server, tool, timeout_s=spec.limits.timeout_s)
    arguments = value
    if isinstance(value, str):
        try:
            arguments = orjson.loads(value) if value.strip() else {}
        except orjson.JSONDecodeError as exc:
            raise McpFailure("InvalidInput", f"tool {tool!r} takes a JSON object as input: {exc}") from None
    if not isinstance(arguments, dict):
        raise McpFailure("InvalidInput", f"tool {tool!r} takes a JSON object as input, not "
                                         f"{type(arguments).__name__}")
    try:
        contract = info.input_contract()
    except ContractError as exc:
        raise McpFailure("Misconfigured", str(exc)) from None
    if contract is not None and spec.input is None:
        violations = contract.validate(arguments)
        if violations:
            v = violations[0]
            raise McpFailure("InvalidInput", f"the input breaks tool {tool!r}'s inputSchema: the value at "
                                             f"{v.json_path} breaks the rule '{v.keyword}' ({v.message})")
    if ctx is not None:
        ctx.progress(f"calling tool {tool} on {server.label()}")
    _, result = await pool.call(server, tool, arguments, timeout_s=spec.limits.timeout_s)
    return tool_output(result, tool=tool)


def tool_output(result: Mapping[str, Any], *, tool: str) -> Any:
    """What a CallToolResult means as a job output: its structured content, else its text."""
    import orjson

    result_type = result.get("resultType", "complete")
    if result_type != "complete":
        raise McpFailure("AgentError", f"tool {tool!r} answered with resultType {result_type!r}, not "
                                          "'complete': it asks for input that an agent job cannot give")
    text = "\n\n".join(b["text"] for b in result.get("content", ())
                       if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str))
    if result.get("isError") is True:
        raise McpFailure("AgentError", f"tool {tool!r} reported an error: "
                                       + (text.strip() or "it did not say what"),
                         partial_output=result.get("structuredContent"))
    if "structuredContent" in result:
        return result["structuredContent"]
    try:
        return loads_exact(text)
    except orjson.JSONDecodeError:
        return text
