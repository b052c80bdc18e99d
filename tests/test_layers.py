"""The package's dependency order: layers import only downward, and no module imports itself
back through others. Imports inside functions count, so a cycle cannot hide in one."""

from __future__ import annotations

import ast
from functools import lru_cache
from pathlib import Path

import llm_cost

PACKAGE = Path(llm_cost.__file__).parent

#: Layers from the bottom up; a module may import its own layer or any layer below.
LAYERS = ["core", "specs", "model", "workload", "perf", "simulate", "analyses", "api", "report", "cli"]


def _module_name(path: Path) -> str:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(rel.parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> set[str]:
    """Every llm_cost module ``path`` imports, anywhere in the file."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("llm_cost"):
            found.add(node.module)
            found.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("llm_cost"))
        assert not (isinstance(node, ast.ImportFrom) and node.level), f"{path}: relative import"
    return found


@lru_cache(maxsize=1)
def _graph() -> dict[str, set[str]]:
    files = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    return {name: {m for m in _imports(path) if m in files and m != name} for name, path in files.items()}


def _layer(module: str) -> int | None:
    parts = module.split(".")
    return LAYERS.index(parts[1]) if len(parts) > 1 and parts[1] in LAYERS else None


def test_every_module_belongs_to_a_layer():
    orphans = [m for m in _graph() if m != "llm_cost" and _layer(m) is None]
    assert orphans == []


def test_imports_point_down_the_layers():
    upward = [
        (m, dep)
        for m, deps in _graph().items()
        for dep in deps
        if _layer(m) is not None and _layer(dep) is not None and _layer(dep) > _layer(m)
    ]
    assert upward == []


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every cycle a depth-first search meets (a package importing its own submodules is none)."""
    state: dict[str, int] = {}
    cycles: list[list[str]] = []

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for dep in sorted(graph[node]):
            if dep.startswith(node + "."):
                continue
            if state.get(dep) == 1:
                cycles.append(path[path.index(dep) :] + [dep])
            elif dep not in state:
                visit(dep, path + [dep])
        state[node] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])
    return cycles


def test_no_import_cycle():
    assert find_cycles(_graph()) == []


def test_the_checker_sees_a_planted_cycle():
    """The search is not vacuous: modules importing each other, directly or in a ring, are found."""
    assert find_cycles({"a": {"b"}, "b": {"a"}}) == [["a", "b", "a"]]
    assert find_cycles({"x": {"y"}, "y": {"z"}, "z": {"x"}, "w": {"x"}}) == [["x", "y", "z", "x"]]
    assert find_cycles({"p": {"p.q"}, "p.q": set()}) == []
