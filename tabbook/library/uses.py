"""What a unit's code takes from the generated library: names, or why names cannot tell.

The unit side of :mod:`tabbook.library.reach`: its cells, as the kernel runs them, are read
once each (:func:`scan_cell`, cached: a ``%%tab all`` cell is shared by every framework), and
:func:`unit_uses` gathers the names they read off the library under any of the spellings the
books use (``from d2l import torch as d2l``, ``import d2l.torch as d2l``, ``from d2l.torch
import X``, ``import d2l.torch`` then ``d2l.torch.X``), or says why it cannot (the library as
a value, ``import *``, ``exec``, a magic that runs code the cell does not show).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

from tabbook.source.pycode import mask_magics

#: Names whose call can reach any definition by a name computed at run time.
REFLECTIVE = frozenset({"eval", "exec", "globals", "vars", "locals", "__import__"})
#: Magics that run code the cell does not show.
OPAQUE_MAGIC = re.compile(r"^\s*%{1,2}\s*(run|load|writefile|loadpy|macro|rerun|recall)\b")


def reflective(n: ast.Name, parents: Mapping[int, ast.AST]) -> bool:
    """Whether this use of a :data:`REFLECTIVE` builtin can read a name its code does not show.

    ``vars(obj)`` reads an object's attributes (``vars(d2l)`` is caught as the module used
    as a value); ``globals()[name] = value`` only binds (the lazy-import ``__getattr__``)."""
    call = parents.get(id(n))
    if not (isinstance(call, ast.Call) and call.func is n):
        return True
    if n.id == "vars" and call.args:
        return False
    target = parents.get(id(call))
    return not (n.id == "globals" and isinstance(target, ast.Subscript) and target.value is call
                and isinstance(target.ctx, ast.Store))


@dataclass(frozen=True)
class UnitUses:
    """The library names a unit's code reads, or why names cannot tell."""

    names: frozenset[str] = frozenset()
    unsure: str | None = None
    other_modules: frozenset[str] = frozenset()  # other generated modules it imports (keyed whole)
    imports: bool = True  # whether its code imports the library at all (else nothing of it can run)


@dataclass(frozen=True)
class CellScan:
    """What one cell's code does with names, read in one pass (cached: ``%%tab all`` cells are
    shared by every framework, and a large book has thousands of cells)."""

    imports: tuple[ast.Import | ast.ImportFrom, ...] = ()
    # (name, attr, next attr or None) for every ``name.attr`` read: ``d2l.torch.X`` → (d2l, torch, X)
    attributes: frozenset[tuple[str, str, str | None]] = frozenset()
    values: frozenset[str] = frozenset()  # names read otherwise than as ``name.attr``
    unsure: str | None = None  # a reflective builtin, import_module, a magic that runs hidden code
    magic_lines: tuple[str, ...] = ()
    parsed: bool = True


@lru_cache(maxsize=8192)
def scan_cell(source: str) -> CellScan:
    """One pass over a cell (magics commented out; their lines kept for :func:`unit_uses`)."""
    masked, rows = mask_magics(source)
    lines = source.split("\n")
    magic = tuple(lines[row - 1] for row in sorted(rows))
    for line in magic:
        if OPAQUE_MAGIC.match(line):
            return CellScan(unsure=f"runs code the cell does not show ({line.strip().split()[0]})",
                            magic_lines=magic)
    try:
        tree = ast.parse(masked)
    except SyntaxError:  # a cell that does not parse runs nothing (its SyntaxError is its output)
        return CellScan(magic_lines=magic, parsed=False)
    imports: list[ast.Import | ast.ImportFrom] = []
    attributes: set[tuple[str, str, str | None]] = set()
    values: set[str] = set()
    unsure: str | None = None
    consumed: set[int] = set()  # Name nodes read as ``name.attr``
    outer: dict[int, str] = {}  # id of an Attribute -> the attribute read off it (``.X`` of ``d2l.torch``)
    parents: dict[int, ast.AST] = {}
    stack: list[ast.AST] = [tree]
    while stack:
        n = stack.pop()
        if isinstance(n, ast.Attribute):
            if isinstance(n.value, ast.Attribute):
                outer[id(n.value)] = n.attr
            elif isinstance(n.value, ast.Name) and isinstance(n.value.ctx, ast.Load):
                attributes.add((n.value.id, n.attr, outer.get(id(n))))
                consumed.add(id(n.value))
            if n.attr in ("import_module", "reload"):
                unsure = unsure or f"imports modules by name ({n.attr})"
        elif isinstance(n, ast.Name):
            if isinstance(n.ctx, ast.Load) and id(n) not in consumed:
                values.add(n.id)
                if n.id in REFLECTIVE and reflective(n, parents):
                    unsure = unsure or f"uses {n.id}()"
            continue
        elif isinstance(n, ast.Import | ast.ImportFrom):
            imports.append(n)
            continue
        for child in ast.iter_child_nodes(n):
            parents[id(child)] = n
            stack.append(child)
    return CellScan(tuple(imports), frozenset(attributes), frozenset(values), unsure, magic)


def _library_bindings(imports: Iterable[ast.Import | ast.ImportFrom], package: str, module: str
                      ) -> tuple[set[str], set[str], set[str], set[str], str | None]:
    """From a cell's imports: names bound to the module, names bound to the package, names
    imported from the module, other modules of the package imported, and a star import."""
    aliases: set[str] = set()
    packages: set[str] = set()
    direct: set[str] = set()
    others: set[str] = set()
    star: str | None = None
    for n in imports:
        if isinstance(n, ast.Import):
            for a in n.names:
                parts = a.name.split(".")
                if parts[0] != package:
                    continue
                if len(parts) == 1:
                    packages.add(a.asname or package)
                elif a.asname and parts[1] == module:
                    aliases.add(a.asname)
                elif a.asname:
                    others.add(parts[1])
                else:
                    packages.add(package)
                    if parts[1] != module:
                        others.add(parts[1])
        elif n.module and n.level == 0:
            parts = n.module.split(".")
            if parts[0] != package:
                continue
            if len(parts) == 1:  # from d2l import torch as d2l
                for a in n.names:
                    if a.name == "*":
                        star = f"from {package} import *"
                    elif a.name == module:
                        aliases.add(a.asname or a.name)
                    else:
                        others.add(a.name)
            elif parts[1] == module:  # from d2l.torch import X
                for a in n.names:
                    if a.name == "*":
                        star = f"from {n.module} import *"
                    else:
                        direct.add(a.name)
            else:
                others.add(parts[1])
    return aliases, packages, direct, others, star


def unit_uses(cells: Sequence[str], package: str, module: str) -> UnitUses:
    """The names a unit (its cells as the kernel runs them) takes from ``package.module``.

    The package's own name counts as an alias of the module in every unit (the book's
    ``from d2l import torch as d2l``), so a unit that reads ``d2l.X`` without importing
    it the usual way is still seen. Cells are parsed with their magics commented out; a
    magic line's words are read too (``%timeit d2l.benchmark(f)`` runs ``benchmark``)."""
    scans = [scan_cell(source) for source in cells]
    for sc in scans:
        if sc.unsure and sc.unsure.startswith("runs code"):
            return UnitUses(unsure=sc.unsure)
    aliases, packages, direct, others, star = _library_bindings(
        [imp for sc in scans for imp in sc.imports], package, module)
    if star:
        return UnitUses(unsure=star)
    imported = bool(aliases or packages or direct or others)
    aliases.add(package)
    holders = aliases | packages  # a name whose attributes are the module's names (or its package's)
    names = set(direct)
    unsure = next((sc.unsure for sc in scans if sc.unsure), None)
    for sc in scans:
        used_as_value = holders & sc.values
        if used_as_value:
            unsure = unsure or f"uses the library {min(used_as_value)} as a value"
        for name, attr, then in sc.attributes:
            if name not in holders:
                continue
            names.add(attr)
            if attr == module:  # d2l.torch.X after ``import d2l.torch``
                if then is None:
                    unsure = unsure or f"uses {name}.{module} as a value"
                else:
                    names.add(then)
    word = re.compile(r"[A-Za-z_]\w*(?:\s*\.\s*[A-Za-z_]\w*)?")
    for line in (line for sc in scans for line in sc.magic_lines):
        for m in word.finditer(line):
            head, _, attr = (x.strip() for x in m.group(0).partition("."))
            if head in holders:
                if attr:
                    names.add(attr)
                else:
                    unsure = unsure or f"uses the library {head} in a magic line"
            elif head in direct:
                names.add(head)
    return UnitUses(frozenset(names), unsure, frozenset(others), imported or bool(names) or bool(unsure))
