"""A real plugin for the tests of limits over the job tree: a counter, a sleeper, a flaky agent, agents
that delegate, and flows that loop, wait for a person and nest."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from plugin_kit import make_plugin

__all__ = ["AGENTS", "tree_plugin"]

AGENTS_PY = """
import asyncio
import os
from pathlib import Path

from oz0.edge.model.job import JobFailure

def _note(what):
    log = os.environ.get("TREE_LOG")
    if log:
        with open(log, "a") as f:
            f.write(what + "\\n")

def count(value):
    _note(f"count {value['n']}")
    return {"n": value["n"] + 1}

def slow_count(value):
    import time
    time.sleep(0.4)
    _note(f"slow {value['n']}")
    return {"n": value["n"] + 1}

async def sleep(value):
    await asyncio.sleep(30)
    return {"n": value["n"]}

def flaky(value):
    _note("flaky")
    raise JobFailure("Busy", "the service is busy")

def recurse(text, ctx):
    return ctx.ask_sync("recurse", text + ".")

def recurse_deep(text, ctx):
    return ctx.ask_sync("recurse-deep", text + ".")

async def delegate(value, ctx):
    first = await ctx.ask("counter", {"n": value["n"]})
    second = await ctx.ask("counter", first)
    return second

async def fanout(value, ctx):
    return (await asyncio.gather(ctx.ask("sleeper", value), ctx.ask("three", value)))[0]

def swallow(text, ctx):
    try:
        return ctx.ask_sync("recurse-2", text)
    except JobFailure as failure:
        return "caught " + failure.kind
"""

OBJ = {"type": "object"}
N = {**OBJ, "required": ["n"], "properties": {"n": {"type": "integer"}}}  # more keys allowed (an input's `limits`)
FILES: dict[str, Any] = {"agents.py": AGENTS_PY, "schemas/n.json": N}
AGENTS: dict[str, Any] = {
    "counter": {"kind": "python", "entry": "agents:count", "input_schema": "schemas/n.json",
                "output_schema": "schemas/n.json"},
    "slow-counter": {"kind": "python", "entry": "agents:slow_count", "input_schema": "schemas/n.json",
                     "output_schema": "schemas/n.json"},
    "sleeper": {"kind": "python", "entry": "agents:sleep", "input_schema": "schemas/n.json",
                "output_schema": "schemas/n.json"},
    "sleeper-one": {"kind": "python", "entry": "agents:sleep", "input_schema": "schemas/n.json",
                    "output_schema": "schemas/n.json", "limits": {"concurrency": 1}},  # one run at a time
    "flaky": {"kind": "python", "entry": "agents:flaky", "input_schema": "schemas/n.json",
              "output_schema": "schemas/n.json", "failures": {"Busy": {"retryable": True}},
              "limits": {"max_attempts": 3}},
    "recurse": {"kind": "python", "entry": "agents:recurse", "input": "text", "output": "text",
                "limits": {"max_depth": 3}},
    "recurse-deep": {"kind": "python", "entry": "agents:recurse_deep", "input": "text", "output": "text",
                     "limits": {"max_depth": 12}},
    "recurse-2": {"kind": "python", "entry": "agents:recurse", "input": "text", "output": "text"},  # asks recurse
    "delegator": {"kind": "python", "entry": "agents:delegate", "input_schema": "schemas/n.json",
                  "output_schema": "schemas/n.json"},
    "fanout": {"kind": "python", "entry": "agents:fanout", "input_schema": "schemas/n.json",
               "output_schema": "schemas/n.json"},
    "swallower": {"kind": "python", "entry": "agents:swallow", "input": "text", "output": "text",
                  "limits": {"max_depth": 2}},
}


def flow(steps: list[dict[str, Any]], **limits: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"input_schema": "schemas/n.json", "output_schema": "schemas/n.json", "steps": steps}
    if limits:
        out["limits"] = limits
    return out


LOOP = flow([{"id": "bump", "agent": "counter", "input": "steps.bump.output || input",
              "until": "steps.bump.output.n >= `3`"}])
FLOWS: dict[str, Any] = {
    "loop": flow([{"id": "bump", "agent": "counter", "input": "steps.bump.output || input",
                   "until": "steps.bump.output.n >= `100`"}], max_steps=5),
    "loop-done": LOOP,
    "loop-slow": flow([{"id": "bump", "agent": "slow-counter", "input": "steps.bump.output || input",
                        "until": "steps.bump.output.n >= `6`"}]),
    "three": flow([{"id": "a", "agent": "counter"}, {"id": "b", "agent": "counter"},
                   {"id": "c", "agent": "counter"}], max_children=2),
    "retry": flow([{"id": "first", "agent": "flaky"}], max_steps=2),
    "slow": flow([{"id": "a", "agent": "counter"}, {"id": "b", "agent": "sleeper"}], tree_timeout_s=1),
    "slow-queued": flow([{"id": "a", "agent": "counter"}, {"id": "b", "agent": "sleeper-one"}], tree_timeout_s=2),
    "outer": flow([{"id": "inner", "agent": "loop-done"}, {"id": "again", "agent": "counter"}], max_steps=4),
}


def waiting(count_waits: bool) -> dict[str, Any]:
    """A person step, then a counter, under a tree time of 1 s."""
    return flow([{"id": "a", "agent": "counter"},
                 {"id": "ok", "ask": "Go on with {input.n}?", "answer_schema": "schemas/ok.json"},
                 {"id": "b", "agent": "counter", "input": "steps.a.output"}],
                tree_timeout_s=1, count_waits=count_waits)


def tree_plugin(root: Path, *, flows: dict[str, Any] | None = None, name: str = "trees") -> Path:
    files = {**FILES, "schemas/ok.json": {**OBJ, "required": ["ok"], "properties": {"ok": {"type": "boolean"}}}}
    make_plugin(root, name=name, agents=AGENTS, files=files)
    (root / "flows").mkdir(exist_ok=True)
    for name_, body in (flows if flows is not None else FLOWS).items():
        (root / "flows" / f"{name_}.yaml").write_text(yaml.safe_dump(body, sort_keys=False))
    return root
