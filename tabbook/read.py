"""Stage 1, read: d2lbook-dialect Markdown text → :class:`Section`.

A pure function of the text (no I/O): code fences are found with markdown-it
(MyST's parser) so fences inside lists or quotes, and other fence languages,
are handled as Markdown does; everything between them is prose, split further
at ``:begin_tab:``/``:end_tab:``. Every cell keeps the 1-based line of the
source it came from, so every later error can say ``file.md:LINE``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

from markdown_it import MarkdownIt

from .errors import BookError, BookErrors

CellKind = Literal["code", "markdown"]

TAB_MAGIC = re.compile(r"^\s*%%tab\b(.*)$")
LEGACY_TAB = re.compile(r"^\s*#\s*@tab\b(.*)$")
FLAG_LINE = re.compile(r"^\s*#\s*@(hide_code|hide_output|hide|save)\s*$")
RAISES_LINE = re.compile(r"^\s*#\s*@raises\b\s*([A-Za-z_][\w.]*)?\s*$")
BEGIN_TAB = re.compile(r"^\s*:begin_tab:`([^`]*)`\s*$")
END_TAB = re.compile(r"^\s*:end_tab:\s*$")
LABEL_LINE = re.compile(r"^\s*:(label|eqlabel):`([^`]+)`\s*$")
REF_ROLE = re.compile(r":(numref|ref|eqref):`([^`]+)`")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
SETUP_LINES = re.compile(r"^\s*(%load_ext\s+d2lbook\.tab|tab\.interact_select\(.*\))\s*$")


@dataclass(frozen=True)
class Cell:
    """One unit of the section: a code cell or a run of prose.

    ``tabs`` is the frameworks the cell belongs to; for prose, an empty tuple
    means shared prose (every framework sees it). ``line`` is the 1-based line
    of the cell's first source line in ``path`` (for code: the opening fence).
    """

    kind: CellKind
    source: str
    path: str
    line: int
    tabs: tuple[str, ...] = ()
    flags: frozenset[str] = frozenset()
    raises: str | None = None  # expected exception class name ("" = any)

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}"


@dataclass(frozen=True)
class TocBlock:
    line: int
    entries: tuple[str, ...]
    maxdepth: int | None
    numbered: bool


@dataclass(frozen=True)
class Section:
    path: str  # relative to the book root, e.g. "chapter_gpus/devices.md"
    title: str
    cells: tuple[Cell, ...]
    toc: tuple[TocBlock, ...] = ()
    labels: dict[str, int] = field(default_factory=dict)  # name -> line
    refs: tuple[tuple[str, str, int], ...] = ()  # (role, target, line)

    @property
    def code_cells(self) -> tuple[Cell, ...]:
        return tuple(c for c in self.cells if c.kind == "code")


def parse_tab_names(text: str, tabs: tuple[str, ...], where: tuple[str, int]) -> tuple[str, ...]:
    """``"jax, tensorflow"`` → ``("jax", "tensorflow")``; ``all`` → every tab; unknown → error."""
    names = [n.strip() for n in re.split(r"[,\s]+", text.strip()) if n.strip()]
    if not names:
        raise BookError("tab line names no framework", *where)
    if "all" in names:
        return tabs
    unknown = [n for n in names if n not in tabs]
    if unknown:
        raise BookError(
            f"unknown framework {', '.join(repr(u) for u in unknown)} (config.ini tabs: {', '.join(tabs)})",
            *where,
        )
    return tuple(t for t in tabs if t in names)


def _fences(text: str) -> list[tuple[int, int, str, str]]:
    """(first_line0, end_line0_exclusive, info, content) of every fence, document order."""
    md = MarkdownIt("commonmark")
    out = []
    for tok in md.parse(text):
        if tok.type == "fence" and tok.map:
            out.append((tok.map[0], tok.map[1], tok.info.strip(), tok.content))
    return out


def _is_closed(lines: list[str], start: int, end: int) -> bool:
    opening = lines[start].lstrip()
    char = opening[0]
    width = len(opening) - len(opening.lstrip(char))
    if end - 1 <= start:
        return False
    closing = lines[end - 1].strip()
    return closing.startswith(char * width) and set(closing) == {char}


def is_code_info(info: str) -> bool:
    """True for the dialect's executable fence: ```` ```{.python .input} ````."""
    return bool(re.match(r"^\{\s*\.python\s+\.input\b", info))


def _code_cell(content: str, path: str, line: int, tabs: tuple[str, ...], default: str) -> Cell | None:
    lines = content.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    cell_tabs: tuple[str, ...] = (default,)
    flags: set[str] = set()
    raises: str | None = None
    kept: list[str] = []
    first_code_seen = False
    for i, raw in enumerate(lines):
        lineno = line + 1 + i
        m = TAB_MAGIC.match(raw) or (None if first_code_seen else LEGACY_TAB.match(raw))
        if m:
            if first_code_seen:
                raise BookError("%%tab must be the first line of its code cell", path, lineno)
            cell_tabs = parse_tab_names(m.group(1), tabs, (path, lineno))
            first_code_seen = True
            continue
        if raw.strip():
            first_code_seen = True
        f = FLAG_LINE.match(raw)
        if f and f.group(1) != "save":
            flags.add(f.group(1))
            continue
        if f:
            flags.add("save")
        elif re.search(r"#\s*@save\s*$", raw):
            flags.add("save")
        r = RAISES_LINE.match(raw)
        if r:
            raises = r.group(1) or ""
            continue
        kept.append(raw)
    body = "\n".join(kept).strip("\n")
    if body and all(SETUP_LINES.match(x) or not x.strip() for x in kept):
        return None  # the d2lbook tab-selection cell: meaningless outside Jupyter
    return Cell("code", body, path, line, cell_tabs, frozenset(flags), raises)


def _prose_cells(
    lines: list[str], start: int, path: str, tabs: tuple[str, ...], state: dict
) -> list[Cell]:
    """Split prose lines (0-based ``start``) at prose-tab markers."""
    cells: list[Cell] = []
    buf: list[str] = []
    buf_start = start
    for i, raw in enumerate(lines):
        lineno = start + i + 1
        b = BEGIN_TAB.match(raw)
        e = END_TAB.match(raw)
        if b or e:
            text = "\n".join(buf).strip("\n")
            if text.strip():
                cells.append(Cell("markdown", text, path, buf_start + 1, state["tab"] or ()))
            buf = []
            buf_start = start + i + 1
        if b:
            if state["tab"] is not None:
                raise BookError(
                    f":begin_tab: inside the tab opened at line {state['tab_line']} (tabs cannot nest)",
                    path, lineno,
                )
            state["tab"] = parse_tab_names(b.group(1), tabs, (path, lineno))
            state["tab_line"] = lineno
        elif e:
            if state["tab"] is None:
                raise BookError(":end_tab: without a matching :begin_tab:", path, lineno)
            state["tab"] = None
        else:
            buf.append(raw)
    text = "\n".join(buf).strip("\n")
    if text.strip():
        lead = len(buf) - len("\n".join(buf).lstrip("\n").split("\n"))
        cells.append(Cell("markdown", text, path, buf_start + 1 + lead, state["tab"] or ()))
    return cells


def _toc(content: str, line: int, path: str) -> TocBlock:
    maxdepth: int | None = None
    numbered = False
    entries: list[str] = []
    for i, raw in enumerate(content.split("\n")):
        s = raw.strip()
        if not s:
            continue
        if s.startswith(":maxdepth:"):
            try:
                maxdepth = int(s.split(":", 2)[2])
            except ValueError as exc:
                raise BookError(":maxdepth: needs an integer", path, line + 1 + i) from exc
        elif s.startswith(":numbered:"):
            numbered = True
        elif s.startswith(":"):
            raise BookError(f"unknown toc option {s.split()[0]}", path, line + 1 + i)
        else:
            entries.append(s)
    return TocBlock(line, tuple(entries), maxdepth, numbered)


def _scan_refs(cells: list[Cell]) -> tuple[dict[str, int], list[tuple[str, str, int]], list[BookError]]:
    labels: dict[str, int] = {}
    refs: list[tuple[str, str, int]] = []
    errors: list[BookError] = []
    for cell in cells:
        if cell.kind != "markdown":
            continue
        in_fence = False
        for i, raw in enumerate(cell.source.split("\n")):
            lineno = cell.line + i
            if raw.lstrip().startswith(("```", "~~~")):
                in_fence = not in_fence
            if in_fence:
                continue
            m = LABEL_LINE.match(raw)
            if m:
                name = m.group(2).strip()
                if name in labels:
                    errors.append(BookError(
                        f"duplicate label {name!r} (first defined at line {labels[name]})",
                        cell.path, lineno,
                    ))
                else:
                    labels[name] = lineno
            for r in REF_ROLE.finditer(raw):
                refs.append((r.group(1), r.group(2).strip(), lineno))
    return labels, refs, errors


def read_section(text: str, path: str, tabs: tuple[str, ...], default_tab: str) -> Section:
    """Parse one Markdown file of the book. Raises :class:`BookError` with ``path:LINE``."""
    if default_tab not in tabs:
        raise BookError(f"default tab {default_tab!r} is not among the tabs", path)
    text = text.replace("\r\n", "\n")
    lines = text.split("\n")
    cells: list[Cell] = []
    tocs: list[TocBlock] = []
    state: dict = {"tab": None, "tab_line": 0}
    pos = 0
    for start, end, info, content in _fences(text):
        if start < pos:  # nested fence (inside a list item already consumed)
            continue
        if not (is_code_info(info) or info == "toc"):
            continue
        if not _is_closed(lines, start, end):
            raise BookError("code fence is never closed", path, start + 1)
        cells.extend(_prose_cells(lines[pos:start], pos, path, tabs, state))
        if info == "toc":
            tocs.append(_toc(content, start + 1, path))
            cells.append(Cell("markdown", "\n".join(lines[start:end]), path, start + 1))
        else:
            if state["tab"] is not None:
                raise BookError(
                    f"code cell inside the prose tab opened at line {state['tab_line']}", path, start + 1
                )
            cell = _code_cell(content, path, start + 1, tabs, default_tab)
            if cell is not None:
                cells.append(cell)
        pos = end
    # An unclosed executable fence that markdown-it swallowed to the end of file.
    for i in range(pos, len(lines)):
        stripped = lines[i].strip()
        if stripped.startswith("```") and is_code_info(stripped[3:].strip()):
            raise BookError("code fence is never closed", path, i + 1)
    cells.extend(_prose_cells(lines[pos:], pos, path, tabs, state))
    if state["tab"] is not None:
        raise BookError(":begin_tab: is never closed by :end_tab:", path, state["tab_line"])
    title = ""
    for raw in lines:
        m = HEADING.match(raw)
        if m and len(m.group(1)) == 1:
            title = strip_slide_marks(m.group(2))
            break
    labels, refs, errors = _scan_refs(cells)
    if errors:
        raise errors[0] if len(errors) == 1 else BookErrors(errors)
    return Section(path, title, tuple(cells), tuple(tocs), labels, tuple(refs))


_SLIDE_ONLY = re.compile(r"\((~~)(.+?)\1\)|\[(~~)(.+?)\3\](?!\()", re.S)
_SLIDE_KEEP = re.compile(r"\(\*\*(.+?)\*\*\)|\[\*\*(.+?)\*\*\](?!\()", re.S)


def strip_slide_marks(text: str) -> str:
    """Drop slide-only text ``(~~…~~)``/``[~~…~~]``; unwrap ``(**…**)``/``[**…**]``."""
    text = _SLIDE_ONLY.sub("", text)
    return _SLIDE_KEEP.sub(lambda m: m.group(1) if m.group(1) is not None else m.group(2), text)
