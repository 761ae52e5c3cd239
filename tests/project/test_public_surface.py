"""The public surface of each package is small and deliberate (httpx style): `__all__` is the API."""

from __future__ import annotations

import importlib
import pkgutil

from oz0 import edge


def test_edge_surface():
    assert sorted(edge.__all__) == sorted([
        "FORMS", "MAX_CARD_BYTES", "AgentSpec", "AnswerRefused", "Attachment", "Card", "ChatRuntime", "ConsoleRuntime",
        "Contract", "ContractError", "DiffBody", "DiffLine", "Job", "JobFailure", "KeyChange", "Oz0Error",
        "PluginError", "RuntimeFace", "ServeRuntime", "Status", "UnknownAgent", "Violation", "cell_text",
        "choose_card", "compact_json", "compile_count", "is_call_tool_result", "is_qzx_result", "load_contract",
        "load_json_file",
    ])
    for name in edge.__all__:
        assert getattr(edge, name) is not None


def test_renderers_surface():
    from oz0 import renderers

    assert sorted(renderers.__all__) == ["RENDERERS", "Rendered", "render"]
    assert sorted(renderers.RENDERERS) == ["discord", "html", "slack", "teams", "text"]
    for name in renderers.__all__:
        assert getattr(renderers, name) is not None


def test_chat_surface():
    from oz0.adapters import chat

    assert sorted(chat.__all__) == sorted([
        "AnswerClick", "Ask", "AskFlow", "ButtonClick", "ChannelTasks", "ChatRuntime", "ChatWire", "JobLoop",
        "RateLimited", "Reply", "Restarts", "ShareClick", "Syntax", "WireRefused", "report_interrupted",
    ])
    for name in chat.__all__:
        assert getattr(chat, name) is not None
    assert chat.ChatRuntime is edge.ChatRuntime  # one Protocol, held by the edge's face


def test_a_face_loads_nothing_until_a_name_is_read():
    """Importing a face is cheap (`oz0 --help` imports them): no validator, database, SDK or engine."""
    import subprocess
    import sys

    code = ("import sys, oz0.edge, oz0.renderers, oz0.adapters.chat\n"
            "heavy = [m for m in ('sqlalchemy', 'jsonschema_rs', 'orjson', 'dbos', 'slack_sdk', 'discord', 'mcp',"
            " 'oz0.edge.cards.choice', 'oz0.adapters.chat.flow') if m in sys.modules]\n"
            "print(heavy)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_every_module_declares_all_and_it_resolves():
    for package_name in ("oz0.edge", "oz0.edge.cards", "oz0.edge.contracts", "oz0.edge.flows", "oz0.edge.mcp",
                         "oz0.edge.plugins", "oz0.edge.results", "oz0.edge.model", "oz0.edge.documents", "oz0.edge.runtime",
                         "oz0.renderers", "oz0.adapters", "oz0.adapters.chat",
                         "oz0.adapters.cli", "oz0.adapters.console"):
        package = importlib.import_module(package_name)
        for info in pkgutil.iter_modules(package.__path__):
            if info.ispkg or info.name.startswith("_"):
                continue
            module = importlib.import_module(f"{package_name}.{info.name}")
            assert hasattr(module, "__all__"), f"{module.__name__} has no __all__"
            for name in module.__all__:
                assert hasattr(module, name), f"{module.__name__}.__all__ names missing {name}"


def test_imports_run_one_way():
    """edge knows no platform; renderers import only the card model from edge."""
    import ast
    from pathlib import Path

    root = Path(edge.__file__).resolve().parents[1]
    for path in (root / "edge").rglob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            for name in names:
                assert not name.startswith(("oz0.adapters", "oz0.renderers", "slack", "discord")), f"{path}: {name}"
    for path in (root / "renderers").rglob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("edge"):
                assert node.module in ("oz0.edge.cards.model", "oz0.edge.contracts.schema"), f"{path}: {node.module}"
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("oz0.adapters"):
                raise AssertionError(f"{path} imports {node.module}")


def test_the_wheel_installs_one_top_level_package_oz0(tmp_path):
    """A generic top-level name (`adapters`, `edge`) would collide with other PyPI packages."""
    import shutil
    import subprocess
    import sys
    import zipfile
    from pathlib import Path

    root = Path(edge.__file__).resolve().parents[1]
    source = tmp_path / "source"  # built from a copy: setuptools leaves build/ beside the sources it builds
    shutil.copytree(root, source, ignore=shutil.ignore_patterns(".venv", ".git", "build", "*.egg-info", "__pycache__",
                                                                 ".typecheck", ".mypy_cache", ".ruff_cache",
                                                                 ".pytest_cache", ".hypothesis"))
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(source)],
                           capture_output=True, text=True, timeout=600)
    assert built.returncode == 0, built.stderr[-2000:]
    (wheel,) = tmp_path.glob("oz0_edge-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    top = {name.split("/")[0] for name in names if not name.split("/")[0].endswith((".dist-info", ".data"))}
    assert top == {"oz0"}
    for expected in ("oz0/edge/cards/choice.py", "oz0/adapters/cli/__main__.py", "oz0/renderers/slack_blocks.py",
                     "oz0/schemas/qzx-result-v1.schema.json", "oz0/schemas/agent.schema.json", "oz0/edge/example_plugin/plugin.yaml",
                     "oz0/adapters/console/templates/base.html", "oz0/edge/runtime/migrations/env.py",
                     "oz0/edge/runtime/migrations/script.py.mako",
                     "oz0/edge/runtime/migrations/versions/0001_baseline.py"):
        assert expected in names, expected
    assert not any(name.startswith(("oz0/tests/", "oz0/bench/")) for name in names)
    entry = next(name for name in names if name.endswith("entry_points.txt"))
    assert "oz0 = oz0.adapters.cli:main" in zipfile.ZipFile(wheel).read(entry).decode()
