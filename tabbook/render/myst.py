"""Dialect prose → MyST Markdown (what myst-nb parses). Pure functions of text.

``:label:`` after a heading becomes a ``(label)=`` target above it; an image
(its alt text on one line or several) followed by ``:label:``/``:width:``, blank
lines between allowed as d2lbook allows them, becomes a ``{figure}``; ``$$…$$`` followed
by ``:eqlabel:`` (on its own line or after the closing ``$$``) becomes labelled
dollar math, and display math that continues a paragraph (a list item's line)
starts a block of its own; a table with a ``:Caption`` line and a ``:label:``
becomes a numbered ``{table}`` (a ``~~~`` fence when the caption holds a role: a
backtick fence's info string may hold no backtick); inline roles map to Sphinx roles; a
```` ```toc ```` block becomes a ``{toctree}``, an ```` ```eval_rst ```` block an
``{eval-rst}`` one, a ``:bibliography:`` line a ``{bibliography}``. Slide marks
are removed.

Nothing here finds fences, math or tables in the text: the structure is the
blocks of the dialect's one markdown-it parse (:class:`~tabbook.source.read.Block`),
recorded on each prose cell by the reader (:func:`cell_to_myst`), or parsed
from a text given on its own (:func:`to_myst`)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from tabbook.source.dialect import (
    ATTR_LINE,
    IMAGE_LINE,
    IMAGE_PARAGRAPH,
    MATH_EQLABEL,
    ROLE,
    ROLE_MAP,
    TABLE_CAPTION,
    strip_slide_marks,
    sub_roles,
)
from tabbook.source.read import Block, Cell, parse_blocks


def convert_roles(line: str) -> str:
    def sub(m: re.Match[str]) -> str:
        role, target = m.group("role"), m.group("target")
        if role in ("cite", "citet", "citep"):
            target = ",".join(t.strip() for t in target.split(","))
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
    lines = block.split("\n")
    body = lines[1:-1]
    return "\n".join(["```{toctree}", *body, "```"])


def _targets(blocks: Sequence[Block]) -> dict[int, Block | None]:
    """Row of each attribute line → the block it describes: the block before it in its container."""
    out: dict[int, Block | None] = {}
    for k, block in enumerate(blocks):
        if block.kind != "attr":
            continue
        target = None
        for prev in reversed(blocks[:k]):
            if prev.level < block.level:
                break  # the container's start: nothing before the line in it
            if prev.level == block.level and prev.kind != "attr":
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
    copied: set[int] = set()
    refence: dict[int, str] = {}  # fence rows rewritten longer (:func:`_longer_fence`)
    math: set[int] = set()
    tocs: dict[int, int] = {}
    attrs: dict[int, Block] = {}
    rst: set[int] = set()  # opening rows of ```eval_rst fences
    bibliography: set[int] = set()
    math_label: dict[int, str] = {}  # closing row of display math -> the :eqlabel: on it
    math_break: dict[int, str] = {}  # first row of display math that continues a paragraph -> blank row
    after: dict[int, Block] = {}  # row of an attribute line -> the block after it
    for k, b in enumerate(blocks):
        if b.kind in ("literal", "code", "rst", "indented", "html"):
            copied.update(range(b.start, b.end))
            if b.kind in ("literal", "rst"):
                refence.update(_longer_fence(lines, b))
            if b.kind == "rst":
                rst.add(b.start)
        elif b.kind == "bibliography":
            bibliography.add(b.start)
        elif b.kind == "math":
            math.update(range(b.start, b.end))
            if b.attr:
                math_label[b.end - 1] = b.attr
            before = blocks[k - 1] if k else None
            if (before is not None and before.kind == "text" and before.level == b.level
                    and before.end == b.start and b.start < len(lines)):
                # MyST's $$ cannot interrupt a paragraph: a blank row (inside the same container) first
                row = lines[b.start]
                math_break[b.start] = row[:row.find("$$")].rstrip() if "$$" in row else ""
        elif b.kind == "toc":
            tocs[b.start] = b.end
        elif b.kind == "attr":
            attrs[b.start] = b
            if k + 1 < len(blocks):
                after[b.start] = blocks[k + 1]
    targets = _targets(blocks)
    out: list[str] = []
    owner: list[int] = []  # the source row each output row belongs to (-1: the cell's top)
    figured: set[int] = set()  # image rows already turned into figures

    def anchor(row: int) -> int:
        """Output index of the first row owned by source row ``row`` (0 when there is none)."""
        return next((k for k, o in enumerate(owner) if o == row), 0)

    i = 0
    n = len(lines)
    while i < n:
        raw = lines[i]
        if i in tocs:
            end = min(max(tocs[i], i + 2), n)
            out.append(toc_to_toctree("\n".join(lines[i:end])))
            owner.append(i)
            i = end
            continue
        raw = refence.get(i, raw)
        if i in rst:
            m = re.match(r"^(\s*)(`{3,}|~{3,})", raw)
            out.append(f"{m.group(1)}{m.group(2)}{{eval-rst}}" if m else raw)
            owner.append(i)
            i += 1
            continue
        if i in bibliography:
            # sphinxcontrib-bibtex's directive; with no file given it lists the cited entries of
            # the conf's bibtex_bibfiles (the file the dialect names is config's business).
            indent = raw[:len(raw) - len(raw.lstrip())]
            out += [f"{indent}```{{bibliography}}", f"{indent}```"]
            owner += [i, i]
            i += 1
            continue
        if i in copied or i in math:
            if i in math_break:
                out.append(math_break[i])
                owner.append(i)
            if i in math_label:
                raw = MATH_EQLABEL.sub(lambda m, name=math_label[i]: f"$$ ({name})", raw)
            out.append(raw)
            owner.append(i)
            i += 1
            continue
        attr = attrs.get(i)
        if attr is None:
            out.append(convert_roles(raw))
            owner.append(i)
            i += 1
            continue
        target = targets.get(i)
        t_row = target.start if target is not None else -1
        kind = attr.attr
        value = _attr_value(raw)
        if (target is not None and target.kind == "image" and t_row not in figured and kind != "eqlabel"
                and all(r in attrs or not lines[r].strip() for r in range(target.end, i))
                and owner and owner[-1] in range(t_row, i)):
            # An image paragraph (its alt text on one line or several) followed by :label: and/or
            # :width: (either order, blank lines between allowed, as d2lbook reads them) → figure.
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
                while j < n and not lines[j].strip() and j not in copied and j not in math:
                    j += 1
                if j in attrs and attrs[j].attr in ("label", "width"):
                    i = j  # the blank rows between two attribute lines go with them
            at = anchor(t_row)
            fig = _figure([x for x, o in zip(out[at:], owner[at:], strict=True) if o < target.end], name, width)
            out[at:] = fig
            owner[at:] = [t_row] * len(fig)
            figured.add(t_row)
            continue
        i += 1
        if value is None or kind == "width":
            continue  # a width without an image to size
        if kind == "eqlabel":
            for k in range(len(out) - 1, -1, -1):
                if owner[k] in math and out[k].rstrip().endswith("$$"):
                    out[k] = out[k].rstrip() + f" ({value})"
                    break
            continue
        at = anchor(t_row) if target is not None else 0
        table = after.get(i - 1)
        if (kind == "label" and target is not None and target.kind == "text" and target.end - target.start == 1
                and TABLE_CAPTION.match(lines[t_row]) and table is not None and table.kind == "table"
                and table.level == attr.level and not any(x.strip() for x in lines[i:table.start])):
            # d2l's order: a ":Caption" line, the :label: line, then the table → a numbered {table}.
            caption = TABLE_CAPTION.match(out[at]) if out[at:] else None
            rows = [convert_roles(x) for x in lines[table.start:table.end] if x.strip()]
            block = _table(caption.group(1) if caption else "", value, rows)
            out[at:] = block
            owner[at:] = [t_row] * len(block)
            i = table.end
            continue
        if target is not None and target.kind == "table":
            # A pipe table followed by :label: → a numbered {table}; its caption is a
            # ": caption" line just above the table (pandoc's spelling).
            caption = ""
            j = at - 1
            while j >= 0 and not out[j].strip():
                j -= 1
            cap = TABLE_CAPTION.match(out[j]) if j >= 0 else None
            if cap and owner[j] not in copied and owner[j] not in math:
                caption = cap.group(1)
                del out[j:at], owner[j:at]
                at = j
            body = [x for x in out[at:] if x.strip()]
            table = _table(caption, value, body)
            out[at:] = table
            owner[at:] = [t_row] * len(table)
            continue
        out.insert(at, f"({value})=")
        owner.insert(at, t_row)
        if at > 0 and out[at - 1].strip():
            out.insert(at, "")
            owner.insert(at, t_row)
    rows: list[int] = []
    for text, row in zip(out, owner, strict=True):
        rows += [max(row, 0)] * (text.count("\n") + 1)
    joined = "\n".join(out)
    lead = len(joined) - len(joined.lstrip("\n"))
    text = joined.strip("\n")
    return text, rows[lead:lead + text.count("\n") + 1]


def _table(caption: str, name: str, rows: list[str]) -> list[str]:
    """A numbered ``{table}`` of pipe-table ``rows``. A caption with a role in it (backticks)
    gets a tilde fence: CommonMark ends a backtick fence's info string at a backtick."""
    fence = "~~~" if "`" in caption else "```"
    return [f"{fence}{{table}} {caption}".rstrip(), f":name: {name}", "", *rows, fence]


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


def _shape(line: str) -> tuple:
    s = line.strip()
    return (line[:len(line) - len(line.lstrip())], s[:1], s[-1:], s.count("|"), s.count("$$"), s.count("`"),
            bool(IMAGE_LINE.match(line)))


def cell_to_myst(cell: Cell) -> str:
    """MyST for a prose cell, from the blocks reading found in it (no second parse).

    Slide marks are stripped first (as :func:`to_myst` does); where that could
    change the block structure (a line's start, end, table pipes, math or
    emptiness changed) the stripped text is parsed again instead.
    """
    return cell_to_myst_lines(cell)[0]


def cell_to_myst_lines(cell: Cell) -> tuple[str, list[int]]:
    """:func:`cell_to_myst`, and the 1-based line of ``cell.path`` each result line came from."""
    if not cell.blocks:
        text, rows = to_myst_rows(cell.source)
    else:
        stripped = strip_slide_marks(cell.source)
        lines = stripped.split("\n")
        before = cell.source.split("\n")
        if stripped != cell.source and (len(before) != len(lines) or any(
                a != b and _shape(a) != _shape(b) for a, b in zip(before, lines, strict=True))):
            text, rows = to_myst_rows(cell.source)
        else:
            text, rows = emit_myst_rows(lines, cell.blocks)
    return text, [cell.line + r for r in rows]


def wrap_div(text: str, classes: list[str]) -> str:
    """A MyST ``{div}`` whose fence is longer than any fence inside ``text``."""
    fence = "`" * _fence_len(text)
    return f"{fence}{{div}} {' '.join(classes)}\n\n{text}\n{fence}"


def wrap_div_lines(lines: list[int]) -> list[int]:
    """The line map of :func:`wrap_div`'s result, given the wrapped text's."""
    first, last = (lines[0], lines[-1]) if lines else (1, 1)
    return [first, first, *lines, last]
