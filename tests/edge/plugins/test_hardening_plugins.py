"""Plugin folders that try to exhaust memory, escape their folder or smuggle odd values: lint and
install refuse each with one line naming the file, and nothing is left under OZ0_HOME/plugins."""

from __future__ import annotations

import re
import resource
import subprocess
import sys
from pathlib import Path

import pytest
from plugin_kit import make_plugin

from oz0.adapters.cli import main
from oz0.edge.flows.engine import FLOW_ENGINE
from oz0.edge.plugins.yaml_safe import MAX_YAML_ALIASES, MAX_YAML_NODES

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
    """The installed plugins' files on this replica: its cache of the stored archives (and `plugins/`,
    where installs made before revision 0024 kept them)."""
    return sorted(p for where in ("cache", "plugins") if (home / where).exists() for p in (home / where).rglob("*"))


def in_process(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]):
    """`oz0` run in this process (the quick way, for cases that need no memory limit)."""
    def run(*args: str, home: Path) -> subprocess.CompletedProcess:
        monkeypatch.setenv("OZ0_HOME", str(home))
        capsys.readouterr()
        code = main(list(args))
        out, err = capsys.readouterr()
        return subprocess.CompletedProcess(args, code, out, err)
    return run


def refused(tmp_path: Path, root: Path, file_named: str, *, run=oz0) -> None:
    """lint: exit 1, the file named; install: exit 1, one line naming the file, nothing stored."""
    home = tmp_path / "home"
    lint = run("plugin", "lint", str(root), home=home)
    assert lint.returncode == 1, lint.stdout + lint.stderr
    assert file_named in lint.stdout, lint.stdout
    assert "Traceback" not in lint.stderr and "internal error" not in lint.stderr
    install = run("plugin", "install", str(root), home=home)
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


# 8. links out of the folder, odd files, odd values ---------------------------------------------

import os  # noqa: E402

import yaml  # noqa: E402


def _plugin(tmp_path: Path) -> Path:
    return make_plugin(tmp_path / "p", name="p8", agents={"echo": AGENT}, files=CODE)


def _outside(tmp_path: Path) -> Path:
    out = tmp_path / "outside"
    (out / "agents").mkdir(parents=True, exist_ok=True)
    (out / "agents" / "evil.yaml").write_text(AGENT)
    (out / "secret.txt").write_text("the neighbour's secret\n")
    return out


def agents_folder_link(tmp_path: Path) -> tuple[Path, str]:
    root = _plugin(tmp_path)
    for f in (root / "agents").iterdir():
        f.unlink()
    (root / "agents").rmdir()
    (root / "agents").symlink_to(_outside(tmp_path) / "agents")
    return root, "agents"


def agent_file_link(tmp_path: Path) -> tuple[Path, str]:
    root = _plugin(tmp_path)
    (root / "agents" / "evil.yaml").symlink_to(_outside(tmp_path) / "agents" / "evil.yaml")
    return root, "agents/evil.yaml"


def other_file_link(tmp_path: Path) -> tuple[Path, str]:
    root = _plugin(tmp_path)
    (root / "notes.txt").symlink_to(_outside(tmp_path) / "secret.txt")
    return root, "notes.txt"


def fifo(tmp_path: Path) -> tuple[Path, str]:
    root = _plugin(tmp_path)
    os.mkfifo(root / "agents" / "pipe.yaml")
    return root, "agents/pipe.yaml"


def link_loop(tmp_path: Path) -> tuple[Path, str]:
    root = _plugin(tmp_path)
    (root / "agents" / "loop.yaml").symlink_to("loop.yaml")
    return root, "agents/loop.yaml"


def binary_tag(tmp_path: Path) -> tuple[Path, str]:
    root = _plugin(tmp_path)
    (root / "agents" / "echo.yaml").write_text(AGENT + "description: !!binary aGVsbG8=\n")
    return root, "agents/echo.yaml"


def date_version(tmp_path: Path) -> tuple[Path, str]:
    root = _plugin(tmp_path)
    (root / "plugin.yaml").write_text("name: p8\nversion: 2024-01-01\n")
    return root, "plugin.yaml"


def invalid_utf8(tmp_path: Path) -> tuple[Path, str]:
    root = _plugin(tmp_path)
    (root / "plugin.yaml").write_bytes(b'name: p8\nversion: 0.1.0\ndescription: "\xff\xfe"\n')
    return root, "plugin.yaml"


def surrogate_escape(tmp_path: Path) -> tuple[Path, str]:
    root = _plugin(tmp_path)
    (root / "plugin.yaml").write_text('name: p8\nversion: 0.1.0\ndescription: "x\\ud800y"\n')
    return root, "plugin.yaml"


def surrogate_in_agent(tmp_path: Path) -> tuple[Path, str]:
    root = _plugin(tmp_path)
    (root / "agents" / "echo.yaml").write_text(AGENT + 'description: "\\udfff"\n')
    return root, "agents/echo.yaml"


@pytest.mark.parametrize("build", [agents_folder_link, agent_file_link, other_file_link, fifo, link_loop,
                                   binary_tag, date_version, invalid_utf8, surrogate_escape, surrogate_in_agent])
def test_lint_and_install_refuse_it_naming_the_file_and_leave_nothing(tmp_path, build, monkeypatch, capsys):
    root, named = build(tmp_path)
    refused(tmp_path, root, named, run=in_process(monkeypatch, capsys))


def test_a_link_inside_the_folder_is_fine_and_its_content_is_copied(tmp_path):
    root = _plugin(tmp_path)
    (root / "README.md").write_text("read me\n")
    (root / "docs.md").symlink_to("README.md")
    home = tmp_path / "home"
    done = oz0("plugin", "install", str(root), home=home)
    assert done.returncode == 0, done.stderr
    copied = [p for p in plugins_left(home) if p.name == "docs.md"]
    assert copied and not copied[0].is_symlink() and copied[0].read_text() == "read me\n"


def test_install_from_python_refuses_a_link_out_and_stores_nothing(tmp_path):
    from oz0.edge.plugins.declared import PluginError
    from oz0.edge.plugins.manifest import load_plugin
    from oz0.edge.runtime.install import install_plugin
    from oz0.edge.runtime.runner import Runtime

    root, _ = other_file_link(tmp_path)
    runtime = Runtime(tmp_path / "home", flow_engine=FLOW_ENGINE)
    try:
        with pytest.raises(PluginError, match=re.escape("notes.txt")):
            install_plugin(runtime, load_plugin(root))
        assert runtime.installed() == []
    finally:
        runtime.close()
    assert plugins_left(tmp_path / "home") == []
    assert not any("secret" in p.read_text() for p in (tmp_path / "home").rglob("*.txt"))


# 9. agent names -----------------------------------------------------------------------------------

@pytest.mark.parametrize("stem", ["<b>", "a@b", "a b", "-x", "a..b", "A", "x\ny"])
def test_an_agent_file_whose_stem_is_not_an_agent_name_is_refused(tmp_path, stem, monkeypatch, capsys):
    root = _plugin(tmp_path)
    (root / "agents" / "echo.yaml").rename(root / "agents" / f"{stem}.yaml")
    run = in_process(monkeypatch, capsys)
    refused(tmp_path, root, "agents/", run=run)
    done = run("plugin", "lint", str(root), home=tmp_path / "home")
    assert "agent name" in done.stdout


def test_a_name_field_that_is_not_an_agent_name_is_refused(tmp_path, monkeypatch, capsys):
    root = _plugin(tmp_path)
    (root / "agents" / "echo.yaml").write_text(AGENT + yaml.safe_dump({"name": "x@y"}))
    refused(tmp_path, root, "agents/echo.yaml", run=in_process(monkeypatch, capsys))
