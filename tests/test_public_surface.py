"""The public surface of each package is small and deliberate (httpx style): `__all__` is the API."""

from __future__ import annotations

import importlib
import pkgutil

import edge


def test_edge_surface():
    assert sorted(edge.__all__) == sorted([
        "FORMS", "MAX_CARD_BYTES", "Attachment", "Card", "Contract", "ContractError", "DiffBody", "DiffLine",
        "KeyChange", "Status", "Violation", "cell_text", "choose_card", "compact_json", "compile_count",
        "is_call_tool_result", "is_qzx_result", "load_contract", "load_json_file",
    ])
    for name in edge.__all__:
        assert getattr(edge, name) is not None


def test_every_module_declares_all_and_it_resolves():
    for package_name in ("edge", "renderers", "adapters"):
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
                assert not name.startswith(("adapters", "renderers", "slack", "discord")), f"{path}: {name}"
    for path in (root / "renderers").rglob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("edge"):
                assert node.module in ("edge.cards", "edge.contracts"), f"{path}: {node.module}"
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("adapters"):
                raise AssertionError(f"{path} imports {node.module}")
