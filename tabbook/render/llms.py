"""The book for language models: ``llms.txt`` and ``llms-full.txt`` at the site's root.

The llms.txt convention gives a site one Markdown file at its root that a model (or a tool
feeding one) reads first: a ``# title``, a ``> summary`` line, then sections of links to plain
Markdown versions of the pages; ``llms-full.txt`` holds those pages in one file. A page of this
book differs by framework, so each page is written once per framework
(``_llms/<framework>/<page>.md``): that framework's prose (prose tabs resolved, other
frameworks' dropped, slide marks already stripped when the page was read), its code cells as
fenced Python and the outputs they stored, as text. ``llms.txt`` has one section of links per
framework; ``llms-full.txt`` every page of every framework, in the table of contents' order.

What they are made from is what the site is rendered from: the :class:`~tabbook.source.model.Section`
of each page (its cells and the blocks the reader found in them, so nothing is parsed again)
and the notebooks the site shows (the store's entries as the build published them: cleaned
unless the book trusts its outputs). The HTML build writes them after Sphinx
(:func:`write_llms`); the PDF builds never do.

:func:`page_markdown`, :func:`index_text` and :func:`full_text` are pure; :func:`write_llms` is
the I/O, atomic and only for what changed: a page whose text and notebook are those of the last
build (``build/llms-memo.json``, the sources step's origins) is not rendered again.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from tabbook.config import Config
from tabbook.execute.job import CPU_ONLY
from tabbook.execute.store import Entry
from tabbook.execute.store import text as nb_text
from tabbook.files import BuildDir, write_if_changed
from tabbook.nbjson import CellOutput, Notebook, NotebookCell
from tabbook.render.merge import solution_summary
from tabbook.source.constructs import TABLE, Kind, Shape
from tabbook.source.dialect import ATTR_LINE, BEGIN_TAB, END_TAB, MATH_EQLABEL, TABLE_CAPTION, sub_roles
from tabbook.source.model import Cell, Section

#: The folder of the per-page files, under the HTML output (``_llms/<framework>/<page>.md``).
LLMS_DIR = "_llms"
INDEX = "llms.txt"
FULL = "llms-full.txt"

#: Block kinds whose rows are dropped: attribute lines, prose-tab and solution markers, the
#: ``:bibliography:`` line, tables of contents (the files list the pages themselves).
_DROPPED = frozenset({Kind.ATTR, Kind.BIBLIOGRAPHY, Kind.TOC, *(c.kind for c in TABLE if c.shape is Shape.CONTAINER)})
#: Block kinds whose rows are kept exactly as written (code, not prose: no role is read there).
_VERBATIM = frozenset({Kind.LITERAL, Kind.CODE, Kind.INDENTED, Kind.RST, Kind.HTML})

_IMAGE = re.compile(r"!\[(?P<alt>(?:[^\]]|\](?!\())*)\]\((?P<src>[^)\s]+)(?:\s+\"[^\"]*\")?\)", re.S)
_COMMENT = re.compile(r"\s*<!--(?:(?!-->).)*-->\s*", re.S)  # one HTML comment, nothing else
_FENCE_OPEN = re.compile(r"^[ \t]*(`{3,}|~{3,})")
#: Terminal control sequences (CSI, OSC), then any control character but tab and newline: an
#: output is shown as text, and a file a reader may ``cat`` carries no escapes.
_ESCAPES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-_]?")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")


def page_target(docname: str, fw: str) -> str:
    """Where a page's Markdown for a framework lives, relative to the HTML root."""
    return f"{LLMS_DIR}/{fw}/{docname}.md"


# ---- prose ------------------------------------------------------------------------------------

def _role(m: re.Match[str]) -> str:
    """A reference or citation as text: ``[fig_box]``, ``(eq_bw)``, ``[Kirk.Hwu.2016, …]``
    (label numbers are Sphinx's, known only to the HTML; the label names the target)."""
    role, target = m.group("role"), m.group("target").strip()
    if role == "eqref":
        return f"({target})"
    if role.startswith("cite"):
        return "[" + ", ".join(k.strip() for k in target.split(",") if k.strip()) + "]"
    return f"[{target}]"


def _figure(m: re.Match[str]) -> str:
    """An image as a note: its alt text, and its address when that is outside the book."""
    alt = " ".join(m.group("alt").split())
    src = m.group("src")
    note = f"[figure: {alt}]" if alt else "[figure]"
    return f"{note}({src})" if re.match(r"^https?://", src) else note


def _text_rows(rows: list[str]) -> list[str]:
    """Rows of prose: roles and images as text (inline code spans left as written)."""
    joined = "\n".join(sub_roles(row, _role) for row in rows)
    return _IMAGE.sub(_figure, joined).split("\n")


def prose_markdown(cell: Cell) -> str:
    """A prose cell as plain Markdown: its text as the book shows it (slide marks stripped),
    without the dialect's attribute lines and markers, references as their labels, images as
    notes. Pure."""
    prose = cell.prose or cell.source
    rows = prose.split("\n")
    kinds: list[Kind | None] = [None] * len(rows)
    for block in cell.blocks:  # containers come first: the innermost block of a row wins
        for r in range(block.start, min(block.end, len(rows))):
            kinds[r] = block.kind
    if not cell.blocks:
        kinds = _guess_kinds(rows)
    notes: set[int] = set()
    for block in cell.blocks:
        if block.kind is Kind.HTML and _COMMENT.fullmatch("\n".join(rows[block.start:block.end])):
            notes.update(range(block.start, block.end))  # an author's note
    captions = {block.start for block, after in zip(cell.blocks, cell.blocks[1:], strict=False)
                if block.kind is Kind.TEXT and block.end - block.start == 1 and after.kind is Kind.TABLE
                and after.start == block.end and TABLE_CAPTION.match(rows[block.start])}
    out: list[tuple[str, bool]] = []  # each row, and whether it is verbatim
    run: list[str] = []  # consecutive rows of prose, rewritten together (an image's alt spans rows)

    def flush() -> None:
        if run:
            out.extend((row, False) for row in _text_rows(run))
            run.clear()

    for index, (row, kind) in enumerate(zip(rows, kinds, strict=True)):
        if kind in _DROPPED or index in notes:
            continue
        if kind in _VERBATIM:
            flush()
            out.append((row, True))
            continue
        if kind is Kind.MATH:
            row = MATH_EQLABEL.sub("$$", row)
        if index in captions and (m := TABLE_CAPTION.match(row)):
            run += [f"Table: {m.group(1)}", ""]  # its own paragraph, above the table
            continue
        run.append(row)
    flush()
    # A dropped line leaves its blank neighbours: one blank line between blocks of prose (a
    # verbatim block's own blank lines are kept).
    kept: list[str] = []
    for row, verbatim in out:
        if not verbatim and not row.strip() and (not kept or not kept[-1].strip()):
            continue
        kept.append(row)
    return "\n".join(kept).strip("\n")


def _guess_kinds(rows: list[str]) -> list[Kind | None]:
    """Block kinds for a cell read without its blocks: fenced rows verbatim, attribute and
    tab-marker lines dropped, everything else prose."""
    kinds: list[Kind | None] = []
    fence = ""
    for row in rows:
        m = _FENCE_OPEN.match(row)
        if fence:
            kinds.append(Kind.LITERAL)
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) and not row.strip()[len(m.group(1)):]:
                fence = ""
        elif m:
            fence = m.group(1)
            kinds.append(Kind.TOC if row.strip().startswith("```toc") else Kind.LITERAL)
        elif ATTR_LINE.match(row) or BEGIN_TAB.match(row) or END_TAB.match(row):
            kinds.append(Kind.ATTR)
        else:
            kinds.append(None)
    # a toc fence's rows are dropped as a whole
    for i in range(1, len(rows)):
        if kinds[i - 1] is Kind.TOC and kinds[i] is Kind.LITERAL:
            kinds[i] = Kind.TOC
    return kinds


# ---- code and outputs ---------------------------------------------------------------------------

def _plain(value: str) -> str:
    """Output text as a file shows it: no terminal escapes or control characters, a line
    redrawn with carriage returns (a progress bar) as it was last drawn."""
    value = _ESCAPES.sub("", value.replace("\r\n", "\n"))
    value = "\n".join(line.rstrip("\r").rsplit("\r", 1)[-1] for line in value.split("\n"))
    return _CONTROL.sub("", value)


def _fenced(body: str, info: str = "") -> str:
    """``body`` in a fence longer than any run of backticks in it."""
    longest = max((len(m) for m in re.findall(r"`+", body)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{info}\n{body.rstrip(chr(10))}\n{fence}"


def output_text(out: CellOutput) -> tuple[str, str] | None:
    """What a stored output says in plain text, as ``("text", …)`` (shown in a fence) or
    ``("note", …)`` (a figure: shown as a line of its own); None for an output that says
    nothing in text. Pure."""
    kind = out.get("output_type")
    if kind == "stream":
        return "text", _plain(nb_text(out.get("text", "")))
    if kind == "error":
        name, value = _plain(str(out.get("ename", ""))), _plain(str(out.get("evalue", "")))
        if name:
            return "text", f"{name}: {value}" if value else name
        lines = [line for line in _plain("\n".join(map(str, out.get("traceback", [])))).splitlines() if line.strip()]
        return ("text", lines[-1]) if lines else None
    if kind not in ("execute_result", "display_data"):
        return None
    data = out.get("data", {}) if isinstance(out.get("data"), dict) else {}
    plain = _plain(nb_text(data["text/plain"])) if "text/plain" in data else None
    if any(str(m).startswith("image/") for m in data):
        alt = " ".join(plain.split()) if plain else ""
        return "note", f"[figure: {alt}]" if alt else "[figure]"
    if plain is not None:
        return "text", plain
    for mime in ("text/markdown", "text/latex"):
        if mime in data:
            return "text", _plain(nb_text(data[mime]))
    if data:
        return "note", f"[output: {', '.join(sorted(map(str, data)))}]"
    return None


def code_markdown(cell: NotebookCell) -> str:
    """An executed code cell: its code in a ``python`` fence, then its outputs (text in
    fences, figures as notes), as its tags say (``#@hide`` and kin). Pure."""
    tags = set(cell.get("metadata", {}).get("tags", []))
    if "remove-cell" in tags:
        return ""
    parts: list[str] = []
    source = nb_text(cell.get("source", "")).strip("\n")
    if source and "remove-input" not in tags:
        parts.append(_fenced(source, "python"))
    if "remove-output" in tags:
        return "\n\n".join(parts)
    texts: list[str] = []

    def flush() -> None:
        body = "".join(texts)
        if body.strip():
            parts.append(_fenced(body, "text"))
        texts.clear()

    for out in cell.get("outputs", []):
        said = output_text(out) if isinstance(out, dict) else None
        if said is None:
            continue
        kind, value = said
        if kind == "note":
            flush()
            parts.append(value)
        else:
            texts.append(value if value.endswith("\n") else value + "\n")
    flush()
    return "\n\n".join(parts)


def provenance_line(label: str, executed: Notebook | None) -> str:
    """Where the outputs of a page were computed, in one line of text ("" when no entry says):
    what the page's own provenance line says, from the entry, as plain text. Pure."""
    if not executed:
        return ""
    entry = Entry(executed)
    prov = entry.provenance
    if not prov.says_anything():
        return ""

    def plain(name: str, default: str) -> str:
        value = getattr(prov, name)
        return " ".join(_plain(str(value)).split()) if value else default

    if plain("not_executed", ""):
        return f"*{label}: code shown without outputs ({plain('not_executed', '')}).*"
    where = plain("device", "?") if entry.gpus else \
        f"{CPU_ONLY} ({plain('cpu', '')})" if plain("cpu", "") else CPU_ONLY
    version = plain("framework_version", "")
    line = (f"{label} outputs computed on {where}, {f'{label} {version}, ' if version not in ('', '?') else ''}"
            f"Python {plain('python', '?')}, {plain('date', '?')}.")
    if plain("outdated", ""):
        line = f"{label} outputs from an earlier version of this code ({plain('outdated', '')}): {line}"
    return f"*{line}*"


def page_markdown(section: Section, fw: str, executed: Notebook | None, label: str = "") -> str:
    """One page as one framework's reader sees it, in plain Markdown: shared prose and ``fw``'s
    prose tabs, and ``fw``'s code cells with their stored outputs (``executed``: the notebook
    the page shows for ``fw``, whose k-th cell is the k-th code cell ``fw`` runs; None: prose
    only). A solution keeps its content under a "Solution" line; the last line says where the
    outputs were computed (``label``: the framework's name there). Pure."""
    ran = executed.get("cells", []) if executed else []
    ordinal = 0
    parts: list[str] = []
    open_solution = 0
    for cell in section.cells:
        if cell.solution != open_solution:
            if cell.solution:
                summary = section.solutions.get(cell.solution, ("", cell.line))[0]
                parts.append(f"**{solution_summary(summary)}**")
            open_solution = cell.solution
        if cell.kind == "markdown":
            if not cell.tabs or fw in cell.tabs:
                parts.append(prose_markdown(cell))
            continue
        if fw not in cell.tabs:
            continue
        executed_cell = ran[ordinal] if ordinal < len(ran) else None
        ordinal += 1
        if isinstance(executed_cell, dict):
            parts.append(code_markdown(executed_cell))
    if ordinal:
        parts.append(provenance_line(label or fw, executed))
    return "\n\n".join(p for p in parts if p.strip()) + "\n"


# ---- the two files at the root -------------------------------------------------------------

def _link_text(title: str) -> str:
    """A page title as a link's text: brackets escaped, one line."""
    return re.sub(r"([\[\]\\])", r"\\\1", " ".join(title.split())) or "Untitled"


def summary(title: str, author: str, labels: Sequence[str]) -> str:
    """The ``> summary`` line: what the book is and what the files hold."""
    by = f" by {' '.join(author.split())}" if author.strip() else ""
    return (f"{' '.join(title.split())}{by}: every page as plain Markdown for each of its frameworks "
            f"({', '.join(labels)}), code cells with the outputs they printed when the book was built.")


def index_text(title: str, line: str, pages: Sequence[tuple[str, str]], tabs: Sequence[str],
               labels: Mapping[str, str]) -> str:
    """``llms.txt``: the title, the summary line, then one section per framework linking each
    page (``pages``: (docname, title) in the toc's order) to its Markdown for that framework. Pure."""
    out = [f"# {' '.join(title.split())}", "", f"> {line}", "",
           f"Each link leads to one page as one framework's reader sees it. [{FULL}]({FULL}) holds "
           "every page of every framework in one file.", ""]
    for fw in tabs:
        out += [f"## {labels.get(fw, fw)}", ""]
        out += [f"- [{_link_text(name)}]({page_target(doc, fw)})" for doc, name in pages]
        out.append("")
    return "\n".join(out)


def page_heading(label: str, docname: str, fw: str) -> str:
    """The line before a page in ``llms-full.txt``: which framework, which file."""
    return f"<!-- {label}: {docname}.md ({page_target(docname, fw)}) -->"


def full_text(title: str, line: str, parts: Sequence[tuple[str, str, str]], labels: Mapping[str, str]) -> str:
    """``llms-full.txt``: the title and summary, then each (framework, docname, Markdown) of
    ``parts`` in order, each under a comment naming its framework and page. Pure."""
    shown = ", ".join(dict.fromkeys(labels.get(fw, fw) for fw, _, _ in parts))
    out = [f"# {' '.join(title.split())}", "", f"> {line}", "",
           f"Every page of the book once for each framework ({shown}), in the order of its table of "
           "contents; a comment before each page names its framework and file.", ""]
    for fw, doc, text in parts:
        out += [page_heading(labels.get(fw, fw), doc, fw), "", text.rstrip("\n"), ""]
    return "\n".join(out)


# ---- writing them ----------------------------------------------------------------------------

@dataclass
class Written:
    pages: int = 0  # per-page files the site has now
    written: int = 0  # files (pages and the two at the root) rewritten: their text changed
    removed: int = 0  # per-page files of pages or frameworks no longer in the book


def page_key(section: Section, fw: str, label: str, origin: str | None,
             executed: Notebook | None) -> str:
    """What a page's Markdown for ``fw`` is made of: the section's cells, the framework's label
    and its notebook (the plan's origin of it when it has one: the entry and how it was
    published; otherwise the notebook itself). The builder is the memo's fingerprint."""
    h = hashlib.sha256(f"{fw}\0{label}\0".encode())
    for cell in section.cells:
        h.update(f"{cell.kind}\0{','.join(cell.tabs)}\0{cell.solution}\0{cell.source}\0".encode())
    h.update(json.dumps(sorted(section.solutions.items())).encode())
    h.update((f"origin {origin}" if origin is not None else json.dumps(executed, sort_keys=True, default=str)).encode())
    return h.hexdigest()


def write_llms(config: Config, sections: Sequence[Section], notebooks: Mapping[tuple[str, str], Notebook],
               origins: Mapping[tuple[str, str], str], html_dir: Path) -> Written:
    """Write ``llms.txt``, ``llms-full.txt`` and every page's Markdown per framework into
    ``html_dir``, and remove the per-page files of pages no longer in the book. A page whose
    inputs (:func:`page_key`) are those of its file is not rendered again, and when none
    changed nothing is read or written; a file whose text is unchanged is not rewritten (its
    time stays); each write is atomic."""
    result = Written()
    labels = {fw: config.framework(fw).label for fw in config.tabs}
    line = summary(config.title, config.author, [labels[fw] for fw in config.tabs])
    pages = [(s.path[:-3], s.title) for s in sections]
    memo = BuildDir(config.build_dir).memo("llms", site=html_dir.name)
    known = memo.load() or {}
    before: dict[str, str] = known.get("pages", {})
    head = hashlib.sha256(json.dumps([config.title, line, list(config.tabs), labels, pages]).encode()).hexdigest()
    units = []  # (framework, section, its file, whether fw has code there, the notebook keyed by)
    keys: dict[str, str] = {}
    for fw in config.tabs:
        for section in sections:
            rel = page_target(section.path[:-3], fw)
            unit = (section.path, fw)
            origin = origins.get(unit)
            has_code = any(c.kind == "code" and fw in c.tabs for c in section.cells)
            # A notebook new in this build has no origin: its own text is its key.
            executed = notebooks[unit] if has_code and origin is None and unit in notebooks else None
            keys[rel] = page_key(section, fw, labels[fw], origin, executed)
            units.append((fw, section, rel, has_code, executed))
    result.pages = len(units)
    files = [html_dir / INDEX, html_dir / FULL, *(html_dir / rel for rel in keys)]
    if known.get("head") == head and before == keys and all(path.is_file() for path in files):
        return result  # what the last build wrote, still there
    texts: dict[str, str] = {}
    for fw, section, rel, has_code, executed in units:
        path = html_dir / rel
        if before.get(rel) == keys[rel]:
            try:
                texts[rel] = path.read_text(encoding="utf-8")
                continue
            except (OSError, UnicodeDecodeError):
                pass  # gone or damaged: made again
        if executed is None and has_code and (section.path, fw) in notebooks:
            executed = notebooks[(section.path, fw)]
        texts[rel] = page_markdown(section, fw, executed, labels[fw])
        result.written += write_if_changed(path, texts[rel])
    result.written += write_if_changed(html_dir / INDEX, index_text(config.title, line, pages, config.tabs, labels))
    parts = [(fw, section.path[:-3], texts[rel]) for fw, section, rel, _, _ in units]
    result.written += write_if_changed(html_dir / FULL, full_text(config.title, line, parts, labels))
    wanted = set(files)
    root = html_dir / LLMS_DIR
    if root.is_dir():
        for path in sorted(root.rglob("*"), reverse=True):  # files before the folders holding them
            if path.is_file() and path not in wanted:
                path.unlink()
                result.removed += 1
            elif path.is_dir() and not any(path.iterdir()):
                path.rmdir()
    memo.save({"head": head, "pages": keys})
    return result
