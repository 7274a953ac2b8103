"""Dialect prose → MyST Markdown (what myst-nb parses). Pure functions of text.

``:label:`` after a heading becomes a ``(label)=`` target above it; an image
(its alt text on one line or several) followed by ``:label:``/``:width:``, blank
lines between allowed as d2lbook allows them, becomes a ``{figure}``; ``$$…$$`` followed
by ``:eqlabel:`` (on its own line or after the closing ``$$``) becomes labelled
dollar math, and display math that continues a paragraph (a list item's line)
starts a block of its own; a table with a ``:Caption`` paragraph above it (one line or
several, as pandoc reads a table caption) becomes a ``{table}``, named by a ``:label:`` in the
caption paragraph or below the table when there is one, a ``~~~`` fence when the caption holds
a role (a backtick fence's info string may hold no backtick); inline roles map to Sphinx roles; a
```` ```toc ```` block becomes a ``{toctree}``, an ```` ```eval_rst ```` block an
``{eval-rst}`` one, a ``:bibliography:`` line a ``{bibliography}``. Slide marks
were removed when the page was read (``Cell.prose``).

Nothing here finds fences, math or tables in the text: the structure is the
blocks of the dialect's one markdown-it parse (:class:`~tabbook.source.read.Block`),
recorded on each prose cell by the reader (:func:`cell_to_myst`), or parsed
from a text given on its own (:func:`to_myst`)."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from tabbook.source.constructs import CONSTRUCTS, Emit, Kind
from tabbook.source.dialect import (
    ATTR_LINE,
    IMAGE_PARAGRAPH,
    MATH_EQLABEL,
    ROLE,
    ROLE_MAP,
    TABLE_CAPTION,
    strip_slide_marks,
    sub_roles,
)
from tabbook.source.fences import parse_blocks
from tabbook.source.model import Block, Cell
from tabbook.source.read import toc_option

#: ASCII punctuation: CommonMark lets a backslash make each of these a literal character.
_PUNCTUATION = re.compile(r"([!-/:-@\[-`{-~])")
#: Characters that would end the line or the paragraph a value is put in.
_BREAKS = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]+")


def myst_text(value: object) -> str:
    """``value`` as MyST that renders as exactly its text: every ASCII punctuation character
    escaped (no role, directive, math, link, HTML or fence can start), line breaks and control
    characters turned into one space (it stays inside its line).

    Why: what a freeze entry records (its provenance) is data anyone who can change
    ``_freeze/`` writes; pasted into a page as it is, ``<img onerror=…>`` would run in readers'
    browsers, a ```` ```{literalinclude} ```` publish a file of the build machine, and ``$\\input{…}$``
    read one into the PDF. Sphinx's HTML and LaTeX writers escape text, so text it stays."""
    return _PUNCTUATION.sub(r"\\\1", _BREAKS.sub(" ", str(value)))


def convert_roles(line: str) -> str:
    def sub(m: re.Match[str]) -> str:
        role, target = m.group("role"), m.group("target")
        if role in ("cite", "citet", "citep"):
            # A bib key holds no whitespace: what a typo or a wrapped line put inside one is
            # dropped (sphinxcontrib-bibtex stops the whole build on such a key).
            target = ",".join("".join(t.split()) for t in target.split(",") if t.strip())
        return f"{{{ROLE_MAP[role]}}}`{target}`"

    return sub_roles(line, sub, ROLE)  # a role in a code span or a comment is text


def _fence_len(text: str) -> int:
    runs = [len(m.group(0)) for m in re.finditer(r"`{3,}", text)]
    return max([3, *runs]) + 1


_FENCE_OPENER = re.compile(r"^(\s*)(`{3,}|~{3,})(.*)$")


def _longer_fence(lines: list[str], block: Block) -> dict[int, str]:
    """New opening and closing rows for a fence that holds a bare fence line at least as long
    as its own: the dialect nests fences by length (d2lbook's reading), CommonMark would end
    the block there, so the MyST gets a fence longer than any inside. Empty when not needed."""
    m = _FENCE_OPENER.match(lines[block.start]) if block.start < len(lines) else None
    if m is None or block.end - block.start < 2:
        return {}
    char, own = m.group(2)[0], len(m.group(2))
    bare = re.compile(rf"^\s*({re.escape(char)}{{3,}})\s*$")
    inner = [len(b.group(1)) for row in lines[block.start + 1:block.end - 1] if (b := bare.match(row))]
    if not any(k >= own for k in inner):
        return {}
    run = char * (max(inner) + 1)
    closer = lines[block.end - 1]
    return {block.start: f"{m.group(1)}{run}{m.group(3)}",
            block.end - 1: f"{closer[:len(closer) - len(closer.lstrip())]}{run}"}


def toc_to_toctree(block: str) -> str:
    """A ```` ```toc ```` block as a ``{toctree}``; an option Sphinx's toctree does not take
    (which would lose the whole toc) is left out, as reading reported
    (:func:`tabbook.source.read.toc_option`)."""
    lines = block.split("\n")
    body = [row for row in lines[1:-1] if not isinstance(toc_option(row), str)]
    return "\n".join(["```{toctree}", *body, "```"])


def _targets(blocks: Sequence[Block]) -> dict[int, Block | None]:
    """Row of each attribute line → the block it describes: the block before it in its container."""
    out: dict[int, Block | None] = {}
    for k, block in enumerate(blocks):
        if block.kind is not Kind.ATTR:
            continue
        target = None
        for j in range(k - 1, -1, -1):  # no slice: copying blocks[:k] per line was quadratic
            prev = blocks[j]
            if prev.level < block.level:
                break  # the container's start: nothing before the line in it
            if prev.level == block.level and prev.kind is not Kind.ATTR:
                target = prev
                break
        out[block.start] = target
    return out


def emit_myst(lines: list[str], blocks: Sequence[Block]) -> str:
    """MyST for prose ``lines`` whose structure the dialect parse gave as ``blocks``."""
    return emit_myst_rows(lines, blocks)[0]


def emit_myst_rows(lines: list[str], blocks: Sequence[Block]) -> tuple[str, list[int]]:
    """:func:`emit_myst`, and for each line of the result the 0-based input row it came from.

    The row map is what lets a Sphinx warning about the generated page be reported at the
    Markdown line the author wrote (:mod:`tabbook.render.diagnostics`).

    Rows in literal fences and display math are copied; a toc fence becomes a
    ``{toctree}``; an attribute line is applied to the block before it; roles in
    every other row are converted. Output rows are tagged with the row that owns
    them, so a label lands above its block even after earlier rewrites of it.
    """
    return _Emitter(lines, blocks).emit()


class RowWriter:
    """The MyST being written, each output row with the source row that owns it (-1: the
    cell's top). Emitters append rows, or rewrite everything from a block's first row on (a
    label above it, a figure or table made of it)."""

    def __init__(self) -> None:
        self.out: list[str] = []
        self.owner: list[int] = []
        # source row -> output index of its first row: anchor() scanned every row for every
        # label (100,000 labelled headings: quadratic); kept as rows are added and replaced.
        self.first: dict[int, int] = {}

    def add(self, text: str, row: int) -> None:
        self.first.setdefault(row, len(self.out))
        self.out.append(text)
        self.owner.append(row)

    def anchor(self, row: int) -> int:
        """Output index of the first row owned by source row ``row`` (0 when there is none)."""
        return self.first.get(row, 0)

    def replace_from(self, at: int, rows: list[str], row: int | list[int]) -> None:
        """Output rows ``at`` onwards become ``rows``, all owned by ``row`` (or each by its own)."""
        owners = row if isinstance(row, list) else [row] * len(rows)
        if len(owners) != len(rows):
            raise ValueError("one owner per row")
        for k in range(at, len(self.owner)):
            if self.first.get(self.owner[k]) == k:
                del self.first[self.owner[k]]
        self.out[at:] = rows
        self.owner[at:] = owners
        for k, owner in enumerate(owners, at):
            self.first.setdefault(owner, k)

    def result(self) -> tuple[str, list[int]]:
        """The text (blank rows at either end dropped) and each of its lines' source row."""
        rows: list[int] = []
        for text, row in zip(self.out, self.owner, strict=True):
            rows += [max(row, 0)] * (text.count("\n") + 1)
        joined = "\n".join(self.out)
        lead = len(joined) - len(joined.lstrip("\n"))
        text = joined.strip("\n")
        return text, rows[lead:lead + text.count("\n") + 1]


class _Emitter:
    """One pass over a prose cell's rows: what each block kind starts is found first
    (:meth:`_scan`), then each row goes to the emitter of the block it is in, which writes its
    MyST and says where the next row to emit is."""

    def __init__(self, lines: list[str], blocks: Sequence[Block]) -> None:
        self.lines, self.blocks = lines, blocks
        self.w = RowWriter()
        self.copied: set[int] = set()
        self.refence: dict[int, str] = {}  # fence rows rewritten longer (:func:`_longer_fence`)
        self.math: set[int] = set()
        self.tocs: dict[int, int] = {}
        self.attrs: dict[int, Block] = {}
        self.rst: set[int] = set()  # opening rows of ```eval_rst fences
        self.bibliography: set[int] = set()
        self.math_label: dict[int, str] = {}  # closing row of display math -> the :eqlabel: on it
        self.math_break: dict[int, str] = {}  # first row of display math that continues a paragraph -> blank row
        self.after: dict[int, Block] = {}  # row of an attribute line -> the block after it
        self.tables: dict[int, Block] = {}  # first row of a pipe table -> its block
        self.figured: set[int] = set()  # image rows already turned into figures
        self._scan()
        self.targets = _targets(blocks)
        self.captions = _table_captions(lines, blocks)  # table's first row -> the caption paragraph above it
        labelled = {t.start for r, t in self.targets.items() if t is not None and self.attrs[r].attr == "label"}
        # a captioned table no :label: names (one that is gets its {table} from _attribute); at the top
        # level only: the {table} written has no container prefix
        self.caption_only = {r: self.tables[r] for r, cap in self.captions.items()
                             if r not in labelled and cap.level == 0}

    def _scan(self) -> None:
        """Each block claims its rows through the emitter its construct names
        (:data:`EMITTERS`, :attr:`~tabbook.source.constructs.Construct.emit`)."""
        for k, b in enumerate(self.blocks):
            EMITTERS[CONSTRUCTS[b.kind].emit](self, k, b)

    def _claim_lines(self, k: int, b: Block) -> None:
        """Rows written one by one, roles converted: nothing to claim."""

    def _claim_copied(self, k: int, b: Block) -> None:
        self.copied.update(range(b.start, b.end))

    def _claim_literal(self, k: int, b: Block) -> None:
        self._claim_copied(k, b)
        self.refence.update(_longer_fence(self.lines, b))

    def _claim_eval_rst(self, k: int, b: Block) -> None:
        self._claim_literal(k, b)
        self.rst.add(b.start)

    def _claim_bibliography(self, k: int, b: Block) -> None:
        self.bibliography.add(b.start)

    def _claim_math(self, k: int, b: Block) -> None:
        lines, blocks = self.lines, self.blocks
        self.math.update(range(b.start, b.end))
        if b.attr:
            self.math_label[b.end - 1] = b.attr
        before = blocks[k - 1] if k else None
        if (before is not None and before.kind is Kind.TEXT and before.level == b.level
                and before.end == b.start and b.start < len(lines)):
            # MyST's $$ cannot interrupt a paragraph: a blank row (inside the same container) first
            row = lines[b.start]
            self.math_break[b.start] = row[:row.find("$$")].rstrip() if "$$" in row else ""

    def _claim_toctree(self, k: int, b: Block) -> None:
        self.tocs[b.start] = b.end

    def _claim_table(self, k: int, b: Block) -> None:
        self.tables[b.start] = b

    def _claim_attribute(self, k: int, b: Block) -> None:
        self.attrs[b.start] = b
        if k + 1 < len(self.blocks):
            self.after[b.start] = self.blocks[k + 1]

    def emit(self) -> tuple[str, list[int]]:
        i, n = 0, len(self.lines)
        while i < n:
            if i in self.tocs:
                i = self._toc(i)
            elif i in self.rst:
                i = self._eval_rst(i)
            elif i in self.bibliography:
                i = self._bibliography(i)
            elif i in self.copied or i in self.math:
                i = self._copied(i)
            elif i in self.attrs:
                i = self._attribute(i)
            elif i in self.caption_only:
                i = self._unlabelled_table(i)
            else:
                self.w.add(convert_roles(self.lines[i]), i)
                i += 1
        return self.w.result()

    def _toc(self, i: int) -> int:
        end = min(max(self.tocs[i], i + 2), len(self.lines))
        self.w.add(toc_to_toctree("\n".join(self.lines[i:end])), i)
        return end

    def _eval_rst(self, i: int) -> int:
        raw = self.refence.get(i, self.lines[i])
        m = re.match(r"^(\s*)(`{3,}|~{3,})", raw)
        self.w.add(f"{m.group(1)}{m.group(2)}{{eval-rst}}" if m else raw, i)
        return i + 1

    def _bibliography(self, i: int) -> int:
        # sphinxcontrib-bibtex's directive; with no file given it lists the cited entries of
        # the conf's bibtex_bibfiles (the file the dialect names is config's business).
        raw = self.refence.get(i, self.lines[i])
        indent = raw[:len(raw) - len(raw.lstrip())]
        self.w.add(f"{indent}```{{bibliography}}", i)
        self.w.add(f"{indent}```", i)
        return i + 1

    def _copied(self, i: int) -> int:
        """A row of a literal block or display math: as it is (a fence made longer, a math
        label written after its closing ``$$``, a blank row before math in a paragraph)."""
        raw = self.refence.get(i, self.lines[i])
        if i in self.math_break:
            self.w.add(self.math_break[i], i)
        if i in self.math_label:
            raw = MATH_EQLABEL.sub(f"$$ ({self.math_label[i]})".replace("\\", "\\\\"), raw)
        self.w.add(raw, i)
        return i + 1

    def _attribute(self, i: int) -> int:
        """An attribute line (``:label:``, ``:width:``, ``:eqlabel:``), applied to its block."""
        attr, target = self.attrs[i], self.targets.get(i)
        t_row = target.start if target is not None else -1
        kind, value = attr.attr, _attr_value(self.lines[i])
        if (target is not None and target.kind is Kind.IMAGE and t_row not in self.figured and kind != "eqlabel"
                and all(r in self.attrs or not self.lines[r].strip() for r in range(target.end, i))
                and self.w.owner and self.w.owner[-1] in range(t_row, i)):
            return self._figure(i, target)
        i += 1
        if value is None or kind == "width":
            return i  # a width without an image to size
        if kind == "eqlabel":
            self._equation_label(value)
            return i
        at = self.w.anchor(t_row) if target is not None else 0
        table = self.after.get(i - 1)
        if (kind == "label" and target is not None and target.kind is Kind.TEXT
                and TABLE_CAPTION.match(self.lines[t_row]) and table is not None and table.kind is Kind.TABLE
                and table.level == attr.level and not any(x.strip() for x in self.lines[i:table.start])):
            return self._captioned_table(target, value, i - 1, table)
        if target is not None and target.kind is Kind.TABLE:
            self._write_table(self.captions.get(t_row), value, i - 1, at)
            return i
        self._label(at, t_row, value)
        return i

    def _figure(self, i: int, target: Block) -> int:
        """An image paragraph (its alt text on one line or several) followed by :label: and/or
        :width: (either order, blank lines between allowed, as d2lbook reads them) → figure."""
        lines, attrs, n = self.lines, self.attrs, len(self.lines)
        name = width = None
        while i < n and i in attrs and attrs[i].attr in ("label", "width"):
            v = _attr_value(lines[i])
            if attrs[i].attr == "label" and name is None:
                name = v
            elif attrs[i].attr == "width" and width is None:
                width = v
            else:
                break
            i += 1
            j = i
            while j < n and not lines[j].strip() and j not in self.copied and j not in self.math:
                j += 1
            if j in attrs and attrs[j].attr in ("label", "width"):
                i = j  # the blank rows between two attribute lines go with them
        w, t_row = self.w, target.start
        at = w.anchor(t_row)
        w.replace_from(at, _figure([x for x, o in zip(w.out[at:], w.owner[at:], strict=True) if o < target.end],
                                   name, width), t_row)
        self.figured.add(t_row)
        return i

    def _equation_label(self, value: str) -> None:
        """``:eqlabel:`` on its own line: written after the last display math's closing ``$$``."""
        w = self.w
        for k in range(len(w.out) - 1, -1, -1):
            if w.owner[k] in self.math and w.out[k].rstrip().endswith("$$"):
                w.out[k] = w.out[k].rstrip() + f" ({value})"
                break

    def _captioned_table(self, caption: Block, value: str, label_row: int, table: Block) -> int:
        """d2l's order: a ":Caption" paragraph (one line or several), the :label: line, then the
        table → a numbered {table}."""
        at = len(self.w.out)
        for r in range(table.start, table.end):
            self.w.add(convert_roles(self.lines[r]), r)
        self._write_table(caption, value, label_row, at)
        return table.end

    def _unlabelled_table(self, i: int) -> int:
        """A table under a ":Caption" paragraph and named by no :label: → a {table} with that
        caption and no name: pandoc's captioned table (``.. table:: Caption`` in d2lbook's reST),
        which Sphinx numbers as it numbers every captioned table, with no target to refer to."""
        table, at = self.tables[i], len(self.w.out)
        for r in range(table.start, table.end):
            self.w.add(convert_roles(self.lines[r]), r)
        self._write_table(self.captions[i], None, i, at)
        return table.end

    def _write_table(self, caption: Block | None, name: str | None, name_row: int, table_at: int) -> None:
        """The output rows from the caption paragraph's first (the table's when there is no
        caption) become a ``{table}``: the caption's rows its argument, the table's rows (output
        rows ``table_at`` on) its body. Each row keeps the source row it came from; the
        directive's first row is the caption's, ``:name:`` the label line's."""
        w = self.w
        at = w.anchor(caption.start) if caption is not None and caption.start in w.owner[:table_at] else table_at
        cap = [x for x, o in zip(w.out[at:table_at], w.owner[at:table_at], strict=True)
               if caption is not None and caption.start <= o < caption.end]
        body = [(x, o) for x, o in zip(w.out[table_at:], w.owner[table_at:], strict=True) if x.strip()]
        head = caption.start if cap and caption is not None else (body[0][1] if body else name_row)
        rows, owners = _table(_caption_text(cap), name, body, head, name_row)
        w.replace_from(at, rows, owners)

    def _label(self, at: int, t_row: int, value: str) -> None:
        """A ``(label)=`` target above the block the label names (a blank row before it)."""
        w = self.w
        rows = ["", f"({value})="] if at > 0 and w.out[at - 1].strip() else [f"({value})="]
        # Through replace_from, which keeps the first-row index (the rows after ``at`` are the
        # labelled block's, a few); a list insert would shift it.
        w.replace_from(at, rows + w.out[at:], [t_row] * len(rows) + w.owner[at:])


def _table(caption: str, name: str | None, body: list[tuple[str, int]], head: int,
           name_row: int) -> tuple[list[str], list[int]]:
    """A ``{table}`` of pipe-table rows (each with its source row), numbered when ``name`` is
    given, and each of its rows' source row. A caption with a role in it (backticks) gets a
    tilde fence: CommonMark ends a backtick fence's info string at a backtick."""
    fence = "~~~" if "`" in caption else "```"
    rows, owners = [f"{fence}{{table}} {caption}".rstrip()], [head]
    if name:
        rows.append(f":name: {name}")
        owners.append(name_row)
    rows.append("")
    owners.append(owners[-1])
    rows += [x for x, _ in body]
    owners += [o for _, o in body]
    rows.append(fence)
    owners.append(owners[-1])
    return rows, owners


def _caption_text(rows: list[str]) -> str:
    """A caption paragraph's text (MyST rows) on one line, as a directive's argument must be:
    the first row without its ``:``, the rows after it joined with single spaces."""
    first = TABLE_CAPTION.match(rows[0]) if rows else None
    if first is None:
        return ""
    return " ".join([first.group(1), *(x.strip() for x in rows[1:] if x.strip())])


def _table_captions(lines: list[str], blocks: Sequence[Block]) -> dict[int, Block]:
    """First row of each pipe table → the caption paragraph above it: the block before it in its
    container, a paragraph whose first line is ``:Caption`` (pandoc's table caption, all of
    the paragraph however many lines), with only blank rows between."""
    out: dict[int, Block] = {}
    for k, table in enumerate(blocks):
        if table.kind is not Kind.TABLE:
            continue
        before = next((b for b in reversed(blocks[:k]) if b.level <= table.level), None)
        if (before is not None and before.level == table.level and before.kind is Kind.TEXT
                and TABLE_CAPTION.match(lines[before.start])
                and not any(x.strip() for x in lines[before.end:table.start])):
            out[table.start] = before
    return out


#: Each emitter of the construct table (:class:`~tabbook.source.constructs.Emit`): how a block
#: claims its rows before they are written (the rows themselves are written by :meth:`_Emitter.emit`).
EMITTERS: dict[Emit, Callable[[_Emitter, int, Block], None]] = {
    Emit.LINES: _Emitter._claim_lines,
    Emit.COPIED: _Emitter._claim_copied,
    Emit.LITERAL: _Emitter._claim_literal,
    Emit.MATH: _Emitter._claim_math,
    Emit.ATTRIBUTE: _Emitter._claim_attribute,
    Emit.TABLE: _Emitter._claim_table,
    Emit.TOCTREE: _Emitter._claim_toctree,
    Emit.EVAL_RST: _Emitter._claim_eval_rst,
    Emit.BIBLIOGRAPHY: _Emitter._claim_bibliography,
}


def missing_emitters(emitters: dict[Emit, Callable[[_Emitter, int, Block], None]] = EMITTERS) -> list[str]:
    """The emitters the construct table names and the renderer lacks (empty: none)."""
    return [e.name for e in Emit if e not in emitters]


if _missing := missing_emitters():  # pragma: no cover - stops the renderer at import
    raise RuntimeError(f"the MyST renderer has no emitter for {', '.join(_missing)}")


def _figure(rows: list[str], name: str | None, width: str | None) -> list[str]:
    """A ``{figure}`` for the image paragraph ``rows`` (MyST already), in the rows' container."""
    text = "\n".join(rows)
    img = IMAGE_PARAGRAPH.match(text)
    first = rows[0] if rows else ""
    prefix = first[:first.find("![")] if "![" in first else ""  # a list item's indent, a quote's "> "
    if img is None:
        return rows
    caption = [x[len(prefix):] if x.startswith(prefix) else x.lstrip() for x in img.group("cap").split("\n")]
    fig = ["```{figure} " + img.group("src")]
    if name:
        fig.append(f":name: {name}")
    if width:
        fig.append(f":width: {width}")
    if any(x.strip() for x in caption):
        fig += ["", *(convert_roles(x).strip() for x in caption)]
    fig.append("```")
    return [(prefix + x) if x else prefix.rstrip() for x in fig]


def _attr_value(line: str) -> str | None:
    m = ATTR_LINE.match(line)
    return m.group(2).strip() if m else None


def to_myst(text: str) -> str:
    """Convert one prose cell of the dialect to MyST Markdown (parsing it with the dialect's parser)."""
    return to_myst_rows(text)[0]


def to_myst_rows(text: str) -> tuple[str, list[int]]:
    """:func:`to_myst` with :func:`emit_myst_rows`'s row map."""
    text = strip_slide_marks(text).replace("\r\n", "\n").replace("\r", "\n")
    _, blocks = parse_blocks(text)
    return emit_myst_rows(text.split("\n"), blocks)


def cell_to_myst(cell: Cell) -> str:
    """MyST for a prose cell, from the text and blocks reading recorded (no second parse)."""
    return cell_to_myst_lines(cell)[0]


def cell_to_myst_lines(cell: Cell) -> tuple[str, list[int]]:
    """:func:`cell_to_myst`, and the 1-based line of ``cell.path`` each result line came from.

    Reading strips the slide marks and records the blocks of what is left
    (:func:`tabbook.source.read.prose_cell`); a cell made otherwise (no blocks) is parsed here."""
    if cell.blocks:
        text, rows = emit_myst_rows(cell.prose.split("\n"), cell.blocks)
    else:
        text, rows = to_myst_rows(cell.source)
    return text, [cell.line + r for r in rows]


def wrap_div(text: str, classes: list[str]) -> str:
    """A MyST ``{div}`` whose fence is longer than any fence inside ``text``."""
    return wrap_directive(text, "div", classes)


def wrap_directive(text: str, name: str, arguments: list[str]) -> str:
    """``text`` as the content of a MyST directive, whose fence is longer than any inside it;
    its line map is :func:`wrap_div_lines`'s."""
    fence = "`" * _fence_len(text)
    return f"{fence}{{{name}}} {' '.join(arguments)}\n\n{text}\n{fence}"


def wrap_div_lines(lines: list[int]) -> list[int]:
    """The line map of :func:`wrap_div`'s result, given the wrapped text's."""
    first, last = (lines[0], lines[-1]) if lines else (1, 1)
    return [first, first, *lines, last]
