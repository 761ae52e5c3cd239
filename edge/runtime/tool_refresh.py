"""An MCP server's tools changed (`notifications/tools/list_changed`, edge.mcp.list_changed): the stored
contracts of the installed `mcp` agents on it follow, by the upgrade check's rules.

Each agent whose contracts come from a tool of that server has the tool's new schemas compared with the
stored ones (edge.documents.diff, as between two plugin versions). A change that breaks no caller is
stored, so validation and the OpenAPI document follow it. A breaking change is not applied: callers keep
the contract they were promised, and the change is recorded once in the audit log (`mcp.tools.breaking`)
and logged once, so an operator sees it.
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from oz0.edge.contracts.changes import Change, CompatError
from oz0.edge.contracts.schema import ContractError
from oz0.edge.documents.compat import installed_agents
from oz0.edge.documents.diff import compare_agents
from oz0.edge.mcp.kind import apply_tool_contracts, server_for_agent, tool_name
from oz0.edge.mcp.list_changed import ToolsWatcher
from oz0.edge.mcp.pool import servers
from oz0.edge.mcp.spec import McpFailure
from oz0.edge.plugins.declared import PluginError
from oz0.edge.plugins.manifest import load_plugin
from oz0.edge.runtime.install import agent_row

if TYPE_CHECKING:
    from oz0.edge.mcp.spec import ServerSpec, ToolInfo
    from oz0.edge.runtime.plugin_cache import PluginCache
    from oz0.edge.runtime.store import Store

__all__ = ["refresh_tool_contracts", "unwatch_tools", "watch_tools"]

log = logging.getLogger(__name__)


def watch_tools(store: Store, cache: PluginCache) -> ToolsWatcher:
    """Have the stored contracts of `store` follow the tool changes the process-wide MCP pool hears
    (the plugins read from `cache`); the watcher, for `unwatch_tools` when the runtime closes (the pool
    outlives it)."""
    def watcher(server: ServerSpec, tools: dict[str, ToolInfo]) -> None:
        refresh_tool_contracts(store, cache, server, tools)

    servers().changes.watch(watcher)
    return watcher


def unwatch_tools(watcher: ToolsWatcher) -> None:
    servers().changes.unwatch(watcher)


def refresh_tool_contracts(store: Store, cache: PluginCache, server: ServerSpec,
                           tools: dict[str, ToolInfo]) -> list[Change]:
    """Compare the tools `server` lists now with the stored contracts of the installed mcp agents on it;
    store the compatible changes, audit the breaking ones. Returns every change found."""
    found: list[Change] = []
    for version in store.current_versions():
        if not any(a.kind == "mcp" for a in version.agents):
            continue
        try:
            plugin = load_plugin(cache.folder(version))
        except PluginError as exc:
            log.error("installed plugin %s %s cannot be loaded: %s", version.plugin, version.version, exc)
            continue
        stored = {a.name: a for a in installed_agents(version)}
        for spec in plugin.agents:
            old = stored.get(spec.name)
            if spec.kind != "mcp" or old is None or (spec.input is not None and spec.output is not None):
                continue
            try:
                if server_for_agent(spec) != server:
                    continue
                name = tool_name(spec)
            except McpFailure:
                continue
            info = tools.get(name)
            try:
                if info is None:
                    raise McpFailure("Misconfigured", f"the server no longer lists tool {name!r}")
                new = apply_tool_contracts(spec, info)
                candidate = replace(old, input=new.input, output=new.output, input_schema_file=new.input_schema_file,
                                    output_schema_file=new.output_schema_file)
                changes = compare_agents([old], [candidate])
            except (McpFailure, CompatError, ContractError) as exc:
                reason = getattr(exc, "reason", None) or str(exc)
                changes, candidate = [Change(spec.name, "agent", "$", f"tool {name!r}: {reason}", True)], None
            found += changes
            if not changes:
                continue
            if any(c.breaking for c in changes) or candidate is None:
                _breaking(store, version, spec.name, name, server, changes)
                continue
            row = agent_row(candidate, version=version.version, previous=None)  # a new hash, from this version on
            store.update_agent_contracts(version.id, spec.name, contracts={
                k: row[k] for k in ("input_schema_file", "input_schema", "input_hash", "output_schema_file",
                                    "output_schema", "output_hash", "contract_hash", "contract_version")})
            log.info("agent %s follows the new schemas of tool %s on %s: %s", spec.name, name, server.label(),
                     "; ".join(c.clause() for c in changes))
    return found


def _breaking(store: Store, version: Any, agent: str, tool: str, server: ServerSpec,
              changes: list[Change]) -> None:
    """Audit and log a breaking tool change once per agent and change set (across restarts and replicas)."""
    listed = [c.to_dict() for c in changes]
    digest = hashlib.sha256(json.dumps(listed, sort_keys=True).encode()).hexdigest()[:32]
    if not store.claim(f"mcp.tools.breaking:{version.id}:{agent}:{digest}"):
        return
    store.add_audit("mcp.tools.breaking", actor=f"mcp:{server.label()}", detail={
        "agent": agent, "plugin": version.plugin, "version": version.version, "tool": tool,
        "server": server.label(), "changes": [c for c in listed if c["breaking"]]})
    log.warning("tool %s of MCP server %s changed in a way that breaks agent %s's callers; the agent keeps "
                "its stored contract: %s", tool, server.label(), agent,
                "; ".join(c.clause() for c in changes if c.breaking))
