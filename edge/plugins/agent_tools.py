"""What a model agent may call: its `tools:` list, and the MCP `servers:` a plugin names once.

A tool entry is one of: `agent: NAME` (an agent of this plugin or an installed one, called as a child
job: its input contract is the tool's parameters, its output contract the result's shape), `server:
NAME` with an optional `only: [tool, ...]` (every tool of an MCP server declared in plugin.yaml
`servers:`, or only those) and `ask_person` (the model may ask its asker a question). The list is part
of the agent's contract (edge.contracts.contract_hash); loading refuses an unknown server and a name
given twice, so the model is never offered two tools of one name.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from oz0.edge.errors import Oz0Error
from oz0.edge.model.tools import ASK_PERSON, DEFAULT_LOOP_STEPS, ToolDecl, tool_name_of

__all__ = [
    "ASK_PERSON",
    "DEFAULT_LOOP_STEPS",
    "ToolDecl",
    "ToolsError",
    "parse_servers",
    "parse_tools",
    "tool_name_of",
]

_TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")  # what the providers accept as a function name


class ToolsError(Oz0Error, ValueError):
    """A `tools:` or `servers:` declaration that cannot work: the message names the entry, `path` where."""

    def __init__(self, message: str, path: str) -> None:
        super().__init__(message)
        self.message = message
        self.path = path


def parse_servers(data: Any) -> Mapping[str, Mapping[str, Any]]:
    """plugin.yaml `servers:` (shape checked by plugin.schema.json): each a stdio command or a URL."""
    out: dict[str, Mapping[str, Any]] = {}
    for name, server in dict(data or {}).items():
        if bool(server.get("command")) == bool(server.get("url")):
            raise ToolsError(f"server {name!r} needs exactly one of `command` (stdio) or `url` (HTTP)",
                             f"$.servers.{name}")
        out[str(name)] = MappingProxyType(dict(server))
    return MappingProxyType(out)


def parse_tools(data: Any, servers: Mapping[str, Any]) -> tuple[ToolDecl, ...]:
    """An agent file's `tools:` (shape checked by agent.schema.json). Raises ToolsError for a server
    plugin.yaml does not declare, or a name listed twice."""
    tools: list[ToolDecl] = []
    seen: dict[str, str] = {}

    def claim(name: str, path: str) -> None:
        if name in seen:
            raise ToolsError(f"two tools are named {name!r} ({seen[name]} and {path}); the model must tell "
                             "them apart: list each once", path)
        seen[name] = path

    for i, entry in enumerate(data or ()):
        path = f"$.tools[{i}]"
        if entry == ASK_PERSON:
            claim(ASK_PERSON, path)
            tools.append(ToolDecl(ask_person=True))
        elif "agent" in entry:
            claim(tool_name_of(entry["agent"]), path)
            tools.append(ToolDecl(agent=str(entry["agent"])))
        else:
            server = str(entry["server"])
            if server not in servers:
                known = ", ".join(sorted(servers)) or "none: declare them in plugin.yaml `servers:`"
                raise ToolsError(f"tool server {server!r} is not declared in plugin.yaml `servers:` "
                                 f"(declared: {known})", f"{path}.server")
            if any(t.server == server for t in tools):
                raise ToolsError(f"server {server!r} is listed twice; give one entry with `only:`", path)
            only = entry.get("only")
            for name in only or ():
                if not _TOOL_NAME.match(name):
                    raise ToolsError(f"{name!r} is not a tool name a model can call (letters, digits, _ "
                                     "and -, at most 64)", f"{path}.only")
                claim(name, f"{path}.only")
            tools.append(ToolDecl(server=server, only=tuple(only) if only is not None else None,
                                  annotations=MappingProxyType({k: MappingProxyType(dict(v)) for k, v in
                                                                dict(entry.get("annotations") or {}).items()})))
    return tuple(tools)
