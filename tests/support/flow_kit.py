"""A real plugin with a flow for the flow tests: a reviewer, a merger, schemas, and `release`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from plugin_kit import make_plugin

__all__ = ["AGENTS_PY", "RELEASE", "approval", "flow_plugin"]

AGENTS_PY = """
import json

def review(value):
    verdict = "approve" if value["pr"] % 2 == 0 else "reject"
    return {"repo": value["repo"], "pr": value["pr"], "verdict": verdict}

def merge(value):
    return {"merged": True, "sha": f"{value['repo']}@{value['pr']}", "note": value.get("note", "")}

def summary(text):
    return "summary: " + text

def broken(value):
    raise ValueError("the merger is broken")
"""

OBJ = {"type": "object"}
FILES: dict[str, Any] = {
    "agents.py": AGENTS_PY,
    "schemas/release-input.json": {**OBJ, "required": ["repo", "pr"], "additionalProperties": False,
                                   "properties": {"repo": {"type": "string"}, "pr": {"type": "integer"}}},
    "schemas/review.json": {**OBJ, "required": ["repo", "pr", "verdict"], "properties": {
        "repo": {"type": "string"}, "pr": {"type": "integer"}, "verdict": {"enum": ["approve", "reject"]}}},
    "schemas/merge-input.json": {**OBJ, "required": ["repo", "pr"], "properties": {
        "repo": {"type": "string"}, "pr": {"type": "integer"}, "note": {"type": "string"}}},
    "schemas/merge.json": {**OBJ, "required": ["merged", "sha"], "x-oz0-order": ["sha", "merged"], "properties": {
        "merged": {"type": "boolean"}, "sha": {"type": "string"}, "note": {"type": "string"}}},
    "schemas/approve.json": {**OBJ, "required": ["approved"], "properties": {"approved": {"type": "boolean"}}},
}
AGENTS = {
    "acme-reviewer": {"kind": "python", "entry": "agents:review", "input_schema": "schemas/release-input.json",
                      "output_schema": "schemas/review.json"},
    "merger": {"kind": "python", "entry": "agents:merge", "input_schema": "schemas/merge-input.json",
               "output_schema": "schemas/merge.json"},
    "summary": {"kind": "python", "entry": "agents:summary", "input": "text", "output": "text"},
    "broken-merger": {"kind": "python", "entry": "agents:broken", "input_schema": "schemas/merge-input.json",
                      "output_schema": "schemas/merge.json"},
}
# The flow without a person step: review, then merge only when the review approves.
RELEASE: dict[str, Any] = {
    "description": "Review a pull request, then merge it when the review approves.",
    "input_schema": "schemas/release-input.json",
    "output_schema": "schemas/merge.json",
    "steps": [
        {"id": "review", "agent": "acme-reviewer"},
        {"id": "merge", "agent": "merger", "if": "steps.review.output.verdict == 'approve'",
         "input": {"repo": "input.repo", "pr": "input.pr", "note": "join(' ', ['reviewed', steps.review.output.verdict])"}},
        {"id": "done", "agent": "merger", "if": "!(steps.merge.output)",
         "input": {"repo": "input.repo", "pr": "input.pr", "note": "'not merged: the review rejects it'"}},
    ],
}


def flow_plugin(root: Path, *, flows: dict[str, Any] | None = None, version: str = "0.1.0",
                name: str = "acme") -> Path:
    """The plugin, with `flows` (NAME -> the flow's YAML data) in flows/."""
    make_plugin(root, name=name, version=version, agents=AGENTS, files=FILES)
    (root / "flows").mkdir(exist_ok=True)
    for flow, body in (flows if flows is not None else {"release": RELEASE}).items():
        text = body if isinstance(body, str) else yaml.safe_dump(body, sort_keys=False)
        (root / "flows" / f"{flow}.yaml").write_text(text)
    return root


def approval(**ask: Any) -> dict[str, Any]:
    """The issue's flow: review, ask the person, merge when approved (else say why not)."""
    step = {"id": "approve", "ask": "Merge {input.repo}#{input.pr}? The review says {steps.review.output.verdict}.",
            "answer_schema": "schemas/approve.json", **ask}
    return {
        "description": "Review a pull request, ask the on-call, then merge it.",
        "input_schema": "schemas/release-input.json",
        "output_schema": "schemas/merge.json",
        "steps": [
            {"id": "review", "agent": "acme-reviewer"},
            step,
            {"id": "merge", "agent": "merger", "if": "steps.approve.answer.approved",
             "input": {"repo": "input.repo", "pr": "input.pr", "note": "'approved'"}},
            {"id": "done", "agent": "merger", "if": "!(steps.merge.output)",
             "input": {"repo": "input.repo", "pr": "input.pr", "note": "'not approved'"}},
        ],
    }
