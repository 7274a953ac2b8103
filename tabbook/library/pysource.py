"""Text surgery on Python source that keeps comments: the library stage's toolbox.

The library is assembled from the book's own text, comments included, so its
pieces are cut out by *line ranges* that ``ast`` reports, and edited with
``tokenize`` positions — never by counting indentation with regexes (d2lbook's
failure mode) and never by ``ast.unparse`` of whole blocks (which drops every
comment). Two traps this module handles so callers need not:

* ``ast`` column offsets are UTF-8 *byte* offsets; a comment in Chinese before
  ``d2l.X`` on the same line would shift a naive string slice.
* Re-indenting a function (to merge it into a class) must not touch the
  continuation lines of a multi-line string, or the string's value changes.

Every function here is pure: text in, text out.
"""

from __future__ import annotations

import ast
import inspect
import io
import re
import tokenize
from collections.abc import Set

from tabbook.source.dialect import SAVE_COMMENT

_STRING_START = re.compile(r"^([rRuUbBfF]*)('''|\"\"\"|'|\")")


def char_col(line: str, byte_col: int) -> int:
    """Convert an ``ast`` byte column on ``line`` to a ``str`` index."""
    return len(line.encode("utf-8")[:byte_col].decode("utf-8", errors="ignore"))


def _tokens(text: str) -> list[tokenize.TokenInfo]:
    return list(tokenize.generate_tokens(io.StringIO(text + "\n").readline))


def string_continuation_rows(text: str) -> set[int]:
    """Rows (1-based) that lie inside a multi-line string literal, after its first row.

    Such rows must never be re-indented: their leading spaces belong to the string.
    """
    rows: set[int] = set()
    fstring_start: list[int] = []
    for tok in _tokens(text):
        name = tokenize.tok_name[tok.type]
        if name == "FSTRING_START":  # Python 3.12+ splits f-strings into several tokens
            fstring_start.append(tok.start[0])
        elif name == "FSTRING_END" and fstring_start:
            start = fstring_start.pop()
            rows.update(range(start + 1, tok.end[0] + 1))
        elif tok.type == tokenize.STRING and tok.end[0] > tok.start[0]:
            rows.update(range(tok.start[0] + 1, tok.end[0] + 1))
    return rows


def docstring_rows(text: str) -> set[int]:
    """Continuation rows of multi-line docstrings, whose indentation is layout, not content.

    ``inspect.cleandoc`` (and so ``help()``) strips a docstring's common
    indentation, so these rows may move with the code around them.
    """
    shift = 0
    try:
        tree = ast.parse(text)
    except SyntaxError:
        try:  # an indented block (a class member not yet dedented): parse it as a body
            tree, shift = ast.parse("if True:\n" + text), 1
        except SyntaxError:
            return set()
    rows: set[int] = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and body:
            first = body[0]
            if is_docstring(first) and (first.end_lineno or first.lineno) > first.lineno:
                rows.update(range(first.lineno + 1 - shift, (first.end_lineno or first.lineno) + 1 - shift))
    return rows


def indent(text: str, width: int) -> str:
    """Indent every code line by ``width`` spaces, leaving multi-line string bodies alone."""
    keep = string_continuation_rows(text) - docstring_rows(text)
    pad = " " * width
    return "\n".join(
        line if (row in keep or not line.strip()) else pad + line
        for row, line in enumerate(text.split("\n"), 1)
    )


def dedent(text: str, width: int) -> str:
    """Remove up to ``width`` leading spaces from each code line (string bodies untouched)."""
    keep = string_continuation_rows(text) - docstring_rows(text)
    out = []
    for row, line in enumerate(text.split("\n"), 1):
        if row in keep:
            out.append(line)
        elif not line.strip():
            out.append("")
        else:
            lead = len(line) - len(line.lstrip(" "))
            out.append(line[min(lead, width):])
    return "\n".join(out)


def save_comments(text: str) -> list[tuple[int, int, bool]]:
    """Every ``#@save`` comment as (row, char column, alone on its line)."""
    found = []
    lines = text.split("\n")
    for tok in _tokens(text):
        if tok.type == tokenize.COMMENT and SAVE_COMMENT.match(tok.string):
            row, col = tok.start
            alone = not lines[row - 1][:col].strip()
            found.append((row, col, alone))
    return found


def strip_save_comments(text: str) -> str:
    """Drop ``#@save`` markers: whole lines when alone, the trailing comment otherwise."""
    lines = text.split("\n")
    drop: set[int] = set()
    for row, col, alone in save_comments(text):
        if alone:
            drop.add(row)
        else:
            lines[row - 1] = lines[row - 1][:col].rstrip()
    return "\n".join(line for row, line in enumerate(lines, 1) if row not in drop)


def header_end_row(text: str, node: ast.stmt) -> int:
    """Last row of a compound statement's header (``def f(...):``), decorators excluded.

    It is where the first logical line starting at ``node.lineno`` ends, so long
    signatures spread over several lines are handled by the tokenizer, not by us.
    """
    lines = text.split("\n")
    sub = "\n".join(lines[node.lineno - 1:node.end_lineno])
    for tok in _tokens(sub):
        if tok.type == tokenize.NEWLINE:
            return node.lineno + tok.start[0] - 1
    return node.lineno


def is_docstring(stmt: ast.stmt) -> bool:
    return (
        isinstance(stmt, ast.Expr)
        and isinstance(stmt.value, ast.Constant)
        and isinstance(stmt.value.value, str)
    )


def replace_spans(text: str, spans: list[tuple[int, int, int, int, str]]) -> str:
    """Replace single-line (row, byte_start, row, byte_end) spans with new text."""
    lines = text.split("\n")
    for row, start, end_row, end, new in sorted(spans, key=lambda s: (s[0], s[1]), reverse=True):
        assert row == end_row
        line = lines[row - 1]
        a, b = char_col(line, start), char_col(line, end)
        lines[row - 1] = line[:a] + new + line[b:]
    return "\n".join(lines)


def _single_stmt(text: str) -> ast.stmt:
    tree = ast.parse(text)
    assert len(tree.body) == 1, "expected exactly one statement"
    return tree.body[0]


def expand_one_liner(text: str) -> str:
    """``def f(x): return x`` → a multi-line def, so a docstring can be put in.

    The only place we fall back to ``ast.unparse``: a one-liner has no body
    lines to insert before. Leading comment lines are kept.
    """
    node = _single_stmt(text)
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return text
    if node.body[0].lineno > header_end_row(text, node):
        return text
    lines = text.split("\n")
    first = min([node.lineno] + [d.lineno for d in node.decorator_list])
    # A comment trailing the one-liner would be lost by unparse: keep it above.
    trailing = [t.string for t in _tokens("\n".join(lines[first - 1:node.end_lineno]))
                if t.type == tokenize.COMMENT]
    return "\n".join(lines[: first - 1] + trailing + [ast.unparse(node)])


def add_docstring_line(text: str, note: str) -> str:
    """Prepend ``note`` as the first line of the def/class's docstring (add one if none).

    ``note`` must contain no backslash and no quote characters.
    """
    text = expand_one_liner(text)
    node = _single_stmt(text)
    assert isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
    lines = text.split("\n")
    first = node.body[0]
    body_indent = char_col(lines[first.lineno - 1], first.col_offset)
    pad = " " * body_indent
    if not is_docstring(first):
        at = header_end_row(text, node)
        return "\n".join(lines[:at] + [f'{pad}"""{note}"""'] + lines[at:])
    row, end_row = first.lineno, first.end_lineno or first.lineno
    start = char_col(lines[row - 1], first.col_offset)
    end = char_col(lines[end_row - 1], first.end_col_offset or 0)
    literal = "\n".join(lines[row - 1:end_row])
    literal = literal[start: len(literal) - (len(lines[end_row - 1]) - end)]
    m = _STRING_START.match(literal)
    if m is None or sum(t.type == tokenize.STRING for t in _tokens(literal)) != 1:
        # Implicit concatenation or something unusual: rebuild from the value.
        value = inspect.cleandoc(first.value.value)  # type: ignore[attr-defined]
        body = value.replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
        body = body.replace("\n", "\n" + pad)
        new = f'"""{note}\n\n{pad}{body}\n{pad}"""' if body else f'"""{note}"""'
    else:
        prefix, quote = m.group(1), m.group(2)
        inner = literal[len(prefix) + len(quote): len(literal) - len(quote)]
        triple = quote * 3 if len(quote) == 1 else quote
        content = inner.lstrip()
        if content and "\n" not in content:  # a one-line docstring becomes a multi-line one
            content = content.rstrip() + "\n" + pad
        new = f"{prefix}{triple}{note}\n\n{pad}{content}{triple}" if content.strip() else (
            f"{prefix}{triple}{note}{triple}")
    head = lines[row - 1][:start]
    tail = lines[end_row - 1][end:]
    return "\n".join(lines[: row - 1] + (head + new + tail).split("\n") + lines[end_row:])


def insert_body_lines(text: str, new_lines: list[str]) -> str:
    """Insert statements at the top of a def's body (after its docstring), at body indent."""
    if not new_lines:
        return text
    text = expand_one_liner(text)
    node = _single_stmt(text)
    assert isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
    lines = text.split("\n")
    first = node.body[0]
    pad = " " * char_col(lines[first.lineno - 1], first.col_offset)
    at = (first.end_lineno or first.lineno) if is_docstring(first) else header_end_row(text, node)
    return "\n".join(lines[:at] + [pad + x for x in new_lines] + lines[at:])


def chunk_rows(lines: list[str], stmts: list[ast.stmt], lower: int, contiguous: bool,
               skip: Set[int] = frozenset()) -> list[tuple[int, int]]:
    """(first_row, last_row) of each statement together with the comments above it.

    ``lower`` is the last row that belongs to no statement (a header, or 0).
    With ``contiguous`` only comment lines directly above the statement come
    along; otherwise everything between the previous statement and this one.
    Rows in ``skip`` (``#@save`` lines, masked magics) are never part of a chunk.
    """
    out = []
    prev_end = lower
    for stmt in stmts:
        start = min([stmt.lineno] + [d.lineno for d in getattr(stmt, "decorator_list", [])])
        first = start
        while first - 1 > prev_end:
            above = lines[first - 2].strip()
            if (first - 1) in skip:
                if contiguous:
                    break
                first -= 1
                continue
            if above.startswith("#") or (not contiguous and not above):
                first -= 1
                continue
            break
        out.append((first, stmt.end_lineno or stmt.lineno))
        prev_end = stmt.end_lineno or stmt.lineno
    return out


def cut(lines: list[str], first: int, last: int, skip: Set[int] = frozenset()) -> str:
    """Rows ``first..last`` (1-based, inclusive) minus ``skip`` rows, blank edges trimmed."""
    text = "\n".join(line for row, line in enumerate(lines[first - 1:last], first) if row not in skip)
    return text.strip("\n")


def strip_trailing_whitespace(text: str) -> str:
    """Trailing blanks removed from every line except inside multi-line strings (their content)."""
    keep = {row - 1 for row in string_continuation_rows(text)}  # rows a string continues from
    return "\n".join(line if row in keep else line.rstrip()
                     for row, line in enumerate(text.split("\n"), 1))
