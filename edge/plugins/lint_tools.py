"""Lint of model agents' `tools:` and plugin.yaml `servers:` (edge.plugins.agent_tools): a tool naming an
agent that is neither in the plugin nor installed, a server plugin.yaml does not declare, a name given
twice, an mcp agent's `server: NAME` that is not declared, and a loop without `limits.max_steps` (a
model agent with tools must bound its loop in its file: lint and install refuse it, naming the key).
A plugin installed before this rule keeps loading, its loop bounded by DEFAULT_LOOP_STEPS."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from pathlib import Path
from typing import Any

from oz0.edge.plugins.agent_tools import DEFAULT_LOOP_STEPS, ToolsError, parse_servers, parse_tools

__all__ = ["UNBOUNDED_LOOP_FIX", "lint_tools", "unbounded_loop"]

Add = Callable[[str, Path, str, str, str], None]
UNBOUNDED_LOOP_FIX = f"add `limits: {{max_steps: {DEFAULT_LOOP_STEPS}}}` (the most model requests the loop may make)"


def unbounded_loop(data: Any) -> str | None:
    """Why an agent file's tool loop is refused: a model agent with `tools:` that gives no
    `limits.max_steps` (the one copy of this rule, read by lint and by install), else None."""
    if not isinstance(data, dict) or data.get("kind") != "model" or not data.get("tools"):
        return None
    limits = data.get("limits")
    if isinstance(limits, dict) and "max_steps" in limits:
        return None
    return "a model agent with tools must give limits.max_steps, the most model requests its loop makes"



def lint_tools(agent_files: Mapping[Path, Any], manifest: Any, *, plugin_agents: Collection[str],
               installed: Collection[str] | None, add: Add, manifest_file: Path) -> None:
    """Every finding about tools and servers, through `add(severity, file, path, message, fix)`."""
    try:
        servers = parse_servers(manifest.get("servers") if isinstance(manifest, dict) else None)
    except ToolsError as exc:
        add("error", manifest_file, exc.path, exc.message, "give the server `command:` (and `args:`) or `url:`")
        servers = {}
    for file, data in agent_files.items():
        if not isinstance(data, dict):
            continue
        server = data.get("server")
        if data.get("kind") == "mcp" and isinstance(server, str) and server not in servers:
            add("error", file, "$.server", f"server {server!r} is not declared in plugin.yaml `servers:`",
                f"declare it under `servers: {{{server}: {{command: ..., args: [...]}}}}` in plugin.yaml")
        if not data.get("tools") or not isinstance(data.get("tools"), list):
            continue
        try:
            tools = parse_tools(data["tools"], servers)
        except (ToolsError, TypeError, KeyError) as exc:
            if isinstance(exc, ToolsError):
                add("error", file, exc.path, exc.message, "declare the server in plugin.yaml `servers:`, or list "
                                                          "each tool once")
            continue
        for i, tool in enumerate(tools):
            if tool.agent is None or tool.agent in plugin_agents:
                continue
            if installed is not None and tool.agent in installed:
                continue
            add("error" if installed is not None else "warning", file, f"$.tools[{i}].agent",
                f"tool agent {tool.agent!r} is not an agent of this plugin"
                + (" nor an installed one" if installed is not None else " (and it is not known whether it is "
                                                                          "installed where the plugin runs)"),
                "name an agent of this plugin or one that is installed")
        why = unbounded_loop(data)
        if why is not None:
            add("error", file, "$.limits.max_steps", why, UNBOUNDED_LOOP_FIX)
