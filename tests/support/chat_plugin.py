"""The plugin of small agents the chat channel tests (Slack, Discord) install: `echo` (text), `deploys`
(JSON in, a table out) and `boom` (always fails). Each harness brings its own `impl.py` (what the
agents do) and may add agents of its own."""

from __future__ import annotations

import textwrap
from collections.abc import Mapping
from pathlib import Path

from oz0.edge.plugins.manifest import load_plugin
from oz0.edge.runtime.install import install_plugin
from oz0.edge.runtime.runner import Runtime

__all__ = ["AGENT_FILES", "install_chat_plugin"]

AGENT_FILES = {
    "agents/echo.yaml": """\
        description: Says back what it was given
        kind: python
        entry: impl:echo
        input: text
        output: text
        example: hello there
        """,
    "agents/deploys.yaml": """\
        description: Lists recent deploys of a service
        kind: python
        entry: impl:deploys
        input_schema: schemas/deploys.in.json
        output_schema: schemas/deploys.out.json
        example: {"service": "api", "rows": 3}
        """,
    "agents/boom.yaml": """\
        description: Always fails
        kind: python
        entry: impl:boom
        input: text
        output: text
        limits: {max_attempts: 1}
        """,
    "schemas/deploys.in.json": """\
        {"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object",
         "required": ["service"], "additionalProperties": false,
         "properties": {"service": {"type": "string"}, "rows": {"type": "integer", "minimum": 0}}}
        """,
    "schemas/deploys.out.json": """\
        {"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "array",
         "items": {"type": "object", "properties": {"service": {"type": "string"}, "n": {"type": "integer"},
                   "status": {"type": "string"}}}}
        """,
}


def install_chat_plugin(runtime: Runtime, where: Path, *, name: str, impl: str,
                        extra: Mapping[str, str] | None = None) -> None:
    """Write the plugin (AGENT_FILES, `impl` as impl.py, and `extra` files) into `where`; install it."""
    files = {"plugin.yaml": f"name: {name}\nversion: 1.0.0\ndescription: agents for the {name} tests\n",
             **AGENT_FILES, **(extra or {}), "impl.py": impl}
    for relative, text in files.items():
        path = where / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    install_plugin(runtime, load_plugin(where), actor="test")
