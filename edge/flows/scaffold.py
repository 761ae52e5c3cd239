"""`oz0 plugin new`: a plugin that works and lints clean before its author changes a line.

The agent it writes declares `input: text` and `output: text` (the contract every new agent starts
with), has a python function, a declared failure kind, limits, and a test that runs it both directly
and through a real runtime.
"""

from __future__ import annotations

import re
from pathlib import Path

from oz0.edge.errors import Oz0Error
from oz0.edge.flows.scaffold_flow import flow_files

__all__ = ["NAME_RE", "ScaffoldError", "scaffold_plugin"]

NAME_RE = re.compile(r"^[a-z][a-z0-9-]{0,62}$")


class ScaffoldError(Oz0Error, ValueError):
    """A name or folder `plugin new` cannot use; says which and why."""


_PLUGIN_YAML = """\
name: {name}
version: 0.1.0
description: {title} (made with `oz0 plugin new`; say here what it is for).
"""

_AGENT_YAML = """\
# One agent. Its contract: it takes text and answers text (markdown).
# To take JSON instead, replace `input: text` with `input_schema: schemas/{name}-input.json`;
# to answer a card (table, key-values, diff), replace `output: text` with `output_schema: ...`.
description: Counts the words it is given and echoes them back.
kind: python
entry: agent:answer
input: text
output: text
example: hello from {name}
limits:
  timeout_s: 30
  max_output_bytes: 65536
failures:
  EmptyInput:
    description: The text was empty; ask again with a few words.
"""

_AGENT_PY = '''\
"""The {name} agent: text in, markdown text out."""

from __future__ import annotations

from oz0.edge.model.job import JobFailure


def answer(text: str) -> str:
    """Answer the text. Raise JobFailure with a declared kind when the job cannot be done."""
    words = text.split()
    if not words:
        raise JobFailure("EmptyInput", "there is no text to answer; send a few words")
    return f"**{name}** heard {{len(words)}} word{{'s' if len(words) != 1 else ''}}: _{{' '.join(words)}}_"
'''

_TEST_PY = '''\
"""Tests of the {name} plugin: run them with `python -m pytest {folder}/tests`."""

from __future__ import annotations

import asyncio
import importlib.util
from pathlib import Path

import pytest

from oz0.edge.model.job import JobFailure
from oz0.edge.plugins.lint import lint_plugin
from oz0.edge.plugins.manifest import load_plugin
from oz0.edge.runtime.install import install_plugin
from oz0.edge.runtime.runner import Runtime

PLUGIN = Path(__file__).resolve().parents[1]


def _agent_module():
    spec = importlib.util.spec_from_file_location("{module}_agent", PLUGIN / "agent.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_answer_counts_words():
    assert _agent_module().answer("hello brave new world") == (
        "**{name}** heard 4 words: _hello brave new world_")


def test_empty_text_is_a_declared_failure():
    with pytest.raises(JobFailure) as caught:
        _agent_module().answer("   ")
    assert caught.value.kind == "EmptyInput"


def test_plugin_lints_clean():
    report = lint_plugin(PLUGIN)
    assert report.findings == (), [f.describe() for f in report.findings]


def test_runs_through_the_runtime(tmp_path):
    runtime = Runtime(tmp_path)
    install_plugin(runtime, load_plugin(PLUGIN))
    job = asyncio.run(runtime.run("{name}", "two words"))
    assert (job.status, job.output) == ("succeeded", "**{name}** heard 2 words: _two words_")
    failed = asyncio.run(runtime.run("{name}", ""))
    assert (failed.status, failed.failure_kind) == ("failed", "EmptyInput")
'''

_README = """\
# {name}

An oz0 plugin. Try it:

    oz0 plugin lint {folder}
    oz0 plugin install {folder}
    oz0 run {name} "hello there"
    python -m pytest {folder}/tests

`plugin.yaml` names the plugin and its version; each file in `agents/` declares one agent: its kind,
its contract (`input: text` / `output: text`, or `input_schema:` / `output_schema:` pointing at a JSON
Schema under `schemas/`), its failure kinds and its limits.
"""


def scaffold_plugin(name: str, folder: str | Path | None = None, *, flow: bool = False) -> list[Path]:
    """Write a new plugin named `name` into `folder` (default ./NAME); returns the files written. With
    `flow`, also a complete example flow (edge.flows.scaffold_flow) and its agents.

    Raises ScaffoldError for a bad name or a folder that exists and is not empty.
    """
    if not NAME_RE.match(name):
        raise ScaffoldError(f"{name!r} is not a plugin name: use lower-case letters, digits and dashes, "
                            "starting with a letter (at most 63)")
    root = Path(folder) if folder is not None else Path(name)
    if root.exists() and (not root.is_dir() or any(root.iterdir())):
        raise ScaffoldError(f"{root} already exists and is not an empty folder; choose another DIR")
    title = name.replace("-", " ").capitalize()
    values = {"name": name, "title": title, "folder": str(root), "module": name.replace("-", "_")}
    files = {
        "plugin.yaml": _PLUGIN_YAML,
        f"agents/{name}.yaml": _AGENT_YAML,
        "agent.py": _AGENT_PY,
        "tests/test_agent.py": _TEST_PY,
        "README.md": _README,
    }
    texts = {rel: template.format(**values) for rel, template in files.items()}
    if flow:
        texts.update(flow_files(name))
    written = []
    for rel, text in texts.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written
