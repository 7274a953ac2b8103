"""Split: Section × framework → that framework's code cells.

``if tab.selected('jax'):`` / ``elif`` / ``else`` branches are resolved with
``ast`` (not indentation counting): the chosen branch replaces the ``if``
statement, dedented to its level, comments kept. A test may combine calls
with ``and``/``or``/``not`` (:mod:`tabbook.source.selected`); a call left in
any other expression becomes ``True``/``False``. Pure functions of text.

One reading is d2lbook's rather than Python's: d2lbook drops a selected
branch's ``if`` line and dedents its lines by one level, once, however many
``tab.selected`` tests enclose them. So a ``tab.selected`` test nested in
another one's branch, written right after a compound statement (a ``def``,
``for``, …) with its branch indented like that statement's block, continues
that block (:func:`_d2lbook_nesting`).
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass

from tabbook.config import LibraryKeys
from tabbook.errors import BookError
from tabbook.source.dialect import MAGIC_LINE
from tabbook.source.model import Cell, Section
from tabbook.source.selected import evaluate, is_static_test, selected_calls, selected_names


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
    """Turn IPython magic/shell lines into ``pass`` statements so ``ast`` can parse.

    A statement (not a comment) keeps a branch whose only line is a magic
    non-empty, and keeps the line inside the branch text that is cut out.
    Lines keep their number; only the masked line's text changes.
    """
    return "\n".join(
        (m.group(1) + "pass") if (m := MAGIC_LINE.match(line)) else line
        for line in source.split("\n")
    )


_BLOCK_FIELDS = ("body", "handlers", "orelse", "finalbody", "cases")


@dataclass(frozen=True)
class _Site:
    """An ``if tab.selected(...)`` statement and the block that holds it."""

    node: ast.If
    block: list[ast.stmt]  # the statement list the node is in
    top: bool  # the block is the cell's top level (may become empty)
    elif_: bool  # the node is an ``elif`` of an ordinary ``if``


def _selected_sites(tree: ast.Module, lines: list[str]) -> list[_Site]:
    """``if tab.selected(...)`` statements not nested in another one, in source order.

    Only statement blocks are searched (expressions hold no statements), so a
    big cell is not walked node by node.
    """
    found: list[_Site] = []

    def visit(stmts: list[ast.stmt], top: bool, owner: ast.AST | None) -> None:
        for node in stmts:
            if isinstance(node, ast.If) and is_static_test(node.test):
                elif_ = (
                    isinstance(owner, ast.If) and stmts is owner.orelse
                    and lines[node.lineno - 1][node.col_offset:].startswith("elif")
                )
                found.append(_Site(node, stmts, top, elif_))
                continue
            for name in _BLOCK_FIELDS:
                block = getattr(node, name, None)
                if isinstance(block, list):
                    visit(block, False, node)

    visit(tree.body, True, None)
    return found


def _choose(node: ast.If, framework: str, lines: list[str]) -> list[ast.stmt] | None:
    """The statements the framework runs, or None when no branch applies."""
    if evaluate(node.test, framework):
        return node.body
    if not node.orelse:
        return None
    first = node.orelse[0]
    if len(node.orelse) == 1 and isinstance(first, ast.If) and is_static_test(first.test) \
            and _is_elif(first, lines):
        return _choose(first, framework, lines)
    return node.orelse


def _is_elif(node: ast.stmt, lines: list[str]) -> bool:
    """``elif …`` (rather than ``else:`` followed by an ``if`` block)."""
    return isinstance(node, ast.If) and lines[node.lineno - 1][node.col_offset:].startswith("elif")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def _is_comment(line: str) -> bool:
    return line.lstrip().startswith("#")


def _string_rows(stmts: list[ast.stmt]) -> frozenset[int]:
    """0-based rows that begin inside a multi-line string literal: their text is data, not indentation."""
    rows: set[int] = set()
    for stmt in stmts:
        if stmt.end_lineno is None or stmt.end_lineno == stmt.lineno:
            continue
        for node in ast.walk(stmt):
            if isinstance(node, (ast.Constant, ast.JoinedStr)) and node.end_lineno and node.end_lineno > node.lineno:
                if isinstance(node, ast.JoinedStr) or isinstance(node.value, (str, bytes)):
                    rows.update(range(node.lineno, node.end_lineno))
    return frozenset(rows)


def _first_row(stmt: ast.stmt) -> int:
    """A statement's first line (1-based), its decorators included: ``ast`` puts a decorated
    ``def``'s ``lineno`` on the ``def`` line, below them."""
    return min([stmt.lineno] + [int(d.lineno) for d in getattr(stmt, "decorator_list", [])])


def _branch_text(lines: list[str], stmts: list[ast.stmt], node: ast.If, target: int | None = None) -> list[str]:
    """The source lines of ``stmts``, re-indented to column ``target`` (default: the ``if``'s).

    ``lines`` ends where the ``if`` statement ends (its trailing comments
    included). Rows inside multi-line strings are taken as they are.
    """
    indent = node.col_offset if target is None else target
    keep = _string_rows(stmts)
    first = _first_row(stmts[0]) - 1
    body_indent = stmts[0].col_offset
    last = max(getattr(s, "end_lineno", None) or s.lineno for s in stmts)
    same_line = bool(lines[first][:body_indent].strip())  # ``if ...: x = 1`` / ``else: x = 1``
    elif_head = _is_elif(stmts[0], lines)
    if not same_line and not elif_head:
        # Keep comment lines between the branch's header and its first statement...
        while first - 1 >= node.lineno and _is_comment(lines[first - 1]):
            first -= 1
        # ...and those indented like the branch after its last statement.
        row = last
        while row < len(lines) and (not lines[row].strip() or _is_comment(lines[row])):
            if lines[row].strip():
                if _indent(lines[row]) < body_indent:
                    break
                last = row + 1
            row += 1
    shift = body_indent - indent
    out = []
    for k, line in enumerate(lines[first:last]):
        if k == 0 and same_line:
            out.append(" " * indent + line[body_indent:])
        elif first + k in keep:
            out.append(line)
        elif not line.strip():
            out.append("")
        else:
            cut = line[min(shift, _indent(line)):]
            if k == 0 and elif_head:
                cut = cut[:_indent(cut)] + cut.lstrip()[2:]  # ``elif cond:`` -> ``if cond:``
            out.append(cut)
    return out


def _elif_text(lines: list[str], chosen: list[ast.stmt], node: ast.If) -> list[str]:
    """What replaces ``elif tab.selected(...): …`` (to its chain's end) in an ordinary ``if``."""
    if _is_elif(chosen[0], lines):
        # No branch of ours applies, an ordinary ``elif``/``else`` follows: keep that chain as it is.
        first = _first_row(chosen[0]) - 1
        return lines[first:max(getattr(s, "end_lineno", None) or s.lineno for s in chosen)]
    head = lines[node.lineno - 1][:node.col_offset] + "else:"
    row = lines[_first_row(chosen[0]) - 1]
    same_line = bool(row[:chosen[0].col_offset].strip())
    target = node.col_offset + 4 if same_line else chosen[0].col_offset
    return [head, *_branch_text(lines, chosen, node, target)]


def _end_with_comments(lines: list[str], node: ast.If) -> int:
    """Exclusive end row of ``node``, counting the comment lines indented under its last branch."""
    end = node.end_lineno or node.lineno
    row = end
    while row < len(lines) and (not lines[row].strip() or _is_comment(lines[row])):
        if lines[row].strip() and _indent(lines[row]) > node.col_offset:
            end = row + 1
        elif lines[row].strip():
            break
        row += 1
    return end


def _own_line(stmt: ast.stmt, lines: list[str]) -> bool:
    """``stmt`` starts its line (not ``if x: stmt``)."""
    return not lines[stmt.lineno - 1][:stmt.col_offset].strip()


def _last_block(stmt: ast.stmt, lines: list[str]) -> list[ast.stmt] | None:
    """The statement block that ends compound ``stmt`` (an ``elif``'s, an ``else``'s…); None if simple."""
    if isinstance(stmt, ast.If) and len(stmt.orelse) == 1 and _is_elif(stmt.orelse[0], lines):
        return _last_block(stmt.orelse[0], lines)
    found: list[object] = [getattr(stmt, name, None) for name in ("body", "orelse", "finalbody")]
    found += [h.body for h in getattr(stmt, "handlers", ())]
    found += [c.body for c in getattr(stmt, "cases", ())]
    blocks: list[list[ast.stmt]] = [b for b in found if isinstance(b, list) and b and isinstance(b[0], ast.stmt)]
    return max(blocks, key=lambda b: b[0].lineno) if blocks else None


def _d2lbook_nesting(tree: ast.Module, lines: list[str]) -> list[str] | None:
    """The cell with d2lbook's nested ``tab.selected`` tests moved to where d2lbook puts them.

    d2lbook dedents a selected line by one level however deep its tests nest, so
    in a branch of a ``tab.selected`` test, a nested test that follows a
    compound statement (``def``, ``class``, ``for``, an ordinary ``if``…) and
    whose branch is indented like the last block of that statement continues
    that block: d2l's ``Module`` puts ``if tab.selected('tensorflow'):`` beside
    ``def __init__`` for its ``self.training = None`` to go into ``__init__``.
    Such a test is indented into the block here, so that Python reads it as
    d2lbook does. None when the cell has no such test.
    """
    moves: list[tuple[ast.If, int]] = []

    def visit(stmts: list[ast.stmt], in_branch: bool) -> None:
        for i, node in enumerate(stmts):
            selected = isinstance(node, ast.If) and is_static_test(node.test)
            if isinstance(node, ast.If) and selected and in_branch and i:
                before = stmts[i - 1]
                is_selected_if = isinstance(before, ast.If) and is_static_test(before.test)
                block = None if is_selected_if else _last_block(before, lines)
                first = node.body[0]
                if (block and _own_line(block[0], lines) and _own_line(first, lines)
                        and block[0].col_offset == first.col_offset > node.col_offset):
                    moves.append((node, first.col_offset - node.col_offset))
            for name in _BLOCK_FIELDS:
                block = getattr(node, name, None)
                if isinstance(block, list):  # statements, except handlers or match cases
                    visit(block, in_branch or selected)

    visit(tree.body, False)
    if not moves:
        return None
    out = list(lines)
    for node, shift in moves:
        keep = _string_rows([node])
        for row in range(node.lineno - 1, _end_with_comments(lines, node)):
            if out[row].strip() and row not in keep:
                out[row] = " " * shift + out[row]
    return out


def _substitute_calls(lines: list[str], tree: ast.Module, framework: str) -> None:
    """Each ``tab.selected('name', …)`` left (in a test that is not only such calls, or any
    other expression) becomes ``True`` or ``False``, in place. A call whose arguments are
    not string literals cannot be decided here, and is left alone."""
    for call in reversed(selected_calls(tree)):
        names = selected_names(call)
        if names is None:
            continue
        value = "True" if framework in names else "False"
        first, last = call.lineno - 1, (call.end_lineno or call.lineno) - 1
        head = lines[first].encode()[:call.col_offset].decode()  # ast columns count UTF-8 bytes
        tail = lines[last].encode()[call.end_col_offset:].decode()
        lines[first:last + 1] = [head + value + tail]


def resolve_tabs(
    source: str, framework: str, where: tuple[str, int], source_lines: tuple[int, ...] = (),
) -> str:
    """Resolve every ``tab.selected`` branch of ``source`` for ``framework``.

    ``source_lines`` (:attr:`Cell.source_lines`) maps source lines to file
    lines for error messages; without it line ``k`` is taken to be
    ``where[1] + k`` (the line after the opening fence is the first).
    """
    if "tab.selected" not in source:
        return source
    lines = source.split("\n")
    for attempt in range(1000):
        try:
            tree = ast.parse(_mask_magics("\n".join(lines)))
        except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
            row = getattr(exc, "lineno", None) or 1
            if attempt:
                line = where[1]  # rows no longer match the file; point at the cell
            elif 0 < row <= len(source_lines):
                line = source_lines[row - 1]
            else:
                line = where[1] + row
            msg = getattr(exc, "msg", None) or "too deeply nested"
            raise BookError(f"Python syntax error in code cell: {msg}", where[0], line) from exc
        if attempt == 0 and (moved := _d2lbook_nesting(tree, lines)) is not None:
            lines = moved
            continue
        sites = _selected_sites(tree, lines)
        if not sites:
            _substitute_calls(lines, tree, framework)
            break
        # Replace from the bottom up, so that the rows of the sites above stay valid.
        left: dict[int, int] = {}  # id(block) -> statements not removed yet
        for site in reversed(sites):
            node = site.node
            chosen = _choose(node, framework, lines)
            start, end = node.lineno - 1, _end_with_comments(lines, node)
            prefix = lines[start][:node.col_offset]
            if not chosen:
                new = []
            elif site.elif_:
                new = _elif_text(lines[:end], chosen, node)
            else:
                new = _branch_text(lines[:end], chosen, node)
            lines[start:end] = new
            if not new and not site.top and not site.elif_:
                left[id(site.block)] = left.get(id(site.block), len(site.block)) - 1
                if left[id(site.block)] == 0:  # the block would be empty
                    lines.insert(start, prefix + "pass")
    return "\n".join(lines).strip("\n")


def split_section(section: Section, framework: str, aliases: LibraryKeys | None = None) -> list[FrameworkCell]:
    """The code cells of ``section`` that ``framework`` runs, branches resolved.

    ``aliases``: the tab's ``[library-<tab>]`` keys, with which its code is rewritten as
    d2lbook rewrites it (:func:`rewrite_aliases`): what the tab shows and runs, and what its
    freeze key hashes. The library stage splits without them: d2lbook saves the code as
    written, and the module defines the aliases instead.
    """
    out: list[FrameworkCell] = []
    for index, cell in enumerate(section.cells):
        if cell.kind != "code" or framework not in cell.tabs:
            continue
        source = resolve_tabs(cell.source, framework, (cell.path, cell.line), cell.source_lines)
        if aliases is not None:
            source = rewrite_aliases(source, aliases)
        out.append(FrameworkCell(index, cell, source))
    return out


# --- d2lbook's alias rewriting ----------------------------------------------------------------
#
# A d2lbook book writes framework-neutral calls (``d2l.matmul(X, w)``, ``d2l.reshape(y, s)``)
# and its config maps them per tab; d2lbook rewrites each tab's code with the map before it
# runs and shows it, so the PyTorch tab reads ``torch.matmul(X, w)`` and ``y.reshape(s)``. In
# its order: plain text replacements (``reverse_alias`` lines, then ``d2l.a`` -> ``lib.b`` for
# each ``simple_alias``, an entry's stray "(" kept, so ``exp(`` does not touch
# ``d2l.expand_dims``); then calls, found with ``ast``: ``d2l.a(x, *rest)`` -> ``x.b(*rest)``
# (``fluent_alias``) and ``d2l.f(…)`` -> the ``args_alias`` template. A rewritten call is
# printed anew (``ast.unparse``) and every copy of its text in the cell is replaced, one call
# at a time. Where d2lbook would stop with an error (a cell that does not parse, a fluent call
# without arguments, a keyword the template does not name) the code is left as written.

#: How many calls of one cell are rewritten at most (d2lbook's bound too).
_MAX_REWRITES = 100


def rewrite_aliases(source: str, keys: LibraryKeys) -> str:
    """``source`` as d2lbook shows and runs it in the tab whose library keys are ``keys``."""
    for old, new in keys.reverse_alias:
        source = source.replace(old, new)
    if not keys.lib_name:
        return source
    for old, new in keys.simple_as_written:
        source = source.replace(f"d2l.{old}", f"{keys.lib_name}.{new}")
    if keys.fluent_as_written:
        fluent = dict(keys.fluent_as_written)
        source = _rewrite_calls(source, set(fluent), lambda call, name: _fluent_call(call, fluent[name]))
    templates = _args_templates(keys.args_alias)
    if templates:
        source = _rewrite_calls(source, set(templates),
                                lambda call, name: _templated_call(call, *templates[name]))
    return source


def _rewrite_calls(source: str, names: set[str], rewrite: Callable[[ast.Call, str], str | None]) -> str:
    """Rewrite ``d2l.<name>(…)`` calls (``rewrite(call, name)``) one at a time, outermost first,
    until none changes."""
    if not any(f"d2l.{name}" in source for name in names):
        return source
    head = ""
    if source.startswith("%"):  # a magic on the first line is set aside, as d2lbook does
        first, _, rest = source.partition("\n")
        head, source = first + "\n", rest
    for _ in range(_MAX_REWRITES):
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError):
            break
        for node in ast.walk(tree):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and isinstance(node.func.value, ast.Name) and node.func.value.id == "d2l"
                    and node.func.attr in names):
                new = rewrite(node, node.func.attr)
                old = ast.get_source_segment(source, node)
                if new is not None and old:
                    source = source.replace(old, new)
                    break
        else:
            break
    return head + source


def _fluent_call(call: ast.Call, method: str) -> str | None:
    """``d2l.a(x, *rest, **kw)`` -> ``x.<method>(*rest, **kw)``."""
    if not call.args:
        return None
    return ast.unparse(ast.Call(ast.Attribute(call.args[0], method, ast.Load()), call.args[1:], call.keywords))


def _args_templates(pairs: tuple[tuple[str, str], ...]) -> dict[str, tuple[list[str], set[str], str]]:
    """``args_alias`` lines ``f(a_x, axis=None) -> g(a_x, dim=axis)``: per name, the
    parameters standing for positional arguments (``a_`` names), the keywords a call may
    give, and the template."""
    out: dict[str, tuple[list[str], set[str], str]] = {}
    for signature, template in pairs:
        try:
            call = ast.parse(signature, mode="eval").body
        except SyntaxError:
            continue
        if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Name):
            continue
        params = [a.id for a in call.args if isinstance(a, ast.Name)] + [k.arg for k in call.keywords if k.arg]
        out[call.func.id] = ([p for p in params if p.startswith("a_")],
                             {p for p in params if not p.startswith("a_")}, template)
    return out


def _templated_call(call: ast.Call, positional: list[str], keywords: set[str], template: str) -> str | None:
    """A call filled into its ``args_alias`` template: each ``a_`` parameter replaced by the
    argument's text, each keyword the call gives kept (``=name`` -> ``=value``), the others
    dropped from the template's call."""
    if len(call.args) != len(positional) or any(k.arg not in keywords for k in call.keywords):
        return None
    values = {name: ast.unparse(arg) for name, arg in zip(positional, call.args, strict=True)}
    values.update({f"={k.arg}": f"={ast.unparse(k.value)}" for k in call.keywords})
    try:
        shape = ast.parse(template, mode="eval").body
    except SyntaxError:
        return None
    if isinstance(shape, ast.Call):
        shape.keywords = [k for k in shape.keywords if isinstance(k.value, ast.Name) and f"={k.value.id}" in values]
        template = ast.unparse(shape)
    for name, value in values.items():
        template = template.replace(name, value)
    return template
