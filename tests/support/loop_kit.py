"""A plugin for the tool-loop tests (tests/edge/runtime/test_tool_loop.py, the crash test, bench/agent_loop.py): a
model agent `triage` whose tools are an agent (`ci-runs`), the CI MCP server's tools
(tests/support/mcp_servers/ci_server.py, counting its calls) and ask_person, against a stand-in model."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import yaml
from plugin_kit import make_plugin

from oz0.edge.plugins.manifest import load_plugin
from oz0.edge.runtime.install import install_plugin
from oz0.edge.runtime.runner import Runtime

__all__ = ["CI_SERVER", "VERDICT", "loop_plugin", "triage_agent"]

CI_SERVER = str(Path(__file__).parent / "mcp_servers" / "ci_server.py")
VERDICT = {"type": "object", "required": ["verdict"], "additionalProperties": False,
           "properties": {"verdict": {"enum": ["flaky", "broken"]}, "run_id": {"type": "integer"}}}
RUNS = {"type": "object", "required": ["branch"], "properties": {"branch": {"type": "string"}}}
RUNS_OUT = {"type": "object", "required": ["runs"],
            "properties": {"runs": {"type": "array", "items": {"type": "integer"}}}}

IMPL = """
import os

def ci_runs(value):
    path = os.environ.get("OZ0_TEST_CALLS")
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write("ci-runs " + value["branch"] + "\\n")
    return {"runs": [4411, 4412]}
"""


def triage_agent(base_url: str, **extra: Any) -> dict[str, Any]:
    agent = {"description": "Triage a failing CI run", "kind": "model", "base_url": base_url,
             "model": "triage-1", "api_key_env": "OZ0_TEST_MODEL_KEY", "max_tokens": 200,
             "system": "You triage failing CI runs. Use the tools; answer with the verdict.",
             "input": "text", "output_schema": "schemas/verdict.json",
             "tools": [{"agent": "ci-runs"}, {"server": "ci"}, "ask_person"], "limits": {"max_steps": 10}}
    agent.update(extra)
    return agent


def loop_plugin(tmp: Path, home: Path, base_url: str, *, version: str = "0.1.0", database_url: str | None = None,
                server_args: tuple[str, ...] = (), **extra: Any) -> Runtime:
    """The plugin written under `tmp` and installed into a Runtime over `home`; the CI server counts its
    calls in $OZ0_TEST_CALLS (given as its argument: an ${ENV} value would be redacted as a secret);
    `server_args` follow it (mcp_servers/ci_server.py says what they do)."""
    import os

    calls_file = os.environ.get("OZ0_TEST_CALLS")
    manifest = {"name": "ci", "version": version,
                "servers": {"ci": {"command": sys.executable, "args": [CI_SERVER, calls_file or "", *server_args]}}}
    root = make_plugin(tmp, name="ci", version=version, files={
        "schemas/verdict.json": VERDICT, "schemas/runs.json": RUNS, "schemas/runs-out.json": RUNS_OUT,
        "impl.py": IMPL},
        agents={"triage": triage_agent(base_url, **extra),
                "ci-runs": {"description": "The CI runs of a branch", "kind": "python", "entry": "impl:ci_runs",
                            "input_schema": "schemas/runs.json", "output_schema": "schemas/runs-out.json"}})
    (root / "plugin.yaml").write_text(yaml.safe_dump(manifest))
    runtime = Runtime(home, database_url=database_url, backoff_s=0.01)
    install_plugin(runtime, load_plugin(root))
    return runtime
