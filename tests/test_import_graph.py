"""The import graph of the four packages and the entry points: no cycles, every import pointing
down the layers (data/models -> algos -> eval -> experiments; inside cvl_eval, room by room).

Pants' visibility rules (`__dependencies_rules__`) refuse an upward import at build time; this
test also refuses cycles, which visibility rules cannot see, and prints the graph between
packages and between cvl_eval's rooms (``pytest -s``). Edges are every absolute import of
first-party code anywhere in a module (function-level and ``TYPE_CHECKING`` ones included).
"""

import ast
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("cvl_data", "cvl_models", "cvl_algos", "cvl_eval")
PACKAGE_DEPS = {
    "cvl_data": set(),
    "cvl_models": set(),
    "cvl_algos": {"cvl_data", "cvl_models"},
    "cvl_eval": {"cvl_data", "cvl_models", "cvl_algos"},
    "experiments": set(PACKAGES),
}
ROOM_DEPS = {
    "cvl_eval": set(),
    "errors": set(),
    "cli": {"errors"},
    "envs": set(),
    "runs": set(),
    "rollout": {"envs", "runs"},
    "datagen": {"envs", "runs", "rollout"},
    "training": {"envs", "runs", "rollout"},
    "analysis": {"envs", "runs"},
    "pipelines": {"envs", "runs", "rollout", "datagen", "training", "analysis"},
    "convert_args": set(),
    "console": {
        "cli",
        "convert_args",
        "envs",
        "runs",
        "rollout",
        "datagen",
        "training",
        "analysis",
        "pipelines",
    },
    "__main__": {"console"},
}
"""cvl_eval's rooms and the rooms each may import (besides itself, `errors` and `cvl_eval`)."""


def _modules() -> dict[str, Path]:
    files = {}
    for package in PACKAGES:
        folder = ROOT / "packages" / package.replace("_", "-") / package
        for path in folder.rglob("*.py"):
            parts = path.relative_to(folder.parent).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            files[name] = path
    for path in (ROOT / "experiments").glob("*.py"):
        files[f"experiments.{path.stem}"] = path
    return files


def _imports(path: Path, modules: dict[str, Path]) -> set[str]:
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [f"{node.module}.{alias.name}" for alias in node.names] + [node.module]
            names = [n for n in names if n in modules][:1] or [node.module]
        else:
            continue
        for name in names:
            while name and name not in modules:
                name = name.rpartition(".")[0]
            if name:
                out.add(name)
    return out


def import_graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(path, modules) - {name} for name, path in modules.items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on_stack, out = {}, {}, [], set(), []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for dep in graph[node]:
            if dep not in index:
                visit(dep)
                low[node] = min(low[node], low[dep])
            elif dep in on_stack:
                low[node] = min(low[node], index[dep])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return out


def _package(module: str) -> str:
    return module.split(".")[0]


def _room(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "cvl_eval"


def test_no_import_cycles():
    assert _cycles(import_graph()) == []


def test_packages_import_only_the_packages_below():
    edges = Counter(
        (_package(a), _package(b))
        for a, deps in import_graph().items()
        for b in deps
        if _package(a) != _package(b)
    )
    print("\npackage graph (importer -> imported: module-level imports)")
    for (a, b), n in sorted(edges.items()):
        print(f"  {a:<12} -> {b:<12} {n}")
    assert all(b in PACKAGE_DEPS[a] for a, b in edges), edges


def test_cvl_eval_rooms_import_only_the_rooms_below():
    graph = import_graph()
    edges = Counter(
        (_room(a), _room(b))
        for a, deps in graph.items()
        if _package(a) == "cvl_eval"
        for b in deps
        if _package(b) == "cvl_eval" and _room(a) != _room(b)
    )
    print("\ncvl_eval room graph (importer -> imported: module-level imports)")
    for (a, b), n in sorted(edges.items()):
        print(f"  {a:<10} -> {b:<10} {n}")
    assert set(ROOM_DEPS) >= {_room(m) for m in graph if _package(m) == "cvl_eval"}
    bad = [(a, b) for a, b in edges if b not in ROOM_DEPS[a] | {"errors", "cvl_eval"}]
    assert bad == [], bad
