"""Where ``d2l.X`` in saved code may become ``X``: name resolution decided by CPython's own symtable.

Inside the generated module the saved objects are globals, so ``d2l.X`` is
written ``X`` — but only where a bare ``X`` would find the module's global.
A parameter, a local assignment, a comprehension variable, an import or a def
of the same name in the function (or in an enclosing one), or a class body
binding it, would capture the bare name::

    def __init__(self, max_epochs, num_gpus=0):
        self.gpus = [d2l.gpu(i) for i in range(min(num_gpus, d2l.num_gpus()))]

Here ``d2l.num_gpus()`` must stay as it is (``num_gpus()`` would call the
integer), and the module binds ``d2l = sys.modules[__name__]`` so it resolves
to the module itself. Which scope binds what is not re-derived here: the
``symtable`` module reports it exactly as the compiler will (parameters,
walrus targets, ``global``/``nonlocal``, class scopes skipped by nested
functions); this module only maps each ``d2l`` reference to its scope.
"""

from __future__ import annotations

import ast
import symtable
from dataclasses import dataclass

_COMPREHENSIONS: dict[type[ast.AST], str] = {ast.ListComp: "listcomp", ast.SetComp: "setcomp", ast.DictComp: "dictcomp",
                   ast.GeneratorExp: "genexpr"}


@dataclass(frozen=True)
class Reference:
    """One ``d2l.X`` (``attr`` set) or bare ``d2l`` (``attr`` None) in a piece of saved code."""

    row: int  # 1-based row of the text
    col: int  # ast byte offsets of the whole ``d2l.X`` expression
    end_row: int
    end_col: int
    attr: str | None
    rewrite: bool  # True: ``d2l.X`` may be written ``X``; False: it must reach the module object


def _binds_locally(table: symtable.SymbolTable, name: str) -> bool | None:
    """True: ``name`` in this scope is a local/free/nonlocal; False: global here; None: not mentioned."""
    try:
        sym = table.lookup(name)
    except KeyError:
        return None
    if sym.is_global() or sym.is_declared_global():
        return False
    return sym.is_local() or sym.is_free() or sym.is_nonlocal() or sym.is_parameter() or sym.is_assigned()


def resolves_to_global(chain: list[symtable.SymbolTable], name: str) -> bool:
    """Would a bare ``name`` read in the innermost scope of ``chain`` find the module global?"""
    for depth, table in enumerate(reversed(chain)):
        if table.get_type() == "module":
            return True
        if table.get_type() == "class" and depth > 0:
            continue  # a class body's names are invisible to the functions inside it
        local = _binds_locally(table, name)
        if local is True:
            return False
        if local is False and depth == 0:
            return True
    return True


class _Walker:
    """Walk the AST keeping the symtable of the scope each node is evaluated in."""

    def __init__(self, tree: ast.AST, top: symtable.SymbolTable, library: str,
                 names: frozenset[str] = frozenset()):
        self.library = library
        self.names = names  # bare names whose non-global reads are collected in ``hidden``
        self.chain = [top]
        self.used: dict[int, set[int]] = {}  # id(table) -> indices of children already matched
        self.found: list[Reference] = []
        self.hidden: list[tuple[str, int]] = []
        self.attr_nodes: set[int] = set()
        self.visit(tree)

    def child(self, name: str, lineno: int) -> symtable.SymbolTable | None:
        table = self.chain[-1]
        used = self.used.setdefault(id(table), set())
        for i, c in enumerate(table.get_children()):
            if i not in used and c.get_name() == name and c.get_lineno() == lineno:
                used.add(i)
                return c
        return None  # not a scope for this Python (e.g. inlined comprehensions): stay outside

    def scoped(self, name: str, node: ast.AST, inner: list[ast.AST]) -> None:
        table = self.child(name, node.lineno)  # type: ignore[attr-defined]
        if table is not None:
            self.chain.append(table)
        for n in inner:
            self.visit(n)
        if table is not None:
            self.chain.pop()

    def visit(self, node: ast.AST) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            a = node.args
            outer: list[ast.AST] = [*a.defaults, *(d for d in a.kw_defaults if d)]
            if not isinstance(node, ast.Lambda):
                outer += node.decorator_list
                outer += [x.annotation for x in (*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg)
                          if x is not None and x.annotation is not None]
                outer += [node.returns] if node.returns is not None else []
            for n in outer:
                self.visit(n)
            body: list[ast.AST] = [node.body] if isinstance(node, ast.Lambda) else list(node.body)
            self.scoped("lambda" if isinstance(node, ast.Lambda) else node.name, node, body)
            return
        if isinstance(node, ast.ClassDef):
            for n in (*node.decorator_list, *node.bases, *node.keywords):
                self.visit(n)
            self.scoped(node.name, node, list(node.body))
            return
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            gens = node.generators
            self.visit(gens[0].iter)  # evaluated in the enclosing scope
            inner: list[ast.AST] = [gens[0].target, *gens[0].ifs, *gens[1:]]
            inner += [node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt]
            self.scoped(_COMPREHENSIONS[type(node)], node, inner)
            return
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                and node.value.id == self.library):
            self.attr_nodes.add(id(node.value))
            self.reference(node, node.attr)
        elif (isinstance(node, ast.Name) and node.id == self.library and id(node) not in self.attr_nodes
                and isinstance(node.ctx, ast.Load)):
            self.reference(node, None)
        elif (isinstance(node, ast.Name) and node.id in self.names and isinstance(node.ctx, ast.Load)
                and not resolves_to_global(self.chain, node.id)):
            self.hidden.append((node.id, node.lineno))
        for n in ast.iter_child_nodes(node):
            self.visit(n)

    def reference(self, node: ast.Attribute | ast.Name, attr: str | None) -> None:
        if not resolves_to_global(self.chain, self.library):
            return  # a local ``d2l``: not the library, left alone
        at_module = len(self.chain) == 1
        if attr is None:
            rewrite = False
        elif isinstance(node.ctx, ast.Load):
            rewrite = resolves_to_global(self.chain, attr) and node.lineno == node.end_lineno
        else:  # ``d2l.X = ...`` binds the global only at module level; inside a function X would be local
            rewrite = at_module and node.lineno == node.end_lineno
        self.found.append(Reference(node.lineno, node.col_offset, node.end_lineno or node.lineno,
                                    node.end_col_offset or 0, attr, rewrite))


def library_references(text: str, library: str = "d2l") -> list[Reference]:
    """Every reference to the library module in ``text`` (a module's source), in source order."""
    tree = ast.parse(text)
    top = symtable.symtable(text, "<saved code>", "exec")
    refs = _Walker(tree, top, library).found
    return sorted(refs, key=lambda r: (r.row, r.col))


def hidden_reads(text: str, names: set[str]) -> list[tuple[str, int]]:
    """Reads of ``names`` in ``text`` (a module) that do not reach the module's globals: (name, row)."""
    tree = ast.parse(text)
    top = symtable.symtable(text, "<module>", "exec")
    return _Walker(tree, top, "", frozenset(names)).hidden


def local_names(func: ast.FunctionDef | ast.AsyncFunctionDef, names: set[str]) -> set[str]:
    """Which of ``names`` the function binds itself (parameters, assignments, imports...)."""
    text = ast.unparse(ast.Module(body=[func], type_ignores=[]))
    table = [c for c in symtable.symtable(text, "<def>", "exec").get_children()
             if c.get_name() == func.name][-1]
    return {n for n in names if _binds_locally(table, n) is True and not table.lookup(n).is_free()}
