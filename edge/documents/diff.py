"""What changed between two versions of a plugin's contracts: two OpenAPI documents (edge.documents.openapi)
compared operation by operation, each schema by edge.contracts.schema_diff, each change with its verdict."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from oz0.edge.contracts.changes import Change, deref
from oz0.edge.contracts.schema_diff import SchemaComparison
from oz0.edge.documents.openapi import openapi_document
from oz0.edge.model.agent import AgentSpec

__all__ = [
    "compare_agents",
    "compare_documents",
]

_METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")


def compare_agents(old: Iterable[AgentSpec], new: Iterable[AgentSpec]) -> list[Change]:
    """Every change between two sets of agents, through their OpenAPI documents."""
    return compare_documents(openapi_document(old, title="old", version="0.0.0"),
                             openapi_document(new, title="new", version="0.0.0"))


def _operations(document: Mapping[str, Any]) -> dict[tuple[str, str], tuple[str, str, Mapping[str, Any]]]:
    out = {}
    for path, item in (document.get("paths") or {}).items():
        for method in _METHODS:
            op = item.get(method) if isinstance(item, Mapping) else None
            if isinstance(op, Mapping):
                if "x-oz0-agent" in op:
                    label, noun = str(op["x-oz0-agent"]), "agent"
                elif "x-oz0-flow" in op:
                    label, noun = str(op["x-oz0-flow"]), "flow"
                else:
                    label, noun = f"{method.upper()} {path}", "operation"
                out[(path, method)] = (label, noun, op)
    return out


def compare_documents(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[Change]:
    """Every change between two OpenAPI documents, operation by operation, each with its verdict."""
    old_ops, new_ops = _operations(old), _operations(new)
    changes: list[Change] = []
    for key in sorted(old_ops.keys() | new_ops.keys(), key=lambda k: (old_ops.get(k) or new_ops[k])[0]):
        if key not in new_ops:
            label, noun, _ = old_ops[key]
            changes.append(Change(label, "agent", "$", f"{noun} removed", True))
            continue
        if key not in old_ops:
            label, noun, _ = new_ops[key]
            changes.append(Change(label, "agent", "$", f"{noun} added", False))
            continue
        label, _, old_op = old_ops[key]
        new_op = new_ops[key][2]
        for field in ("summary", "description"):
            if old_op.get(field) != new_op.get(field):
                changes.append(Change(label, "agent", "$", f"{field} changed", False))
        SchemaComparison(label, "input", old, new, changes).body(
            (old_op.get("requestBody") or {}).get("content"), (new_op.get("requestBody") or {}).get("content"))
        SchemaComparison(label, "output", old, new, changes).body(
            _success(old_op).get("content"), _success(new_op).get("content"))
        _compare_failures(label, _failures(old, old_op), _failures(new, new_op), changes)
        _compare_tools(label, old_op.get("x-oz0-tools") or [], new_op.get("x-oz0-tools") or [], changes)
        if "x-oz0-person-steps" in new_op or "x-oz0-person-steps" in old_op:  # a flow's, or an agent's `asks:`
            _compare_person_steps(label, old_op.get("x-oz0-person-steps") or [],
                                  new_op.get("x-oz0-person-steps") or [], changes)
    return changes


def _tool_names(tools: list[Mapping[str, Any]]) -> dict[str, str]:
    """Each tool entry's names: an agent, ask_person, a server's `only` tools (or the server as a whole)."""
    out: dict[str, str] = {}
    for t in tools:
        if t.get("ask_person"):
            out["ask_person"] = "ask_person"
        elif t.get("agent"):
            out[f"agent:{t['agent']}"] = f"agent {t['agent']}"
        elif t.get("only") is None:
            out[f"server:{t['server']}"] = f"every tool of server {t['server']}"
        else:
            out.update({f"server:{t['server']}:{n}": f"tool {n} of server {t['server']}" for n in t["only"]})
    return out


def _compare_tools(agent: str, old: list[Mapping[str, Any]], new: list[Mapping[str, Any]],
                   changes: list[Change]) -> None:
    """A tool removed from a model agent is breaking (what the agent could do for its callers, it no
    longer can); one added is not."""
    before, after = _tool_names(old), _tool_names(new)
    for key in sorted(before.keys() - after.keys()):
        whole = key.count(":") == 2 and f"server:{key.split(':')[1]}" in after
        if not whole:
            changes.append(Change(agent, "tools", "$", f"{before[key]} removed from its tools", True))
    for key in sorted(after.keys() - before.keys()):
        changes.append(Change(agent, "tools", "$", f"{after[key]} added to its tools", False))


def _compare_person_steps(flow: str, old: list[Mapping[str, Any]], new: list[Mapping[str, Any]],
                          changes: list[Change]) -> None:
    """A new person step is breaking: callers' people must now answer it. An answer schema that
    accepts less is breaking too (an answer that worked is refused), as an input would be."""
    before = {s["step"]: s for s in old}
    after = {s["step"]: s for s in new}
    for step in sorted(before.keys() | after.keys()):
        if step not in before:
            changes.append(Change(flow, "person", "$", f"new person step {step}, which callers must now answer",
                                  True))
        elif step not in after:
            changes.append(Change(flow, "person", "$", f"person step {step} removed", False))
        else:
            o, n = before[step]["answer_schema"], after[step]["answer_schema"]
            SchemaComparison(f"{flow}: person step {step}", "input", o, n, changes).schema(o, n, ())


def _success(op: Mapping[str, Any]) -> Mapping[str, Any]:
    responses = op.get("responses") or {}
    for code in sorted(responses):
        if str(code).startswith("2"):
            return responses[code] or {}
    return {}


def _failures(document: Mapping[str, Any], op: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    kinds: dict[str, dict[str, Any]] = {}
    for code, response in (op.get("responses") or {}).items():
        if str(code).startswith("2") or not isinstance(response, Mapping):
            continue
        schema = ((response.get("content") or {}).get("application/json") or {}).get("schema")
        if not isinstance(schema, Mapping):
            continue
        schema = deref(document, schema)
        for branch in schema.get("oneOf", [schema]):
            branch = deref(document, branch)
            name = ((branch.get("properties") or {}).get("kind") or {}).get("const") or branch.get("title")
            if isinstance(name, str):
                kinds[name] = {flag: bool(branch.get(f"x-{flag}", False)) for flag in ("retryable", "partial", "person")}
                kinds[name]["description"] = branch.get("description", "")
    return kinds


_FLAG_WORDS = {
    "retryable": ("{k} is now retryable", "{k} is no longer retryable", False),
    "partial": ("{k} may now leave partial output", "{k} no longer leaves partial output", True),
    "person": ("{k} now asks a person to act", "{k} no longer asks a person to act", True),
}


def _compare_failures(agent: str, old: Mapping[str, Any], new: Mapping[str, Any], changes: list[Change]) -> None:
    for kind in sorted(old.keys() | new.keys()):
        if kind not in old:
            changes.append(Change(agent, "failure", "$", f"new failure kind {kind}", True))
        elif kind not in new:
            changes.append(Change(agent, "failure", "$", f"failure kind {kind} removed", False))
        else:
            for flag, (on, off, on_breaks) in _FLAG_WORDS.items():
                if old[kind][flag] != new[kind][flag]:
                    turned_on = new[kind][flag]
                    changes.append(Change(agent, "failure", "$", (on if turned_on else off).format(k=kind),
                                          turned_on == on_breaks))
            if old[kind]["description"] != new[kind]["description"]:
                changes.append(Change(agent, "failure", "$", f"description of {kind} changed", False))
