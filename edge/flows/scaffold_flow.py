"""`oz0 plugin new NAME --flow`: the files of a complete example flow, added to the scaffolded plugin.

The flow `NAME-release` reviews a change (an agent step), asks the asker whether to ship it (a person
step, answered from the console's job page, a chat thread or POST /v1/jobs/{id}/answer), ships it
only when approved (a conditional agent step) and reports either way. It lints without a finding and
its test runs it through a real runtime, answering the question as a person would.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["flow_files"]


def _schema(properties: dict[str, Any], required: list[str]) -> str:
    return json.dumps({"type": "object", "required": required, "additionalProperties": False,
                       "properties": properties}, indent=2) + "\n"


_TITLE = {"type": "string", "minLength": 1, "maxLength": 200, "description": "What the change is called."}

_FLOW_YAML = """\
# A flow: steps run in order, each agent step a job of its own (oz0 jobs show ID draws the tree).
# Expressions are JMESPath over {{input, steps: {{ID: {{output, answer}}}}}}.
description: Review a change, ask whether to ship it, ship it when approved, and report.
input_schema: schemas/change.json
output: text
example: {{"title": "Faster search", "lines": 120}}
steps:
  - id: review
    agent: {name}-review                 # gets the flow's input
  - id: approve
    ask: "Ship {{input.title}}? The review says {{steps.review.output.verdict}}: {{steps.review.output.summary}}"
    answer_schema: schemas/approve.json  # an object of primitive fields
    timeout_s: 3600                      # then the answer below, as if given
    on_timeout: {{answer: {{approved: false}}}}
  - id: ship
    agent: {name}-ship
    if: steps.approve.answer.approved    # skipped unless approved
    input: {{title: input.title, comment: steps.approve.answer.comment}}
  - id: report
    agent: {name}-report                 # its answer is the flow's answer
    input: {{title: input.title, verdict: steps.review.output.verdict, shipped: steps.ship.output.shipped}}
"""

_AGENTS = {
    "review": ("Reviews a change: approves one of at most 400 lines.", "review", "schemas/change.json",
               "output_schema: schemas/review.json"),
    "ship": ("Ships an approved change.", "ship", "schemas/ship-input.json", "output_schema: schemas/shipped.json"),
    "report": ("Says what became of a change, as markdown.", "report", "schemas/report-input.json", "output: text"),
}

_AGENT_YAML = """\
description: "{description}"
kind: python
entry: flow_agents:{entry}
input_schema: {input}
{output}
"""

_FLOW_AGENTS_PY = '''\
"""The agents of the {name}-release flow: plain functions of JSON in, JSON (or markdown) out."""

from __future__ import annotations


def review(change: dict) -> dict:
    """Approve a change of at most 400 lines."""
    small = change["lines"] <= 400
    return {{"verdict": "approve" if small else "reject",
             "summary": f"{{change['lines']}} lines, {{'small enough' if small else 'too big to review at once'}}"}}


def ship(order: dict) -> dict:
    """Ship it (here: say so)."""
    return {{"title": order["title"], "shipped": True, "comment": order.get("comment") or ""}}


def report(facts: dict) -> str:
    """What became of the change."""
    done = "shipped" if facts.get("shipped") else "not shipped"
    return f"**{{facts['title']}}**: {{done}} (the review said _{{facts['verdict']}}_)."
'''

_FLOW_TEST_PY = '''\
"""The {name}-release flow run through a real runtime, its question answered as a person would."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from oz0.edge.flows.engine import FLOW_ENGINE
from oz0.edge.plugins.manifest import load_plugin
from oz0.edge.runtime.install import install_plugin
from oz0.edge.runtime.runner import Runtime

PLUGIN = Path(__file__).resolve().parents[1]


def run(tmp_path, change, answer):
    runtime = Runtime(tmp_path, flow_engine=FLOW_ENGINE)
    install_plugin(runtime, load_plugin(PLUGIN))

    async def scenario():
        job, _ = runtime.submit("{name}-release", json.dumps(change), requester="cli:me")
        task = asyncio.ensure_future(runtime.execute(job.id))
        while runtime.question(job.id) is None:
            await asyncio.sleep(0.02)
        await asyncio.to_thread(runtime.answer, job.id, "approve", action="accept", content=answer, by="cli:me")
        return await task

    try:
        return asyncio.run(scenario())
    finally:
        runtime.close()


def test_an_approved_change_is_shipped(tmp_path):
    job = run(tmp_path, {{"title": "Faster search", "lines": 120}}, {{"approved": True, "comment": "go"}})
    assert (job.status, job.output) == ("succeeded", "**Faster search**: shipped (the review said _approve_).")


def test_a_change_not_approved_is_reported_not_shipped(tmp_path):
    job = run(tmp_path, {{"title": "Rewrite", "lines": 9000}}, {{"approved": False}})
    assert job.output == "**Rewrite**: not shipped (the review said _reject_)."
'''


def flow_files(name: str) -> dict[str, str]:
    """The files (relative path -> text) of the example flow of a plugin called `name`."""
    files = {
        f"flows/{name}-release.yaml": _FLOW_YAML.format(name=name),
        "flow_agents.py": _FLOW_AGENTS_PY.format(name=name),
        "tests/test_flow.py": _FLOW_TEST_PY.format(name=name),
        "schemas/change.json": _schema({"title": _TITLE, "lines": {"type": "integer", "minimum": 0}},
                                       ["title", "lines"]),
        "schemas/review.json": _schema({"verdict": {"enum": ["approve", "reject"]}, "summary": {"type": "string"}},
                                       ["verdict", "summary"]),
        "schemas/approve.json": json.dumps({"type": "object", "required": ["approved"], "properties": {
            "approved": {"type": "boolean", "title": "Ship it?"},
            "comment": {"type": "string", "title": "Comment", "maxLength": 500}}}, indent=2) + "\n",
        "schemas/ship-input.json": _schema({"title": _TITLE, "comment": {"type": ["string", "null"]}}, ["title"]),
        "schemas/shipped.json": _schema({"title": {"type": "string"}, "shipped": {"type": "boolean"},
                                         "comment": {"type": "string"}}, ["title", "shipped"]),
        "schemas/report-input.json": _schema({"title": {"type": "string"}, "verdict": {"enum": ["approve", "reject"]},
                                              "shipped": {"type": ["boolean", "null"]}}, ["title", "verdict"]),
    }
    for agent, (description, entry, schema, output) in _AGENTS.items():
        files[f"agents/{name}-{agent}.yaml"] = _AGENT_YAML.format(description=description, entry=entry,
                                                                  input=schema, output=output)
    return files
