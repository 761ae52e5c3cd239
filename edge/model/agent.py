"""An agent as declared, as the edge passes it around: its spec, failure kinds, limits and examples.

Plain frozen values, loaded by edge.plugins.manifest and read by every floor above; the contract hash of a
spec is edge.documents.contract_hash's (`contract_hash(spec)`, computed once per spec).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import orjson

from oz0.edge.model.budget import Budget, Price
from oz0.edge.model.tools import ToolDecl

if TYPE_CHECKING:
    from oz0.edge.contracts.schema import Contract

__all__ = [
    "AGENT_KINDS",
    "ANNOTATION_KEYS",
    "BUDGET_EXHAUSTED",
    "INVALID_INPUT",
    "TREE_LIMIT_DEFAULTS",
    "AgentSpec",
    "ConversationLimits",
    "Example",
    "FailureKind",
    "Limits",
    "PersonAsk",
]

AGENT_KINDS: tuple[str, ...] = ("python", "command", "http", "mcp", "model")
# The MCP tool annotations an agent file may declare (`annotations:`); the contract hash reads them.
ANNOTATION_KEYS = ("title", "readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint")


@dataclass(frozen=True)
class FailureKind:
    """A typed way an agent may end a job: whether to retry it, whether it left partial work,
    whether a person must act."""

    name: str
    retryable: bool = False
    partial: bool = False
    person: bool = False
    description: str = ""


INVALID_INPUT = FailureKind("InvalidInput", description="The input does not match the agent's input contract.")
# Built in and never retried, whatever an agent file declares (edge.runtime.budgets raises it).
BUDGET_EXHAUSTED = FailureKind("BudgetExhausted", partial=True, description=(
    "A budget covering the job had no room for the next call's maximum; the call was not made."))


@dataclass(frozen=True)
class Limits:
    """Per call (timeout_s, max_output_bytes, max_attempts, concurrency) and over the job tree a job
    roots (max_steps, max_depth, max_children, tree_timeout_s, count_waits: edge.runtime.tree)."""

    timeout_s: float = 60.0
    max_output_bytes: int = 1_048_576
    max_attempts: int = 3
    concurrency: int | None = None  # jobs of this agent running at once, across every replica
    max_restarts: int = 3           # crashes in a row a job may be resumed after (edge.runtime.durable)
    max_queued: int | None = None   # jobs of this agent waiting to run; past it an ask is busy (edge.runtime.backlog)
    max_steps: int = 100            # steps run below the job: every child job, retry and loop run
    max_depth: int = 5              # flows within flows, delegations within delegations (the job: 0)
    max_children: int = 50          # children one job of the tree may start
    tree_timeout_s: float | None = None  # the tree's wall time; None: each call's own timeout_s only
    count_waits: bool = False       # whether time waiting for a person counts toward tree_timeout_s


@dataclass(frozen=True)
class ConversationLimits:
    """How much of a chat thread's conversation a follow-up gives the agent (`conversation:`): the
    oldest turns past max_turns or max_tokens are dropped; a thread idle for idle_hours is over."""

    max_turns: int = 20
    max_tokens: int = 8000
    idle_hours: float = 24.0

    def as_json(self) -> dict[str, Any]:
        return {"max_turns": self.max_turns, "max_tokens": self.max_tokens, "idle_hours": self.idle_hours}


TREE_LIMIT_DEFAULTS: Mapping[str, Any] = MappingProxyType({
    "max_steps": 100, "max_depth": 5, "max_children": 50, "tree_timeout_s": None, "count_waits": False})


@dataclass(frozen=True)
class PersonAsk:
    """One ask a python agent's file declares under `asks:` (edge.plugins.asks): its step name (the key),
    the answer schema the answer must match, and what the person is asked."""

    step: str
    answer_schema: Contract
    answer_schema_file: str | None = None
    description: str = ""


@dataclass(frozen=True)
class Example:
    """One declared example of an agent's contract: an input (text, or JSON data), what it shows, and
    optionally the answer it gives (lint checks both against the contracts)."""

    input: Any
    description: str = ""
    output: Any = None
    has_output: bool = False

    @property
    def input_text(self) -> str:
        """The input as one types it: the text itself, or compact JSON."""
        return self.input if isinstance(self.input, str) else orjson.dumps(self.input).decode()


@dataclass(frozen=True)
class AgentSpec:
    """One agent as declared. `input`/`output` are None for text, else the loaded Contract."""

    name: str
    plugin: str
    kind: str
    file: str
    description: str = ""
    input: Contract | None = None
    output: Contract | None = None
    input_schema_file: str | None = None
    output_schema_file: str | None = None
    failures: tuple[FailureKind, ...] = ()
    limits: Limits = Limits()
    config: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    example: str | None = None
    examples: tuple[Example, ...] = ()
    contract_version: str | None = None  # the plugin version that introduced contract_hash, as stored at install
    budget: Budget | None = None  # `budget:` (edge.model.budget)
    price: Price | None = None    # `price:`; a model's `max_tokens` stays in `config`
    listed_annotations: Mapping[str, Any] | None = None  # an mcp tool's, as its server listed them at install
    # a tool loop's server tools' annotations as the servers listed them at install: server -> tool -> hints
    listed_tools: Mapping[str, Mapping[str, Mapping[str, Any]]] | None = None
    asks: tuple[PersonAsk, ...] = ()  # `asks:`, a python agent's person steps (edge.plugins.asks)
    conversation: ConversationLimits = ConversationLimits()  # `conversation:` (edge.runtime.conversations)
    history: bool = False         # `history:`: a command or http agent is given the earlier turns too
    tools: tuple[ToolDecl, ...] = ()  # a model agent's `tools:` (edge.model.tools)
    servers: Mapping[str, Mapping[str, Any]] = field(default_factory=lambda: MappingProxyType({}))  # plugin.yaml's

    @property
    def loops(self) -> bool:
        """Whether a job of this agent is a tool loop (edge.runtime.tool_loop): a model agent with
        tools, or one of a provider only the loop speaks."""
        return self.kind == "model" and (bool(self.tools) or self.config.get("provider") == "anthropic")

    def tool_annotations(self) -> dict[str, dict[str, dict[str, Any]]]:
        """A tool loop's server tools' annotations known before any job reaches a server: as listed at
        install (`listed_tools`), under what the agent file's `tools:` declares (the file wins)."""
        out: dict[str, dict[str, dict[str, Any]]] = {}
        for decl in self.tools:
            if decl.server is None:
                continue
            listed = dict((self.listed_tools or {}).get(decl.server) or {})
            for name in set(listed) | set(decl.annotations):
                merged = {k: v for k, v in {**dict(listed.get(name) or {}), **dict(decl.annotations.get(name) or {})}
                          .items() if k in ANNOTATION_KEYS}
                if merged:
                    out.setdefault(decl.server, {})[name] = merged
        return {server: dict(sorted(tools.items())) for server, tools in sorted(out.items())}

    def failure(self, name: str) -> FailureKind | None:
        if name == INVALID_INPUT.name:
            return INVALID_INPUT
        if name == BUDGET_EXHAUSTED.name:
            return BUDGET_EXHAUSTED
        return next((f for f in self.failures if f.name == name), None)
