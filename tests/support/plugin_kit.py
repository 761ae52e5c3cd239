"""Build real plugin folders for tests: plugin.yaml, agents/*.yaml, schemas and code, on disk."""

from __future__ import annotations

import json
import textwrap
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

__all__ = ["COUNT_AGENT", "install_at", "make_plugin"]

# Plugin code for the chat harnesses' agents (indented as their IMPL texts, dedented with them):
# `count N EVERY_S [REST_S]` reports progress i of N every EVERY_S seconds, then rests.
COUNT_AGENT = """\
    import asyncio as _asyncio

    async def count(text, ctx):
        n, every, *rest = text.split()[1:]
        for i in range(1, int(n) + 1):
            ctx.progress(f"item {i}", i, int(n))
            await _asyncio.sleep(float(every))
        await _asyncio.sleep(float(rest[0]) if rest else 0)

"""


def make_plugin(root: Path, *, name: str = "testkit", version: str = "0.1.0",
                agents: Mapping[str, Mapping[str, Any] | str] = (),  # type: ignore[assignment]
                files: Mapping[str, Any] = ()) -> Path:  # type: ignore[assignment]
    """Write a plugin under `root`. Agents are dicts (dumped as YAML) or raw YAML text; files ending
    in .json are dumped from data, other files are dedented text."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "plugin.yaml").write_text(yaml.safe_dump({"name": name, "version": version}))
    (root / "agents").mkdir(exist_ok=True)
    for agent, body in dict(agents).items():
        text = body if isinstance(body, str) else yaml.safe_dump(dict(body), sort_keys=False)
        (root / "agents" / f"{agent}.yaml").write_text(text)
    for rel, content in dict(files).items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if rel.endswith(".json") and not isinstance(content, str):
            path.write_text(json.dumps(content, indent=2))
        else:
            path.write_text(textwrap.dedent(content))
    return root


def install_at(home: Path, root: Path) -> None:
    """The plugin folder `root` installed under OZ0_HOME `home` (flows run by a flow engine), the
    runtime closed again: for a test whose jobs run in a process of their own."""
    from oz0.edge.flows.engine import FLOW_ENGINE
    from oz0.edge.plugins.manifest import load_plugin
    from oz0.edge.runtime.install import install_plugin
    from oz0.edge.runtime.runner import Runtime

    runtime = Runtime(home, flow_engine=FLOW_ENGINE)
    try:
        install_plugin(runtime, load_plugin(root), actor="test")
    finally:
        runtime.close()
