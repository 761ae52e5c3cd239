"""The tools of a model agent's loop, built from contracts: what the model is offered and how a call runs.

An agent tool's parameters are its input contract (text input: one `input` string), its result is
checked by the child job against its output contract; an MCP tool's parameters are its inputSchema,
its result is checked against its outputSchema; `ask_person` asks the asker. Every call's arguments
are validated with the edge's own validator before the call: arguments that break the contract go
back to the model as an error naming the JSON path and rule, and never reach the tool.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from oz0.edge.contracts.answer_schema import check_answer_schema
from oz0.edge.contracts.schema import Contract, ContractError, load_contract, violation_sentence
from oz0.edge.mcp.pool import servers
from oz0.edge.mcp.spec import ServerSpec
from oz0.edge.model.agent import ANNOTATION_KEYS
from oz0.edge.model.job import JobFailure
from oz0.edge.model.tools import ASK_PERSON, tool_name_of

if TYPE_CHECKING:
    from oz0.edge.model.agent import AgentSpec
    from oz0.edge.runtime.runner import Runtime

__all__ = [
    "ASK_PERSON_SCHEMA",
    "MAX_ASK_FIELDS",
    "TEXT_INPUT_SCHEMA",
    "LoopTool",
    "arguments_error",
    "ask_person_error",
    "list_tools",
]

MAX_ASK_FIELDS = 5  # fields of an answer schema the model may ask for (scalars only)
TEXT_INPUT_SCHEMA: dict[str, Any] = {"type": "object", "required": ["input"], "additionalProperties": False,
                                     "properties": {"input": {"type": "string", "description": "the text to send"}}}
ASK_PERSON_SCHEMA: dict[str, Any] = {
    "type": "object", "required": ["question", "answer_schema"], "additionalProperties": False,
    "properties": {
        "question": {"type": "string", "minLength": 1, "maxLength": 3000, "description": "what to ask the person"},
        "answer_schema": {"type": "object", "description": (
            "a JSON Schema of the answer: an object of at most 5 fields, each a string, number, integer "
            "or boolean")}}}


@dataclass(frozen=True)
class LoopTool:
    """One tool as the model sees it, and where its calls go."""

    name: str
    kind: str                              # agent | mcp | ask_person
    description: str
    parameters: Mapping[str, Any]
    target: str = ""                       # the agent, or the MCP tool's own name
    server: str | None = None              # the plugin.yaml `servers:` name of an MCP tool
    output: Mapping[str, Any] | None = None  # an MCP tool's outputSchema
    annotations: Mapping[str, Any] = field(default_factory=dict)
    text_input: bool = False               # an agent taking text: its call's `input` is the text

    def as_json(self) -> dict[str, Any]:
        return {"name": self.name, "kind": self.kind, "description": self.description,
                "parameters": dict(self.parameters), "target": self.target, "server": self.server,
                "output": dict(self.output) if self.output is not None else None,
                "annotations": dict(self.annotations), "text_input": self.text_input}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> LoopTool:
        return cls(**data)

    def contract(self) -> Contract:
        return load_contract(dict(self.parameters), source=f"the parameters of tool {self.name}")

    @property
    def destructive(self) -> bool:
        return self.annotations.get("destructiveHint") is True and self.annotations.get("readOnlyHint") is not True


def arguments_error(tool: LoopTool, arguments: Any) -> str | None:
    """Why these arguments do not fit the tool's parameters (the JSON path and the rule), or None."""
    if not isinstance(arguments, dict):
        return f"the arguments of {tool.name} must be a JSON object"
    violations = tool.contract().validate(arguments)
    if violations:
        return violation_sentence(violations, subject=f"the arguments of {tool.name}")
    if tool.kind == ASK_PERSON:
        return ask_person_error(arguments.get("answer_schema"))
    return None


def ask_person_error(schema: Any) -> str | None:
    """An answer schema the model gives must be a valid schema: an object of at most MAX_ASK_FIELDS scalars."""
    try:
        check_answer_schema(schema)
    except ValueError as exc:
        return f"answer_schema: {exc}"
    if len(schema["properties"]) > MAX_ASK_FIELDS:
        return f"answer_schema has {len(schema['properties'])} fields; ask_person takes at most {MAX_ASK_FIELDS}"
    return None


async def list_tools(runtime: Runtime, spec: AgentSpec) -> list[LoopTool]:
    """The agent's tools, from the contracts: its agents' (installed now) and its servers' (listed now)."""
    tools: list[LoopTool] = []
    for decl in spec.tools:
        if decl.ask_person:
            tools.append(LoopTool(ASK_PERSON, ASK_PERSON, "Ask the person who asked you a question and wait for "
                                  "the answer; use it when you need a decision or a fact only they have.",
                                  ASK_PERSON_SCHEMA))
        elif decl.agent is not None:
            tools.append(_agent_tool(runtime, decl.agent))
        else:
            tools.extend(await _server_tools(spec, decl))
    names = [t.name for t in tools]
    for name in names:
        if names.count(name) > 1:
            raise JobFailure("Misconfigured", f"two tools of {spec.name} are named {name!r} (an agent and a server "
                                              "tool, or two servers' tools); list them with `only:` so each "
                                              "name is given once")
    return tools


def _agent_tool(runtime: Runtime, name: str) -> LoopTool:
    try:
        target = runtime.agent(name)
    except ValueError as exc:  # UnknownAgent: not installed (any more)
        raise JobFailure("Misconfigured", f"tool agent {name!r}: {exc}") from None
    description = target.description or f"Ask the agent {name}."
    if target.input is None:
        return LoopTool(tool_name_of(name), "agent", description, TEXT_INPUT_SCHEMA, target=name,
                        annotations=_annotations(target.config.get("annotations")), text_input=True)
    return LoopTool(tool_name_of(name), "agent", description, target.input.schema, target=name,
                    annotations=_annotations(target.config.get("annotations")))


async def _server_tools(spec: AgentSpec, decl: Any) -> list[LoopTool]:
    plugin_dir = str(Path(spec.file).resolve().parent.parent) if spec.file else None
    server = ServerSpec.from_config(spec.servers[decl.server], cwd=plugin_dir)
    listed = await servers().tools(server, timeout_s=spec.limits.timeout_s)
    wanted = decl.only if decl.only is not None else tuple(sorted(listed))
    missing = [n for n in wanted if n not in listed]
    if missing:
        raise JobFailure("Misconfigured", f"server {decl.server!r} lists no tool {', '.join(map(repr, missing))} "
                                          f"(it lists: {', '.join(sorted(listed)) or 'none'})")
    out = []
    for name in wanted:
        info = listed[name]
        try:
            load_contract(dict(info.input_schema or {"type": "object"}), source=f"tool {name!r} inputSchema")
        except ContractError as exc:
            raise JobFailure("Misconfigured", str(exc)) from None
        stored = dict((spec.listed_tools or {}).get(decl.server) or {}).get(name)  # listed at install
        annotations = {**_annotations(stored), **_annotations(info.annotations),
                       **_annotations(decl.annotations.get(name))}
        out.append(LoopTool(tool_name_of(name), "mcp", info.description or info.title or name,
                            dict(info.input_schema or {"type": "object", "properties": {}}), target=name,
                            server=decl.server, output=dict(info.output_schema) if info.output_schema else None,
                            annotations=annotations))
    return out


def _annotations(value: Mapping[str, Any] | None) -> dict[str, Any]:
    return {k: v for k, v in dict(value or {}).items() if k in ANNOTATION_KEYS}


def call_label(tool: LoopTool, arguments: Any) -> str:
    """How a progress line names a call: `ci-log(run_id=4411)`, cut to stay one line."""
    if isinstance(arguments, dict):
        inner = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" if not isinstance(v, (int, float))
                          else f"{k}={v}" for k, v in arguments.items())
    else:
        inner = json.dumps(arguments, ensure_ascii=False)
    if len(inner) > 80:
        inner = inner[:79] + "…"
    return f"{tool.name}({inner})"
