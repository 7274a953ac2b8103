"""The import header of a generated ``d2l/<framework>.py``, derived from what the saved code needs.

Authors never write the library's imports: every top-level ``import`` in the
framework's cells (``#@save`` cells first, then the sections' other cells, in
table-of-contents order) is a *candidate*, and only those whose bound name the
saved code uses, or that the book reaches as ``d2l.NAME``, are kept, each
pruned to the names used (so the header never trips ruff's F401). The first
candidate that binds a name wins.

Lazy plotting imports: ``import d2l.torch`` must cost little beyond ``import
torch``, and ``pip install d2l`` brings numpy only, with matplotlib behind the
``plot`` extra. So imports from :data:`LAZY_ROOTS` (matplotlib,
matplotlib_inline, IPython) never reach the header. Instead

* every saved function (or method) that uses such a name gets the import as
  the first statement of its body — it runs when the plot is drawn, not when
  the library is imported;
* a module-level ``__getattr__`` (PEP 562) imports it on first attribute
  access, so book code that writes ``d2l.plt.show()`` keeps working;
* a use at definition time (a default value, a decorator, a class attribute,
  a module-level statement) cannot be deferred and is reported as an error.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Callable
from dataclasses import dataclass

LAZY_ROOTS = frozenset({"matplotlib", "matplotlib_inline", "IPython"})
LIBRARY_PACKAGE = "d2l"


@dataclass(frozen=True)
class Binding:
    """One name bound by one import statement of the book."""

    name: str  # the name bound in the module namespace
    module: str  # ``import a.b`` → "a.b"; ``from a import b`` → "a"
    attr: str | None  # ``from a import b`` → "b"; plain imports → None
    asname: str | None
    path: str
    line: int
    saved: bool  # found in a #@save cell (preferred over other cells)

    @property
    def lazy(self) -> bool:
        return self.module.split(".")[0] in LAZY_ROOTS

    @property
    def stdlib(self) -> bool:
        return self.module.split(".")[0] in sys.stdlib_module_names

    def statement(self) -> str:
        """The minimal statement binding just this name."""
        alias = f" as {self.asname}" if self.asname and self.asname != (self.attr or self.module) else ""
        if self.attr is None:
            return f"import {self.module}{alias}"
        return f"from {self.module} import {self.attr}{alias}"


def bindings(tree: ast.Module, path: str, line_of: Callable[[int], int], saved: bool) -> list[Binding]:
    """Candidate bindings from a cell's top-level imports. ``line_of(row)`` → Markdown line."""
    out: list[Binding] = []
    for stmt in tree.body:
        if isinstance(stmt, ast.Import):
            for a in stmt.names:
                if a.name.split(".")[0] == LIBRARY_PACKAGE:
                    continue
                name = a.asname or a.name.split(".")[0]
                out.append(Binding(name, a.name, None, a.asname, path, line_of(stmt.lineno), saved))
        elif isinstance(stmt, ast.ImportFrom):
            module = stmt.module or ""
            if stmt.level or not module or module == "__future__":
                continue
            if module.split(".")[0] == LIBRARY_PACKAGE:
                continue  # ``from d2l import torch as d2l``: the library is the module itself
            for a in stmt.names:
                if a.name == "*":
                    continue
                out.append(Binding(a.asname or a.name, module, a.name, a.asname, path,
                                   line_of(stmt.lineno), saved))
    return out


def choose(candidates: list[Binding], needed: set[str]) -> dict[str, Binding]:
    """For each needed name, the first candidate binding it (saved cells first)."""
    chosen: dict[str, Binding] = {}
    ordered = [b for b in candidates if b.saved] + [b for b in candidates if not b.saved]
    for b in ordered:
        if b.name in needed and b.name not in chosen:
            chosen[b.name] = b
    return chosen


def _member_key(name: str) -> tuple[int, str, str]:
    """isort's order-by-type: CONSTANTS, then Classes, then everything else."""
    kind = 0 if name.isupper() and len(name) > 1 else 1 if name[:1].isupper() else 2
    return kind, name.lower(), name


def import_block(group: list[Binding], line_length: int = 110) -> list[str]:
    """One isort section (as ruff's ``I`` rules want it): ``import`` lines, then ``from`` lines.

    Names imported ``as`` something get a ``from`` line of their own, the
    others of one module share one (wrapped in parentheses when too long).
    """
    plain = sorted({b.statement() for b in group if b.attr is None},
                   key=lambda st: (st.split()[1].lower(), st))
    froms: list[tuple[tuple[str, tuple[int, str, str]], str]] = []
    shared: dict[str, set[str]] = {}
    for b in group:
        if b.attr is None:
            continue
        if b.asname and b.asname != b.attr:
            froms.append(((b.module.lower(), _member_key(b.attr)), b.statement()))
        else:
            shared.setdefault(b.module, set()).add(b.attr)
    for module, names in shared.items():
        members = sorted(names, key=_member_key)
        line = f"from {module} import {', '.join(members)}"
        if len(line) > line_length:
            line = "\n".join([f"from {module} import ("] + [f"    {m}," for m in members] + [")"])
        froms.append(((module.lower(), _member_key(members[0])), line))
    out = plain + [line for _, line in sorted(set(froms))]
    return [x for line in out for x in line.split("\n")]


def header_lines(chosen: dict[str, Binding]) -> list[str]:
    """Eager imports: stdlib section, then third-party, separated by a blank line."""
    out: list[str] = []
    for stdlib in (True, False):
        block = import_block([b for b in chosen.values() if not b.lazy and b.stdlib == stdlib])
        if block and out:
            out.append("")
        out.extend(block)
    return out


def getattr_lines(chosen: dict[str, Binding]) -> list[str]:
    """``_LAZY`` table and the PEP 562 ``__getattr__`` that serves ``d2l.plt`` and friends."""
    lazy = sorted((b for b in chosen.values() if b.lazy), key=lambda b: b.name)
    if not lazy:
        return []
    out = [
        "# Plotting imports are deferred (see tabbook.library.imports): importing this module never",
        "# imports matplotlib or IPython; d2l.plt and friends are imported on first access.",
        "_LAZY = {",
    ]
    out += [f"    {b.name!r}: ({b.module!r}, {b.attr!r}),  # {b.statement()}" for b in lazy]
    out += [
        "}",
        "",
        "",
        "def __getattr__(name):",
        '    """Import a deferred plotting module on first use (PEP 562)."""',
        "    if name not in _LAZY:",
        '        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")',
        "    import importlib",
        "",
        "    module, attr = _LAZY[name]",
        "    value = importlib.import_module(module)",
        "    if attr is not None:",
        "        try:",
        "            value = getattr(value, attr)",
        "        except AttributeError:",
        '            value = importlib.import_module(f"{module}.{attr}")',
        '    elif "." in module and name == module.split(".")[0]:',
        "        value = importlib.import_module(name)  # ``import a.b`` binds ``a``",
        "    globals()[name] = value",
        "    return value",
    ]
    return out


def deftime_nodes(node: ast.stmt) -> list[ast.AST]:
    """The parts of a top-level statement that run when the module is imported."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        a = node.args
        parts: list[ast.AST] = [*node.decorator_list, *a.defaults, *(d for d in a.kw_defaults if d)]
        for arg in [*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg]:
            if arg is not None and arg.annotation is not None:
                parts.append(arg.annotation)
        if node.returns is not None:
            parts.append(node.returns)
        return parts
    if isinstance(node, ast.ClassDef):
        parts = [*node.decorator_list, *node.bases, *node.keywords]
        for stmt in node.body:
            parts.extend(deftime_nodes(stmt))
        return parts
    return [node]


def names_loaded(nodes: list[ast.AST]) -> dict[str, int]:
    """Loaded names → first row where they are used."""
    seen: dict[str, int] = {}
    for root in nodes:
        for n in ast.walk(root):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
                row = getattr(n, "lineno", 0)
                if n.id not in seen or row < seen[n.id]:
                    seen[n.id] = row
    return seen


def body_uses(node: ast.FunctionDef | ast.AsyncFunctionDef, names: set[str]) -> list[str]:
    """Which of ``names`` the function's body (including nested code) reads, sorted."""
    used = names_loaded(list(node.body))
    return sorted(n for n in names if n in used)


_DUNDERS = frozenset({
    "__name__", "__file__", "__doc__", "__spec__", "__loader__", "__package__", "__builtins__",
    "__path__", "__annotations__", "__dict__", "__class__", "__qualname__", "__module__",
})


def undefined_names(tree: ast.Module) -> list[tuple[str, int]]:
    """Names read somewhere but bound nowhere in the module (nor builtins), with their rows.

    Deliberately coarse — a name bound anywhere counts as bound everywhere — so
    it never cries wolf; it catches what matters here: ``d2l.X`` rewritten to
    ``X`` when no section saved ``X``, or a name whose import no cell has.
    """
    import builtins

    bound: set[str] = set(dir(builtins)) | _DUNDERS
    for n in ast.walk(tree):
        if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load):
            bound.add(n.id)
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(n.name)
        elif isinstance(n, ast.arg):
            bound.add(n.arg)
        elif isinstance(n, ast.alias):
            bound.add(n.asname or n.name.split(".")[0])
        elif isinstance(n, ast.ExceptHandler) and n.name:
            bound.add(n.name)
        elif isinstance(n, (ast.Global, ast.Nonlocal)):
            bound.update(n.names)
        elif isinstance(n, (ast.MatchAs, ast.MatchStar)) and n.name:
            bound.add(n.name)
        elif isinstance(n, ast.MatchMapping) and n.rest:
            bound.add(n.rest)
    return [
        (n.id, n.lineno) for n in ast.walk(tree)
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id not in bound
    ]
