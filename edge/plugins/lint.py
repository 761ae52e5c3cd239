"""`oz0 plugin lint`: every finding in a plugin folder, each naming the file, the JSON path, what is
wrong and how to mend it.

Loading (edge.plugins) stops at the first problem; lint keeps going so an author sees them all.
Errors refuse an install; warnings do not. From plugin version 1.0.0 on, an agent that declares no
contract for its input or its output is an error, not a warning. Nothing is ever fetched: a `$ref`
that leaves its file is refused here, as the runtime would refuse it.
"""

from __future__ import annotations

import importlib.util
import re
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import orjson

from oz0.edge.contracts.pointer import json_path, parse_pointer
from oz0.edge.contracts.schema import Contract, ContractError, load_contract
from oz0.edge.contracts.view import SchemaView, walk_schema
from oz0.edge.model.budget import budget_findings
from oz0.edge.plugins.declared import AGENT_NAME_RE, PluginError, manifest_contract, read_yaml
from oz0.edge.plugins.files import plugin_problems
from oz0.edge.plugins.lint_examples import lint_examples
from oz0.edge.plugins.lint_sides import TEXT, AgentSides, Side
from oz0.edge.plugins.lint_tools import lint_tools
from oz0.edge.plugins.spdx import LICENSE_FIX, spdx_license

if TYPE_CHECKING:
    from oz0.edge.model.agent import AgentSpec

__all__ = ["Finding", "LintReport", "lint_plugin"]

Severity = Literal["error", "warning"]
VERSION_RE = re.compile(r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$")

_KIND_HINTS = {
    "python": "add `entry: module:function` (the module is a .py file in the plugin folder)",
    "command": "add `command: [program, arg, ...]` (the input goes to its stdin)",
    "http": "add `url: https://...` (the input is POSTed as JSON)",
    "mcp": "add `server: {command: ..., args: [...]}` and `tool: NAME`",
    "model": "add `base_url: https://.../v1` and `model: NAME` (and `api_key_env: NAME` for its key)",
}


@dataclass(frozen=True)
class Finding:
    """One problem: where (file relative to the plugin, JSON path in it), what, and how to mend it."""

    severity: Severity
    file: str
    path: str
    message: str
    fix: str = ""

    def describe(self) -> str:
        where = f"{self.file} {self.path}" if self.path else self.file
        mend = f"; to mend: {self.fix}" if self.fix else ""
        return f"{self.severity}: {where}: {self.message}{mend}"

    def to_dict(self) -> dict[str, str]:
        return {"severity": self.severity, "file": self.file, "path": self.path, "message": self.message,
                "fix": self.fix}


@dataclass(frozen=True)
class LintReport:
    root: Path
    findings: tuple[Finding, ...]
    name: str | None = None
    version: str | None = None

    @property
    def errors(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.severity == "error")

    @property
    def warnings(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.severity == "warning")

    @property
    def ok(self) -> bool:
        return not self.errors


class _Linter:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.findings: list[Finding] = []
        self.sides: dict[str, AgentSides] = {}  # agent name -> its contracts, for the flows' and schedules' lint

    def rel(self, path: Path) -> str:
        try:
            return path.relative_to(self.root).as_posix()
        except ValueError:
            return str(path)

    def add(self, severity: Severity, file: Path | str, path: str, message: str, fix: str = "") -> None:
        name = self.rel(file) if isinstance(file, Path) else file
        self.findings.append(Finding(severity, name, path, message, fix))

    def yaml(self, file: Path) -> Any:
        try:
            return read_yaml(file)
        except PluginError as exc:
            self.add("error", file, exc.location, exc.message, "fix the YAML syntax at that line")
            return None


def lint_plugin(path: str | Path, *, installed: Mapping[str, AgentSpec] | None = None) -> LintReport:
    """Every finding in the plugin folder at `path` (errors and warnings), in file order. `installed`:
    the agents installed where the plugin will run, when known (a flow may use them)."""
    root = Path(path)
    lint = _Linter(root)
    if not root.is_dir():
        lint.add("error", str(root), "", "not a folder", "give the folder that holds plugin.yaml")
        return LintReport(root, tuple(lint.findings))
    refused = set()
    for rel, why in plugin_problems(root):
        lint.add("error", rel, "", why, "remove it: a plugin holds only its own regular files (copy the "
                                        "file in instead of linking to it)")
        refused.add(rel)
    manifest_file = root / "plugin.yaml"
    name = version = None
    manifest: Any = None
    strict = False
    if "plugin.yaml" in refused:
        pass
    elif not manifest_file.is_file():
        lint.add("error", "plugin.yaml", "", "missing file: a plugin is a folder with plugin.yaml and agents/*.yaml",
                 "create plugin.yaml with `name:` and `version:` (or run `oz0 plugin new NAME`)")
    else:
        manifest = lint.yaml(manifest_file)
        if manifest is not None:
            _manifest_findings(lint, manifest_file, manifest, "plugin")
            if isinstance(manifest, dict):
                name = manifest.get("name") if isinstance(manifest.get("name"), str) else None
                version = str(manifest["version"]) if "version" in manifest else None
                match = VERSION_RE.match(version or "")
                strict = match is not None and int(match.group(1)) >= 1
                if isinstance(manifest.get("license"), str):
                    try:
                        spdx_license(manifest["license"], manifest_file)
                    except PluginError as exc:
                        lint.add("error", manifest_file, exc.location, exc.message, LICENSE_FIX)
    agents_dir = root / "agents"
    files = sorted(agents_dir.glob("*.yaml")) if agents_dir.is_dir() and "agents" not in refused else []
    files = [f for f in files if lint.rel(f) not in refused]
    for odd in sorted(agents_dir.glob("*.yml")) if agents_dir.is_dir() else []:
        lint.add("warning", odd, "", "ignored: agent files end in .yaml", f"rename it to {odd.stem}.yaml")
    if not files:
        lint.add("warning", "agents/", "", "the plugin has no agents", "add agents/NAME.yaml")
    seen: dict[str, Path] = {}
    for file in files:
        agent_name = _lint_agent(lint, file, strict=strict)
        if agent_name is None:
            continue
        if agent_name in seen:
            lint.add("error", file, "$.name", f"two agents are named {agent_name!r} (also {lint.rel(seen[agent_name])})",
                     "give each agent its own name")
        seen.setdefault(agent_name, file)
    lint_tools({f: lint.yaml(f) for f in files}, manifest if manifest_file.is_file() and "plugin.yaml" not in refused
               else None, plugin_agents=set(seen), installed=set(installed) if installed is not None else None,
               add=lambda sev, file, path, message, fix: lint.add(sev, file, path, message, fix),  # type: ignore[arg-type]
               manifest_file=manifest_file)
    flows_dir = root / "flows"
    flow_files = [f for f in sorted(flows_dir.glob("*.yaml")) if lint.rel(f) not in refused] \
        if flows_dir.is_dir() and "flows" not in refused else []
    unknown = "mcp"  # an MCP tool's schemas are read from its server when it runs
    known = None if installed is None else {
        a.name: AgentSides(_installed_side(a.input, a.kind == unknown), _installed_side(a.output, a.kind == unknown),
                           input_file=f"{a.plugin}'s {a.input_schema_file}" if a.input_schema_file else None,
                           output_file=f"{a.plugin}'s {a.output_schema_file}" if a.output_schema_file else None)
        for a in installed.values()}
    if flow_files:
        from oz0.edge.plugins.flow_lint import lint_flows  # defers JMESPath and the flow model: only for flows

        lint_flows(root, flow_files, read=lint.yaml, add=lint.add, agents=lint.sides, installed=known)
    if "schedules" not in refused and (root / "schedules").is_dir():
        from oz0.edge.plugins.schedule_lint import lint_schedules  # defers croniter and zoneinfo: only for schedules

        lint_schedules(root, read=lint.yaml, add=lint.add, agents=lint.sides, flows={f.stem for f in flow_files},
                       installed=known)
    return LintReport(root, tuple(lint.findings), name, version)


def _manifest_findings(lint: _Linter, file: Path, data: Any, which: str, *, skip: tuple[str, ...] = ()) -> None:
    for v in manifest_contract(which).validate(data, limit=50):
        if v.json_path in skip or (v.keyword == "not" and v.json_path == "$"):
            continue
        lint.add("error", file, v.json_path, v.message, _manifest_fix(which, v.json_path, v.keyword))


def _manifest_fix(which: str, path: str, keyword: str) -> str:
    if which == "plugin" and path == "$.name":
        return "use a lower-case name: letters, digits and dashes, starting with a letter"
    if path.endswith(".version"):
        return "use a semantic version MAJOR.MINOR.PATCH, such as 0.1.0"
    if keyword == "additionalProperties":
        return f"remove the unknown key, or see schemas/{which}.schema.json for the keys there are"
    if path == "$.name":
        return "use a lower-case name: letters, digits and dashes, starting with a letter"
    if path in ("$.input", "$.output"):
        return f"write `{path[2:]}: text`, or point `{path[2:]}_schema:` at a JSON Schema file"
    return f"see schemas/{which}.schema.json"


def _lint_agent(lint: _Linter, file: Path, *, strict: bool) -> str | None:
    data = lint.yaml(file)
    if data is None:
        return None
    if not isinstance(data, dict):
        lint.add("error", file, "$", "an agent file must be a mapping of keys", "start with `kind: python`")
        return None
    kinds = manifest_contract("agent").schema["properties"]["kind"]["enum"]
    skip: tuple[str, ...] = ()
    kind = data.get("kind")
    if "kind" in data and kind not in kinds:
        lint.add("error", file, "$.kind", f"unknown agent kind {kind!r}", f"use one of: {', '.join(kinds)}")
        skip = ("$.kind", "$")
    for direction in ("input", "output"):
        if direction in data and f"{direction}_schema" in data:
            lint.add("error", file, f"$.{direction}", f"declares both {direction}: text and {direction}_schema",
                     f"keep `{direction}: text` or `{direction}_schema:`, not both")
    for v in manifest_contract("agent").validate(data, limit=50):
        if v.json_path in skip and (v.json_path != "$" or v.keyword in ("if", "then", "required", "allOf")):
            continue
        if v.keyword == "not" and v.json_path == "$":
            continue
        fix = _KIND_HINTS.get(str(kind), "") if v.keyword == "required" and v.json_path == "$" else \
            _manifest_fix("agent", v.json_path, v.keyword)
        lint.add("error", file, v.json_path, v.message, fix)
    declared_name = data.get("name")
    name = declared_name if isinstance(declared_name, str) else file.stem
    if "name" not in data and not AGENT_NAME_RE.match(file.stem):
        lint.add("error", file, "$.name", f"the file name gives the agent name {file.stem!r}, which is not an "
                                          "agent name", "rename the file (lower-case letters, digits and dashes, "
                                                        "starting with a letter), or add `name:`")
    contracts: dict[str, Contract | None] = {}
    for direction in ("input", "output"):
        schema_ref = data.get(f"{direction}_schema")
        if direction not in data and schema_ref is None and data.get("kind") != "mcp":  # mcp: the tool's own
            lint.add("error" if strict else "warning", file, "$",
                     f"agent {name!r} declares no contract for its {direction}"
                     + (" (an error from plugin version 1.0.0 on)" if strict else
                        " (a warning now; an error from plugin version 1.0.0 on)"),
                     f"add `{direction}: text`, or `{direction}_schema: schemas/{name}-{direction}.json`")
        if isinstance(schema_ref, str) and schema_ref:
            contracts[direction] = _lint_schema(lint, file, direction, schema_ref)
    lint.sides[name] = AgentSides(_declared_side(contracts, data, "input"), _declared_side(contracts, data, "output"),
                                  input_file=data.get("input_schema"), output_file=data.get("output_schema"))
    _lint_example(lint, file, data, contracts.get("input"))
    lint_examples(lint.add, file, data, input=contracts.get("input"), output=contracts.get("output"))
    _lint_kind(lint, file, data)
    _lint_failures(lint, file, data)
    for step, ask in (data.get("asks") or {}).items() if isinstance(data.get("asks"), dict) else ():
        if data.get("kind") != "python":
            lint.add("error", file, "$.asks", "asks: declares the person steps of a python agent's ctx.ask_person",
                     "remove it (a flow declares its person steps as `ask:` steps)")
            break
        if isinstance(ask, dict) and isinstance(ask.get("answer_schema"), str) and ask["answer_schema"]:
            _lint_schema(lint, file, f"asks.{step}.answer", ask["answer_schema"])  # at $.asks.STEP.answer_schema
    budget_findings(data, kind=data.get("kind"), add=lambda path, message, fix: lint.add("error", file, path, message, fix))
    return name


def _lint_schema(lint: _Linter, agent_file: Path, direction: str, ref: str) -> Contract | None:
    target = (lint.root / ref).resolve()
    key = f"$.{direction}_schema"
    if not target.is_relative_to(lint.root.resolve()):
        lint.add("error", agent_file, key, f"{ref!r} is outside the plugin folder",
                 "keep schemas inside the plugin, such as schemas/NAME.json")
        return None
    if not target.is_file():
        lint.add("error", agent_file, key, f"missing file {ref!r}", f"create {ref} or fix the path")
        return None
    schema_file = lint.root / ref
    try:
        schema = orjson.loads(target.read_bytes())
    except (OSError, orjson.JSONDecodeError) as exc:
        lint.add("error", schema_file, "$", f"not valid JSON: {exc}", "fix the JSON syntax")
        return None
    try:
        contract = load_contract(schema, source=ref)
    except ContractError as exc:
        where = _pointer_to_path(exc.location)
        if "$ref" in exc.message or "Ref" in exc.message:
            fix = ("embed the schema it names under $defs and refer to it as '#/$defs/NAME': "
                   "nothing is ever fetched")
        elif "$schema" in exc.message:
            fix = "use \"$schema\": \"https://json-schema.org/draft/2020-12/schema\" or leave it out"
        else:
            fix = "fix the schema at that location (JSON Schema 2020-12)"
        lint.add("error", schema_file, where, exc.message, fix)
        contract = None
    if not (isinstance(schema, dict) and (schema.get("type") == "object"
                                          or (schema.get("type") is None and "properties" in schema))):
        kind = schema.get("type") if isinstance(schema, dict) else schema
        lint.add("warning", schema_file, "$", f"the schema's root is not an object (type {kind!r})",
                 "wrap it in an object, as MCP's tool schemas are: "
                 "{\"type\": \"object\", \"properties\": {\"items\": <this schema>}}")
    base = contract.base if contract is not None else ""
    for node, node_base, parts in walk_schema(schema, base):
        _lint_card_keywords(lint, schema_file, SchemaView(contract, node, node_base), parts)
    return contract


def _pointer_to_path(pointer: str) -> str:
    if not pointer or pointer == "/":
        return "$"
    return json_path(parse_pointer(pointer))


def _lint_card_keywords(lint: _Linter, file: Path, view: SchemaView, parts: tuple[Any, ...]) -> None:
    node = view.node
    props = view.properties()
    if "x-oz0-diff" in node:
        where = json_path(parts + ("x-oz0-diff",))
        diff = node["x-oz0-diff"]
        fix = ("write {\"before\": \"<property>\", \"after\": \"<another property>\"}, naming two different "
               "properties of this schema")
        if not isinstance(diff, dict) or not isinstance(diff.get("before"), str) \
                or not isinstance(diff.get("after"), str):
            lint.add("error", file, where, "x-oz0-diff must name a `before` and an `after` property", fix)
        elif diff["before"] == diff["after"]:
            lint.add("error", file, where, f"x-oz0-diff names {diff['before']!r} twice; a diff needs two "
                                           "different properties", fix)
        else:
            missing = [diff[k] for k in ("before", "after") if diff[k] not in props]
            if missing:
                names = ", ".join(repr(m) for m in missing)
                known = ", ".join(props) or "none"
                lint.add("error", file, where, f"x-oz0-diff names {names}, not a property of this schema "
                                               f"(properties: {known})", fix)
    if "x-oz0-order" in node:
        where = json_path(parts + ("x-oz0-order",))
        order = node["x-oz0-order"]
        items_props = SchemaView(view.refs, node["items"], view.base).properties() \
            if isinstance(node.get("items"), dict) else {}
        ordered = props or items_props
        if not isinstance(order, list) or not all(isinstance(n, str) for n in order):
            lint.add("warning", file, where, "x-oz0-order must be a list of property names",
                     "write [\"first\", \"second\"]")
            return
        for i, name in enumerate(order):
            if name not in ordered:
                lint.add("warning", file, json_path(parts + ("x-oz0-order", i)),
                         f"x-oz0-order names {name!r}, which is not a property of this schema "
                         f"(properties: {', '.join(ordered) or 'none'})",
                         "remove it or fix its spelling")


def _lint_example(lint: _Linter, file: Path, data: dict[str, Any], contract: Contract | None) -> None:
    if "example" not in data:
        return
    example = data["example"]
    if contract is None:
        if data.get("input") == "text" and not isinstance(example, str):
            lint.add("warning", file, "$.example", "the agent takes text but its example is not a string",
                     "write the example as text")
        return
    if isinstance(example, str):
        try:
            example = orjson.loads(example)
        except orjson.JSONDecodeError as exc:
            lint.add("error", file, "$.example", f"the example is not JSON ({exc}) but the agent takes JSON",
                     "write the example as YAML data or a JSON string matching the input schema")
            return
    for v in contract.validate(example, limit=3):
        lint.add("error", file, "$.example", f"the example breaks the input schema at {v.json_path}: {v.message}",
                 "change the example (or the schema) so they agree")


def _lint_kind(lint: _Linter, file: Path, data: dict[str, Any]) -> None:
    kind = data.get("kind")
    if kind == "python" and isinstance(data.get("entry"), str) and ":" in data["entry"]:
        module = data["entry"].split(":", 1)[0]
        rel = Path(*module.split("."))
        if (lint.root / rel.with_suffix(".py")).is_file() or (lint.root / rel).is_dir():
            return
        try:
            found = importlib.util.find_spec(module.split(".")[0]) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            lint.add("error", file, "$.entry", f"missing file {rel.with_suffix('.py').as_posix()}: module "
                                               f"{module!r} is neither in the plugin folder nor importable",
                     f"create {rel.with_suffix('.py').as_posix()} with the function, or fix `entry:`")
    elif kind == "command" and isinstance(data.get("command"), list) and data["command"]:
        program = str(data["command"][0])
        if program in ("python", "python3"):
            return
        if "/" in program and not Path(program).is_absolute():
            if not (lint.root / program).is_file():
                lint.add("error", file, "$.command[0]", f"missing file {program!r} in the plugin folder",
                         "create it or fix the path (relative to the plugin folder)")
        elif "/" not in program and shutil.which(program) is None:
            lint.add("warning", file, "$.command[0]", f"{program!r} is not on PATH here",
                     "install it where the bot runs, or give its path")


def _lint_failures(lint: _Linter, file: Path, data: dict[str, Any]) -> None:
    failures = data.get("failures")
    if not isinstance(failures, dict):
        return
    if "InvalidInput" in failures:
        lint.add("warning", file, "$.failures.InvalidInput", "InvalidInput is built in and never retried; "
                                                             "declaring it changes nothing",
                 "remove it")
    attempts = (data.get("limits") or {}).get("max_attempts", 3) if isinstance(data.get("limits"), dict) else 3
    for name, kind in failures.items():
        if isinstance(kind, dict) and kind.get("retryable") and attempts == 1:
            lint.add("warning", file, f"$.failures.{name}", f"{name} is retryable but limits.max_attempts is 1, "
                                                            "so it is never retried",
                     "raise limits.max_attempts, or drop `retryable: true`")


def _installed_side(contract: Contract | None, unknown: bool) -> Side:
    """An installed agent's side as flow lint reads it: its contract, TEXT, or None for a kind whose
    schemas come from its server at run time."""
    if contract is not None:
        return contract
    return None if unknown else TEXT


def _declared_side(contracts: Mapping[str, Contract | None], data: Mapping[str, Any], direction: str) -> Side:
    return contracts.get(direction) or (TEXT if data.get(direction) == "text" else None)
