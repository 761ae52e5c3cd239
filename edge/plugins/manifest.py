"""Plugins and agents as declared: `plugin.yaml` plus `agents/*.yaml`, their contracts loaded and checked.

A plugin is a folder. Each agent file names its kind, its input and output contracts (`input: text`
or `input_schema: <file>`, likewise for the output), its failure kinds and its limits. Loading is
strict (the first problem raises PluginError naming the file and where); `oz0 plugin lint` reports
every finding instead. The manifest shapes are the JSON Schemas in `schemas/`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

import orjson

from oz0.edge.contracts.schema import Contract, ContractError, load_contract
from oz0.edge.model.agent import AgentSpec, ConversationLimits, FailureKind, Limits, PersonAsk
from oz0.edge.plugins.agent_tools import DEFAULT_LOOP_STEPS, ToolsError, parse_servers, parse_tools
from oz0.edge.plugins.asks import AskDeclarationError, asks_of
from oz0.edge.plugins.declared import AGENT_NAME_RE, PluginError, budget_of, examples_of, manifest_contract, read_yaml
from oz0.edge.plugins.flow_manifest import load_flow
from oz0.edge.plugins.spdx import spdx_license

__all__ = [
    "Plugin",
    "load_plugin",
]

@dataclass(frozen=True)
class Plugin:
    name: str
    version: str
    path: Path
    description: str = ""
    agents: tuple[AgentSpec, ...] = ()
    flows: tuple[AgentSpec, ...] = ()  # edge.plugins.flow_manifest.FlowSpec, from flows/*.yaml
    servers: Mapping[str, Mapping[str, Any]] = field(default_factory=lambda: MappingProxyType({}))
    license: str | None = None  # an SPDX license expression, canonical (plugin.yaml `license:`)

    def agent(self, name: str) -> AgentSpec | None:
        return next((a for a in self.agents if a.name == name), None)

    def flow(self, name: str) -> AgentSpec | None:
        return next((f for f in self.flows if f.name == name), None)


def load_plugin(path: str | Path) -> Plugin:
    """Load a plugin folder strictly: manifest, agents, and every contract they name."""
    root = Path(path)
    manifest_file = root / "plugin.yaml"
    if not manifest_file.is_file():
        raise PluginError("no plugin.yaml: a plugin is a folder with plugin.yaml and agents/*.yaml",
                          file=str(manifest_file))
    manifest = read_yaml(manifest_file)
    _check(manifest, manifest_contract("plugin"), manifest_file)
    try:
        servers = parse_servers(manifest.get("servers"))
    except ToolsError as exc:
        raise PluginError(exc.message, file=str(manifest_file), location=exc.path) from None
    agents = []
    for agent_file in sorted((root / "agents").glob("*.yaml")):
        agents.append(_load_agent(root, agent_file, manifest["name"], servers))
    names = [a.name for a in agents]
    for name in names:
        if names.count(name) > 1:
            raise PluginError(f"two agents are named {name!r}", file=str(root / "agents"))
    flows = []
    flow_files = sorted((root / "flows").glob("*.yaml"))
    if flow_files:
        for flow_file in flow_files:
            flow = load_flow(root, flow_file, manifest["name"])
            if flow.name in names:
                raise PluginError(f"a flow and an agent are both named {flow.name!r}; they are run by name, "
                                  "so rename one", file=str(flow_file), location="$.name")
            names.append(flow.name)
            flows.append(flow)
    return Plugin(manifest["name"], str(manifest["version"]), root, manifest.get("description", ""),
                  tuple(agents), tuple(flows), servers,
                  None if "license" not in manifest else spdx_license(manifest["license"], manifest_file))


def _check(data: Any, contract: Contract, file: Path) -> None:
    violations = contract.validate(data)
    if violations:
        v = violations[0]
        raise PluginError(v.message, file=str(file), location=v.json_path)


def _load_agent(root: Path, file: Path, plugin: str,
                servers: Mapping[str, Mapping[str, Any]] = MappingProxyType({})) -> AgentSpec:
    data = read_yaml(file)
    _check(data, manifest_contract("agent"), file)
    if "name" not in data and not AGENT_NAME_RE.match(file.stem):
        raise PluginError(f"the file name gives the agent name {file.stem!r}, which is not an agent name "
                          "(lower-case letters, digits and dashes, starting with a letter); rename the file "
                          "or add `name:`", file=str(file), location="$.name")
    contracts: dict[str, Contract | None] = {}
    for direction in ("input", "output"):
        schema_file = data.get(f"{direction}_schema")
        contracts[direction] = None
        if schema_file:
            target = (root / schema_file).resolve()
            if not target.is_relative_to(root.resolve()):
                raise PluginError(f"{direction}_schema {schema_file!r} is outside the plugin folder",
                                  file=str(file), location=f"$.{direction}_schema")
            try:
                contracts[direction] = load_contract(target, source=str(root / schema_file))
            except ContractError as exc:
                raise PluginError(f"{direction}_schema: {exc}", file=str(file),
                                  location=f"$.{direction}_schema") from None
    failures = tuple(
        FailureKind(name, bool(f.get("retryable", False)), bool(f.get("partial", False)),
                    bool(f.get("person", False)), str(f.get("description", "")))
        for name, f in (data.get("failures") or {}).items()
    )
    try:
        tools = parse_tools(data.get("tools"), servers)
    except ToolsError as exc:
        raise PluginError(exc.message, file=str(file), location=exc.path) from None
    declared_limits = dict(data.get("limits") or {})
    if data["kind"] == "model" and tools:
        declared_limits.setdefault("max_steps", DEFAULT_LOOP_STEPS)
    limits = Limits(**declared_limits)
    known = {"name", "kind", "description", "input", "output", "input_schema", "output_schema", "failures",
             "limits", "example", "examples", "budget", "price", "tools", "asks", "conversation",
             "history"}
    config = {k: v for k, v in data.items() if k not in known}
    if isinstance(config.get("server"), str):  # an mcp agent naming a server of plugin.yaml `servers:`
        if config["server"] not in servers:
            raise PluginError(f"server {config['server']!r} is not declared in plugin.yaml `servers:` (declared: "
                              f"{', '.join(sorted(servers)) or 'none'})", file=str(file), location="$.server")
        config["server"] = dict(servers[config["server"]])
    example = data.get("example")
    return AgentSpec(
        name=data.get("name") or file.stem, plugin=plugin, kind=data["kind"], file=str(file),
        description=data.get("description", ""), input=contracts["input"], output=contracts["output"],
        input_schema_file=data.get("input_schema"), output_schema_file=data.get("output_schema"),
        failures=failures, limits=limits, config=MappingProxyType(config), tools=tools,
        servers=MappingProxyType({t.server: servers[t.server] for t in tools if t.server is not None}),
        example=example if isinstance(example, str) or example is None else orjson.dumps(example).decode(),
        examples=examples_of(data), budget=budget_of(data, file), price=budget_of(data, file, key="price"),
        asks=_asks(root, data, file),
        conversation=ConversationLimits(**(data.get("conversation") or {})), history=bool(data.get("history")),
    )


def _asks(root: Path, data: Mapping[str, Any], file: Path) -> tuple[PersonAsk, ...]:
    try:
        return asks_of(root, data)
    except AskDeclarationError as exc:
        raise PluginError(exc.message, file=str(file), location=exc.path) from None
