"""The contracts of `mcp`-kind agents, taken from their tools' listings at install and stored with the plugin.

An `mcp` agent's file usually declares no schema: its tool's `inputSchema` and `outputSchema` are its
contracts. Installing lists each server's tools once (`tools/list`), so the contracts are stored in the
agent rows like any other agent's, and the tool's annotations beside them (shown before any job runs): the upgrade check compares them between versions, and the installed
plugin (the runtime, its OpenAPI document) carries them. A model agent's `tools: - server: X` are listed
the same way, and the annotations of their tools stored (`listed_tools`) for the confirmation rule. A server that cannot be listed, or a tool schema
the edge cannot use, refuses the install with the reason, before anything is stored.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from oz0.edge.contracts.schema import ContractError, load_contract
from oz0.edge.documents.contract_hash import contract_hash
from oz0.edge.mcp.kind import apply_tool_contracts, server_for_agent, tool_name
from oz0.edge.mcp.pool import servers
from oz0.edge.mcp.session import pick
from oz0.edge.mcp.spec import McpFailure, ServerSpec
from oz0.edge.model.agent import ANNOTATION_KEYS, AgentSpec
from oz0.edge.plugins.declared import PluginError
from oz0.edge.plugins.manifest import Plugin

if TYPE_CHECKING:
    from oz0.edge.mcp.pool import McpServers

__all__ = ["with_listed_contracts", "with_stored_contracts"]


def _needs_tool(spec: AgentSpec) -> bool:
    return spec.kind == "mcp" and (spec.input is None or spec.output is None)


def with_listed_contracts(plugin: Plugin, *, pool: McpServers | None = None) -> Plugin:
    """`plugin` with each `mcp` agent's missing contracts taken from its tool as the server lists it now,
    to a client that declares the elicitation capability: an installed agent may run from a channel
    that can ask, and a server offers a tool that asks only to such a client (edge.mcp.kind.job_tool).

    Raises PluginError naming the agent and why (the server cannot be reached, it has no such tool, or
    the tool's schema cannot be used, e.g. a remote $ref).
    """
    plugin = _with_loop_listings(plugin, pool)
    if not any(map(_needs_tool, plugin.agents)):
        return plugin
    pool = pool or servers()
    agents = []
    for spec in plugin.agents:
        if _needs_tool(spec):
            try:
                server = server_for_agent(spec)
                name = tool_name(spec)
                info = pick(pool.tools_sync(server, timeout_s=spec.limits.timeout_s, eliciting=True), name, server)
                spec = apply_tool_contracts(spec, info)
            except McpFailure as exc:
                raise PluginError(f"agent {spec.name!r} takes its contracts from its MCP tool, and they cannot "
                                  f"be read: {exc.reason}", file=spec.file) from None
        agents.append(spec)
    return replace(plugin, agents=tuple(agents))


def _with_loop_listings(plugin: Plugin, pool: McpServers | None) -> Plugin:
    """Each server a model agent's `tools:` names is listed once: the annotations of the tools the
    agent may call are kept (`listed_tools`, stored with the agent's row), so the confirmation rule and
    the documents know a destructive tool before any job reaches the server; a tool under `only:` the
    server does not list refuses the install, naming what it lists. A server that cannot be listed now
    is checked when a job starts, for a tool loop can do without a server that is down at install."""
    if not any(t.server is not None for spec in plugin.agents for t in spec.tools):
        return plugin
    pool = pool or servers()
    agents = []
    for spec in plugin.agents:
        found: dict[str, dict[str, dict[str, Any]]] = {}
        for decl in spec.tools:
            if decl.server is None:
                continue
            try:
                server = ServerSpec.from_config(spec.servers[decl.server],
                                                cwd=str(Path(spec.file).resolve().parent.parent))
                listed = pool.tools_sync(server, timeout_s=spec.limits.timeout_s)
            except McpFailure:
                continue
            missing = [n for n in decl.only or () if n not in listed]
            if missing:
                raise PluginError(f"agent {spec.name!r}: server {decl.server!r} lists no tool "
                                  f"{', '.join(map(repr, missing))} (it lists: {', '.join(sorted(listed)) or 'none'})",
                                  file=spec.file)
            for name in decl.only if decl.only is not None else sorted(listed):
                hints = {k: v for k, v in dict(listed[name].annotations or {}).items() if k in ANNOTATION_KEYS}
                if hints:
                    found.setdefault(decl.server, {})[name] = hints
        agents.append(replace(spec, listed_tools=found or None) if found else spec)
    return replace(plugin, agents=tuple(agents))


def with_stored_contracts(plugin: Plugin, rows: Any) -> Plugin:
    """`plugin` as loaded from its stored copy, with each `mcp` agent's contracts as stored at install
    (`rows`: the installed version's agent rows)."""
    by_name = {row.name: row for row in rows}
    agents = []
    for spec in plugin.agents:
        row = by_name.get(spec.name)
        if _needs_tool(spec) and row is not None:
            changes: dict[str, Any] = {}
            try:
                if spec.input is None and row.input_schema is not None:
                    changes.update(input=load_contract(row.input_schema, source=row.input_schema_file),
                                   input_schema_file=row.input_schema_file)
                if spec.output is None and row.output_schema is not None:
                    changes.update(output=load_contract(row.output_schema, source=row.output_schema_file),
                                   output_schema_file=row.output_schema_file)
            except ContractError as exc:
                raise PluginError(f"agent {spec.name!r}: its stored tool contract cannot be loaded: {exc}",
                                  file=spec.file) from None
            spec = replace(spec, **changes, listed_annotations=row.annotations)
        elif spec.tools and row is not None and isinstance(row.annotations, dict) and row.annotations.get("servers"):
            spec = replace(spec, listed_tools=row.annotations["servers"])
        agents.append(_with_version(spec, by_name.get(spec.name)))
    flows = tuple(_with_version(spec, by_name.get(spec.name)) for spec in plugin.flows)
    return replace(plugin, agents=tuple(agents), flows=flows)


def _with_version(spec: AgentSpec, row: Any) -> AgentSpec:
    """The spec with the contract_version stored at install, while its contract is the one stored."""
    if row is None or row.contract_version is None or row.contract_hash != contract_hash(spec):
        return spec
    return replace(spec, contract_version=row.contract_version)
