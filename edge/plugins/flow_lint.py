"""Lint for `flows/*.yaml`: the file's shape, every reference (step ids, agents, contracts) and whether
each step's input, and the flow's output, can match the contract it meets.

Called by edge.plugins.lint with what it knows of the plugin's agents and, when it has a runtime, the
installed ones. Whether one contract's values fit another is the upgrade check's comparison
(edge.contracts.schema_diff): a producer's schema read as the old input, the consumer's as the new
one, so every value the producer may give that the consumer refuses is a finding. When lint cannot
know a side (an agent it cannot see, an expression it cannot follow), it says so as a warning.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from oz0.edge.contracts.changes import Change, CompatError
from oz0.edge.contracts.schema import Contract, ContractError, load_contract
from oz0.edge.contracts.schema_diff import SchemaComparison
from oz0.edge.model.budget import budget_findings
from oz0.edge.plugins.declared import manifest_contract
from oz0.edge.plugins.expressions import ExpressionError, compile_expression, field_paths
from oz0.edge.plugins.flow_manifest import step_expressions
from oz0.edge.plugins.lint_examples import lint_examples
from oz0.edge.plugins.lint_sides import TEXT, AgentSides, Side

__all__ = ["SchemaPart", "lint_flows"]

_PRIMITIVE = {"string", "number", "integer", "boolean"}


Add = Callable[..., None]


def lint_flows(root: Path, files: list[Path], *, read: Callable[[Path], Any], add: Add,
               agents: Mapping[str, AgentSides], installed: Mapping[str, AgentSides] | None) -> None:
    """Every finding of the plugin's flow files, through `add(severity, file, path, message, fix)`."""
    for file in files:
        data = read(file)
        if data is None:
            continue
        if not isinstance(data, dict):
            add("error", file, "$", "a flow file must be a mapping of keys", "start with `steps:`")
            continue
        shape = manifest_contract("flow").validate(data, limit=50)
        for v in shape:
            add("error", file, v.json_path, v.message, "see schemas/flow.schema.json")
        budget_findings(data, kind="flow", add=functools.partial(add, "error", file))
        name = data.get("name") if isinstance(data.get("name"), str) else file.stem
        if name in agents:
            add("error", file, "$.name", f"a flow and an agent are both named {name!r}",
                "rename one: agents and flows are run by name")
        if shape:
            continue
        flow = _Flow(root, file, data, add, agents, installed)
        flow.check()
        lint_examples(add, file, data, input=flow.contracts.get("input"), output=flow.contracts.get("output"))


class _Flow:
    def __init__(self, root: Path, file: Path, data: dict[str, Any], add: Add,
                 agents: Mapping[str, AgentSides], installed: Mapping[str, AgentSides] | None) -> None:
        self.root, self.file, self.data, self._add = root, file, data, add
        self.agents, self.installed = agents, installed
        self.steps: list[dict[str, Any]] = data["steps"]
        self.contracts: dict[str, Contract | None] = {}
        self.flow_input = self._contract_side("input", data)
        self.flow_output = self._contract_side("output", data)
        self.answers: dict[str, Side] = {}

    def add(self, severity: str, path: str, message: str, fix: str = "") -> None:
        self._add(severity, self.file, path, message, fix)

    def _contract_side(self, direction: str, data: dict[str, Any]) -> Side:
        if data.get(direction) == "text":
            return TEXT
        ref = data.get(f"{direction}_schema")
        if not ref:
            self.add("warning", "$", f"the flow declares no contract for its {direction}",
                     f"add `{direction}: text`, or `{direction}_schema: schemas/NAME.json`")
            return None
        self.contracts[direction] = self._load(ref, f"$.{direction}_schema")
        return _named(self.contracts[direction], ref)

    def _load(self, ref: str, where: str) -> Contract | None:
        target = (self.root / ref).resolve()
        if not target.is_relative_to(self.root.resolve()):
            self.add("error", where, f"{ref!r} is outside the plugin folder", "keep schemas inside the plugin")
            return None
        if not target.is_file():
            self.add("error", where, f"missing file {ref!r}", f"create {ref} or fix the path")
            return None
        try:
            return load_contract(target, source=ref)
        except ContractError as exc:
            self.add("error", where, f"{ref}: {exc}", "fix the schema (JSON Schema 2020-12)")
            return None

    def agent(self, name: str) -> AgentSides | None:
        found = self.agents.get(name) or (self.installed or {}).get(name)
        if found is None:
            return None
        return AgentSides(_named(found.input, found.input_file), _named(found.output, found.output_file))

    # the checks ------------------------------------------------------------------------------

    def check(self) -> None:
        ids = [s["id"] for s in self.steps]
        for i, step in enumerate(self.steps):
            where = f"$.steps[{i}]"
            if ids.count(step["id"]) > 1 and ids.index(step["id"]) < i:
                self.add("error", f"{where}.id", f"two steps have the id {step['id']!r}", "give each step its own id")
            self._references(i, step, where, ids)
            if "ask" in step:
                self._ask(step, where)
                continue
            name = step["agent"]
            found = self.agent(name)
            if found is None:
                if self.installed is None:
                    self.add("warning", f"{where}.agent", f"agent {name!r} is not in this plugin, and lint cannot "
                                                          "see which agents are installed here",
                             "add it to agents/, or check it is installed where the flow runs")
                else:
                    known = ", ".join(sorted({*self.agents, *self.installed})) or "none"
                    self.add("error", f"{where}.agent", f"agent {name!r} is neither in this plugin nor installed "
                                                        f"(agents: {known})",
                             "fix the name, add the agent to agents/, or install the plugin that has it")
                continue
            self._input(i, step, where, found.input)
        self._output()

    def _references(self, i: int, step: dict[str, Any], where: str, ids: list[str]) -> None:
        for rel, expr in step_expressions(step):
            try:
                paths = list(field_paths(expr))
            except ExpressionError as exc:
                self.add("error", f"{where}.{rel}", str(exc), "see https://jmespath.org for the syntax")
                continue
            for path in paths:
                own = rel == "until" or ("until" in step and rel.startswith("input"))  # a loop reads its last run
                self._reference(i + own, path, f"{where}.{rel}", ids, expr)

    def _reference(self, i: int, path: tuple[str, ...], where: str, ids: list[str], expr: str) -> None:
        """`i`: the steps before it have run (a loop's `until:` and `input:` pass their own step's
        index + 1: they read the run that just ended)."""
        head = path[0]
        if head == "input":
            return
        if head != "steps":
            self.add("error", where, f"{expr!r} reads {head!r}; expressions see `input` and `steps` only",
                     "start the path with input. or steps.ID.")
            return
        if len(path) < 2:
            return
        target = path[1]
        if target not in ids:
            self.add("error", where, f"{expr!r} names step {target!r}, which this flow does not have "
                                     f"(steps: {', '.join(ids)})", "fix the step id")
        elif ids.index(target) >= i:
            self.add("error", where, f"{expr!r} names step {target!r}, which has not run yet at this step "
                                     "(so it is always null)", "refer only to earlier steps")
        elif len(path) > 2 and path[2] not in ("output", "answer", "runs"):
            self.add("error", where, f"{expr!r} reads {path[2]!r} of step {target!r}; a step has `output`, "
                                     "`answer` and `runs`", f"write steps.{target}.output or steps.{target}.answer")

    def _ask(self, step: dict[str, Any], where: str) -> None:
        contract = self._load(step["answer_schema"], f"{where}.answer_schema")
        self.answers[step["id"]] = _named(contract, step["answer_schema"])
        if contract is None:
            return
        schema = contract.schema
        props = schema.get("properties") if isinstance(schema, dict) else None
        if not (isinstance(schema, dict) and schema.get("type") == "object" and isinstance(props, dict) and props):
            self.add("error", f"{where}.answer_schema", "an answer schema is an object of primitive fields (as "
                                                       "MCP's requestedSchema)",
                     "write {\"type\": \"object\", \"properties\": {\"approved\": {\"type\": \"boolean\"}}}")
        else:
            for key, prop in props.items():
                kind = prop.get("type") if isinstance(prop, dict) else None
                if kind not in _PRIMITIVE and not (isinstance(prop, dict) and "enum" in prop):
                    self.add("error", f"{where}.answer_schema",
                             f"field {key!r} of {step['answer_schema']} is {kind or 'not typed'}; an answer field "
                             "is a string, number, integer, boolean or enum", "flatten it into primitive fields")
        fallback = (step.get("on_timeout") or {}).get("answer")
        if fallback is not None:
            for v in contract.validate(fallback, limit=3):
                self.add("error", f"{where}.on_timeout.answer", f"the on_timeout answer breaks "
                                                                 f"{step['answer_schema']} at {v.json_path}: {v.message}",
                         "make the fallback answer one the schema accepts")

    # contracts ---------------------------------------------------------------------------------

    def _producers(self, before: int) -> list[tuple[str, Side]]:
        """What the value may be after the steps before `before`: the last agent step that surely ran,
        and every conditional one after it."""
        out: list[tuple[str, Side]] = []
        for step in reversed(self.steps[:before]):
            if "agent" not in step:
                continue
            found = self.agent(step["agent"])
            out.append((f"step {step['id']} ({step['agent']})", found.output if found else None))
            if "if" not in step:
                return out
        out.append(("the flow's input", self.flow_input))
        return out

    def _input(self, i: int, step: dict[str, Any], where: str, consumer: Side) -> None:
        mapping = step.get("input")
        label = f"step {step['id']} ({step['agent']})"
        if mapping is None:
            producers = self._producers(i)
            for source, produced in producers:
                self._fits(f"{where}", f"{source} {'may give' if len(producers) > 1 else 'gives'} {label} its input",
                           produced, consumer, severity="error" if len(producers) == 1 else "warning")
            return
        if isinstance(mapping, str):
            self._fits(f"{where}.input", f"{mapping!r} gives {label} its input", self._follow(mapping, i), consumer)
            return
        if not isinstance(consumer, SchemaPart) or not isinstance(consumer.schema, dict):
            if consumer != TEXT:
                self.add("warning", f"{where}.input", f"lint cannot tell whether {label} accepts its input "
                                                      "mapping (its contract is not known)", "")
            return
        schema = consumer.schema
        missing = [k for k in schema.get("required", []) if k not in mapping]
        if missing:
            self.add("error", f"{where}.input", f"{label} requires {', '.join(map(repr, missing))}, which the "
                                                "input mapping does not give", "add them to `input:`")
        props = schema.get("properties") or {}
        for key, expr in mapping.items():
            at = f"{where}.input.{key}"
            if key not in props:
                if schema.get("additionalProperties") is False:
                    self.add("error", at, f"{label} takes no {key!r} (its schema allows only "
                                          f"{', '.join(props) or 'no keys'})", "remove it or fix its name")
                continue
            literal = _literal(expr)
            if literal is not _NOT_LITERAL:
                try:
                    refused = load_contract(props[key], source=consumer.source).validate(literal, limit=1)
                except ContractError:  # a part with a `$ref` into its file: not checked on its own
                    refused = ()
                for v in refused:
                    self.add("error", at, f"{expr!r} is refused by {consumer.source} at $.{key}: {v.message}",
                             "change the value")
                continue
            side = self._follow(expr, i)
            if not isinstance(side, SchemaPart):
                self.add("warning", at, f"lint cannot tell what {expr!r} holds, so not whether {label} "
                                        "accepts it", "use a plain path such as input.NAME or steps.ID.output.NAME")
                continue
            self._compare(at, f"{expr!r} gives {label} its {key!r}", side.schema, props[key],
                          _root(side), schema, path=(key,))

    def _follow(self, expr: str, i: int) -> Side:
        """The contract of the value a plain path (`input.repo`, `steps.review.output.verdict`) reads."""
        try:
            paths = list(field_paths(expr))
        except ExpressionError:
            return None
        if len(paths) != 1 or ".".join(paths[0]) != expr.strip():
            return None
        path = paths[0]
        if path[0] == "input":
            side, rest = self.flow_input, path[1:]
        elif path[0] == "steps" and len(path) >= 3:
            index = next((k for k, s in enumerate(self.steps[:i]) if s["id"] == path[1]), None)
            if index is None:
                return None
            step = self.steps[index]
            if path[2] == "answer":
                side = self.answers.get(step["id"])
            elif "agent" in step and (found := self.agent(step["agent"])) is not None:
                side = found.output
            else:
                return None
            rest = path[3:]
        else:
            return None
        if not isinstance(side, SchemaPart):
            return side if not rest else None
        node: Any = side.schema
        for name in rest:
            node = (node.get("properties") or {}).get(name) if isinstance(node, dict) else None
            if not isinstance(node, (dict, bool)) or _has_ref(node):
                return None
        if not rest:
            return side
        return SchemaPart(node, side.source, side.root)

    def _fits(self, where: str, what: str, produced: Side, consumer: Side, *, severity: str = "error") -> None:
        if produced is None or consumer is None:
            self.add("warning", where, f"{what}; lint cannot tell whether it matches (a contract is not known)",
                     "declare the contracts of both sides")
            return
        if isinstance(consumer, str):
            return  # TEXT: JSON reaches a text agent as its JSON text
        if isinstance(produced, str):
            self.add(severity, where, f"{what}, and that is text where {consumer.source} asks for JSON",
                     "map the input with `input:`, or give it an agent that answers JSON")
            return
        assert isinstance(consumer, SchemaPart) and isinstance(produced, SchemaPart)
        self._compare(where, what, produced.schema, consumer.schema, _root(produced), consumer.schema,
                      severity=severity, source=consumer.source)

    def _compare(self, where: str, what: str, produced: Any, consumer: Any, produced_doc: Any, consumer_doc: Any,
                 *, path: tuple[Any, ...] = (), severity: str = "error", source: str = "") -> None:
        changes: list[Change] = []
        try:
            SchemaComparison(what, "input", produced_doc, consumer_doc, changes).schema(produced, consumer, path)
        except CompatError as exc:
            self.add("warning", where, f"{what}; lint cannot compare the contracts: {exc}", "")
            return
        refused = [c for c in changes if c.breaking]
        if refused:
            shown = "; ".join(c.what for c in refused[:3])
            more = f" (and {len(refused) - 3} more)" if len(refused) > 3 else ""
            against = f" {source}" if source else " what it meets"
            self.add(severity, where, f"{what}, which cannot always match{against}: {shown}{more}",
                     "change the mapping or one of the contracts so every value it may give is accepted")

    def _output(self) -> None:
        consumer = self.flow_output
        producers = self._producers(len(self.steps))
        severity = "error" if len(producers) == 1 else "warning"  # several: the `if:`s may rule some out
        for source, produced in producers:
            if consumer == TEXT and isinstance(produced, SchemaPart):
                self.add(severity, "$.output", f"{source} may be the flow's output and answers JSON, but the flow "
                                              "declares output: text", "declare output_schema, or end with a text agent")
                continue
            self._fits("$.output_schema" if isinstance(consumer, SchemaPart) else "$",
                       f"{source} {'may be' if len(producers) > 1 else 'is'} the flow's output", produced, consumer,
                       severity=severity)


_NOT_LITERAL = object()


def _literal(expr: str) -> Any:
    """The value of a literal expression (`'text'`, `` `42` ``), else _NOT_LITERAL."""
    try:
        parsed = compile_expression(expr).parsed
    except ExpressionError:
        return _NOT_LITERAL
    return parsed["value"] if parsed.get("type") == "literal" else _NOT_LITERAL


@dataclass(frozen=True)
class SchemaPart:
    """A part of a contract's schema (what a path reads), with the document its `$ref`s resolve in."""

    schema: Any
    source: str
    root: Any


def _root(side: Any) -> Any:
    return side.root


def _named(side: Side, source: str | None) -> Side:
    """A contract as lint compares it: its schema, the file it is named by (a loaded Contract's own
    source may be another copy of the same schema), and its root for `$ref`s; TEXT and None as they are."""
    if isinstance(side, Contract):
        return SchemaPart(side.schema, source or side.source, side.schema)
    return side


def _has_ref(node: Any) -> bool:
    return isinstance(node, dict) and any(k in node for k in ("$ref", "$dynamicRef"))
