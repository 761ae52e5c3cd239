"""The `mcp` agent kind: an agent file that names a server and a tool; a job calls the tool.

The tool's listing supplies the agent's contracts where its file declares none (inputSchema and
outputSchema), and the tool's CallToolResult becomes the job's output (edge.results.tool_result reads it).
Secrets are the runtime's to hide (edge.runtime.kinds.run_mcp wraps each job in the one Redactor):
what an elicitation asks passes the `redactor` it hands in before anyone sees it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from contextlib import AbstractAsyncContextManager, nullcontext
from pathlib import Path
from typing import Any

from oz0.edge.contracts.schema import ContractError, load_contract, violation_sentence
from oz0.edge.mcp.elicit import Redacts, elicitor_for
from oz0.edge.mcp.pool import McpServers, servers
from oz0.edge.mcp.spec import McpFailure, ServerSpec, ToolInfo
from oz0.edge.model.agent import AgentSpec
from oz0.edge.results.tool_result import KEPT_KEYS, read_tool_result

__all__ = [
    "apply_tool_contracts",
    "job_tool",
    "progress_of",
    "run_mcp_agent",
    "server_for_agent",
    "tool_name",
    "tool_output",
    "with_known_contracts",
    "with_tool_contracts",
]

log = logging.getLogger(__name__)


def server_for_agent(spec: AgentSpec) -> ServerSpec:
    """The server an agent file names; a stdio command runs in the plugin's folder."""
    config = spec.config
    plugin_dir = str(Path(spec.file).resolve().parent.parent) if getattr(spec, "file", None) else None
    server = config.get("server")
    if server is None and (config.get("url") or config.get("command")):
        server = {"url": config.get("url"), "headers": config.get("headers"), "command": config.get("command")}
    return ServerSpec.from_config(server or {}, cwd=plugin_dir)


async def with_tool_contracts(spec: AgentSpec, *, pool: McpServers | None = None, eliciting: bool = False) -> Any:
    """An `mcp` agent with its tool's inputSchema/outputSchema as contracts where its file declares none.

    Lists the server's tools once (then reuses the listing), declaring the elicitation capability when
    the job's channel can ask (`eliciting`, see `job_tool`); any other agent is returned as it is.
    The runtime calls this before it checks a job's input. Raises McpFailure (Misconfigured) for a
    tool schema the edge cannot use, such as one with a remote $ref.
    """
    if getattr(spec, "kind", None) != "mcp" or (spec.input is not None and spec.output is not None):
        return spec
    return apply_tool_contracts(spec, await job_tool(spec, eliciting=eliciting, pool=pool))


async def job_tool(spec: AgentSpec, *, eliciting: bool, pool: McpServers | None = None) -> ToolInfo:
    """The tool an `mcp` agent calls, as its server lists it to a client with the capabilities the job's
    channel has (`eliciting`: it can ask a person): a server may offer a tool that asks its user (MCP
    elicitation) only to a client that declares it can (McpServers.tool)."""
    return await (pool or servers()).tool(server_for_agent(spec), tool_name(spec), timeout_s=spec.limits.timeout_s,
                                          eliciting=eliciting)


def with_known_contracts(spec: AgentSpec, *, pool: McpServers | None = None) -> Any:
    """Like `with_tool_contracts` from the last listing only, without reaching the server: for drawing
    a finished job's card. Returns the agent unchanged when its tool was never listed or its schemas
    cannot be used (the job that tried already failed, saying why)."""
    if getattr(spec, "kind", None) != "mcp" or (spec.input is not None and spec.output is not None):
        return spec
    try:
        info = ((pool or servers()).listed(server_for_agent(spec)) or {}).get(tool_name(spec))
        return apply_tool_contracts(spec, info) if info is not None else spec
    except McpFailure as exc:
        log.info("agent %s keeps its declared contracts: %s", spec.name, exc.reason)
        return spec


def apply_tool_contracts(spec: AgentSpec, info: ToolInfo) -> Any:
    """`spec` with the contracts of `info`, the tool it calls, where its file declares none. A tool without an outputSchema answers text or JSON (its text parsed): its output contract is then
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
    return replace(spec, **changes, listed_annotations=dict(info.annotations) if info.annotations else None)


def tool_name(spec: AgentSpec) -> str:
    tool = spec.config.get("tool")
    if not isinstance(tool, str) or not tool:
        raise McpFailure("Misconfigured", f"agent {spec.name!r} names no tool")
    return tool


async def run_mcp_agent(spec: AgentSpec, value: Any, ctx: Any = None, *, pool: McpServers | None = None,
                        reserve: Callable[[], AbstractAsyncContextManager[Any]] | None = None,
                        redactor: Redacts | None = None) -> Any:
    """Run one job of an `mcp` agent: call its tool with `value` and return what the tool answered.

    The answer is the tool's structuredContent (checked by the runtime against the tool's outputSchema
    as the agent's output contract), or its text (parsed when it is JSON). `isError` and a result that
    is not complete are failures. A JSON string input is parsed; the tool's inputSchema is checked here
    with the edge's validator when the runtime has not already done so. `reserve` (the runtime's budgets,
    edge.runtime.budgets) is entered around the tool call: a refusal never reaches the server.
    `redactor` (the runtime's, over the server's secrets) cleans what an elicitation asks.
    """
    import orjson

    pool = pool or servers()
    server = server_for_agent(spec)
    tool = tool_name(spec)
    elicit = elicitor_for(ctx, server, redactor)
    info = await job_tool(spec, eliciting=elicit is not None, pool=pool)
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
            raise McpFailure("InvalidInput", f"the input breaks tool {tool!r}'s inputSchema: "
                                             f"{violation_sentence(violations)}")
    if ctx is not None:
        ctx.progress(f"calling tool {tool} on {server.label()}")
    async with reserve() if reserve is not None else nullcontext():
        _, result = await pool.call(server, tool, arguments, timeout_s=spec.limits.timeout_s,
                                    elicit=elicit, on_progress=progress_of(ctx))
    return tool_output(result, tool=tool)


def progress_of(ctx: Any) -> Any:
    """The sink of a call's MCP progress notifications: the job's `ctx.progress`, when it has one."""
    if ctx is None or getattr(ctx, "on_progress", None) is None:
        return None
    return lambda p: ctx.progress(p.message, p.done, p.total)


def tool_output(result: Mapping[str, Any], *, tool: str) -> Any:
    """What a CallToolResult means as a job output: its structured content, else its text; a result
    with blocks other than text is kept whole (content, structuredContent, isError), so its images and
    links reach the card, uploaded or listed, as `oz0 mcp call` shows them. The output check reads
    such a result's value with the same reader (edge.results.tool_result.kept_value)."""
    read = read_tool_result(result)
    if not read.complete:
        raise McpFailure("AgentError", f"tool {tool!r} answered with resultType {read.result_type!r}, not "
                                          "'complete': it asks for input that an agent job cannot give")
    if read.is_error:
        raise McpFailure("AgentError", f"tool {tool!r} reported an error: "
                                       + (read.text.strip() or "it did not say what"),
                         partial_output=read.structured)
    if read.has_other_blocks:  # an image, a link...: the card reads them from the result (edge.results.blocks)
        return {k: result[k] for k in KEPT_KEYS if k in result}
    return read.value()

