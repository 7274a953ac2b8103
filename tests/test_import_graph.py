"""The builder's modules import only down the pipeline, and no two import each other.

The order (ARCHITECTURE.md, "Layers"): errors (problems, errors) → config (settings, addresses, sections, schema, config) → files (files, lifetime, nbjson) → source → book → library →
check → execute → render → build → tools (warm, serve, new, editions) → cli (cli, arguments). A module may import modules of
its own layer or of a layer before it, never one after it (:data:`ALLOWED_UPWARD` names the
exceptions, each with its reason, and is empty today), and the module graph has no cycle. The
graph is read with ``ast`` from every ``import`` in ``tabbook/``, function-level ones and
``TYPE_CHECKING`` ones included: a deferred import is still a dependency.

``python tests/test_import_graph.py`` prints the graph's layers and any violation.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterable
from functools import cache
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "tabbook"

#: The pipeline's layers, first to last; a module belongs to the first whose prefix it has.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("tabbook.problems", "tabbook.errors"),
    ("tabbook.settings", "tabbook.addresses", "tabbook.sections", "tabbook.schema", "tabbook.config"),
    ("tabbook.files", "tabbook.lifetime", "tabbook.nbjson"),
    ("tabbook.source",),
    ("tabbook.book",),
    ("tabbook.library",),
    ("tabbook.check",),
    ("tabbook.execute",),
    ("tabbook.render",),
    ("tabbook.build",),
    ("tabbook.warm", "tabbook.serve", "tabbook.new", "tabbook.editions"),
    ("tabbook.cli", "tabbook.arguments", "tabbook.__main__", "tabbook.api"),
)

#: (importer, imported) pairs allowed to run up the pipeline, each written down in
#: ARCHITECTURE.md with its reason. None today.
ALLOWED_UPWARD: frozenset[tuple[str, str]] = frozenset()


def module_names(package: Path) -> dict[str, Path]:
    """Every module of the package by dotted name (a package by its ``__init__``)."""
    out = {}
    for path in sorted(package.rglob("*.py")):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _imported(node: ast.AST, importer: str, is_package: bool, known: set[str]) -> Iterable[str]:
    """The tabbook modules one import statement names (``from a import b``: ``a.b`` when that
    is a module, else ``a``)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if not isinstance(node, ast.ImportFrom):
        return []
    if node.level:
        base = importer.split(".") if is_package else importer.split(".")[:-1]
        base = base[:len(base) - (node.level - 1)]
        module = ".".join([*base, *([node.module] if node.module else [])])
    else:
        module = node.module or ""
    return [f"{module}.{a.name}" if f"{module}.{a.name}" in known else module for a in node.names]


@cache
def import_graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    """Module → the tabbook modules it imports. Importing ``a.b.c`` also runs the packages
    ``a.b``'s ``__init__``: an edge to each such package that is not the importer's own."""
    modules = module_names(package)
    known = set(modules)
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        is_package = path.name == "__init__.py"
        own = {".".join(name.split(".")[:i]) for i in range(1, name.count(".") + 2)}
        edges: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            for target in _imported(node, name, is_package, known):
                if not target.startswith(package.name):
                    continue
                parts = target.split(".")
                for i in range(1, len(parts) + 1):
                    prefix = ".".join(parts[:i])
                    if prefix in known and prefix not in own:
                        edges.add(prefix)
        graph[name] = edges
    return graph


def layer_of(module: str, layers: tuple[tuple[str, ...], ...] = LAYERS) -> int | None:
    """The index of the module's layer; -1 for the root package (it imports nothing); None
    for a module no layer names (itself a failure: every module has a place)."""
    if "." not in module:
        return -1
    for index, prefixes in enumerate(layers):
        if any(module == p or module.startswith(p + ".") for p in prefixes):
            return index
    return None


def upward_imports(graph: dict[str, set[str]], layers: tuple[tuple[str, ...], ...] = LAYERS,
                   allowed: frozenset[tuple[str, str]] = frozenset()) -> list[tuple[str, str]]:
    """The imports that run up the pipeline (to a later layer), less the allowed ones."""
    bad = []
    for importer, targets in sorted(graph.items()):
        for target in sorted(targets):
            lo, hi = layer_of(importer, layers), layer_of(target, layers)
            if lo is not None and hi is not None and hi > lo and (importer, target) not in allowed:
                bad.append((importer, target))
    return bad


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The graph's import loops: its strongly connected components of more than one module,
    and modules that import themselves (Tarjan's algorithm, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1 or node in graph.get(node, ()):
                    found.append(sorted(component))
    return found


# ---- the checks ------------------------------------------------------------------------------

def test_every_module_has_a_layer() -> None:
    assert [m for m in import_graph() if layer_of(m) is None] == []


def test_no_import_loop() -> None:
    assert cycles(import_graph()) == []


def test_imports_go_only_down_the_pipeline() -> None:
    assert upward_imports(import_graph(), allowed=ALLOWED_UPWARD) == []


def test_the_allowed_exceptions_exist_and_are_written_down() -> None:
    """An allowed upward import that no longer exists is removed from the list; one that
    exists is named in ARCHITECTURE.md."""
    graph = import_graph()
    architecture = (PACKAGE.parent / "ARCHITECTURE.md").read_text(encoding="utf-8")
    for importer, target in ALLOWED_UPWARD:
        assert target in graph.get(importer, set()), (importer, target)
        assert f"`{importer}` → `{target}`" in architecture, (importer, target)


def test_the_checks_catch_an_upward_import_and_a_loop() -> None:
    """The functions above on a made-up graph: they are what would fail if someone added an
    upward import or a loop to tabbook/."""
    graph = {
        "tabbook.book": {"tabbook.source.read", "tabbook.execute.store"},  # book → execute: up
        "tabbook.source.read": {"tabbook.errors"},
        "tabbook.execute.store": {"tabbook.source.read"},
        "tabbook.execute.plan": {"tabbook.execute.cluster"},  # a loop inside one layer
        "tabbook.execute.cluster": {"tabbook.execute.plan"},
        "tabbook.errors": set(),
    }
    assert upward_imports(graph) == [("tabbook.book", "tabbook.execute.store")]
    assert upward_imports(graph, allowed=frozenset({("tabbook.book", "tabbook.execute.store")})) == []
    assert cycles(graph) == [["tabbook.execute.cluster", "tabbook.execute.plan"]]
    assert cycles({"tabbook.cli": {"tabbook.cli"}}) == [["tabbook.cli"]]
    assert cycles({k: v - {"tabbook.execute.plan"} for k, v in graph.items()}) == []


def test_the_graph_reader_sees_every_kind_of_import(tmp_path: Path) -> None:
    """Relative, deferred (inside a function), ``from package import module`` and
    ``TYPE_CHECKING`` imports are all edges; importing a submodule runs its package."""
    package = tmp_path / "tabbook"
    (package / "render" / "ext").mkdir(parents=True)
    for rel in ("__init__.py", "errors.py", "render/__init__.py", "render/ext/__init__.py",
                "render/ext/gate.py", "render/site.py"):
        (package / rel).write_text("")
    (package / "config.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                       "    from tabbook.render import site\n")
    (package / "build.py").write_text("def f():\n    from .render.ext import gate\n")
    (package / "render" / "sphinx.py").write_text("from ..errors import BookError\n")
    graph = import_graph(package)
    assert graph["tabbook.config"] == {"tabbook.render", "tabbook.render.site"}
    assert graph["tabbook.build"] == {"tabbook.render", "tabbook.render.ext", "tabbook.render.ext.gate"}
    assert graph["tabbook.render.sphinx"] == {"tabbook.errors"}
    assert upward_imports(graph) == [("tabbook.config", "tabbook.render"), ("tabbook.config", "tabbook.render.site")]


if __name__ == "__main__":
    g = import_graph()
    for i, prefixes in enumerate(LAYERS):
        members = sorted(m for m in g if layer_of(m) == i)
        print(f"{i:2d} {', '.join(p.removeprefix('tabbook.') for p in prefixes)}: {len(members)} modules")
    problems = [f"loop: {' ↔ '.join(c)}" for c in cycles(g)]
    problems += [f"upward: {a} → {b}" for a, b in upward_imports(g, allowed=ALLOWED_UPWARD)]
    print("\n".join(problems) or "no loop, no upward import")
    sys.exit(1 if problems else 0)
