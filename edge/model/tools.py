"""A model agent's tools as declared (`tools:` in its agent file): what its contract says it may call.

Parsed and checked by edge.plugins.agent_tools; carried by AgentSpec.tools, hashed with the contract,
shown in OpenAPI as `x-oz0-tools` and stored with the installed plugin.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

__all__ = ["ASK_PERSON", "DEFAULT_LOOP_STEPS", "ToolDecl", "tool_name_of"]

ASK_PERSON = "ask_person"
DEFAULT_LOOP_STEPS = 10  # model requests of a loop whose agent file gives no limits.max_steps


@dataclass(frozen=True)
class ToolDecl:
    """One entry of `tools:`: an agent, a server's tools (all, or `only` these), or ask_person."""

    agent: str | None = None
    server: str | None = None
    only: tuple[str, ...] | None = None
    annotations: Mapping[str, Mapping[str, Any]] = field(default_factory=lambda: MappingProxyType({}))  # per tool
    ask_person: bool = False

    def as_json(self) -> dict[str, Any]:
        """The entry as the contract hash, OpenAPI `x-oz0-tools` and the plugin store read it."""
        if self.ask_person:
            return {"ask_person": True}
        if self.agent is not None:
            return {"agent": self.agent}
        out: dict[str, Any] = {"server": self.server}
        if self.only is not None:
            out["only"] = list(self.only)
        if self.annotations:
            out["annotations"] = {k: dict(v) for k, v in sorted(self.annotations.items())}
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ToolDecl:
        if data.get("ask_person"):
            return cls(ask_person=True)
        if data.get("agent"):
            return cls(agent=str(data["agent"]))
        only = data.get("only")
        return cls(server=str(data["server"]), only=tuple(only) if only is not None else None,
                   annotations=MappingProxyType({k: MappingProxyType(dict(v))
                                                 for k, v in dict(data.get("annotations") or {}).items()}))


def tool_name_of(name: str) -> str:
    """A tool's name as the model sees it: providers take letters, digits, `_` and `-` only."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", name)[:64]


