"""Plugin folders that try to exhaust memory, escape their folder or smuggle odd values: lint and
install refuse each with one line naming the file, and nothing is left under OZ0_HOME/plugins."""

from __future__ import annotations

import resource
import subprocess
import sys
from pathlib import Path

import pytest

from oz0.adapters.cli import main
from oz0.edge.plugins.yaml_safe import MAX_YAML_ALIASES, MAX_YAML_NODES
from plugin_kit import make_plugin

OZ0 = [sys.executable, "-m", "oz0.adapters.cli"]
AGENT = "kind: python\nentry: agent:run\ninput: text\noutput: text\n"
CODE = {"agent.py": "def run(text):\n    return text\n"}


def alias_bomb(levels: int = 8, *, key: str = "x") -> str:
    """About 600 bytes under `key`: 9 aliases per level, `levels` levels (9**levels leaves expanded)."""
    lines = [f"{key}:", '  a0: &a0 ["lol"]']
    for i in range(1, levels + 1):
        lines.append(f"  a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]")
    return "\n".join(lines) + "\n"


def oz0(*args: str, home: Path) -> subprocess.CompletedProcess:
    env = {"OZ0_HOME": str(home), "PATH": "/usr/bin:/bin"}
    import os
    env["PYTHONPATH"] = os.environ.get("PYTHONPATH", "")
    return subprocess.run([*OZ0, *args], capture_output=True, text=True, timeout=60, env=env,
                          preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30)))


def plugins_left(home: Path) -> list[Path]:
    return sorted((home / "plugins").rglob("*")) if (home / "plugins").exists() else []


def refused(tmp_path: Path, root: Path, file_named: str) -> None:
    """lint: exit 1, the file named; install: exit 1, one line naming the file, nothing stored."""
    home = tmp_path / "home"
    lint = oz0("plugin", "lint", str(root), home=home)
    assert lint.returncode == 1, lint.stdout + lint.stderr
    assert file_named in lint.stdout, lint.stdout
    assert "Traceback" not in lint.stderr and "internal error" not in lint.stderr
    install = oz0("plugin", "install", str(root), home=home)
    assert install.returncode == 1, install.stdout + install.stderr
    last = install.stderr.strip().splitlines()[-1]
    assert last.startswith("oz0: error: not installed") and file_named in install.stderr, install.stderr
    assert "Traceback" not in install.stderr and "internal error" not in install.stderr
    assert plugins_left(home) == []


# 2. YAML alias bombs ----------------------------------------------------------------------------

@pytest.mark.parametrize("levels", [7, 8])
def test_an_alias_bomb_in_plugin_yaml_is_refused_with_little_memory(tmp_path, levels):
    root = make_plugin(tmp_path / "p", agents={"echo": AGENT}, files=CODE)
    (root / "plugin.yaml").write_text("name: bomb\nversion: 0.1.0\n" + alias_bomb(levels, key="description"))
    assert len((root / "plugin.yaml").read_bytes()) < 700
    refused(tmp_path, root, "plugin.yaml")


def test_an_alias_bomb_in_an_agent_file_is_refused(tmp_path):
    root = make_plugin(tmp_path / "p", agents={"echo": AGENT + alias_bomb(8, key="description")}, files=CODE)
    refused(tmp_path, root, "agents/echo.yaml")


def test_an_alias_bomb_as_an_example_is_refused(tmp_path):
    root = make_plugin(tmp_path / "p", agents={"echo": AGENT.replace("input: text", "input_schema: s.json")
                                               + alias_bomb(8, key="example")},
                       files={**CODE, "s.json": '{"type": "object"}'})
    refused(tmp_path, root, "agents/echo.yaml")


def test_the_alias_limit_is_named_in_the_message(tmp_path):
    root = make_plugin(tmp_path / "p", agents={"echo": AGENT + alias_bomb(8, key="description")}, files=CODE)
    done = oz0("plugin", "lint", str(root), home=tmp_path / "home")
    assert f"the limit is {MAX_YAML_NODES:,}" in done.stdout or f"the limit is {MAX_YAML_ALIASES}" in done.stdout
