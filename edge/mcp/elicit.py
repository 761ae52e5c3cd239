"""MCP elicitation as a person step: a tool that sends `elicitation/create` (form mode) during a call
pauses the job to ask its asker (ctx.ask_person), and the answer goes back as the tool's ElicitResult.

Why sessions of their own: a stdio session is shared by every job that calls the server, and an
elicitation request does not say which of the session's calls it belongs to (the related request id
is transport metadata, not on the wire). So a call that may elicit borrows a session that serves one
call at a time (`ElicitingSessions`), kept and reused like the shared one; the request then belongs
to that call. Such a session declares the `elicitation` capability, and is opened only for jobs whose
channel can ask (`RunContext.can_ask_person`: a channel registered `on_question` for the job's
platform); every other call uses the shared session, which declares none. Eliciting sessions use the
handshake protocol (`initialize`), where a server has the back-channel `elicitation/create` needs.

The MCP spec asks that the user see which server asks: the question's `source` names it by the
plugin's own name for it (`MCP server of PLUGIN/AGENT`); what the server says it is (its
`serverInfo` title or name, chosen by the server, so never trusted as the asker) follows only as its
claim, cut to MAX_CLAIM_CHARS: `MCP server of team/deploy (it calls itself “Acme Deploys”)`.
accept / decline / cancel map to the ElicitResult; a person step that times out (or a stopped job)
answers `cancel`.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from oz0.edge.contracts.answer_schema import check_answer_schema
from oz0.edge.mcp.http import session_for
from oz0.edge.mcp.spec import ServerSpec
from oz0.edge.mcp.stdio import StdioServer

if TYPE_CHECKING:
    from oz0.edge.mcp.pool import McpServers

__all__ = [
    "MAX_CLAIM_CHARS",
    "MAX_ELICITING_SESSIONS",
    "ElicitingSessions",
    "Elicitor",
    "Redacts",
    "elicitor_for",
    "server_source",
]

MAX_CLAIM_CHARS = 60
MAX_ELICITING_SESSIONS = 4  # per server: eliciting calls beyond this wait for a session to be free


class Redacts(Protocol):
    """What hides a server's secrets in what it asks (the runtime's Redactor, edge.runtime.redact)."""

    def text(self, text: str) -> str: ...

    def data(self, value: Any) -> Any: ...


@dataclass
class Elicitor:
    """Answers one call's `elicitation/create` requests by asking the job's person, on the job's loop."""

    ctx: Any
    server: ServerSpec
    job_loop: asyncio.AbstractEventLoop
    redactor: Redacts | None = None
    asked: int = 0

    async def __call__(self, context: Any, params: Any) -> Any:
        import mcp_types as types

        if getattr(params, "mode", "form") != "form":
            return types.ErrorData(code=types.INVALID_PARAMS, message="this client answers form-mode "
                                                                         "elicitation only, not URL mode")
        schema = dict(params.requested_schema)
        message = str(params.message)
        if self.redactor is not None:
            schema, message = self.redactor.data(schema), self.redactor.text(message)
        try:
            schema = check_answer_schema(schema)
        except ValueError as exc:
            return types.ErrorData(code=types.INVALID_PARAMS, message=f"the requestedSchema cannot be asked: {exc}")
        self.asked += 1
        asking = self.ctx.ask_person(message, schema, step=self._step(),
                                     source=server_source(self.ctx.agent, context))
        answer = await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(asking, self.job_loop))
        if answer.action == "accept":
            return types.ElicitResult(action="accept", content=answer.content)
        if answer.action == "decline":
            return types.ElicitResult(action="decline")
        return types.ElicitResult(action="cancel")

    def _step(self) -> str:
        book = self.ctx.questions
        return f"elicit-{book.count(self.ctx.job_id) + 1}" if book is not None else f"elicit-{self.asked}"


def elicitor_for(ctx: Any, server: ServerSpec, redactor: Redacts | None = None) -> Elicitor | None:
    """The elicitation handler of a call, when its job's channel can ask; else None (no capability).
    What the server asks passes `redactor` (its configured secrets) before anyone sees it."""
    if ctx is None or not getattr(ctx, "can_ask_person", lambda: False)():
        return None
    return Elicitor(ctx, server, asyncio.get_running_loop(), redactor)


def server_source(agent: Any, context: Any) -> str:
    """Who asks, as the question shows it: the plugin's name for the server, then the server's own
    claim (its serverInfo title, else name) as a claim, on one line and cut."""
    own = f"MCP server of {agent.plugin}/{agent.name}"
    info = getattr(getattr(context, "session", None), "server_info", None)
    claim = (getattr(info, "title", None) or getattr(info, "name", None)) if info is not None else None
    claim = " ".join(str(claim or "").split())
    if not claim:
        return own
    if len(claim) > MAX_CLAIM_CHARS:
        claim = claim[:MAX_CLAIM_CHARS - 1] + "…"
    return f"{own} (it calls itself “{claim}”)"


@dataclass
class ElicitingSessions:
    """Sessions (stdio or HTTP) that serve one eliciting call at a time, per server, reused between calls."""

    pool: McpServers
    _free: dict[ServerSpec, list[StdioServer]] = field(default_factory=dict)
    _all: dict[ServerSpec, list[StdioServer]] = field(default_factory=dict)
    _changed: asyncio.Condition | None = None

    @contextlib.asynccontextmanager
    async def borrow(self, server: ServerSpec, elicitor: Elicitor | None) -> AsyncIterator[StdioServer]:
        """A free eliciting session of `server` for one call answered by `elicitor` (None: a listing)."""
        if self._changed is None:
            self._changed = asyncio.Condition()
        async with self._changed:
            while not self._free.get(server) and len(self._all.get(server, ())) >= MAX_ELICITING_SESSIONS:
                await self._changed.wait()
            free = self._free.setdefault(server, [])
            if free:
                entry = free.pop()
            else:
                entry = session_for(server, self.pool, eliciting=True)
                self._all.setdefault(server, []).append(entry)
        entry.elicitor = elicitor
        try:
            yield entry
        finally:
            entry.elicitor = None
            async with self._changed:
                self._free[server].append(entry)
                self._changed.notify()

    def entries(self) -> list[StdioServer]:
        """Every eliciting session opened, free or serving a call (to close them all)."""
        return [entry for entries in self._all.values() for entry in entries]

    def clear(self) -> None:
        self._free.clear()
        self._all.clear()
