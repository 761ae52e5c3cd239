"""A plugin for the streamed-answer tests and bench/streaming.py: `writer`, a model agent with a text
answer (a plain chat completion, streamed), `researcher`, one with a tool (the tool loop, streamed),
and `verdict`, one with an output schema (not streamed: its card comes at the end)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from plugin_kit import make_plugin

from oz0.edge.plugins.manifest import load_plugin
from oz0.edge.runtime.install import install_plugin
from oz0.edge.runtime.runner import Runtime

__all__ = ["KEY", "KEY_ENV", "stream_plugin"]

KEY_ENV = "OZ0_TEST_STREAM_KEY"
KEY = "sk-stream-test-0123456789abcdef"
VERDICT = {"type": "object", "required": ["verdict"], "properties": {"verdict": {"type": "string"}}}

IMPL = """
def lookup(value):
    return "build 4411 failed in test_login"
"""


def stream_plugin(tmp: Path, home: Path | None, base_url: str, *, database_url: str | None = None,
                  runtime: Runtime | None = None) -> Runtime:
    model: dict[str, Any] = {"kind": "model", "base_url": base_url, "model": "writer-1", "api_key_env": KEY_ENV,
                             "input": "text"}
    root = make_plugin(tmp, name="streaming", files={"schemas/verdict.json": VERDICT, "impl.py": IMPL}, agents={
        "writer": {"description": "Writes an answer", **model},
        "researcher": {"description": "Looks things up, then answers", **model, "tools": [{"agent": "lookup"}],
                       "limits": {"max_steps": 10}},
        "verdict": {"description": "Answers a verdict", **model, "output_schema": "schemas/verdict.json"},
        "lookup": {"description": "Looks up a build", "kind": "python", "entry": "impl:lookup", "input": "text"}})
    rt = runtime or Runtime(home, database_url=database_url, backoff_s=0.01)
    install_plugin(rt, load_plugin(root))
    return rt
