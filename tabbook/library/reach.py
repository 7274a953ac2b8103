"""Which definitions of a generated ``d2l/<module>.py`` a unit's code can reach (issue 32).

A unit's freeze key used to hash the whole generated library of its framework, so editing any
``#@save`` block made every unit of that framework stale. Here the key covers only what the
unit can run: the names its code takes from the library (``d2l.X``, ``from d2l.torch import
X``, an alias of ``[library-<tab>]``), closed over what those definitions use in turn (calls,
base classes, decorators, defaults, the methods ``add_to_class`` merged into a class in any
section, module-level state they read), plus the *header*: what runs for every unit when the
module is imported (imports, ``d2l = sys.modules[__name__]``, module-level statements,
``__getattr__``, and the definition-time code of a definition when it is more than names and
literals).

Sound first: a name the closure reaches is hashed with every statement that binds it, and a
name no statement binds (a builtin, a local, a framework attribute) is hashed as *absent*, so
saving a definition of that name later changes the key. Whenever the code can reach the
library in a way names do not show (``getattr(d2l, name)``, ``d2l`` passed as a value,
``from d2l.torch import *``, ``exec``/``eval``, ``globals()``, ``%run``), the unit keys on the
whole library and :attr:`Reach.whole` says why.

Definitions are compared by ``ast.dump`` (no positions), so comments, blank lines and line
moves change no key. Everything here is a pure function of source text: no file is read.
"""

from __future__ import annotations

import ast
import hashlib
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from tabbook.library.imports import deftime_nodes
from tabbook.library.pysource import mask_magics

#: The version of the rules below: a key's library part computed under other rules is never
#: reused as it is (the plan reuses a stored library part only for the same code, library and rules).
RULES = "1"
#: Names whose call can reach any definition by a name computed at run time.
REFLECTIVE = frozenset({"eval", "exec", "globals", "vars", "locals", "__import__"})
#: Magics that run code the cell does not show.
OPAQUE_MAGIC = re.compile(r"^\s*%{1,2}\s*(run|load|writefile|loadpy|macro|rerun|recall)\b")
#: Special module-level functions Python calls by itself: part of every unit's header.
SPECIAL_DEFS = frozenset({"__getattr__", "__dir__"})
#: Methods Python calls while *other* classes are defined.
CLASS_HOOKS = frozenset({"__init_subclass__", "__set_name__", "__prepare__"})
#: The pseudo-name under which :attr:`Reach.names` records the header's hash.
HEADER = "(header)"
#: The hash recorded for a name that no statement of the module binds.
ABSENT = "absent"


def dump(node: ast.AST) -> str:
    """A statement's normalized text: its syntax tree without positions (comments are gone)."""
    return ast.dump(node, annotate_fields=False)


def _hash(*parts: str) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()


# -- what a definition costs at import time ---------------------------------------------------

def _chain_root(node: ast.expr) -> str | None:
    """``a`` for ``a.b.c``; None when the expression is not a dotted name."""
    while isinstance(node, ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _inert(node: ast.AST | None, library_names: set[str]) -> bool:
    """Whether evaluating ``node`` while the module is imported can affect no other code.

    Literals, dotted names, containers and arithmetic of those, lambdas with such defaults,
    and calls of names the module does not define (a framework decorator such as
    ``jax.jit``, a default such as ``torch.device('cpu')``). The assumption, stated in
    ARCHITECTURE.md: framework calls made while a function is defined change no state that
    other code reads. A call of the library's own code is not inert: it runs for every unit.
    """
    if node is None:
        return True
    if isinstance(node, ast.Constant | ast.Name):
        return True
    if isinstance(node, ast.Attribute):
        return _inert(node.value, library_names)
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return all(_inert(e, library_names) for e in node.elts)
    if isinstance(node, ast.Starred):
        return _inert(node.value, library_names)
    if isinstance(node, ast.Dict):
        return all(_inert(k, library_names) for k in node.keys) and all(_inert(v, library_names) for v in node.values)
    if isinstance(node, ast.UnaryOp):
        return _inert(node.operand, library_names)
    if isinstance(node, ast.BinOp):
        return _inert(node.left, library_names) and _inert(node.right, library_names)
    if isinstance(node, ast.BoolOp):
        return all(_inert(v, library_names) for v in node.values)
    if isinstance(node, ast.Compare):
        return _inert(node.left, library_names) and all(_inert(c, library_names) for c in node.comparators)
    if isinstance(node, ast.Subscript):
        return _inert(node.value, library_names) and _inert(node.slice, library_names)
    if isinstance(node, ast.Slice):
        return all(_inert(p, library_names) for p in (node.lower, node.upper, node.step))
    if isinstance(node, ast.Lambda):
        return _args_inert(node.args, library_names)
    if isinstance(node, ast.Call):
        root = _chain_root(node.func)
        return (root is not None and root not in library_names and _inert(node.func, library_names)
                and all(_inert(a, library_names) for a in node.args)
                and all(_inert(k.value, library_names) for k in node.keywords))
    return False


def _args_inert(args: ast.arguments, library_names: set[str]) -> bool:
    defaults = [*args.defaults, *(d for d in args.kw_defaults if d is not None)]
    annotations = [a.annotation for a in (*args.posonlyargs, *args.args, *args.kwonlyargs,
                                          *(x for x in (args.vararg, args.kwarg) if x)) if a.annotation]
    return all(_inert(d, library_names) for d in [*defaults, *annotations])


def _def_inert(node: ast.stmt, library_names: set[str]) -> bool:
    """Whether defining ``node`` (a def or class statement) runs nothing but inert expressions."""
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        return (_args_inert(node.args, library_names) and _inert(node.returns, library_names)
                and all(_inert(d, library_names) for d in node.decorator_list))
    if isinstance(node, ast.ClassDef):
        if not all(_inert(x, library_names) for x in [*node.bases, *(k.value for k in node.keywords),
                                                       *node.decorator_list]):
            return False
        return all(_member_inert(m, library_names) for m in node.body)
    return False


def _member_inert(node: ast.stmt, library_names: set[str]) -> bool:
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return _def_inert(node, library_names)
    if isinstance(node, ast.Pass):
        return True
    if isinstance(node, ast.Expr):
        return isinstance(node.value, ast.Constant)
    if isinstance(node, ast.Assign):
        return all(isinstance(t, ast.Name) for t in node.targets) and _inert(node.value, library_names)
    if isinstance(node, ast.AnnAssign):
        return (isinstance(node.target, ast.Name) and _inert(node.annotation, library_names)
                and _inert(node.value, library_names))
    return False


# -- the module, cut into statements ----------------------------------------------------------

@dataclass(frozen=True)
class Statement:
    """One top-level statement of the module: what it binds, what it reads, what it is."""

    dump: str
    binds: frozenset[str]
    uses: frozenset[str]
    header: bool  # runs for every unit (see the module's docstring)
    unsure: str | None  # why names cannot say what it reaches, when they cannot


@dataclass(frozen=True)
class LibraryModule:
    """A generated module analysed once: its statements, by name and header."""

    statements: tuple[Statement, ...]
    by_name: Mapping[str, tuple[int, ...]]  # name -> indexes of the statements binding it
    header: tuple[int, ...]
    whole: str  # hash of the whole normalized module
    broken: str | None = None  # why it could not be analysed (then every unit keys on ``whole``)


def _self_names(tree: ast.Module, package: str) -> set[str]:
    """Names bound to the module itself: ``d2l = sys.modules[__name__]`` (and the package name)."""
    names = {package}
    for stmt in tree.body:
        if (isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Subscript)
                and ast.unparse(stmt.value).replace(" ", "") == "sys.modules[__name__]"):
            names |= {t.id for t in stmt.targets if isinstance(t, ast.Name)}
    return names


def _reflective(n: ast.Name, parents: Mapping[int, ast.AST]) -> bool:
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


def _reads(nodes: Iterable[ast.AST], self_names: set[str]) -> tuple[set[str], str | None]:
    """Every name read (anywhere, locals included: more names is only less precise) and
    ``d2l.X`` through a self name; and why names cannot tell, if a construct hides a name."""
    uses: set[str] = set()
    unsure: str | None = None
    for root in nodes:
        parents: dict[int, ast.AST] = {}
        for n in ast.walk(root):
            for child in ast.iter_child_nodes(n):
                parents[id(child)] = n
        for n in ast.walk(root):
            if isinstance(n, ast.Name):
                uses.add(n.id)
                if n.id in REFLECTIVE and isinstance(n.ctx, ast.Load) and _reflective(n, parents):
                    unsure = unsure or f"uses {n.id}()"
                if n.id in self_names and isinstance(n.ctx, ast.Load):
                    parent = parents.get(id(n))
                    if isinstance(parent, ast.Attribute) and parent.value is n:
                        uses.add(parent.attr)
                    else:
                        unsure = unsure or f"uses the module {n.id} as a value"
            elif isinstance(n, ast.Global | ast.Nonlocal):
                uses.update(n.names)
    return uses, unsure


def _library_names(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for stmt in tree.body:
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(stmt.name)
        elif isinstance(stmt, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            names |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    return names


def _mutated(target: ast.expr, self_names: set[str], library_names: set[str]) -> str | None:
    """``N`` for a store into the library's own state: ``N[k] = …``, ``d2l.N[k] = …``, ``N.a = …``."""
    if not isinstance(target, ast.Subscript | ast.Attribute):
        return None
    if isinstance(target, ast.Subscript) and not _inert(target.slice, library_names):
        return None
    inner = target.value
    if isinstance(inner, ast.Attribute) and isinstance(inner.value, ast.Name) and inner.value.id in self_names:
        return inner.attr
    if isinstance(inner, ast.Name) and inner.id in library_names and inner.id not in self_names:
        return inner.id
    return None


def _eager_parts(stmt: ast.stmt, library_names: set[str]) -> list[ast.AST]:
    """The parts of a definition that run at import time and are not inert: a default that
    calls the library, a class attribute computed by a call. Only these run for every unit
    (a base class named, a literal default, do nothing that another unit could see)."""
    out: list[ast.AST] = []
    for part in deftime_nodes(stmt):
        value = part.value if isinstance(part, ast.keyword) else part
        if isinstance(value, ast.stmt):
            if not _member_inert(value, library_names):
                out.append(value)
        elif not _inert(value, library_names):
            out.append(value)
    return out


def _statements(stmt: ast.stmt, self_names: set[str], library_names: set[str]) -> list[Statement]:
    """One top-level statement as :class:`Statement` records: what it binds and reads; and, for a
    definition whose definition-time code is more than names and literals, that code as a
    header record of its own (it runs for every unit; the body only for those that reach it)."""
    uses, unsure = _reads([stmt], self_names)
    binds: set[str] = set()
    header = False
    extra: list[Statement] = []
    if isinstance(stmt, ast.Import | ast.ImportFrom):
        header = True
        binds = {a.asname or a.name.split(".")[0] for a in stmt.names if a.name != "*"}
    elif isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        binds = {stmt.name}
        # A class whose own code runs when another class is defined (a metaclass, hooks that
        # Python calls on subclassing) runs for every unit: the whole statement is header.
        hooks = isinstance(stmt, ast.ClassDef) and (bool(stmt.keywords) or any(
            isinstance(m, ast.FunctionDef) and m.name in CLASS_HOOKS for m in stmt.body))
        header = stmt.name in SPECIAL_DEFS or hooks
        if not header and not _def_inert(stmt, library_names):
            parts = _eager_parts(stmt, library_names)
            deftime_uses, deftime_unsure = _reads(parts, self_names)
            extra.append(Statement("\n".join(dump(p) for p in parts), frozenset(), frozenset(deftime_uses),
                                   True, deftime_unsure))
    elif isinstance(stmt, ast.Assign | ast.AnnAssign | ast.AugAssign):
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        value_inert = stmt.value is None or _inert(stmt.value, library_names)
        mutated = [_mutated(t, self_names, library_names) for t in targets]
        if all(isinstance(t, ast.Name) for t in targets) and not isinstance(stmt, ast.AugAssign):
            binds = {t.id for t in targets if isinstance(t, ast.Name)}
            if binds & self_names:  # ``d2l = sys.modules[__name__]``: how the module reaches itself
                header, unsure = True, None
            else:
                header = not value_inert
        elif all(mutated) and value_inert:  # d2l.DATA_HUB['x'] = (...): part of what DATA_HUB is
            binds = {m for m in mutated if m}
        else:
            header = True
            binds = {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    else:  # a docstring, an if/try/for at module level, a call: runs at import, for every unit
        header = True
        binds = {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    return [Statement(dump(stmt), frozenset(binds), frozenset(uses), header, unsure), *extra]


@lru_cache(maxsize=16)
def analyse_library(source: str, package: str = "d2l") -> LibraryModule:
    """Cut a generated module into statements (cached: one analysis per library text)."""
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        return LibraryModule((), {}, (), _hash(source), broken=f"the library does not parse ({exc.msg})")
    self_names = _self_names(tree, package)
    library_names = _library_names(tree)
    statements = tuple(st for s in tree.body for st in _statements(s, self_names, library_names))
    by_name: dict[str, list[int]] = {}
    for i, st in enumerate(statements):
        for name in st.binds:
            by_name.setdefault(name, []).append(i)
    header = tuple(i for i, st in enumerate(statements) if st.header)
    return LibraryModule(statements, {k: tuple(v) for k, v in by_name.items()}, header,
                         _hash(dump(tree)))


# -- what a unit's code takes from the library ------------------------------------------------

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
                if n.id in REFLECTIVE and _reflective(n, parents):
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


# -- closure and key ------------------------------------------------------------------------

@dataclass(frozen=True)
class Reach:
    """What a unit's key covers of one library module."""

    key: str  # the library part of the unit's freeze key
    # Reached names the module binds -> short hash of their statements, and :data:`HEADER`:
    # recorded with the entry, so a later plan can say which names changed.
    names: Mapping[str, str] = field(default_factory=dict)
    whole: str | None = None  # why the unit keys on the whole library (None: on ``names``)
    header: str = ""  # hash of the header statements
    other_modules: tuple[str, ...] = ()  # other generated modules the unit imports: the caller keys them whole


def reach(library: LibraryModule, uses: UnitUses) -> Reach:
    """Close ``uses`` over the module and hash what was reached (see the module's docstring)."""
    if not uses.imports:  # code that never imports the library runs none of it
        return Reach(_hash("none"), {}, None, "", tuple(sorted(uses.other_modules)))
    statements = library.statements
    header_hash = _hash(*(statements[i].dump for i in library.header))
    why = library.broken or uses.unsure
    seen: set[int] = set()
    names: set[str] = set()
    todo = list(library.header)
    pending = sorted(uses.names)
    while todo or pending:
        while pending:
            name = pending.pop()
            if name in names:
                continue
            names.add(name)
            todo.extend(library.by_name.get(name, ()))
        if todo:
            i = todo.pop()
            if i in seen:
                continue
            seen.add(i)
            st = statements[i]
            why = why or (f"library code it reaches {st.unsure}" if st.unsure else None)
            pending.extend(sorted(st.uses - names))
    if why:
        return Reach(_hash("whole", library.whole), {}, why, header_hash, tuple(sorted(uses.other_modules)))
    per_name = {}
    record = {HEADER: header_hash[:16]}
    for name in sorted(names):
        where = library.by_name.get(name)
        h = _hash(*(statements[i].dump for i in where)) if where else ABSENT
        per_name[name] = h
        if where and not all(i in library.header for i in where):
            record[name] = h[:16]
    key = _hash("names", header_hash, *(f"{n}={h}" for n, h in per_name.items()))
    return Reach(key, record, None, header_hash, tuple(sorted(uses.other_modules)))


def unit_reach(cells: Sequence[str], library_source: str, package: str, module: str) -> Reach:
    """The library part of a unit's key: :func:`unit_uses` closed over :func:`analyse_library`."""
    return reach(analyse_library(library_source, package), unit_uses(cells, package, module))


def changed_names(old: Mapping[str, str], new: Mapping[str, str]) -> list[str]:
    """Names whose definition differs between two :attr:`Reach.names` records (added or gone too)."""
    return sorted(n for n in set(old) | set(new) if old.get(n) != new.get(n))


def definitions(source: str) -> dict[str, str]:
    """Top-level name -> normalized source of what binds it (for comparing two libraries)."""
    lib = analyse_library(source)
    return {name: _hash(*(lib.statements[i].dump for i in idx)) for name, idx in lib.by_name.items()}
