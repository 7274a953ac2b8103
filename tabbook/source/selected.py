"""d2lbook's ``tab.selected(...)`` tests, as Python syntax trees.

A code cell may test which framework runs it: ``tab.selected('jax')``,
``tab.selected('mxnet', 'pytorch')``, ``tab.selected(['jax'])``, combined with
``and``/``or``/``not`` (``if tab.selected('pytorch') or tab.selected('mxnet'):``).
Nothing defines ``tab`` when a cell runs: the split stage decides every such
test statically, per framework. This module says what a test is (pure
functions of ``ast`` nodes); the reader checks the names in it against the
book's tabs, the split stage resolves the branches.
"""

from __future__ import annotations

import ast

from tabbook.source.dialect import MAGIC_LINE


def is_selected_call(node: ast.AST) -> bool:
    """``tab.selected(...)``, whatever its arguments."""
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "selected"
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "tab"
    )


def selected_names(node: ast.AST) -> tuple[str, ...] | None:
    """The names of ``tab.selected('a', 'b')`` (or of one list/tuple argument).

    None when ``node`` is not such a call, or an argument is not a string literal.
    """
    if not is_selected_call(node):
        return None
    assert isinstance(node, ast.Call)
    if node.keywords:
        return None
    names: list[str] = []
    for arg in node.args:
        items = arg.elts if isinstance(arg, (ast.List, ast.Tuple)) else [arg]
        for item in items:
            if not (isinstance(item, ast.Constant) and isinstance(item.value, str)):
                return None
            names.append(item.value)
    return tuple(names)


def _static(node: ast.expr) -> bool:
    if isinstance(node, ast.BoolOp):
        return all(_static(v) for v in node.values)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return _static(node.operand)
    if isinstance(node, ast.Constant):
        return isinstance(node.value, bool)
    return selected_names(node) is not None


def is_static_test(node: ast.expr) -> bool:
    """A test decided by the framework alone: ``tab.selected`` calls (at least one) joined
    by ``and``/``or``/``not`` (and parentheses), ``True``/``False`` allowed beside them."""
    return _static(node) and any(is_selected_call(n) for n in ast.walk(node))


def evaluate(node: ast.expr, framework: str) -> bool:
    """The value of a static test (:func:`is_static_test`) when ``framework`` runs."""
    if isinstance(node, ast.BoolOp):
        values = (evaluate(v, framework) for v in node.values)
        return all(values) if isinstance(node.op, ast.And) else any(values)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return not evaluate(node.operand, framework)
    if isinstance(node, ast.Constant):
        return bool(node.value)
    names = selected_names(node)
    if names is None:
        raise ValueError("not a static tab.selected test")
    return framework in names


def selected_calls(tree: ast.AST) -> list[ast.Call]:
    """Every ``tab.selected(...)`` call in ``tree``, in source order."""
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and is_selected_call(n)]
    calls.sort(key=lambda c: (c.lineno, c.col_offset))
    return calls


def unknown_selected(source: str, tabs: tuple[str, ...]) -> list[tuple[int, str]]:
    """``(row, message)`` for each ``tab.selected`` call of a code cell that names a framework
    not among ``tabs`` (``row`` 0-based in ``source``). A cell that does not parse has none:
    the split stage reports its syntax error."""
    if "tab.selected" not in source:
        return []
    masked = "\n".join(
        (m.group(1) + "pass") if (m := MAGIC_LINE.match(line)) else line for line in source.split("\n")
    )
    try:
        tree = ast.parse(masked)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    found = []
    for call in selected_calls(tree):
        unknown = [n for n in selected_names(call) or () if n not in tabs]
        if unknown:
            found.append((call.lineno - 1, f"tab.selected names unknown framework "
                          f"{', '.join(repr(u) for u in unknown)} (config.ini tabs: {', '.join(tabs)})"))
    return found
