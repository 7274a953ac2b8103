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

Definitions are compared by their syntax tree's text without positions
(:mod:`tabbook.library.astdump`, the same under every Python), so comments, blank lines and line
moves change no key. Everything here is a pure function of source text: no file is read.
"""

from __future__ import annotations

import ast
import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from tabbook.library.astdump import dump
from tabbook.library.imports import deftime_nodes
from tabbook.library.uses import REFLECTIVE, UnitUses, reflective, unit_uses

#: The version of the rules below: a key's library part computed under other rules is never
#: reused as it is (the plan reuses a stored library part only for the same code, library and rules).
RULES = "1"
#: Special module-level functions Python calls by itself: part of every unit's header.
SPECIAL_DEFS = frozenset({"__getattr__", "__dir__"})
#: Methods Python calls while *other* classes are defined.
CLASS_HOOKS = frozenset({"__init_subclass__", "__set_name__", "__prepare__"})
#: The pseudo-name under which :attr:`Reach.names` records the header's hash.
HEADER = "(header)"
#: The hash recorded for a name that no statement of the module binds.
ABSENT = "absent"


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
                if n.id in REFLECTIVE and isinstance(n.ctx, ast.Load) and reflective(n, parents):
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
