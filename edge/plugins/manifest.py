"""Plugins and agents as declared: `plugin.yaml` plus `agents/*.yaml`, their contracts loaded and checked.

A plugin is a folder. Each agent file names its kind, its input and output contracts (`input: text`
or `input_schema: <file>`, likewise for the output), its failure kinds and its limits. Loading is
strict (the first problem raises PluginError naming the file and where); `oz0 plugin lint` reports
every finding instead. The manifest shapes are the JSON Schemas in `edge/schemas/`.
"""

from __future__ import annotations

import re
import stat
from dataclasses import dataclass, field
from functools import cached_property
from importlib import resources
from pathlib import Path
from types import MappingProxyType
from typing import Any, Mapping

import orjson
import yaml

from oz0.edge.contracts.schema import Contract, ContractError, load_contract
from oz0.edge.plugins.asks import AskDeclarationError, PersonAsk, asks_of
from oz0.edge.plugins.budgets import Budget, BudgetDeclarationError, Price, parse_budget, parse_price
from oz0.edge.plugins.yaml_safe import safe_load

__all__ = [
    "AGENT_KINDS",
    "AGENT_NAME_RE",
    "AgentSpec",
    "BUDGET_EXHAUSTED",
    "Example",
    "FailureKind",
    "Limits",
    "TREE_LIMIT_DEFAULTS",
    "Plugin",
    "PluginError",
    "load_plugin",
    "manifest_contract",
    "budget_of",
    "examples_of",
    "read_yaml",
]

AGENT_KINDS: tuple[str, ...] = ("python", "command", "http", "mcp", "model")
AGENT_NAME_RE = re.compile(r"^[a-z][a-z0-9-]{0,62}$")  # as agent.schema.json's `name`; file stems too
VERSION_RE = re.compile(r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$")


class PluginError(ValueError):
    """A plugin that cannot be loaded: the file, where in it, what is wrong."""

    def __init__(self, message: str, *, file: str, location: str = "") -> None:
        self.message = message
        self.file = file
        self.location = location
        where = f" at {location}" if location else ""
        super().__init__(f"{file}{where}: {message}")


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
    max_steps: int = 100            # steps run below the job: every child job, retry and loop run
    max_depth: int = 5              # flows within flows, delegations within delegations (the job: 0)
    max_children: int = 50          # children one job of the tree may start
    tree_timeout_s: float | None = None  # the tree's wall time; None: each call's own timeout_s only
    count_waits: bool = False       # whether time waiting for a person counts toward tree_timeout_s


TREE_LIMIT_DEFAULTS: Mapping[str, Any] = MappingProxyType({
    "max_steps": 100, "max_depth": 5, "max_children": 50, "tree_timeout_s": None, "count_waits": False})


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
    budget: Budget | None = None  # `budget:` (edge.plugins.budgets)
    price: Price | None = None    # `price:`; a model's `max_tokens` stays in `config`
    listed_annotations: Mapping[str, Any] | None = None  # an mcp tool's, as its server listed them at install
    asks: tuple[PersonAsk, ...] = ()  # `asks:`, a python agent's person steps (edge.plugins.asks)

    @cached_property
    def contract_hash(self) -> str:
        """SHA-256 of the canonical JSON of the contract parts (edge.contracts.contract_hash)."""
        from oz0.edge.contracts.contract_hash import contract_hash

        return contract_hash(self)

    def failure(self, name: str) -> FailureKind | None:
        if name == INVALID_INPUT.name:
            return INVALID_INPUT
        if name == BUDGET_EXHAUSTED.name:
            return BUDGET_EXHAUSTED
        return next((f for f in self.failures if f.name == name), None)


@dataclass(frozen=True)
class Plugin:
    name: str
    version: str
    path: Path
    description: str = ""
    agents: tuple[AgentSpec, ...] = ()
    flows: tuple[AgentSpec, ...] = ()  # edge.flows.model.FlowSpec, from flows/*.yaml

    def agent(self, name: str) -> AgentSpec | None:
        return next((a for a in self.agents if a.name == name), None)

    def flow(self, name: str) -> AgentSpec | None:
        return next((f for f in self.flows if f.name == name), None)


def read_yaml(path: Path) -> Any:
    """A YAML file, with an error that names it and the line when it does not parse."""
    try:
        if not stat.S_ISREG(path.stat().st_mode):  # a FIFO would block the reader for ever
            raise PluginError("not a regular file (a FIFO, socket or device)", file=str(path))
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise PluginError(f"cannot read: {exc.strerror or exc}", file=str(path)) from None
    except UnicodeDecodeError as exc:
        raise PluginError(f"not UTF-8 text: byte {exc.object[exc.start]:#04x} at offset {exc.start} "
                          "cannot be decoded", file=str(path)) from None
    try:
        return safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark is not None else ""
        raise PluginError(f"not valid YAML: {getattr(exc, 'problem', exc)}", file=str(path), location=where) from None


def manifest_contract(name: str) -> Contract:
    """The schema of a manifest file (`plugin` or `agent`), shipped in edge/schemas/."""
    data = (resources.files("oz0.edge") / "schemas" / f"{name}.schema.json").read_bytes()
    return load_contract(orjson.loads(data), source=f"{name}.schema.json")


def load_plugin(path: str | Path) -> Plugin:
    """Load a plugin folder strictly: manifest, agents, and every contract they name."""
    root = Path(path)
    manifest_file = root / "plugin.yaml"
    if not manifest_file.is_file():
        raise PluginError("no plugin.yaml: a plugin is a folder with plugin.yaml and agents/*.yaml",
                          file=str(manifest_file))
    manifest = read_yaml(manifest_file)
    _check(manifest, manifest_contract("plugin"), manifest_file)
    agents = []
    for agent_file in sorted((root / "agents").glob("*.yaml")):
        agents.append(_load_agent(root, agent_file, manifest["name"]))
    names = [a.name for a in agents]
    for name in names:
        if names.count(name) > 1:
            raise PluginError(f"two agents are named {name!r}", file=str(root / "agents"))
    flows = []
    flow_files = sorted((root / "flows").glob("*.yaml"))
    if flow_files:
        from oz0.edge.flows.model import load_flow  # flows build on this module's AgentSpec

        for flow_file in flow_files:
            flow = load_flow(root, flow_file, manifest["name"])
            if flow.name in names:
                raise PluginError(f"a flow and an agent are both named {flow.name!r}; they are run by name, "
                                  "so rename one", file=str(flow_file), location="$.name")
            names.append(flow.name)
            flows.append(flow)
    return Plugin(manifest["name"], str(manifest["version"]), root, manifest.get("description", ""),
                  tuple(agents), tuple(flows))


def _check(data: Any, contract: Contract, file: Path) -> None:
    violations = contract.validate(data)
    if violations:
        v = violations[0]
        raise PluginError(v.message, file=str(file), location=v.json_path)


def _load_agent(root: Path, file: Path, plugin: str) -> AgentSpec:
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
    limits = Limits(**(data.get("limits") or {}))
    known = {"name", "kind", "description", "input", "output", "input_schema", "output_schema", "failures",
             "limits", "example", "examples", "budget", "price", "asks"}
    config = MappingProxyType({k: v for k, v in data.items() if k not in known})
    example = data.get("example")
    return AgentSpec(
        name=data.get("name") or file.stem, plugin=plugin, kind=data["kind"], file=str(file),
        description=data.get("description", ""), input=contracts["input"], output=contracts["output"],
        input_schema_file=data.get("input_schema"), output_schema_file=data.get("output_schema"),
        failures=failures, limits=limits, config=config,
        example=example if isinstance(example, str) or example is None else orjson.dumps(example).decode(),
        examples=examples_of(data), budget=budget_of(data, file), price=budget_of(data, file, key="price"),
        asks=_asks(root, data, file),
    )


def _asks(root: Path, data: Mapping[str, Any], file: Path) -> tuple[PersonAsk, ...]:
    try:
        return asks_of(root, data)
    except AskDeclarationError as exc:
        raise PluginError(exc.message, file=str(file), location=exc.path) from None


def budget_of(data: Mapping[str, Any], file: Path, *, key: str = "budget") -> Any:
    """An agent or flow file's `budget:` (or `price:`), its amounts exact; PluginError naming the path."""
    try:
        return (parse_budget if key == "budget" else parse_price)(data.get(key), f"$.{key}")
    except BudgetDeclarationError as exc:
        raise PluginError(exc.message, file=str(file), location=exc.path) from None


def examples_of(data: Mapping[str, Any]) -> tuple[Example, ...]:
    """An agent or flow file's `examples:` (checked in shape by its manifest schema), in order."""
    return tuple(Example(input=e["input"], description=str(e.get("description", "")), output=e.get("output"),
                         has_output="output" in e)
                 for e in data.get("examples") or () if isinstance(e, Mapping) and "input" in e)
