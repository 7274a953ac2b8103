"""Differential test of tabbook's reader against d2lbook 1.0.3 (issue 30, item 1).

Both tools read the same book with execution off; for every page and every tab the harness
compares what a reader of that tab gets:

============  ===============================================================================
feature       compared as
============  ===============================================================================
exists        whether the page has a version for the tab (d2lbook skips a page for a tab
              none of its cells names)
code          the tab's code cells, in order, as shown (``tab.selected`` resolved,
              ``[library-<tab>]`` aliases rewritten; a hidden cell's code is empty;
              trailing spaces and blank edges ignored)
headings      the heading tree: (level, title) in order; with ``toc`` it gives the numbering
toc           each ```` ```toc ```` block's entries, ``:numbered:`` and ``:maxdepth:``
labels        the labels the tab's text defines (``:label:``, ``:eqlabel:``)
refs          the references it makes, and the page each ``:numref:``/``:ref:``/``:eqref:``
              resolves to (``None``: to no page)
equations     display equations (their TeX, whitespace-normalised)
figures       image captions and targets
tables        tables: caption, label, header row
prose_tabs    the tab's prose tabs (``:begin_tab:`` … ``:end_tab:``), text whitespace-normalised
slides        the slide marks' text (``[**…**]``, ``(**…**)``, ``[~~…~~]``, ``(~~…~~)``)
============  ===============================================================================

**d2lbook's side** is d2lbook's own code, run in its venv by ``bench/differential_d2lbook.py``:
the notebook ``d2lbook build eval`` writes for each tab, and d2lbook's prose model of each
Markdown cell (its fence split and its paragraph split, which its slides and translation use;
a paragraph that starts with ``#`` is a heading, as pandoc reads it). **tabbook's side** is
tabbook's parsed model: :func:`tabbook.book.read_book`'s sections, the cells a framework sees
(:func:`tabbook.source.split.split_section` with the tab's alias keys), the blocks markdown-it
found in each prose cell, the labels and references the reader recorded, and the slide marks
``render/slides.py`` reads.

Every difference is then matched against :data:`EXPLAINED`, the committed list of known
differences, each with its reason (a d2lbook bug, or a choice tabbook made on purpose) and a
predicate that recognises it. A difference no entry explains is *unexplained*: the harness
prints it and exits 1. ``--report FILE`` writes every difference with its explanation (the
committed ``bench/differential-d2l-en.tsv`` for d2l-en).

Inputs: a book (``--book``, e.g. the whole d2l-en), or the generated pages of
``tests/test_differential.py`` (Hypothesis) and its fixtures, which call :func:`compare_book`.
d2lbook's reading is cached under ``build/differential/`` keyed by the pages' bytes, the book's
``config.ini`` and the script, so a second run does not start d2lbook again.

Usage::

    .venv/bin/python bench/differential.py --book /path/to/d2l-en [--report FILE] [--json FILE]
"""

from __future__ import annotations

import argparse
import ast
import configparser
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import d2lbook_book  # noqa: E402  (bench/ is not a package)

from tabbook.book import read_book  # noqa: E402
from tabbook.config import load_config  # noqa: E402
from tabbook.errors import BookError  # noqa: E402
from tabbook.render.myst import cell_to_myst  # noqa: E402
from tabbook.render.slides import marks as slide_marks  # noqa: E402
from tabbook.source.constructs import Kind  # noqa: E402
from tabbook.source.dialect import ROLE, find_roles, strip_slide_marks  # noqa: E402
from tabbook.source.read import Section  # noqa: E402
from tabbook.source.split import split_section  # noqa: E402

D2LBOOK_SCRIPT = ROOT / "bench" / "differential_d2lbook.py"
CACHE = ROOT / "build" / "differential"
FEATURES = ("exists", "code", "headings", "toc", "labels", "refs", "equations", "figures", "tables",
            "prose_tabs", "slides")
RESOLVING = ("numref", "ref", "eqref")
_HEADING = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t#]*$")
_IMAGE = re.compile(r"!\[(.*?)\]\(([^)\s]*)", re.S)
_EQLABEL = re.compile(r":eqlabel:`[^`]*`")
_DISPLAY_MATH = re.compile(r"\$\$(.*?)\$\$", re.S)
#: tabbook's blocks that are not prose (their roles are text).
_NOT_PROSE = frozenset({Kind.LITERAL, Kind.CODE, Kind.TOC, Kind.RST, Kind.INDENTED, Kind.HTML})


def norm(text: str) -> str:
    return " ".join(text.split())


def code_text(source: str) -> str:
    return "\n".join(line.rstrip() for line in source.split("\n")).strip()


_CODE_SPAN = re.compile(r"(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)", re.S)
_ROLE_NAME = re.compile(r":([-/\\._\w]+):$")
_COMMENT = re.compile(r"<!--.*?-->", re.S)
_REF_ROLES = ("numref", "ref", "eqref", "cite", "citet", "citep")


def _refs_of(text: str) -> tuple[list[str], list[tuple[str, str]]]:
    """Labels and references as d2lbook gets them: pandoc turns every code span into an inline
    literal, and d2lbook's reST pass reads ``:role:`` right before one as a role (so a target in
    single or double backticks is the same); comments are not text."""
    labels, refs = [], []
    text = _COMMENT.sub("", text)
    pos = 0
    for m in _CODE_SPAN.finditer(text):
        role = _ROLE_NAME.search(text, pos, m.start())
        pos = m.end()
        if role is None:
            continue
        name, value = role.group(1), m.group(2).strip()
        if name in ("label", "eqlabel"):
            labels.append(value)
        elif name in _REF_ROLES:
            refs += [(name, v.strip()) for v in value.split(",") if v.strip()]
    return labels, refs


def _equation(tex: str) -> str:
    return norm(_EQLABEL.sub("", tex).replace("$$", ""))


# --- d2lbook's side ---------------------------------------------------------------------------

def d2lbook_features(cells: list[dict] | None) -> dict[str, Any]:
    """The features of one tab of one page, from d2lbook's notebook and prose model."""
    if cells is None:
        return {"exists": False}
    f: dict[str, Any] = {k: [] for k in FEATURES}
    f["exists"] = True
    f["unformatted"] = []
    for cell in cells:
        if cell["type"] == "code":
            f["code"].append(code_text(cell.get("shown", cell["source"])))
            f["unformatted"].append(code_text(cell.get("unformatted", cell["source"])))
            continue
        if cell.get("tab"):
            f["prose_tabs"].append(norm(cell["source"]))
        slides = cell.get("slides")
        if isinstance(slides, list):
            f["slides"] += [norm(s) for s in slides if norm(s)]
        for block in cell["blocks"]:
            if block["type"] == "code":
                if (block.get("class") or "").strip() == "toc":
                    f["toc"].append(_toc(block["source"]))
                continue
            labels, refs = _refs_of(block["source"])
            f["labels"] += labels
            f["refs"] += refs
            # d2lbook removes slide marks before the reST a reader gets (build.ipynb2rst):
            # headings and equations are compared as shown, marks stripped (tabbook strips them
            # when it reads a page)
            f["equations"] += [_equation(m) for m in _DISPLAY_MATH.findall(strip_slide_marks(block["source"]))]
            paragraphs = block.get("paragraphs", [])
            for k, para in enumerate(paragraphs):
                src = para["source"]
                if "prefix" in para and para["type"] == "title":
                    src = para["prefix"] + src
                first = strip_slide_marks(src.split("\n", 1)[0])
                f["figures"] += [(norm(a), t) for a, t in _IMAGE.findall(src)]
                if (m := _HEADING.match(first)) and para["type"] in ("title", "text"):
                    f["headings"].append((len(m.group(1)), norm(m.group(2) or "")))
                elif src.startswith("|"):
                    f["tables"].append(_d2lbook_table(paragraphs[k - 1]["source"] if k else "", src))
    return f


_CAPTION = re.compile(r"^\s*:(?![\w-]+:)[ \t]*(\S.*?)\s*$")
_LABEL_LINE = re.compile(r"^\s*:label:`([^`]+)`\s*$")
_ANY_ROLE = re.compile(r"(?::[\w:]+:|\{[\w:]+\})`+([^`]*)`+")


def _plain(text: str) -> str:
    """A caption's text with its roles' markup dropped (d2lbook's ``:citet:`x``` and MyST's
    ``{cite:t}`x``` are the same citation)."""
    return norm(_ANY_ROLE.sub(r"\1", text))


def _d2lbook_table(before: str, table: str) -> tuple[str, str, str]:
    """(caption, label, header row) of a table: pandoc takes a ``: caption`` paragraph right
    above the table as its caption, and d2lbook's reST pass gives it the ``:label:`` written
    there or right below the table."""
    lines = before.split("\n")
    rows = table.split("\n")
    caption = _CAPTION.match(lines[0]) if lines and lines[0].strip() else None
    label = next((m.group(1) for line in [*lines[1:], *rows] if (m := _LABEL_LINE.match(line))), "")
    if caption is None:
        return ("", "", norm(rows[0]))
    text = " ".join([caption.group(1), *(line for line in lines[1:] if not _LABEL_LINE.match(line))])
    return (_plain(text), label, norm(rows[0]))


def _tabbook_tables(myst: str) -> list[tuple[str, str, str]]:
    """(caption, label, header row) of each table in the MyST tabbook renders a prose cell to:
    a ``{table}`` directive (caption, ``:name:``), or a plain pipe table (no caption)."""
    out = []
    lines = myst.split("\n")
    i = 0
    in_math = False
    fence = ""
    while i < len(lines):
        if fence:  # inside a literal fence: an example, not a table
            if lines[i].strip() == fence:
                fence = ""
            i += 1
            continue
        opened = re.match(r"^\s*(`{3,}|~{3,})(?!.*\{table\})", lines[i])
        if opened and not in_math:
            fence = opened.group(1)
            i += 1
            continue
        if lines[i].count("$$") % 2:
            in_math = not in_math
        if in_math:
            i += 1
            continue
        m = re.match(r"^\s*(`{3,}|~{3,})\{table\}\s*(.*)$", lines[i])
        if m:
            name, j = "", i + 1
            while j < len(lines) and lines[j].strip().startswith(":") and not lines[j].strip().startswith("|"):
                if lines[j].strip().startswith(":name:"):
                    name = lines[j].strip()[len(":name:"):].strip()
                j += 1
            while j < len(lines) and not lines[j].strip():
                j += 1
            out.append((_plain(m.group(2)), name, norm(lines[j]) if j < len(lines) else ""))
            while j < len(lines) and lines[j].strip().startswith("|"):
                j += 1
            i = j + 1
            continue
        if lines[i].lstrip().startswith("|") and (i == 0 or not lines[i - 1].lstrip().startswith("|")):
            out.append(("", "", norm(lines[i])))
        i += 1
    return out


def _toc(source: str) -> tuple[tuple[str, ...], bool, str]:
    entries, numbered, maxdepth = [], False, ""
    for line in source.split("\n"):
        s = line.strip()
        if not s:
            continue
        if s.startswith(":numbered:"):
            numbered = True
        elif s.startswith(":maxdepth:"):
            maxdepth = s.split(":", 2)[2].strip()
        else:
            entries.append(s)
    return tuple(entries), numbered, maxdepth


# --- tabbook's side ---------------------------------------------------------------------------

def _exists(section: Section, framework: str) -> bool:
    """Whether a reader of ``framework`` gets the page: it has no code, or a cell (code or a
    prose tab) for the framework (render/merge.py shows a prose tab whatever code there is)."""
    code = [c for c in section.cells if c.kind == "code"]
    return not code or any(framework in c.tabs for c in section.cells)


def _line_owner(section: Section) -> Callable[[int], Any]:
    spans = [(c.line, c.line + c.source.count("\n") + 1, c) for c in section.cells]

    def owner(line: int) -> Any:
        for start, end, cell in spans:
            if start <= line < end:
                return cell
        return None
    return owner


def tabbook_features(section: Section, framework: str, aliases: Any) -> dict[str, Any]:
    """The features of one tab of one page, from tabbook's parsed model."""
    if not _exists(section, framework):
        return {"exists": False}
    f: dict[str, Any] = {k: [] for k in FEATURES}
    f["exists"] = True
    f["code"] = ["" if fc.cell.flags & {"hide", "hide_code"} else code_text(fc.source)
                 for fc in split_section(section, framework, aliases)]
    owner = _line_owner(section)
    visible = lambda cell: cell is not None and (not cell.tabs or framework in cell.tabs)  # noqa: E731
    label_lines = sorted((line, name) for name, line in section.labels.items())
    f["labels"] = [name for line, name in label_lines if visible(owner(line))]
    toc_by_line = {t.line: t for t in section.toc}
    previous = None
    for cell in section.cells:
        before, previous = previous, cell
        if cell.kind != "markdown" or not visible(cell):
            continue
        if cell.tabs and before is not None and before.kind == "markdown" and before.tabs == cell.tabs:
            # d2lbook joins the prose tabs of one tab line that follow each other into one cell
            f["prose_tabs"][-1] = norm(f["prose_tabs"][-1] + " " + cell.source)
        elif cell.tabs:
            f["prose_tabs"].append(norm(cell.source))
        f["slides"] += [m.text for m in slide_marks(cell.source) if m.text]
        f["tables"] += _tabbook_tables(cell_to_myst(cell))
        rows = (cell.prose or cell.source).split("\n")  # the blocks' rows are the prose's (marks stripped)
        quoted = {r for b in cell.blocks if b.kind in _NOT_PROSE for r in range(b.start, b.end)}
        for row, raw in enumerate(rows):
            if row not in quoted:
                f["refs"] += [(m.group("role"), t.strip()) for m in find_roles(raw, ROLE)
                              for t in m.group("target").split(",") if t.strip()]
        leaves = [b for b in cell.blocks if not any(
            c is not b and c.level > b.level and b.start <= c.start and c.end <= b.end for c in cell.blocks)]
        for block in leaves:
            if block.kind in (Kind.TEXT, Kind.IMAGE):
                f["figures"] += [(norm(a), t) for a, t in _IMAGE.findall("\n".join(rows[block.start:block.end]))]
        for block in cell.blocks:
            text = "\n".join(rows[block.start:block.end])
            first = rows[block.start] if block.start < len(rows) else ""
            if block.kind is Kind.TEXT and (m := _HEADING.match(first)):
                f["headings"].append((len(m.group(1)), norm(m.group(2) or "")))
            elif block.kind is Kind.MATH:
                f["equations"].append(_equation(text))
            elif block.kind is Kind.TEXT and block in leaves and "$$" in text:
                # display math that a paragraph continues (a list item's lazy line): MyST's
                # dollarmath reads it inside the paragraph
                f["equations"] += [_equation(m) for m in _DISPLAY_MATH.findall(text)]
            elif block.kind is Kind.TOC:
                line = cell.line + block.start
                toc = toc_by_line.get(line) or toc_by_line.get(line + 1)
                if toc is not None:
                    f["toc"].append((tuple(toc.entries), toc.numbered,
                                     str(toc.maxdepth) if toc.maxdepth is not None else ""))
    return f


# --- the comparison ---------------------------------------------------------------------------

@dataclass
class Difference:
    page: str
    tab: str
    feature: str
    d2lbook: Any
    tabbook: Any
    context: dict = field(default_factory=dict, repr=False)
    explained: str | None = None

    def line(self) -> str:
        def short(v: Any) -> str:
            s = json.dumps(v, ensure_ascii=False, default=list)
            return s if len(s) <= 300 else s[:297] + "..."
        return "\t".join([self.page, self.tab, self.feature, self.explained or "UNEXPLAINED",
                          short(self.d2lbook), short(self.tabbook)])


def _pairwise(feature: str, a: list, b: list) -> list[tuple[Any, Any]]:
    """The differing items of two lists: position by position when equally long, else the
    items only one side has (in order)."""
    if len(a) == len(b):
        return [(x, y) for x, y in zip(a, b, strict=True) if x != y]
    ca, cb = Counter(map(_key, a)), Counter(map(_key, b))
    only_a = [x for x in a if ca[_key(x)] > cb[_key(x)]]
    only_b = [y for y in b if cb[_key(y)] > ca[_key(y)]]
    if len(only_a) == len(only_b):
        return list(zip(only_a, only_b, strict=True))
    return [(x, None) for x in only_a] + [(None, y) for y in only_b]


def _key(x: Any) -> str:
    return json.dumps(x, default=list)


def compare_page(page: str, tabs: list[str], d2l_page: dict, section: Section | None,
                 keys: dict[str, Any], resolve: tuple[dict[str, str], dict[str, str]],
                 source: dict[str, Any]) -> list[Difference]:
    out: list[Difference] = []
    if "error" in d2l_page or section is None:
        if "error" in d2l_page and section is None:
            return []
        out.append(Difference(page, "*", "read", d2l_page.get("error"), None if section else "unread",
                              {"source": source}))
        return out
    d2l_labels, tb_labels = resolve
    for tab in tabs:
        a = d2lbook_features(d2l_page.get(tab))
        b = tabbook_features(section, tab, keys.get(tab))
        if a["exists"] != b["exists"]:
            out.append(Difference(page, tab, "exists", a["exists"], b["exists"]))
            continue
        if not a["exists"]:
            continue
        for feature in FEATURES[1:]:
            x, y = a[feature], b[feature]
            if feature == "refs":
                x = [(r, t, d2l_labels.get(t) if r in RESOLVING else "") for r, t in x]
                y = [(r, t, tb_labels.get(t) if r in RESOLVING else "") for r, t in y]
            context = {"source": source}
            if feature == "code" and len(x) == len(y):
                context["unformatted"] = {i: a["unformatted"][i] for i in range(len(x)) if x[i] != y[i]}
            for da, db in _pairwise(feature, x, y):
                if feature == "code" and da in x and context.get("unformatted"):
                    context = {**context, "before_format": a["unformatted"][x.index(da)]}
                out.append(Difference(page, tab, feature, da, db, context))
    return out


# --- the d2lbook run --------------------------------------------------------------------------

def d2lbook_reading(book: Path, pages: list[str], venv: Path | None = None) -> dict:
    """d2lbook's reading of ``pages`` (cached under build/differential by their bytes)."""
    h = hashlib.sha256(D2LBOOK_SCRIPT.read_bytes())
    h.update((book / "config.ini").read_bytes())
    for page in sorted(pages):
        h.update(page.encode() + b"\0" + (book / page).read_bytes())
    cached = CACHE / f"d2lbook-{h.hexdigest()[:16]}.json"
    if cached.is_file():
        return json.loads(cached.read_text())
    venv = venv or d2lbook_book.ensure_venv(d2lbook_book.BARE_VENV, autodoc=False)
    CACHE.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out.json"
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
        proc = subprocess.run(["nice", str(venv / "bin" / "python"), str(D2LBOOK_SCRIPT), str(book), str(out),
                               *sorted(pages)], env=env, capture_output=True, text=True)
        if proc.returncode != 0:
            raise SystemExit(f"d2lbook's side failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
        data = json.loads(out.read_text())
    tmpname = cached.with_suffix(".tmp")
    tmpname.write_text(json.dumps(data))
    tmpname.replace(cached)
    return data


def _text_files(folder: str, names: list[str]) -> list[str]:
    """What a reading copy leaves out: everything but folders, pages, config.ini and the bib."""
    return [n for n in names if not (Path(folder, n).is_dir() and n not in (".git", "_build", "build"))
            and not n.endswith((".md", ".ini", ".bib"))]


#: config.ini keys that name files of the book, which tabbook's config checks exist.
_NAMED_FILE_KEYS = ("favicon", "html_logo", "latex_logo", "post_latex", "include_css", "include_js")


def _copy_named_files(book: Path, copy: Path) -> None:
    """The files config.ini names (the favicon, logos, CSS…) into the reading copy: tabbook's
    config refuses a key that names a missing file, and the copy holds the text only."""
    ini = configparser.ConfigParser(interpolation=None, strict=False)
    ini.read(book / "config.ini", encoding="utf-8")
    for section in ini.sections():
        for key in _NAMED_FILE_KEYS:
            for pattern in ini.get(section, key, fallback="").split():
                for src in book.glob(pattern.removeprefix("./")):
                    if src.is_file():
                        (copy / src.relative_to(book)).parent.mkdir(parents=True, exist_ok=True)
                        shutil.copy2(src, copy / src.relative_to(book))


def compare_book(book: Path, venv: Path | None = None, overlay: Path | None = None) -> tuple[list[Difference], dict]:
    """Every difference between the two readings of ``book``, each explained or not. Both tools
    read a copy of its text (tabbook keeps a page cache under the book's build/)."""
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "book"
        shutil.copytree(book, copy, ignore=_text_files)
        _copy_named_files(book, copy)
        return _compare(copy, venv, overlay)


def _compare(book: Path, venv: Path | None, overlay: Path | None) -> tuple[list[Difference], dict]:
    config = load_config(book, overlay)
    tb = read_book(config, extra_files=True)
    tabs = list(config.tabs)
    keys = {fw: config.frameworks[fw].library for fw in tabs}
    pages = sorted(tb.pages)
    unread = sorted({e.path for e in tb.problems if e.path and e.path.endswith(".md")} - set(pages))
    d2l = d2lbook_reading(book, sorted(set(pages) | set(unread)), venv)
    diffs: list[Difference] = []
    if list(d2l["tabs"]) != tabs:
        diffs.append(Difference("config.ini", "*", "tabs", d2l["tabs"], tabs))
    for page in sorted(set(d2l["found"]) ^ set(pages)):
        if page in unread:
            continue
        diffs.append(Difference(page, "*", "page", page in d2l["found"], page in pages))
    d2l_labels: dict[str, str] = {}
    for page, per_tab in d2l["pages"].items():
        if "error" in per_tab:
            continue
        for tab in tabs:
            for label in d2lbook_features(per_tab.get(tab)).get("labels", []):
                d2l_labels.setdefault(label, page)
    tb_labels = {name: where[0] for name, where in tb.labels.items()}
    for page in sorted(set(pages) | set(unread)):
        source = {"text": (book / page).read_text(encoding="utf-8", errors="replace")}
        diffs += compare_page(page, tabs, d2l["pages"].get(page, {"error": "not read"}), tb.pages.get(page),
                              keys, (d2l_labels, tb_labels), source)
    for d in diffs:
        d.explained = explain(d)
    stats = {"pages": len(pages), "tabs": len(tabs),
             "page_tabs": sum(1 for p in pages for t in tabs
                              if isinstance(d2l["pages"].get(p), dict) and d2l["pages"][p].get(t) is not None),
             "problems": [str(e) for e in tb.problems]}
    return diffs, stats


# --- the explained differences ----------------------------------------------------------------

@dataclass(frozen=True)
class Explanation:
    id: str
    kind: str  # "d2lbook bug" or "tabbook's choice"
    reason: str
    test: Callable[[Difference], bool]


def _compiles(code: Any) -> bool:
    if not isinstance(code, str):
        return False
    masked = "\n".join("pass" if line.lstrip().startswith(("%", "!")) else line for line in code.split("\n"))
    try:
        ast.parse(masked)
    except SyntaxError:
        return False
    return True


def _nonblank(s: Any) -> list[str] | None:
    return [line for line in s.split("\n") if line.strip()] if isinstance(s, str) else None


EXPLAINED: list[Explanation] = []


def explained(id: str, kind: str, reason: str) -> Callable[[Callable[[Difference], bool]], Callable[[Difference], bool]]:
    def register(test: Callable[[Difference], bool]) -> Callable[[Difference], bool]:
        EXPLAINED.append(Explanation(id, kind, reason, test))
        return test
    return register


@explained("isort", "tabbook's choice",
           "d2lbook formats every code cell that imports something with isort before it shows and runs it "
           "(library.format_code_nb: imports sorted, names in a `from` line sorted, blank lines added "
           "after the imports); tabbook keeps the cell as the author wrote it. Recognised exactly: "
           "d2lbook's own code before that step equals tabbook's")
def _isort(d: Difference) -> bool:
    return d.feature == "code" and d.context.get("before_format") == d.tabbook and d.tabbook != d.d2lbook


@explained("bare-else", "d2lbook bug",
           "d2lbook's line-based tab.selected cleaner (notebook._clean_if_branches) leaves a bare `else:` "
           "(or the other branches' lines) when the tab's branch is not the first: the code it shows "
           "does not parse; tabbook resolves the branches with ast")
def _bare_else(d: Difference) -> bool:
    return (d.feature == "code" and isinstance(d.d2lbook, str) and isinstance(d.tabbook, str)
            and not _compiles(d.d2lbook) and _compiles(d.tabbook))


@explained("blank-after-branch", "d2lbook bug",
           "d2lbook's line-based tab.selected cleaner drops the blank lines that follow a branch of "
           "another tab (they are read as part of it), so two definitions run together; tabbook keeps "
           "the author's blank lines. The non-blank lines are the same, in order")
def _blank_after_branch(d: Difference) -> bool:
    text = d.context.get("source", {}).get("text", "")
    return (d.feature == "code" and "tab.selected" in text and _nonblank(d.d2lbook) == _nonblank(d.tabbook)
            and d.d2lbook != d.tabbook)


@explained("astor-wrap", "tabbook's choice",
           "d2lbook prints a call it rewrites with an alias with astor, which wraps long lines "
           "(`data.\\n    num_steps`); tabbook prints it with ast.unparse, on one line: the same code "
           "but for whitespace")
def _astor_wrap(d: Difference) -> bool:
    return (d.feature == "code" and isinstance(d.d2lbook, str) and isinstance(d.tabbook, str)
            and "".join(d.d2lbook.split()) == "".join(d.tabbook.split()) and d.d2lbook != d.tabbook)


@explained("d2lbook-unreadable", "d2lbook bug",
           "d2lbook cannot read the page: notedown turns an indented code block into a cell without "
           "source, which nbformat rejects (NotebookValidationError), and `d2lbook build` stops; "
           "tabbook reads it as CommonMark does (a code block)")
def _unreadable(d: Difference) -> bool:
    return d.feature == "read" and isinstance(d.d2lbook, str) and "NotebookValidationError" in d.d2lbook \
        and d.tabbook is None


@explained("bare-else-crash", "d2lbook bug",
           "the bare `else:` d2lbook's tab.selected cleaner leaves (see bare-else) is then parsed by its "
           "alias rewriting (library.replace_fluent_alias, ast.parse): SyntaxError, and d2lbook stops on "
           "the page; tabbook resolves the branches with ast and rewrites the aliases")
def _bare_else_crash(d: Difference) -> bool:
    return (d.feature == "read" and isinstance(d.d2lbook, str) and d.d2lbook.startswith("SyntaxError")
            and d.tabbook is None and "tab.selected" in d.context.get("source", {}).get("text", ""))


@explained("heading-without-blank-line", "tabbook's choice",
           "an ATX heading right under a line of text (no blank line between) is a heading in CommonMark, "
           "as tabbook reads it; pandoc's Markdown, which d2lbook hands the prose to, wants a blank line "
           "before a heading (blank_before_header), so d2l.ai shows `## Title` as text of the paragraph")
def _heading_without_blank(d: Difference) -> bool:
    if d.feature != "headings" or d.d2lbook is not None or not isinstance(d.tabbook, tuple | list):
        return False
    lines = d.context.get("source", {}).get("text", "").split("\n")
    for i, line in enumerate(lines):
        m = _HEADING.match(line)
        if m and i and lines[i - 1].strip() and (len(m.group(1)), norm(m.group(2) or "")) == tuple(d.tabbook):
            return True
    return False


_HIDE_OUTPUT_LINE = re.compile(r"^\s*#\s*@hide_output\s*$")


@explained("hide-output-mark-shown", "tabbook's choice",
           "d2lbook shows a `#@hide_output` cell with the `#@hide_output` line in its code (its reST step "
           "only drops the outputs); tabbook reads the line as a mark and leaves it out of the code shown")
def _hide_output_mark(d: Difference) -> bool:
    if d.feature != "code" or not isinstance(d.d2lbook, str) or not isinstance(d.tabbook, str):
        return False
    kept = [line for line in d.d2lbook.split("\n") if not _HIDE_OUTPUT_LINE.match(line)]
    before = d.context.get("before_format")
    if before is not None:  # isort moved lines too: compare with d2lbook's code before it
        kept_before = [line for line in before.split("\n") if not _HIDE_OUTPUT_LINE.match(line)]
        return kept != d.d2lbook.split("\n") and code_text("\n".join(kept_before)) == d.tabbook
    return kept != d.d2lbook.split("\n") and code_text("\n".join(kept)) == d.tabbook


_FENCED = re.compile(r"^[ \t]*(`{3,}|~{3,}).*?^[ \t]*\1[ \t]*$", re.S | re.M)


@explained("slide-marks-in-examples", "d2lbook bug",
           "d2lbook's slide module reads marks anywhere in a Markdown cell (slides._match_slide_marks): "
           "inside a fenced example (d2lbook's own manual shows a marked page in a ````md fence) and "
           "between delimiters written in code spans (`(**` and `**)`); tabbook reads marks in prose only")
def _marks_in_examples(d: Difference) -> bool:
    if d.feature != "slides" or d.tabbook is not None or not isinstance(d.d2lbook, str):
        return False
    text = d.context.get("source", {}).get("text", "")
    fenced = " ".join(norm(m.group(0)) for m in _FENCED.finditer(text))
    return d.d2lbook in fenced or d.d2lbook.startswith("`") or d.d2lbook.endswith("`")


def explain(d: Difference) -> str | None:
    for e in EXPLAINED:
        if e.test(d):
            return e.id
    return None


# --- command line -----------------------------------------------------------------------------

def summary(diffs: Iterable[Difference]) -> dict[str, int]:
    return dict(Counter(d.explained or "UNEXPLAINED" for d in diffs))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--book", type=Path, required=True)
    ap.add_argument("--overlay", type=Path, default=None)
    ap.add_argument("--report", type=Path, help="write every difference, one a line (TSV)")
    ap.add_argument("--json", type=Path, help="write the counts as JSON")
    ap.add_argument("--show", type=int, default=30, help="unexplained differences printed (default 30)")
    args = ap.parse_args(argv)
    try:
        diffs, stats = compare_book(args.book.resolve(), overlay=args.overlay)
    except BookError as exc:
        raise SystemExit(str(exc)) from exc
    counts = summary(diffs)
    result = {"book": str(args.book), "pages": stats["pages"], "tabs": stats["tabs"],
              "page_tabs_compared": stats["page_tabs"], "differences": len(diffs), "by_explanation": counts,
              "explanations": {e.id: {"kind": e.kind, "reason": e.reason} for e in EXPLAINED}}
    if args.report:
        args.report.write_text("page\ttab\tfeature\texplanation\td2lbook\ttabbook\n"
                               + "".join(d.line() + "\n" for d in diffs))
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))
    unexplained = [d for d in diffs if not d.explained]
    for d in unexplained[:args.show]:
        print(d.line(), file=sys.stderr)
    print(json.dumps({k: v for k, v in result.items() if k != "explanations"}, indent=1))
    return 1 if unexplained else 0


if __name__ == "__main__":
    raise SystemExit(main())
