"""Spec and CLI edges of issue 28: each test here failed before its fix (see the item number)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from oz0.edge.contracts.json_data import MAX_JSON_DEPTH
from oz0.edge.plugins.install import install_plugin
from oz0.edge.plugins.manifest import load_plugin
from oz0.edge.runtime.runner import Runtime
from plugin_kit import make_plugin

DEEP = '''
def deep(x):
    value = []
    for _ in range(300):
        value = [value]
    return value
'''


# 11. a deep answer is refused for its depth, not called "not JSON data" ----------------------------

def test_a_300_level_answer_is_refused_for_nesting_deeper_than_128_levels(tmp_path: Path):
    root = make_plugin(tmp_path / "plugin", agents={
        "deep": {"kind": "python", "entry": "answers:deep", "input": "text", "output_schema": "schemas/any.json"},
        "deep-command": {"kind": "command", "input": "text", "output_schema": "schemas/any.json",
                         "command": ["python", "-c", "print('[' * 300 + ']' * 300)"]},
    }, files={"answers.py": DEEP, "schemas/any.json": {}})
    runtime = Runtime(tmp_path / "home", backoff_s=0.01)
    try:
        install_plugin(runtime, load_plugin(root))
        for agent in ("deep", "deep-command"):
            job = asyncio.run(runtime.run(agent, "hi"))
            assert job.status == "failed" and job.failure_kind == "InvalidOutput", agent
            assert f"the answer nests deeper than {MAX_JSON_DEPTH} levels" in job.failure_reason, job.failure_reason
            assert "not JSON" not in job.failure_reason, job.failure_reason
    finally:
        runtime.close()
