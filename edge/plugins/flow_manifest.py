"""A flow as declared in `flows/NAME.yaml`: its contracts like an agent's, and its steps in order.

A FlowSpec is an AgentSpec of kind `flow`, so everything that takes an agent by name (the input check,
the OpenAPI document, access rules, the card) takes a flow the same way; only the runtime's execute
tells them apart. Loading is strict (PluginError naming the file and the JSON path); `oz0 plugin lint`
reports every finding instead (edge.plugins.flow_lint). The file's shape is schemas/flow.schema.json.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

from oz0.edge.contracts.schema import Contract, ContractError, load_contract
from oz0.edge.model.agent import FailureKind, Limits
from oz0.edge.model.flow import FLOW_KIND, FlowSpec, FlowStep
from oz0.edge.plugins.declared import AGENT_NAME_RE, PluginError, budget_of, examples_of, manifest_contract, read_yaml
from oz0.edge.plugins.expressions import ExpressionError, compile_expression, holes

__all__ = [
    "load_flow",
    "step_expressions",
    "stored_steps",
]


def step_expressions(step: Mapping[str, Any] | FlowStep) -> list[tuple[str, str]]:
    """Every expression of a step with the JSON path (relative to the step) it sits at."""
    get = step.get if isinstance(step, Mapping) else None
    condition = get("if") if get else step.condition  # type: ignore[union-attr]
    mapping = get("input") if get else step.input  # type: ignore[union-attr]
    ask = get("ask") if get else step.ask  # type: ignore[union-attr]
    until = get("until") if get else step.until  # type: ignore[union-attr]
    out: list[tuple[str, str]] = []
    if isinstance(condition, str):
        out.append(("if", condition))
    if isinstance(until, str):
        out.append(("until", until))
    if isinstance(mapping, str):
        out.append(("input", mapping))
    elif isinstance(mapping, Mapping):
        out.extend((f"input.{key}", expr) for key, expr in mapping.items() if isinstance(expr, str))
    if isinstance(ask, str):
        out.extend(("ask", expr) for expr in holes(ask))
    return out


def _contract(root: Path, file: Path, ref: str, where: str) -> Contract:
    target = (root / ref).resolve()
    if not target.is_relative_to(root.resolve()):
        raise PluginError(f"{ref!r} is outside the plugin folder", file=str(file), location=where)
    try:
        return load_contract(target, source=str(root / ref))
    except ContractError as exc:
        raise PluginError(f"{where[2:]}: {exc}", file=str(file), location=where) from None


def load_flow(root: Path, file: Path, plugin: str) -> FlowSpec:
    """One flow file, strictly: its shape, its contracts, its expressions (not its references to
    agents, which may be installed later: lint and the run check those)."""
    data = read_yaml(file)
    violations = manifest_contract("flow").validate(data)
    if violations:
        raise PluginError(violations[0].message, file=str(file), location=violations[0].json_path)
    if "name" not in data and not AGENT_NAME_RE.match(file.stem):
        raise PluginError(f"the file name gives the flow name {file.stem!r}, which is not an agent name "
                          "(lower-case letters, digits and dashes, starting with a letter)",
                          file=str(file), location="$.name")
    contracts = {d: _contract(root, file, data[f"{d}_schema"], f"$.{d}_schema") if data.get(f"{d}_schema")
                 else None for d in ("input", "output")}
    steps = []
    seen: set[str] = set()
    for i, raw in enumerate(data["steps"]):
        where = f"$.steps[{i}]"
        if raw["id"] in seen:
            raise PluginError(f"two steps have the id {raw['id']!r}", file=str(file), location=f"{where}.id")
        seen.add(raw["id"])
        for rel, expr in step_expressions(raw):
            try:
                compile_expression(expr)
            except ExpressionError as exc:
                raise PluginError(str(exc), file=str(file), location=f"{where}.{rel}") from None
        answer = (_contract(root, file, raw["answer_schema"], f"{where}.answer_schema")
                  if raw.get("answer_schema") else None)
        steps.append(FlowStep(
            id=raw["id"], agent=raw.get("agent"), ask=raw.get("ask"), input=raw.get("input"),
            condition=raw.get("if"), answer_schema_file=raw.get("answer_schema"), answer_schema=answer,
            answerers=MappingProxyType(dict(raw.get("answerers") or {})), timeout_s=raw.get("timeout_s"),
            on_timeout=MappingProxyType(dict(raw["on_timeout"])) if raw.get("on_timeout") else None,
            until=raw.get("until")))
    failures = tuple(
        FailureKind(name, bool(f.get("retryable", False)), bool(f.get("partial", False)),
                    bool(f.get("person", False)), str(f.get("description", "")))
        for name, f in (data.get("failures") or {}).items())
    example = data.get("example")
    if example is not None and not isinstance(example, str):
        import orjson

        example = orjson.dumps(example).decode()
    return FlowSpec(
        name=data.get("name") or file.stem, plugin=plugin, kind=FLOW_KIND, file=str(file),
        description=data.get("description", ""), input=contracts["input"], output=contracts["output"],
        input_schema_file=data.get("input_schema"), output_schema_file=data.get("output_schema"),
        failures=failures, limits=Limits(**(data.get("limits") or {})), example=example, examples=examples_of(data),
        steps=tuple(steps), budget=budget_of(data, file))


def stored_steps(rows: list[Mapping[str, Any]], *, source: str) -> tuple[FlowStep, ...]:
    """A flow's person steps as the plugin store keeps them (edge.documents.openapi.person_steps'
    shape), for the upgrade check: the steps callers must answer, with their answer schemas."""
    return tuple(FlowStep(
        id=r["step"], ask=r.get("message") or "", answer_schema_file=None,
        answer_schema=load_contract(r.get("answer_schema") or {}, source=f"{source}: {r['step']} answer_schema"),
        answerers=MappingProxyType(dict(r.get("answerers") or {})), timeout_s=r.get("timeout_s"),
        on_timeout=MappingProxyType(dict(r["on_timeout"])) if r.get("on_timeout") else None) for r in rows)
