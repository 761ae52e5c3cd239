"""The floors of edge/ (edge/__init__.py's docstring): each sub-package imports only the floors below it.

Read from the code (ast), so an import inside a function or under TYPE_CHECKING counts like one at the
top: an upward import cannot hide from this test by being deferred.
"""

from __future__ import annotations

import ast
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

import pytest
from paths import ROOT

EDGE = ROOT / "edge"

# bottom first; a floor may import any floor before it in this list, never one after it
FLOORS = ("contracts", "model", "results", "plugins", "cards", "documents", "mcp", "runtime", "flows",
          "example_plugin")  # the example plugin is a plugin: it may use whatever the edge offers agents


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(["oz0", *parts])


def imports(path: Path, root: Path = ROOT) -> list[tuple[str, int, bool]]:
    """Every module `path` imports, (module, line, inside a function), relative imports resolved."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    here = module_name(path, root).split(".")
    package = here if path.name == "__init__.py" else here[:-1]
    local: set[int] = set()

    def mark(node: ast.AST, inside: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if inside and isinstance(child, (ast.Import, ast.ImportFrom)):
                local.add(id(child))
            mark(child, inside or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)))

    mark(tree, False)
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(alias.name, node.lineno, id(node) in local) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package[: len(package) - node.level + 1] + ([base] if base else []))
            # `from oz0.edge import runtime` names a sub-package: count each name that is one
            out.append((base, node.lineno, id(node) in local))
            out += [(f"{base}.{alias.name}", node.lineno, id(node) in local) for alias in node.names
                    if (root / Path(*f"{base}.{alias.name}".split(".")[1:])).is_dir()]
    return out


# the ground under every floor: modules at edge/'s root that any floor may import (the error tree's
# base, the lazy face helper); they import no floor themselves (test_the_ground_imports_no_floor)
GROUND = ("errors", "lazy", "tracing")


def floor_of(module: str) -> str | None:
    parts = module.split(".")
    return parts[2] if parts[:2] == ["oz0", "edge"] and len(parts) > 2 and parts[2] not in GROUND else None


def edge_modules(root: Path = ROOT) -> list[Path]:
    return sorted((root / "edge").rglob("*.py"))


def upward_imports(root: Path = ROOT) -> list[str]:
    found = []
    for path in edge_modules(root):
        here = floor_of(module_name(path, root))
        if here is None:  # edge/__init__.py: the face, above every floor
            continue
        for target, line, _ in imports(path, root):
            there = floor_of(target)
            if there is None or there == here:
                continue
            if there not in FLOORS or FLOORS.index(there) > FLOORS.index(here):
                found.append(f"{path.relative_to(root)}:{line}: {here} imports {target} ({there} is not below it)")
    return found


def floor_graph(root: Path = ROOT) -> dict[str, set[str]]:
    """edge_floors.py's graph: sub-package -> the sub-packages it imports, any import anywhere."""
    graph: dict[str, set[str]] = {}
    for path in edge_modules(root):
        here = floor_of(module_name(path, root))
        if here is None:
            continue
        graph.setdefault(here, set())
        graph[here] |= {there for target, _, _ in imports(path, root)
                        if (there := floor_of(target)) is not None and there != here}
    return graph


def test_every_sub_package_of_edge_is_a_floor():
    packages = {p.relative_to(EDGE).parts[0] for p in edge_modules() if len(p.relative_to(EDGE).parts) > 1}
    assert packages == set(FLOORS), "a new sub-package of edge/ needs its place in FLOORS (and the docstring)"


def test_each_floor_imports_only_floors_below_it():
    assert upward_imports() == []


def test_the_floors_have_no_cycle():
    try:
        order = list(TopologicalSorter(floor_graph()).static_order())
    except CycleError as exc:
        pytest.fail(f"edge/'s sub-packages import each other in a cycle: {exc.args[1]}")
    assert set(order) == set(FLOORS)


def test_the_ground_imports_no_floor():
    for name in GROUND:
        assert [t for t, _, _ in imports(EDGE / f"{name}.py") if t.startswith("oz0.")] == [], name


def test_runtime_and_mcp_go_one_way():
    graph = floor_graph()
    assert "mcp" in graph["runtime"] and "runtime" not in graph["mcp"]


def test_a_function_local_import_inside_edge_says_why():
    """Only to defer a costly import (DBOS, an SDK), and then with a comment saying so."""
    silent = []
    for path in edge_modules():
        lines = path.read_text(encoding="utf-8").splitlines()
        for target, line, local in imports(path):
            if local and target.startswith("oz0.") and "#" not in lines[line - 1]:
                silent.append(f"{path.relative_to(ROOT)}:{line}: {target}")
    assert silent == []


def test_edge_imports_neither_adapters_nor_renderers():
    wrong = [f"{path.relative_to(ROOT)}:{line}: {target}" for path in edge_modules()
             for target, line, _ in imports(path) if target.startswith(("oz0.adapters", "oz0.renderers"))]
    assert wrong == []


def test_renderers_import_only_the_card_model_from_edge():
    wrong = [f"{path.relative_to(ROOT)}:{line}: {target}" for path in sorted((ROOT / "renderers").rglob("*.py"))
             for target, line, _ in imports(path)
             if target.startswith("oz0.edge") and target != "oz0.edge.cards.model"]
    assert wrong == []


@pytest.mark.parametrize("where, upward", [
    ("contracts/schema.py", "from oz0.edge.model.job import JobFailure"),
    ("model/agent.py", "    from oz0.edge.plugins.manifest import load_plugin  # hidden in a function"),
    ("mcp/kind.py", "from oz0.edge.runtime.budgets import budget_call"),
    ("results/qzx.py", "if TYPE_CHECKING:\n    from oz0.edge.cards.model import Card"),
])
def test_an_upward_import_is_found_wherever_it_hides(tmp_path, where, upward):
    root = tmp_path / "oz0"
    copy = root / "edge"
    for path in edge_modules():
        target = copy / path.relative_to(EDGE)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(path.read_text(encoding="utf-8"), encoding="utf-8")
    planted = copy / where
    body = f"def planted():\n{upward}\n" if upward.startswith("    ") else upward + "\n"
    planted.write_text(planted.read_text(encoding="utf-8") + "\n\n" + body, encoding="utf-8")
    found = upward_imports(root)
    graph = floor_graph(root)
    assert len(found) == 1 and where in found[0]
    with pytest.raises(CycleError):
        list(TopologicalSorter(graph).static_order())
