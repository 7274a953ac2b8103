"""Library internals: ``#@save`` cells of one framework → ordered library pieces.

Structure is decided with ``ast`` and edits are made on the book's text by
line ranges (see :mod:`tabbook.library.pysource`), so the saved code keeps its
comments. The rules, applied per framework in table-of-contents order:

* ``#@save`` alone on a line between statements saves every top-level statement of
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
* ``d2l.X`` becomes ``X``: inside the library the saved objects are globals —
  except where a local name ``X`` would capture the bare name (a parameter, a
  local, a comprehension variable...; see :mod:`tabbook.library.scopes`): there
  ``d2l.X`` stays, and so may a bare ``d2l``; the module then binds
  ``d2l = sys.modules[__name__]``.

Every row of a piece's text keeps the Markdown ``(path, line)`` it came from
(:data:`Loc`), so a problem found in the generated module names the line that
has it, not the first line of the saved definition.
"""

from __future__ import annotations

import ast
import difflib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NamedTuple

from tabbook.errors import BookError
from tabbook.library import pysource as ps
from tabbook.library.imports import deftime_nodes, names_loaded
from tabbook.library.scopes import library_references
from tabbook.source.pycode import add_to_class_target, mask_magics
from tabbook.source.split import FrameworkCell

LIBRARY_NAME = "d2l"

#: Where a row of saved code comes from: (Markdown path, line).
Loc = tuple[str, int]


class LibRef(NamedTuple):
    """A ``d2l.X`` of saved code: X, where it is, and whether it was written ``X``."""

    name: str
    loc: Loc
    rewritten: bool


def remap(old_lines: list[str], old_locs: list[Loc], new_lines: list[str]) -> list[Loc]:
    """Locations of ``new_lines``, an edited copy of ``old_lines``, matched by content: a
    replaced row takes the location of the row it replaces, an inserted one that of the row
    above it (or of the first row, at the top)."""
    if not old_locs:
        return [("", 0)] * len(new_lines)
    out: list[Loc] = []
    sm = difflib.SequenceMatcher(None, [x.strip() for x in old_lines], [x.strip() for x in new_lines],
                                 autojunk=False)
    for tag, i1, i2, j1, j2 in sm.get_opcodes():
        if tag == "delete":
            continue
        for k in range(j2 - j1):
            if tag == "insert":
                out.append(out[-1] if out else old_locs[min(i1, len(old_locs) - 1)])
            else:  # equal, or replace: row by row, the surplus rows with the last replaced one
                out.append(old_locs[min(i1 + k, i2 - 1)])
    return out


def _cut(lines: list[str], first: int, last: int, skip: frozenset[int] | set[int] = frozenset()
         ) -> tuple[str, list[int]]:
    """:func:`pysource.cut` and the 1-based rows of ``lines`` its text's lines are."""
    rows = [r for r in range(first, last + 1) if r not in skip]
    text = ps.cut(lines, first, last, skip)
    while rows and lines[rows[0] - 1] == "":
        rows.pop(0)
    while rows and lines[rows[-1] - 1] == "":
        rows.pop()
    assert len(rows) == len(text.split("\n")) or not text
    return text, rows


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

    def note(self, site: str = "") -> str:
        """The docstring line that says where an object is defined (no quotes, no backslashes):
        the page's path in the site, and, when the site's address is known (``[site] url``), the
        page's address, which a ``pip install d2l`` user can open from ``help()``."""
        title = (self.title or self.path).replace("\\", "/").replace('"', "'")
        return f'Defined in "{title}" ({self.url})' + (f": {site}{self.url}" if site else ".")


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
    locs: list[Loc] = field(default_factory=list)  # the Markdown location of each row of ``text``
    refs: list[LibRef] = field(default_factory=list)  # each ``d2l.X`` of ``text``: X, where

    def node(self) -> ast.stmt:
        return ast.parse(self.text).body[0]

    def row_locs(self) -> list[Loc]:
        """Locations of the rows of the assembled statement (a class: header, then each member)."""
        return self.locs + [loc for m in self.members for loc in m.locs]

    def all_refs(self) -> list[LibRef]:
        return self.refs + [r for m in self.members for r in m.refs]


def _block_after(row: int, spans: list[tuple[int, int]], lines: list[str]) -> set[int]:
    """d2lbook's meaning of ``#@save`` alone on line ``row``: the statement that follows it,
    with each next statement that starts on the very next line (or after comment lines only)
    while the ones taken so far are one line each. A statement with an indented body or
    continuation ends the block, as does a blank line."""
    picked: set[int] = set()
    after = [i for i, (a, _) in enumerate(spans) if a > row]
    if not after:
        return picked
    i = after[0]
    picked.add(i)
    while spans[i][0] == spans[i][1] and i + 1 < len(spans):
        gap = lines[spans[i][1]:spans[i + 1][0] - 1]  # rows strictly between, 0-based slice
        if not all(g.startswith("#") for g in gap):
            break
        i += 1
        picked.add(i)
    return picked


def saved_chunks(fc: FrameworkCell, title: str, line_of: Callable[[int], int], whole_cell: bool = False,
                 ) -> list[tuple[str, Origin, list[Loc]]]:
    """The saved statements of one ``#@save`` cell, each with its comments, markers removed,
    and the Markdown location of each of its rows.

    ``#@save`` alone on a line between statements saves the block after it, as in d2lbook
    (:func:`_block_after`), or with ``whole_cell`` (``[library] save = cell``) every
    statement of the cell."""
    path = fc.cell.path
    masked, magic_rows = mask_magics(fc.source)
    try:
        tree = ast.parse(masked)
        # What the parser accepts but Python does not run: `return`/`yield` outside a function,
        # `break` outside a loop, ... (the compiler's checks; a notebook allows top-level await).
        compile(tree, str(path), "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, dont_inherit=True)
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
    for row, _col, alone in ps.save_comments(masked):
        inside = next((i for i, (a, b) in enumerate(spans) if a <= row <= b), None)
        if alone:
            alone_rows.add(row)
            # Between statements it marks the block after it however it is indented (d2l-tr's
            # " #@save"): d2lbook finds the mark anywhere on its line.
            if inside is None:
                if whole_cell:
                    whole = True
                else:
                    picked |= _block_after(row, spans, lines)
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
        cut, rows = _cut(lines, a, b, skip)
        text = ps.strip_save_comments(cut)
        locs = remap(cut.split("\n"), [(path, line_of(r)) for r in rows], text.split("\n"))
        out.append((text, Origin(path, title, line_of(spans[i][0])), locs))
    return out


def rewrite_d2l(text: str, locs: list[Loc]) -> tuple[str, list[LibRef]]:
    """``d2l.X`` → ``X`` wherever a bare ``X`` means the module's global X (see
    :mod:`tabbook.library.scopes`); elsewhere ``d2l.X`` and a bare ``d2l`` stay, to be
    resolved by the module's ``d2l = sys.modules[__name__]``. Also returns every X reached
    as ``d2l.X`` (rewritten or not) with its location: each must be defined by the module."""
    refs = library_references(text, LIBRARY_NAME)
    spans = [(r.row, r.col, r.end_row, r.end_col, r.attr) for r in refs if r.rewrite and r.attr]
    reached = [LibRef(r.attr, locs[min(r.row, len(locs)) - 1] if locs else ("", 0), r.rewrite)
               for r in refs if r.attr]
    return ps.replace_spans(text, spans), reached


def _kind(node: ast.stmt) -> str:
    if isinstance(node, ast.ClassDef):
        return "class"
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return "def"
    return "stmt"


def make_piece(text: str, origin: Origin, locs: list[Loc] | None = None,
               refs: list[LibRef] | None = None) -> Piece:
    """A top-level piece; a class is cut into its header and its members."""
    if not locs:
        locs = [(origin.path, origin.line)] * len(text.split("\n"))
    expanded = ps.expand_one_liner(text)
    locs = remap(text.split("\n"), locs, expanded.split("\n"))
    text, refs = expanded, list(refs or [])
    node = ast.parse(text).body[0]
    kind = _kind(node)
    name = getattr(node, "name", None)
    if not isinstance(node, ast.ClassDef):
        return Piece(name, kind, text, origin, locs=locs, refs=refs)
    lines = text.split("\n")
    head_end = ps.header_end_row(text, node)
    body_indent = ps.char_col(lines[node.body[0].lineno - 1], node.body[0].col_offset)
    members = []
    stmt_row = min([node.lineno] + [d.lineno for d in node.decorator_list])
    chunks = ps.chunk_rows(lines, node.body, head_end, contiguous=False)
    for stmt, (a, b) in zip(node.body, chunks, strict=True):
        cut, rows = _cut(lines, a, b)
        member_text = ps.dedent(cut, body_indent)
        member_locs = [locs[r - 1] for r in rows]
        mine = set(member_locs)
        member_refs = [r for r in refs if r[1] in mine]
        refs = [r for r in refs if r[1] not in mine]
        first_row = min([stmt.lineno] + [d.lineno for d in getattr(stmt, "decorator_list", [])])
        member_origin = Origin(origin.path, origin.title,
                               locs[first_row - 1][1] if locs[first_row - 1][0] == origin.path
                               else origin.line + stmt.lineno - stmt_row)
        members.append(Piece(getattr(stmt, "name", None), _kind(stmt), member_text, member_origin,
                             locs=member_locs, refs=member_refs))
    return Piece(name, "class", "\n".join(lines[:head_end]), origin, members, body_indent,
                 locs=locs[:head_end], refs=refs)


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
    rewritten: set[str] = field(default_factory=set)  # X of every d2l.X in saved code (ever added)

    def find(self, name: str) -> int | None:
        return next((i for i, p in enumerate(self.pieces) if p.name == name), None)

    def add(self, text: str, origin: Origin, locs: list[Loc] | None = None) -> None:
        node = ast.parse(text).body[0]
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            return  # imports feed the header (tabbook.library.imports), never the body
        if origin.path not in self.sources:
            self.sources.append(origin.path)
        if not locs:
            locs = [(origin.path, origin.line)] * len(text.split("\n"))
        target = add_to_class_target(node)
        text, refs = rewrite_d2l(text, locs)
        self.rewritten.update(r.name for r in refs)
        if target is not None:
            self._add_method(text, target[0], origin, locs, refs)
            return
        piece = make_piece(text, origin, locs, refs)
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

    def _add_method(self, text: str, class_name: str, origin: Origin, locs: list[Loc],
                    refs: list[LibRef]) -> None:
        node = ast.parse(text).body[0]
        target = add_to_class_target(node)
        assert target is not None and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        deco = target[1]
        lines = text.split("\n")
        drop = set(range(deco.lineno, (deco.end_lineno or deco.lineno) + 1))
        method = "\n".join(x for row, x in enumerate(lines, 1) if row not in drop)
        method_locs = [loc for row, loc in enumerate(locs, 1) if row not in drop]
        kept = set(method_locs)
        refs = [r for r in refs if r[1] in kept]  # not those of the dropped decorator
        at = self.find(class_name)
        if at is None or self.pieces[at].kind != "class":
            what = "is a function, not a class" if at is not None else "was never saved before this point"
            raise BookError(
                f"add_to_class({class_name}): {class_name} {what} in the {self.framework} library; "
                f"save the class with #@save first",
                origin.path, origin.line,
            )
        cls = self.pieces[at]
        expanded = ps.expand_one_liner(method)
        new = Piece(node.name, "def", expanded, origin, added=True,
                    locs=remap(method.split("\n"), method_locs, expanded.split("\n")), refs=refs)
        same = [i for i, m in enumerate(cls.members) if m.name == node.name]
        if same:
            cls.members[same[0]] = new
            for i in reversed(same[1:]):
                del cls.members[i]
        else:
            cls.members.append(new)
        if origin.path not in self.sources:
            self.sources.append(origin.path)
