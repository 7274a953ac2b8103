"""Stage 3 internals: ``#@save`` cells of one framework → ordered library pieces.

Structure is decided with ``ast`` and edits are made on the book's text by
line ranges (see :mod:`tabbook.library.pysource`), so the saved code keeps its
comments. The rules, applied per framework in table-of-contents order:

* ``#@save`` alone on an unindented line saves every top-level statement of
  the cell; at the end of a top-level statement's first line (a ``def``/
  ``class`` line, one of its decorators, or any line of a simple statement)
  it saves that statement. Anywhere else it is an error.
* ``@d2l.add_to_class(C)`` functions become methods of the saved class ``C``
  (decorator removed); a method of the same name is replaced where it stood.
* A later top-level ``def``/``class`` replaces an earlier one of the same name
  in place — unless it needs, when defined, a name first saved after that
  place; then it moves to the end so the module still imports. Replacing a
  class drops the methods merged into the old one, as re-running the cell
  would.
* ``d2l.X`` becomes ``X``: inside the library the saved objects are globals.
"""

from __future__ import annotations

import ast
import difflib
from collections.abc import Callable
from dataclasses import dataclass, field

from tabbook.errors import BookError
from tabbook.library import pysource as ps
from tabbook.library.imports import deftime_nodes, names_loaded
from tabbook.source.split import FrameworkCell

LIBRARY_NAME = "d2l"


@dataclass(frozen=True)
class Origin:
    """Where a saved piece comes from: the section and the Markdown line."""

    path: str
    title: str
    line: int

    @property
    def url(self) -> str:
        """Page URL relative to the site root: ``chapter_gpus/devices.html``."""
        stem = self.path[:-3] if self.path.endswith(".md") else self.path
        return stem + ".html"

    def note(self) -> str:
        """The docstring line that says where an object is defined (no quotes, no backslashes)."""
        title = (self.title or self.path).replace("\\", "/").replace('"', "'")
        return f'Defined in "{title}" ({self.url}).'


@dataclass
class Piece:
    """A saved top-level statement, or a member of a saved class (text at column 0)."""

    name: str | None
    kind: str  # "def" | "class" | "stmt"
    text: str  # for a class: only its header (comments, decorators, ``class C(...):``)
    origin: Origin
    members: list[Piece] = field(default_factory=list)
    body_indent: int = 4
    added: bool = False  # a method merged in by add_to_class: it says where it was defined

    def node(self) -> ast.stmt:
        return ast.parse(self.text).body[0]


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


def saved_chunks(fc: FrameworkCell, title: str, line_of: Callable[[int], int]) -> list[tuple[str, Origin]]:
    """The saved statements of one ``#@save`` cell, each with its comments, markers removed."""
    path = fc.cell.path
    masked, magic_rows = ps.mask_magics(fc.source)
    try:
        tree = ast.parse(masked)
    except SyntaxError as exc:
        raise BookError(f"Python syntax error in a #@save cell: {exc.msg}", path,
                        line_of(exc.lineno or 1)) from exc
    lines = masked.split("\n")
    spans = []
    for stmt in tree.body:
        first = min([stmt.lineno] + [d.lineno for d in getattr(stmt, "decorator_list", [])])
        spans.append((first, stmt.end_lineno or stmt.lineno))
    whole = False
    picked: set[int] = set()
    alone_rows: set[int] = set()
    for row, col, alone in ps.save_comments(masked):
        inside = next((i for i, (a, b) in enumerate(spans) if a <= row <= b), None)
        if alone:
            alone_rows.add(row)
            if col == 0 and inside is None:
                whole = True
                continue
            raise BookError(
                "#@save marks a whole cell only when alone on an unindented line, and a statement "
                "only at the end of a top-level def/class line; this one is inside a block",
                path, line_of(row),
            )
        assert inside is not None
        stmt = tree.body[inside]
        limit = ps.header_end_row(masked, stmt) if hasattr(stmt, "body") else spans[inside][1]
        if row > limit:
            raise BookError(
                "#@save inside a block: only top-level statements (a def/class line, or a whole "
                "cell with #@save alone on its first line) can be saved",
                path, line_of(row),
            )
        picked.add(inside)
    if whole:
        picked = set(range(len(tree.body)))
    skip = alone_rows | magic_rows
    chunks = ps.chunk_rows(lines, tree.body, 0, contiguous=not whole, skip=skip)
    out = []
    for i in sorted(picked):
        a, b = chunks[i]
        text = ps.strip_save_comments(ps.cut(lines, a, b, skip))
        out.append((text, Origin(path, title, line_of(spans[i][0]))))
    return out


def rewrite_d2l(text: str, origin: Origin, rewritten: set[str] | None = None) -> str:
    """``d2l.X`` → ``X`` (adding X to ``rewritten``); a bare ``d2l`` left over is an error."""
    tree = ast.parse(text)
    spans = []
    for n in ast.walk(tree):
        if (isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)
                and n.value.id == LIBRARY_NAME and n.lineno == n.end_lineno):
            spans.append((n.lineno, n.col_offset, n.end_lineno, n.end_col_offset or 0, n.attr))
    inner = {(s[0], s[1]) for s in spans}
    for n in ast.walk(tree):
        if isinstance(n, ast.Name) and n.id == LIBRARY_NAME and (n.lineno, n.col_offset) not in inner:
            raise BookError(
                "saved code uses the name `d2l` itself; inside the library only `d2l.NAME` "
                "(rewritten to NAME) makes sense",
                origin.path, origin.line,
            )
    if rewritten is not None:
        rewritten.update(s[4] for s in spans)
    return ps.replace_spans(text, spans)


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


def _kind(node: ast.stmt) -> str:
    if isinstance(node, ast.ClassDef):
        return "class"
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return "def"
    return "stmt"


def make_piece(text: str, origin: Origin) -> Piece:
    """A top-level piece; a class is cut into its header and its members."""
    text = ps.expand_one_liner(text)
    node = ast.parse(text).body[0]
    kind = _kind(node)
    name = getattr(node, "name", None)
    if not isinstance(node, ast.ClassDef):
        return Piece(name, kind, text, origin)
    lines = text.split("\n")
    head_end = ps.header_end_row(text, node)
    body_indent = ps.char_col(lines[node.body[0].lineno - 1], node.body[0].col_offset)
    members = []
    stmt_row = min([node.lineno] + [d.lineno for d in node.decorator_list])
    rows = ps.chunk_rows(lines, node.body, head_end, contiguous=False)
    for stmt, (a, b) in zip(node.body, rows, strict=True):
        member_text = ps.dedent(ps.cut(lines, a, b), body_indent)
        member_origin = Origin(origin.path, origin.title, origin.line + stmt.lineno - stmt_row)
        members.append(Piece(getattr(stmt, "name", None), _kind(stmt), member_text, member_origin))
    return Piece(name, "class", "\n".join(lines[:head_end]), origin, members, body_indent)


def top_names(piece: Piece) -> set[str]:
    """Names a top-level piece binds in the module."""
    if piece.name:
        return {piece.name}
    names = set()
    for n in ast.walk(piece.node()):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            names.add(n.id)
    return names


@dataclass
class LibraryPieces:
    """The ordered pieces of one framework's module, with the merge rules applied."""

    framework: str
    pieces: list[Piece] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)  # sections that contributed, in order
    rewritten: set[str] = field(default_factory=set)  # X of every d2l.X in saved code

    def find(self, name: str) -> int | None:
        return next((i for i, p in enumerate(self.pieces) if p.name == name), None)

    def add(self, text: str, origin: Origin) -> None:
        node = ast.parse(text).body[0]
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            return  # imports feed the header (tabbook.library.imports), never the body
        if origin.path not in self.sources:
            self.sources.append(origin.path)
        target = add_to_class_target(node)
        text = rewrite_d2l(text, origin, self.rewritten)
        if target is not None:
            self._add_method(text, target[0], origin)
            return
        piece = make_piece(text, origin)
        if piece.kind == "stmt":
            if not any(p.kind == "stmt" and p.text == piece.text for p in self.pieces):
                self.pieces.append(piece)
            return
        at = self.find(piece.name or "")
        if at is None:
            self.pieces.append(piece)
            return
        later = set().union(*(top_names(p) for p in self.pieces[at + 1:]))
        needs = set(names_loaded(deftime_nodes(piece.node() if piece.kind == "def" else
                                               ast.parse(self._class_text(piece)).body[0])))
        if needs & later:
            del self.pieces[at]
            self.pieces.append(piece)
        else:
            self.pieces[at] = piece

    @staticmethod
    def _class_text(piece: Piece) -> str:
        body = [ps.indent(m.text, piece.body_indent) for m in piece.members] or [" " * 4 + "pass"]
        return "\n".join([piece.text, *body])

    def _add_method(self, text: str, class_name: str, origin: Origin) -> None:
        node = ast.parse(text).body[0]
        target = add_to_class_target(node)
        assert target is not None and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        deco = target[1]
        lines = text.split("\n")
        drop = set(range(deco.lineno, (deco.end_lineno or deco.lineno) + 1))
        method = "\n".join(x for row, x in enumerate(lines, 1) if row not in drop)
        at = self.find(class_name)
        if at is None or self.pieces[at].kind != "class":
            what = "is a function, not a class" if at is not None else "was never saved before this point"
            raise BookError(
                f"add_to_class({class_name}): {class_name} {what} in the {self.framework} library; "
                f"save the class with #@save first",
                origin.path, origin.line,
            )
        cls = self.pieces[at]
        new = Piece(node.name, "def", ps.expand_one_liner(method), origin, added=True)
        same = [i for i, m in enumerate(cls.members) if m.name == node.name]
        if same:
            cls.members[same[0]] = new
            for i in reversed(same[1:]):
                del cls.members[i]
        else:
            cls.members.append(new)
        if origin.path not in self.sources:
            self.sources.append(origin.path)
