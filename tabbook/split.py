"""Stage 2, split: Section × framework → that framework's code cells.

``if tab.selected('jax'):`` / ``elif`` / ``else`` branches are resolved with
``ast`` (not indentation counting): the chosen branch replaces the ``if``
statement, dedented to its level, comments kept. Pure functions of text.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from .errors import BookError
from .read import Cell, Section

_MAGIC = re.compile(r"^(\s*)([%!].*)$")


@dataclass(frozen=True)
class FrameworkCell:
    """A code cell as one framework runs it. ``index`` is the cell's position in the section."""

    index: int
    cell: Cell
    source: str

    @property
    def where(self) -> str:
        return self.cell.where

    @property
    def tags(self) -> tuple[str, ...]:
        tags = []
        if "hide" in self.cell.flags:
            tags.append("remove-cell")
        if "hide_code" in self.cell.flags:
            tags.append("remove-input")
        if "hide_output" in self.cell.flags:
            tags.append("remove-output")
        if self.cell.raises is not None:
            tags.append("raises-exception")
        return tuple(tags)


def _mask_magics(source: str) -> str:
    """Turn IPython magics/shell lines into comments of equal length so ``ast`` can parse."""
    return "\n".join(
        (m.group(1) + "#" + m.group(2)[1:]) if (m := _MAGIC.match(line)) else line
        for line in source.split("\n")
    )


def _selected_names(test: ast.expr) -> tuple[str, ...] | None:
    """Names in ``tab.selected('a', 'b')`` (or a list/tuple argument); None if not such a test."""
    if not (
        isinstance(test, ast.Call)
        and isinstance(test.func, ast.Attribute)
        and test.func.attr == "selected"
        and isinstance(test.func.value, ast.Name)
        and test.func.value.id == "tab"
    ):
        return None
    names: list[str] = []
    for arg in test.args:
        items = arg.elts if isinstance(arg, (ast.List, ast.Tuple)) else [arg]
        for item in items:
            if not (isinstance(item, ast.Constant) and isinstance(item.value, str)):
                return None
            names.append(item.value)
    return tuple(names)


def _first_selected_if(tree: ast.AST) -> ast.If | None:
    best: ast.If | None = None
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and _selected_names(node.test) is not None:
            if best is None or (node.lineno, node.col_offset) < (best.lineno, best.col_offset):
                best = node
    return best


def _choose(node: ast.If, framework: str) -> list[ast.stmt] | None:
    """The statements the framework runs, or None when no branch applies."""
    names = _selected_names(node.test)
    assert names is not None
    if framework in names:
        return node.body
    if not node.orelse:
        return None
    if len(node.orelse) == 1 and isinstance(node.orelse[0], ast.If):
        inner = node.orelse[0]
        if _selected_names(inner.test) is not None:
            return _choose(inner, framework)
    return node.orelse


def _branch_text(lines: list[str], stmts: list[ast.stmt], indent: int) -> list[str]:
    first = stmts[0].lineno - 1
    # Keep comment lines directly above the first statement of the branch.
    while first - 1 >= 0 and lines[first - 1].strip().startswith("#") and not lines[first - 1].rstrip().endswith(":"):
        first -= 1
    last = max(getattr(s, "end_lineno", s.lineno) for s in stmts)
    body_indent = stmts[0].col_offset
    shift = body_indent - indent
    out = []
    for line in lines[first:last]:
        lead = len(line) - len(line.lstrip(" "))
        out.append(line[min(shift, lead):] if line.strip() else "")
    return out


def resolve_tabs(source: str, framework: str, where: tuple[str, int]) -> str:
    """Resolve every ``tab.selected`` branch of ``source`` for ``framework``."""
    if "tab.selected" not in source:
        return source
    lines = source.split("\n")
    for _ in range(1000):
        try:
            tree = ast.parse(_mask_magics("\n".join(lines)))
        except SyntaxError as exc:
            raise BookError(
                f"Python syntax error in code cell: {exc.msg}", where[0], where[1] + (exc.lineno or 0)
            ) from exc
        node = _first_selected_if(tree)
        if node is None:
            break
        chosen = _choose(node, framework)
        start, end = node.lineno - 1, node.end_lineno or node.lineno
        if chosen:
            new = _branch_text(lines, chosen, node.col_offset)
        else:
            new = []
        lines = lines[:start] + new + lines[end:]
        if not new:
            lines = _fill_empty_block(lines, start, node.col_offset)
    return "\n".join(lines).strip("\n")


def _fill_empty_block(lines: list[str], at: int, indent: int) -> list[str]:
    """After removing a statement, keep the enclosing block valid by adding ``pass`` if needed."""
    try:
        ast.parse(_mask_magics("\n".join(lines)))
        return lines
    except SyntaxError:
        return lines[:at] + [" " * indent + "pass"] + lines[at:]


def split_section(section: Section, framework: str) -> list[FrameworkCell]:
    """The code cells of ``section`` that ``framework`` runs, branches resolved."""
    out: list[FrameworkCell] = []
    for index, cell in enumerate(section.cells):
        if cell.kind != "code" or framework not in cell.tabs:
            continue
        source = resolve_tabs(cell.source, framework, (cell.path, cell.line))
        out.append(FrameworkCell(index, cell, source))
    return out
