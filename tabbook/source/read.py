"""Read: d2lbook-dialect Markdown text → :class:`~tabbook.source.model.Section`.

A pure function of the text (no I/O). The text is parsed once, with
markdown-it (MyST's parser) taught the dialect's block constructs
(:func:`tabbook.source.constructs.dialect_plugin`, from the construct table): code fences inside lists or
quotes, and other fence languages, are handled as Markdown does; everything
between code cells is prose, split further at the ``:begin_tab:``/``:end_tab:``
lines and the solution markers (``<!-- solution … -->`` / ``<!-- end solution -->``) the
parse found; every cell between a solution's markers carries the solution's number. Every cell keeps the 1-based line of the source it came
from, so every later error can say ``file.md:LINE``, and every prose cell keeps
the text it shows (slide marks stripped) and the blocks the parse found in it
(:class:`~tabbook.source.model.Block`), from which render emits MyST without parsing again."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, NotRequired, TypedDict

from tabbook.errors import BookError, raise_all
from tabbook.problems import Problem
from tabbook.source.constructs import (
    CONSTRUCTS,
    Kind,
    LineRule,
    Marker,
    Shape,
    token_kind,
)
from tabbook.source.dialect import (
    BEGIN_TAB,
    FLAG_LINE,
    IMAGE_LINE,
    LABEL_LINE,
    LEGACY_TAB,
    MAX_NESTING,
    RAISES_LINE,
    REF_ROLE,
    SAVE_MARK,
    SETUP_LINES,
    TAB_MAGIC,
    TAB_NAME_SEP,
    TOC_OPTIONS,
    begin_tab_oddity,
    find_roles,
    strip_slide_marks,
)
from tabbook.source.fences import cell_blocks, mend_fences, parse_blocks
from tabbook.source.model import Block, Cell, CellKind, Section, TocBlock
from tabbook.source.selected import unknown_selected

if TYPE_CHECKING:  # parsed pages only: a no-op build parses none
    from markdown_it.token import Token

__all__ = ["Block", "Cell", "CellKind", "Section", "TocBlock", "read_section"]

class _ReadState(TypedDict):
    """Where reading a page's prose stands, between its markers."""

    tab: tuple[str, ...] | None  # the open prose tab's frameworks (() shared, None no tab open)
    shared: bool  # the open tab is d2lbook's tab of no framework
    tab_all: NotRequired[bool]  # the open tab names every framework
    tab_line: int  # where the open tab began
    errors: list[BookError]
    solution: int  # the open solution's number (0: none)
    solutions: dict[int, tuple[str, int]]  # number -> (summary, line of its opening marker)
    solution_rows: list[tuple[int, int]]  # (opening line, closing line) of each closed solution


def _names_all(text: str) -> bool:
    return "all" in (n.strip() for n in TAB_NAME_SEP.split(text.strip()))


def section_tabs(cells: list[Cell], tabs: tuple[str, ...], default_tab: str) -> list[Cell]:
    """Narrow ``all`` cells to the tabs the section exists for, as d2lbook does.

    A section with code exists for a tab other than the default only when one of its cells
    (code or prose) names that tab; ``all`` alone does not. d2lbook skips the section for
    the other tabs: nothing runs, nothing is saved into their library, no tab on the page.
    So d2l-en's ``hybridize.md``, with ``all`` cells and MXNet, PyTorch and TensorFlow cells,
    has no JAX version, and ``d2l/jax.py`` gets none of its saved code.
    """
    if not any(c.kind == "code" for c in cells):
        return cells
    named = {default_tab} | {t for c in cells if c.tabs and not c.every_tab for t in c.tabs}
    present = tuple(t for t in tabs if t in named)
    if len(present) == len(tabs):
        return cells
    return [replace(c, tabs=present) if c.every_tab else c for c in cells]


def parse_tab_names(text: str, tabs: tuple[str, ...], where: tuple[str, int]) -> tuple[str, ...]:
    """``"jax, tensorflow"`` → ``("jax", "tensorflow")``; ``all`` → every tab; unknown → a
    problem of kind :attr:`~tabbook.problems.Problem.UNKNOWN_TAB`."""
    names = [n.strip() for n in TAB_NAME_SEP.split(text.strip()) if n.strip()]
    if not names:
        raise BookError("tab line names no framework", *where, kind=Problem.UNKNOWN_TAB)
    if "all" in names:
        return tabs
    unknown = [n for n in names if n not in tabs]
    if unknown:
        raise BookError(
            f"unknown framework {', '.join(repr(u) for u in unknown)} (config.ini tabs: {', '.join(tabs)})",
            *where, kind=Problem.UNKNOWN_TAB,
        )
    return tuple(t for t in tabs if t in names)


def _title(tokens: list[Token]) -> str:
    """The first heading's text, at any level (``#``, ``##``, a setext one), as Sphinx makes the
    first heading of a page its title under d2lbook (notedown and pandoc keep it)."""
    for i, tok in enumerate(tokens):
        if tok.type == "heading_open" and tok.level == 0 and i + 1 < len(tokens):
            return tokens[i + 1].content.strip()
    return ""


def _tab_names(text: str, tabs: tuple[str, ...], where: tuple[str, int], errors: list[BookError]) -> tuple[str, ...]:
    """:func:`parse_tab_names`, the problem recorded instead of raised: reading goes on with the
    names that are known, as d2lbook does (a cell of no known tab is in none of its notebooks),
    but in a book of one tab, where d2lbook (a book without tabs) shows every cell."""
    try:
        return parse_tab_names(text, tabs, where)
    except BookError as exc:
        known = tuple(t for t in tabs if t in {n.strip() for n in TAB_NAME_SEP.split(text)})
        one = len(tabs) == 1
        errors.append(BookError(exc.message + (": shown in the book's one tab" if one and not known else
                                               "" if known else ": the cell is in no tab, left out"),
                                exc.path, exc.line, kind=exc.kind))
        return known or (tabs if one else ())


def _mixed_indentation(lines: list[str]) -> int | None:
    """The first row indented differently (tab vs space) from the cell's first indented row."""
    first: str | None = None
    for row, line in enumerate(lines):
        indent = line[:len(line) - len(line.lstrip(" \t"))]
        if not indent or not line.strip():
            continue
        kinds = set(indent)
        if len(kinds) > 1:
            return row
        if first is None:
            first = indent[0]
        elif indent[0] != first:
            return row
    return None


def _code_cell(content: str, path: str, line: int, tabs: tuple[str, ...], default: str,
               errors: list[BookError]) -> Cell | None:
    """One code cell; problems that leave the rest of the file readable go to ``errors``."""
    lines = content.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    cell_tabs: tuple[str, ...] = (default,)
    every_tab = False
    flags: set[str] = set()
    raises: str | None = None
    kept: list[str] = []
    kept_lines: list[int] = []
    first_code_seen = tab_seen = False
    for i, raw in enumerate(lines):
        lineno = line + 1 + i
        m = TAB_MAGIC.match(raw) or (None if first_code_seen else LEGACY_TAB.match(raw))
        if m is None and first_code_seen and (later := LEGACY_TAB.match(raw)):
            # A tab mark later in the cell is a mark, not code: d2lbook drops it from the code it
            # shows, and where no earlier line named the cell's tabs, takes them from it.
            if not tab_seen:
                cell_tabs = _tab_names(later.group(1), tabs, (path, lineno), errors)
                every_tab, tab_seen = _names_all(later.group(1)), True
            continue
        if m:
            if first_code_seen:
                # d2lbook looks for the mark anywhere in the cell: so do we, and say so.
                errors.append(BookError("%%tab must be the first line of its code cell", path, lineno,
                                        kind=Problem.TAB_NOT_FIRST))
                if not tab_seen:
                    cell_tabs = _tab_names(m.group(1), tabs, (path, lineno), errors)
                    every_tab, tab_seen = _names_all(m.group(1)), True
                continue
            cell_tabs = _tab_names(m.group(1), tabs, (path, lineno), errors)
            every_tab = _names_all(m.group(1))
            first_code_seen = tab_seen = True
            continue
        if raw.strip():
            first_code_seen = True
        f = FLAG_LINE.match(raw)
        if f and f.group(1) != "save":
            flags.add(f.group(1))
            continue
        if f:
            flags.add("save")
        elif SAVE_MARK.search(raw):
            flags.add("save")
        r = RAISES_LINE.match(raw)
        if r:
            raises = r.group(1) or ""
            continue
        kept.append(raw)
        kept_lines.append(lineno)
    # Drop leading and trailing blank lines (as ``strip("\n")`` would), keeping the line map.
    while kept and kept[0] == "":
        kept.pop(0)
        kept_lines.pop(0)
    while kept and kept[-1] == "":
        kept.pop()
        kept_lines.pop()
    body = "\n".join(kept)
    if is_setup_cell(kept) or not cell_tabs:
        return None  # the d2lbook tab-selection cell (meaningless outside Jupyter), or a cell of no tab
    errors.extend(BookError(message, path, kept_lines[row]) for row, message in unknown_selected(body, tabs))
    mixed = _mixed_indentation(kept)
    if mixed is not None:
        errors.append(BookError("the code cell indents with both tabs and spaces; Python reads that "
                                "ambiguously: use spaces only", path, kept_lines[mixed]))
    return Cell("code", body, path, line, cell_tabs, frozenset(flags), raises, tuple(kept_lines),
                every_tab=every_tab)


def is_setup_cell(lines: list[str]) -> bool:
    """d2lbook's tab-selection cell: ``%load_ext d2lbook.tab`` and ``tab.interact_select(...)``.

    Only such lines, blank lines and comments (d2l-en adds ``#required_libs("gym==0.21.0")``,
    which d2lbook reads for its Colab notebooks), at least one of them a setup line. d2lbook
    drops every cell with a ``%load_ext d2lbook.tab`` line; a cell with other code in it is
    kept whole here.
    """
    setup = False
    for line in lines:
        if SETUP_LINES.match(line):
            setup = True
        elif line.strip() and not line.lstrip().startswith("#"):
            return False
    return setup


def _prose_cells(
    lines: list[str], start: int, path: str, tabs: tuple[str, ...], state: _ReadState,
    markers: dict[int, tuple[Marker, Token]], blocks: tuple[Block, ...],
) -> list[Cell]:
    """Split prose lines (0-based ``start``) at the prose-tab and solution markers the parse found.

    ``markers`` maps 0-based lines to the marker action of the container line there
    (:class:`~tabbook.source.constructs.Marker`) and its token (never inside a fence: a marker
    there is quoted text).
    """
    cells: list[Cell] = []
    buf: list[str] = []
    buf_start = start
    # The buffer starts with text from a marker's own line (``:begin_tab:`x` Text``), which the
    # page's parse took as part of the marker: its blocks are found by parsing the cell alone.
    fresh = False

    def flush() -> None:
        lead = 0
        while lead < len(buf) and buf[lead] == "":
            lead += 1
        text = "\n".join(buf).strip("\n")
        # a prose tab of no known tab is left out (a shared one, d2lbook's tab of none, is not)
        if text.strip() and (state["tab"] != () or state["shared"]):
            first = buf_start + lead
            found = parse_blocks(text)[1] if fresh and lead == 0 else \
                cell_blocks(blocks, first, first + text.count("\n") + 1)
            cells.append(prose_cell(text, path, first + 1, state["tab"] or (), found,
                                    every_tab=state.get("tab_all", False), solution=state["solution"]))

    for i, raw in enumerate(lines):
        row = start + i
        lineno = row + 1
        action, marker = markers.get(row, (None, None))
        if marker is not None:
            flush()
            buf = []
            buf_start = row + 1
            fresh = False
        if marker is None or action is None:
            buf.append(raw)
        elif action in (Marker.OPEN_SOLUTION, Marker.CLOSE_SOLUTION):
            _solution_marker(marker, action is Marker.OPEN_SOLUTION, lineno, path, state)
        elif action in (Marker.OPEN_TAB, Marker.OPEN_SHARED):
            if state["tab"] is not None:
                # d2lbook reads this as "the open tab ends here"; so do we, and say so.
                state["errors"].append(BookError(
                    f":begin_tab: is never closed by :end_tab:; it ends at line {lineno}, "
                    "where the next :begin_tab: opens", path, state["tab_line"], kind=Problem.UNCLOSED_TAB))
            state["tab_line"], state["shared"] = lineno, action is Marker.OPEN_SHARED
            if state["shared"]:  # d2lbook's tab of no framework: shared prose up to :end_tab:
                state["tab"], state["tab_all"] = (), False
                continue
            state["tab"] = _tab_names(marker.info, tabs, (path, lineno), state["errors"])
            state["tab_all"] = _names_all(marker.info)
            odd = begin_tab_oddity(raw)
            if odd is not None:
                # d2lbook's pattern reads such a line as a marker too, but loses its framework (a
                # space before the backtick: the prose is shown to every framework) or the text
                # after it; tabbook reads the marker as meant, and keeps the text.
                state["errors"].append(BookError(f":begin_tab: with {odd}: read as :begin_tab:`{marker.info}`",
                                                 path, lineno, kind=Problem.TAB_MARKER))
            rest = BEGIN_TAB.match(raw)
            if rest is not None and rest.group(2):
                buf, buf_start, fresh = [rest.group(2)], row, True
        else:  # Marker.CLOSE_TAB
            if state["tab"] is None:  # d2lbook drops the line (it ends a prose cell)
                state["errors"].append(BookError(":end_tab: without a matching :begin_tab:", path, lineno,
                                                 kind=Problem.STRAY_END_TAB))
            state["tab"], state["shared"] = None, False
    flush()
    return cells


def _solution_marker(marker: Token, opening: bool, lineno: int, path: str, state: _ReadState) -> None:
    """Open or close a solution at ``lineno``; the problems of an unbalanced or misplaced marker."""
    kind = token_kind(marker)
    name = CONSTRUCTS[kind].spelling if kind is not None else ""
    if state["tab"] is not None:
        state["errors"].append(BookError(
            f"{name} inside the prose tab opened at line {state['tab_line']}: close the tab first",
            path, lineno))
        return
    if opening:
        if state["solution"]:
            state["errors"].append(BookError(
                f"the solution opened at line {state['solutions'][state['solution']][1]} is not "
                "closed by <!-- end solution --> before this one opens", path, lineno))
        number = len(state["solutions"]) + 1
        state["solutions"][number] = (marker.info.strip(), lineno)
        state["solution"] = number
    elif not state["solution"]:
        state["errors"].append(BookError("<!-- end solution --> without a matching <!-- solution -->",
                                         path, lineno))
    else:
        state["solution_rows"].append((state["solutions"][state["solution"]][1], lineno))
        state["solution"] = 0


def prose_cell(text: str, path: str, line: int, tabs: tuple[str, ...], blocks: tuple[Block, ...],
               every_tab: bool = False, solution: int = 0) -> Cell:
    """A prose cell, with the text the book shows (slide marks stripped, here and only here)
    and its blocks: the page parse's, unless stripping could change the structure (a line's
    start, end, table pipes, math or emptiness changed, or rows went away), when the stripped
    text is parsed on its own. So render emits MyST from what reading found, never parsing."""
    prose = strip_slide_marks(text)
    if prose != text:
        before, after = text.split("\n"), prose.split("\n")
        if len(before) != len(after) or any(a != b and _shape(a) != _shape(b)
                                            for a, b in zip(before, after, strict=True)):
            blocks = parse_blocks(prose)[1]
    return Cell("markdown", text, path, line, tabs, prose=prose, blocks=blocks, every_tab=every_tab,
                solution=solution)


def _shape(line: str) -> tuple[object, ...]:
    """What of a line decides the blocks around it."""
    s = line.strip()
    return (line[:len(line) - len(line.lstrip())], s[:1], s[-1:], s.count("|"), s.count("$$"), s.count("`"),
            bool(IMAGE_LINE.match(line)))


def toc_option(raw: str) -> tuple[str, str] | str | None:
    """A toc block's option line → ``(name, value)``; the reason it is read past when it is not
    one of Sphinx's toctree options (:data:`~tabbook.source.dialect.TOC_OPTIONS`); None when the
    line is no option (an entry)."""
    s = raw.strip()
    if not s.startswith(":"):
        return None
    name, _, value = s[1:].partition(":")
    if name not in TOC_OPTIONS:
        return f"unknown toc option :{name}: (Sphinx's toctree has {', '.join(sorted(TOC_OPTIONS))})"
    if TOC_OPTIONS[name] is int and not value.strip().isdigit():
        return f":{name}: needs an integer"
    return name, value.strip()


def _toc(content: str, line: int, path: str, errors: list[BookError]) -> TocBlock:
    maxdepth: int | None = None
    numbered = False
    entries: list[str] = []
    entry_lines: list[int] = []
    for i, raw in enumerate(content.split("\n")):
        if not raw.strip():
            continue
        option = toc_option(raw)
        if isinstance(option, str):  # d2lbook's Sphinx would lose the whole toc: read past it
            errors.append(BookError(f"{option}: left out", path, line + 1 + i, kind=Problem.TOC_OPTION))
        elif option is not None:
            maxdepth = int(option[1]) if option[0] == "maxdepth" else maxdepth
            numbered = numbered or option[0] == "numbered"
        else:
            entries.append(raw.strip())
            entry_lines.append(line + 1 + i)
    return TocBlock(line, tuple(entries), maxdepth, numbered, tuple(entry_lines))


def _scan_refs(
    tokens: list[Token], lines: list[str], quoted: set[int], path: str,
) -> tuple[dict[str, int], list[tuple[str, str, int]], list[BookError]]:
    """Labels (the parse's ``:label:``/``:eqlabel:`` lines) and references (roles outside fences)."""
    labels: dict[str, int] = {}
    refs: list[tuple[str, str, int]] = []
    errors: list[BookError] = []
    for tok in tokens:
        kind = token_kind(tok)
        if kind is Kind.MATH and tok.meta.get("eqlabel") and tok.map:
            lineno, name = tok.map[1], tok.meta["eqlabel"]  # ``$$ :eqlabel:`name``` on the closing line
        elif (kind is not Kind.ATTR or tok.info == "width" or not tok.map
              or not LABEL_LINE.match(lines[tok.map[0]])):
            continue  # (behind a quote's ``>`` the line is not a label line)
        else:
            lineno, name = tok.map[0] + 1, tok.content
        if name in labels:
            errors.append(BookError(f"duplicate label {name!r} (first defined at line {labels[name]})", path, lineno,
                                    kind=Problem.DUPLICATE_LABEL))
        else:
            labels[name] = lineno
    for tok in tokens:  # indented code and HTML blocks are text too, like fences
        if token_kind(tok) in (Kind.INDENTED, Kind.HTML) and tok.map:
            quoted.update(range(*tok.map))
    for row, raw in enumerate(lines):
        if row not in quoted and ":" in raw:
            for r in find_roles(raw, REF_ROLE):
                refs.append((r.group("role"), r.group("target").strip(), row + 1))
    return labels, refs, errors


def read_section(text: str, path: str, tabs: tuple[str, ...], default_tab: str) -> Section:
    """Parse one Markdown file of the book. Raises :class:`BookError` with ``path:LINE``.

    Every error carries a line, except a ``default_tab`` that is not among
    ``tabs`` (a configuration error: ``line`` is None) and :class:`BookErrors`
    (several duplicate labels), whose ``errors`` each carry one.
    """
    if default_tab not in tabs:
        raise BookError(f"default tab {default_tab!r} is not among the tabs", path)
    # markdown-it counts a lone CR as a line break too: normalise so that its
    # line numbers and ours agree.
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    lines = text.split("\n")
    cells: list[Cell] = []
    tocs: list[TocBlock] = []
    state: _ReadState = {"tab": None, "shared": False, "tab_line": 0, "errors": [], "solution": 0, "solutions": {},
                             "solution_rows": []}
    lines, tokens, blocks, fences = mend_fences(lines, path, state["errors"])
    if (deep := next((t.map[0] for t in tokens if t.level > MAX_NESTING and t.map and t.type != "inline"),
                     None)) is not None:
        raise BookError(f"blocks nested more than {MAX_NESTING} deep (a quote counts one level, a list two): "
                        "no Markdown parser keeps what is deeper; flatten it", path, deep + 1)
    markers = {t.map[0]: (c.marker, t) for t in tokens if t.map and (kind := token_kind(t)) is not None
               and (c := CONSTRUCTS[kind]).marker is not None and isinstance(c.rule, LineRule)
               and c.rule.pattern.match(lines[t.map[0]])}
    quoted: set[int] = set()  # rows of every fence: no reference there is one
    for fence in fences:
        if not fence.closed:
            raise BookError("code fence is never closed", path, fence.start + 1)
        quoted.update(range(fence.start, fence.end))
    pos = 0
    for fence in fences:
        start, end = fence.start, fence.end
        shape = CONSTRUCTS[fence.kind].shape
        if start < pos or shape is Shape.PROSE:
            continue
        cells.extend(_prose_cells(lines[pos:start], pos, path, tabs, state, markers, blocks))
        if shape is Shape.TOC:
            tocs.append(_toc(fence.content, start + 1, path, state["errors"]))
            cells.append(prose_cell("\n".join(lines[start:end]), path, start + 1, (),
                                    cell_blocks(blocks, start, end)))
        elif shape is Shape.CODE:
            if state["tab"] is not None:  # d2lbook's prose tab ends at the code cell
                state["errors"].append(BookError(
                    f"code cell inside the prose tab opened at line {state['tab_line']}: the tab ends here",
                    path, start + 1, kind=Problem.CODE_IN_PROSE_TAB))
                state["tab"], state["shared"] = None, False
            cell = _code_cell(fence.content, path, start + 1, tabs, default_tab, state["errors"])
            if cell is not None:
                cells.append(replace(cell, solution=state["solution"]) if state["solution"] else cell)
        else:  # the table gives no fence another shape (constructs.check_table)
            raise ValueError(f"{fence.kind}: a fence of shape {shape}")
        pos = end
    cells.extend(_prose_cells(lines[pos:], pos, path, tabs, state, markers, blocks))
    if state["tab"] is not None:
        state["errors"].append(BookError(":begin_tab: is never closed by :end_tab:: it ends with the page", path,
                                         state["tab_line"], kind=Problem.UNCLOSED_TAB))
    if state["solution"]:
        state["errors"].append(BookError("<!-- solution --> is never closed by <!-- end solution -->", path,
                                         state["solutions"][state["solution"]][1]))
    state["errors"] += _headings_in_solutions(tokens, state["solution_rows"], path)
    cells = section_tabs(cells, tabs, default_tab)
    labels, refs, errors = _scan_refs(tokens, lines, quoted, path)
    problems = sorted([*state["errors"], *errors], key=lambda e: e.line or 0)
    # Every independent problem of the file in one message, when one of them stops reading
    # (one of no kind); the others are read past and kept on the section (tabbook.problems).
    if any(e.kind is None for e in problems):
        raise_all(problems)
    title = _title(tokens)
    return Section(path, strip_slide_marks(title), tuple(cells), tuple(tocs), labels, tuple(refs),
                   tuple(problems), dict(state["solutions"]))


def _headings_in_solutions(tokens: list[Token], spans: list[tuple[int, int]], path: str) -> list[BookError]:
    """A heading between a solution's markers (1-based lines, both exclusive) would start a
    section of the page inside the part a reader opens and closes: refused, at its line."""
    errors = []
    for tok in tokens:
        if tok.type == "heading_open" and tok.map:
            line = tok.map[0] + 1
            for opened, closed in spans:
                if opened < line < closed:
                    errors.append(BookError(f"a heading inside the solution opened at line {opened}: "
                                            "a solution holds prose and code, not sections", path, line))
    return errors

