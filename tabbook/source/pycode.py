"""A framework cell's code as Python sees it, and the way back to the Markdown.

Three stages need the same two facts about a cell's code: ``check`` and the library parse it
with ``ast``, which IPython's ``%magic`` and ``!shell`` lines would stop (:func:`mask_magics`),
and execution and the library report a problem at a row of the code the kernel ran, which
must name the line of the Markdown file the author wrote (:func:`line_mapper`). They live here,
with the reading of the dialect, so no stage has to import another stage for them.
"""

from __future__ import annotations

import ast
import difflib
from collections.abc import Callable

from tabbook.source.dialect import MAGIC_LINE
from tabbook.source.split import FrameworkCell


def mask_magics(source: str) -> tuple[str, set[int]]:
    """Comment out IPython magics/shell lines (:data:`~tabbook.source.dialect.MAGIC_LINE`) so ``ast`` parses; also return their 1-based rows."""
    rows: set[int] = set()
    out = []
    for row, line in enumerate(source.split("\n"), 1):
        m = MAGIC_LINE.match(line)
        if m:
            rows.add(row)
            line = m.group(1) + "#" + m.group(2)[1:]
        out.append(line)
    return "\n".join(out), rows



def add_to_class_target(node: ast.stmt) -> tuple[str, ast.expr] | None:
    """``@d2l.add_to_class(C)`` / ``@add_to_class(d2l.C)`` → ("C", decorator)."""
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    for d in node.decorator_list:
        if not (isinstance(d, ast.Call) and len(d.args) == 1):
            continue
        f = d.func
        named = (isinstance(f, ast.Name) and f.id == "add_to_class") or (
            isinstance(f, ast.Attribute) and f.attr == "add_to_class")
        if not named:
            continue
        arg = d.args[0]
        if isinstance(arg, ast.Name):
            return arg.id, d
        if isinstance(arg, ast.Attribute):
            return arg.attr, d
    return None


def saved_names(source: str, library: str = "d2l") -> tuple[set[str], set[str]]:
    """(what the cell's top-level code defines, what it takes from the library): a ``def`` or
    ``class`` name (``C.f`` for an ``add_to_class(C)`` method), a name assigned; ``d2l.X`` and
    the classes methods are added to. A cell that does not parse defines and uses nothing
    here (``check`` and the library report it)."""
    try:
        tree = ast.parse(mask_magics(source)[0])
    except SyntaxError:
        return set(), set()
    defined: set[str] = set()
    used: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            target = add_to_class_target(node)
            defined.add(f"{target[0]}.{node.name}" if target else node.name)
            used.update([target[0]] if target else [])
        elif isinstance(node, ast.Assign) or (isinstance(node, ast.AnnAssign) and node.value is not None):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            defined.update(t.id for t in targets if isinstance(t, ast.Name))
    used.update(n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)
                and isinstance(n.value, ast.Name) and n.value.id == library)
    return defined, used


def line_mapper(fc: FrameworkCell, default_tab: str, multi_tab: bool) -> Callable[[int], int]:
    """Row of ``fc.source`` (1-based) → line of the Markdown file.

    The split stage resolved ``tab.selected`` branches and the read stage
    dropped marker lines, so rows are matched back to the cell's source by
    content. When the reader records a line per source line (``Cell.source_lines``)
    it is used; otherwise marker lines (``%%tab``, ``#@hide``, ``#@raises``)
    are assumed to open the cell, as the d2lbook dialect writes them.
    """
    cell = fc.cell
    cell_lines = [x.strip() for x in cell.source.split("\n")]
    src_lines = [x.strip() for x in fc.source.split("\n")]
    to_cell: dict[int, int] = {}
    if cell_lines != src_lines:
        sm = difflib.SequenceMatcher(None, src_lines, cell_lines, autojunk=False)
        for a, b, size in sm.get_matching_blocks():
            for k in range(size):
                to_cell[a + k + 1] = b + k + 1

    def cell_row(row: int) -> int:
        if not to_cell:
            return row
        best = max((r for r in to_cell if r <= row), default=None)
        return to_cell[best] + (row - best) if best is not None else row

    recorded = getattr(cell, "source_lines", None)
    if recorded:
        return lambda row: recorded[min(max(cell_row(row), 1), len(recorded)) - 1]
    has_tab_line = multi_tab or cell.tabs != (default_tab,)
    removed = int(has_tab_line) + len(cell.flags - {"save"}) + (cell.raises is not None)
    return lambda row: cell.line + removed + cell_row(row)
