"""The front page: what the root page of the site gains so that it serves the book's reader.

The root page's own prose (what the book is) stays as the author wrote it; below it the build
adds, from the table of contents, the freeze store and ``config.ini`` (nothing to keep by hand):

- a framework picker: one choice for the whole site, the tabs' own choice (``tabbook.js``);
- the chapters and their sections, each with the first sentence of its text;
- the downloads: each framework's PDF (or a note that this build has none; filled in when the
  HTML is written, :func:`fill_pdf_cells`) and its notebooks as one zip;
- how to install the book's package from the site itself (:mod:`tabbook.render.package`: the
  exact version from the site's own index, and each framework's extra);
- where each framework's outputs were computed (the store's provenance).

All of it is inside ``{only} html``: the PDFs start with the root page's prose alone. The root
toctree is kept for the navigation but hidden, since the contents list replaces its bare list.
:func:`front_matter` is pure; :func:`front_page_facts` gathers what it needs from disk.
"""

from __future__ import annotations

import html
import re
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from tabbook.config import Config
from tabbook.execute.job import CPU_ONLY, Provenance
from tabbook.execute.store import Entry as StoreEntry
from tabbook.execute.store import FreezeStore
from tabbook.nbjson import Notebook
from tabbook.render.merge import with_version
from tabbook.render.myst import convert_roles, myst_text
from tabbook.render.names import GENERATED_HTML, SYNC_GROUP
from tabbook.render.package import INDEX, Package, book_package
from tabbook.render.site import NO_PDF_NOTE, compact_css, compact_js, zip_target
from tabbook.source.constructs import FRONT_LINES, Front
from tabbook.source.dialect import strip_slide_marks
from tabbook.source.model import Section
from tabbook.source.toc import page_entries

#: How the generated part opens a block of its own HTML: marked as the builder's, so that under
#: ``[html] raw_html = escape`` it is still published (:mod:`tabbook.render.ext.rawhtml`).
RAW_HTML = ("```{raw} html", f":class: {GENERATED_HTML}")

#: The front page's own style, inlined into it so that no other page loads it.
FRONT_CSS = Path(__file__).resolve().parent / "front.css"
#: The picker's script, inlined after it: only the front page has a picker.
PICKER_JS = Path(__file__).resolve().parent / "front.js"
#: How long a section's line may be before it is cut at a word.
LINE_MAX = 180


@dataclass(frozen=True)
class Entry:
    """A page in the contents list: its docname, title, one line, and the pages it lists."""

    docname: str
    title: str
    line: str
    children: tuple[Entry, ...] = ()


@dataclass(frozen=True)
class FrontFacts:
    """Everything the front page shows, gathered once (:func:`front_page_facts`)."""

    title: str
    tabs: tuple[str, ...]
    labels: dict[str, str]
    default_tab: str
    contents: tuple[Entry, ...]
    zips: dict[str, tuple[str, int]]  # framework -> (URL, number of notebooks in it)
    package: str  # the library's import name, e.g. "d2l"
    extras: dict[str, str] = field(default_factory=dict)  # framework -> pip extra
    install: Package | None = None  # the distribution the site serves (none: no install line)
    computed: dict[str, list[str]] = field(default_factory=dict)  # framework -> provenance lines


# ---- one line per section ---------------------------------------------------------------------

_SKIP = re.compile(r"^\s*(#|```|~~~|!\[|\$\$|\||<|>|-{3,}|\.\. )")


def one_line(section: Section) -> str:
    """The first sentence of the section's first paragraph of shared prose, as MyST: what it is
    about in the author's words, whatever the section is. "" when it has no such paragraph."""
    for cell in section.cells:
        if cell.kind != "markdown" or cell.tabs:
            continue
        in_fence = False
        paragraph: list[str] = []
        for raw in (cell.prose or strip_slide_marks(cell.source)).splitlines() + [""]:
            stripped = raw.strip()
            if stripped.startswith(("```", "~~~")):
                in_fence = not in_fence
                continue
            if in_fence:
                continue
            if not stripped:
                if paragraph:
                    return _sentence(" ".join(paragraph))
                continue
            # the construct table says which of the dialect's lines are passed over, or end it
            front = next((use for pattern, use in FRONT_LINES if pattern.match(raw)), Front.SUMMARY)
            if not paragraph and (_SKIP.match(raw) or front is not Front.SUMMARY):
                continue
            if front is Front.ENDS:
                break
            paragraph.append(stripped)
    return ""


#: What a line is never cut inside: a role with its target, a code span, inline math, a link or
#: an image, bold or italic text.
_ATOM = re.compile(
    r":[\w-]+:`[^`]*`|(`+).+?\1|\$[^$]+\$|!?\[[^\]]*\]\([^)]*\)|\*\*.+?\*\*|\*[^*\s][^*]*\*")
#: A footnote's mark, ``[^1]`` (pandoc's and MyST's).
_FOOTNOTE_MARK = re.compile(r"\[\^[^\]\s]+\](?!:)")
_SENTENCE_END = re.compile(r"[.!?](?=\s+[A-Z(]|\s*$)")


def _atoms(text: str) -> list[tuple[int, int]]:
    return [m.span() for m in _ATOM.finditer(text)]


def _inside(pos: int, atoms: list[tuple[int, int]]) -> tuple[int, int] | None:
    """The atom that ``pos`` falls strictly inside, if any."""
    return next(((a, b) for a, b in atoms if a < pos < b), None)


def _sentence(text: str) -> str:
    """The first sentence of ``text``, at most :data:`LINE_MAX` characters, cut at a word and
    never inside a role, code, math, a link or emphasis (issue 30: a cut role left ``:cite:``
    raw on the front page), then the roles converted to MyST."""
    # A footnote's mark has no footnote on the front page: left out (MyST would warn there).
    text = re.sub(r"\s+", " ", _FOOTNOTE_MARK.sub("", text)).strip()
    atoms = _atoms(text)
    end = next((m.end() for m in _SENTENCE_END.finditer(text) if _inside(m.end() - 1, atoms) is None), None)
    if end is not None:
        text, atoms = text[:end], [(a, b) for a, b in atoms if b <= end]
    if len(text) > LINE_MAX:
        cut = len(text[:LINE_MAX].rsplit(" ", 1)[0])
        atom = _inside(cut, atoms)
        if atom is not None:
            cut = atom[0]  # before the atom the cut fell into
        text = text[:cut].rstrip().rstrip(",;:") + "…"
    return convert_roles(text)


def contents(root: Section, pages: dict[str, Section], depth: int = 2) -> tuple[Entry, ...]:
    """The pages the root's toc lists and, ``depth`` levels down, theirs, in reading order."""

    def entries(section: Section, level: int) -> tuple[Entry, ...]:
        out = []
        for _, _, path in page_entries(section):
            page = pages.get(path)
            if page is None:
                continue
            kids = entries(page, level + 1) if level < depth else ()
            out.append(Entry(path[:-3], page.title, one_line(page), kids))
        return tuple(out)

    return entries(root, 1)


# ---- where the outputs were computed -----------------------------------------------------------

def computed_lines(label: str, provs: Iterable[Provenance]) -> list[str]:
    """One line per (device, framework version, Python) a framework's shown outputs came from,
    with how many sections and the dates: "CPU only (AMD EPYC), PyTorch 2.13.0, Python 3.11.7:
    5 sections, 2026-11-24"."""
    groups: dict[tuple[str, str, str], list[str]] = {}
    shown_without = 0
    for prov in provs:
        if not prov or prov.not_executed:
            shown_without += 1
            continue
        # The entry's values are data: shown as text (myst_text), never read as MyST.
        cpu = myst_text(prov.text("cpu"))
        where = myst_text(prov.text("device", "?")) if prov.on_gpu else (f"{CPU_ONLY} ({cpu})" if cpu else CPU_ONLY)
        key = (where, prov.text("framework_version", "?"), myst_text(prov.text("python", "?")))
        groups.setdefault(key, []).append(prov.text("date", "?"))
    lines = []
    for (where, version, python), dates in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        first, last = myst_text(min(dates)), myst_text(max(dates))
        span = first if first == last else f"{first} to {last}"
        n = len(dates)
        lines.append(f"{where}, {with_version(label, version)}Python {python}: {n} section{'s' * (n != 1)}, {span}")
    if shown_without:
        lines.append(f"{shown_without} section{'s' * (shown_without != 1)} shown without outputs")
    return lines


def where_line(section: Section, pages: dict[str, Section], labels: dict[str, str],
               notebooks: dict[tuple[str, str], Notebook]) -> str:
    """One line for a chapter's index: where the outputs of the pages below it were computed,
    per framework ("…computed on 1× NVIDIA H100 80GB HBM3 for PyTorch and JAX; on the CPU only
    (AMD EPYC …) for TensorFlow and MXNet."), so a reader sees which tabs met a GPU before
    opening a section (issue 17). "" when no page below it shows outputs."""
    below: list[str] = []

    def walk(page: Section) -> None:
        for _, _, path in page_entries(page):
            child = pages.get(path)
            if child is not None and path not in below:
                below.append(path)
                walk(child)

    walk(section)
    per_fw: dict[str, list[str]] = {}
    for fw in labels:
        places: list[str] = []
        for path in below:
            prov = StoreEntry(notebooks[(path, fw)]).provenance if (path, fw) in notebooks else None
            if not prov or prov.not_executed:
                continue
            cpu = myst_text(prov.text("cpu"))
            where = myst_text(prov.text("device", "?")) if prov.on_gpu else (
                f"the CPU only ({cpu})" if cpu else "the CPU only")
            if where not in places:
                places.append(where)
        if places:
            per_fw[fw] = places
    if not per_fw:
        return ""
    groups: dict[str, list[str]] = {}
    for fw, places in per_fw.items():
        groups.setdefault(" and ".join(places), []).append(labels[fw])

    def names(items: list[str]) -> str:
        return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]

    parts = [f"on {where} for {names(fws)}" for where, fws in groups.items()]
    return "*The outputs of this chapter's sections were computed " + "; ".join(parts) + ".*"


# ---- gathering and writing -------------------------------------------------------------------

def pip_extras(root: Path, modules: dict[str, str]) -> dict[str, str]:
    """Framework → the extra of the book's package that installs it, when ``pyproject.toml``
    declares one named after the framework's module (``d2l[torch]``)."""
    try:
        data = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError):
        return {}
    declared = data.get("project", {}).get("optional-dependencies", {}) or {}
    return {fw: module for fw, module in modules.items() if module in declared}


def front_page_facts(config: Config, root: Section, pages: dict[str, Section],
                     notebooks: dict[tuple[str, str], Notebook]) -> FrontFacts:
    """What the front page shows, from the toc, the store and the built PDFs."""
    store = FreezeStore(config.freeze_dir)
    labels = {fw: config.framework(fw).label for fw in config.tabs}
    zips: dict[str, tuple[str, int]] = {}
    for fw in config.tabs:
        n = sum(1 for path in pages if path != root.path and store.path(path[:-3], fw).is_file())
        if n:
            zips[fw] = (zip_target(config.name, fw), n)
    computed = {fw: computed_lines(labels[fw], [StoreEntry(nb).provenance for (_, f), nb in sorted(notebooks.items())
                                                if f == fw])
                for fw in config.tabs}
    return FrontFacts(
        title=config.title, tabs=config.tabs, labels=labels, default_tab=config.default_tab,
        contents=contents(root, pages), zips=zips, package=config.library_dir.name,
        extras=pip_extras(config.root, {fw: config.framework(fw).module for fw in config.tabs}),
        install=book_package(config),
        computed={fw: lines for fw, lines in computed.items() if lines},
    )


def _picker(facts: FrontFacts) -> str:
    """The framework picker; none in a book of one tab (nothing to pick: d2lbook's book without
    tabs, mlc-en's)."""
    if len(facts.tabs) < 2:
        return ""
    buttons = "".join(
        f'<button type="button" data-sync-id="{html.escape(fw)}" '
        f'aria-pressed="{"true" if fw == facts.default_tab else "false"}">{html.escape(facts.labels[fw])}</button>'
        for fw in facts.tabs)
    return (f'<div class="tabbook-picker" data-sync-group="{SYNC_GROUP}" data-default="{html.escape(facts.default_tab)}"'
            f' role="group" aria-label="Framework for the whole book" hidden>'
            f'<span class="tabbook-picker-label">Read the code in</span>{buttons}</div>'
            f"<script>{compact_js(PICKER_JS.read_text(encoding='utf-8'))}</script>")


def pdf_marker(fw: str) -> str:
    """Where the front page's table shows a framework's PDF. The sources Sphinx reads are shared
    by the HTML and the LaTeX builds, so they must not change when a PDF appears (the LaTeX
    doctrees would be read again): :func:`fill_pdf_cells` puts the link in when the HTML is written."""
    return f"<!--tabbook-pdf:{fw}-->"


_PDF_MARKER = re.compile(r"<!--tabbook-pdf:([\w.-]+)-->")


def fill_pdf_cells(raw_html: str, pdfs: dict[str, str], labels: dict[str, str]) -> str:
    """The front page's table with each framework's PDF link (URL relative to the page), or the
    note that this build has none."""
    def cell(m: re.Match[str]) -> str:
        fw = m.group(1)
        if fw in pdfs:
            return (f'<a class="reference external" href="{html.escape(pdfs[fw])}">'
                    f"{html.escape(labels.get(fw, fw))} PDF</a>")
        return f'<span class="tabbook-missing">{NO_PDF_NOTE}</span>'

    return _PDF_MARKER.sub(cell, raw_html)


def _downloads(facts: FrontFacts) -> str:
    rows = []
    for fw in facts.tabs:
        label = html.escape(facts.labels[fw])
        pdf = pdf_marker(fw)  # the HTML writer fills it in: build/src does not depend on build/pdf
        if fw in facts.zips:
            url, n = facts.zips[fw]
            nbs = (f'<a class="reference external" href="{html.escape(url)}">{label} notebooks (zip)</a>'
                   f' <span class="tabbook-count">{n} section{"s" * (n != 1)}</span>')
        else:
            nbs = '<span class="tabbook-missing">none executed</span>'
        rows.append(f'<tr data-sync-id="{html.escape(fw)}"><th scope="row">{label}</th><td>{pdf}</td><td>{nbs}</td></tr>')
    return ('<table class="tabbook-front-downloads"><thead><tr><th scope="col">Framework</th>'
            '<th scope="col">The book</th><th scope="col">Its code, executed</th></tr></thead>'
            f'<tbody>{"".join(rows)}</tbody></table>')


def _contents(entries: tuple[Entry, ...], indent: str = "") -> list[str]:
    lines = []
    for e in entries:
        title = e.title.replace("`", "").replace("<", "").replace(">", "")
        text = f"{indent}- {{doc}}`{title} </{e.docname}>`" + (f": {e.line}" if e.line else "")
        lines.append(text)
        lines += _contents(e.children, indent + "  ")
    return lines


#: What the page shows for the site's address until its script fills it in (no script: a reader
#: sees that the line needs it).
SITE_PLACEHOLDER = "https://SITE/"


def pip_command(package: Package, extra: str = "") -> str:
    """The line a reader types, with :data:`SITE_PLACEHOLDER` for the site's address."""
    return f"pip install --extra-index-url {SITE_PLACEHOLDER}{INDEX}/ {package.requirement(extra)}"


def _pip_block(package: Package, extra: str = "") -> list[str]:
    """A console block whose command the front page's script completes with the site's address
    (``data-index``: the index, relative to the page); copied as shown."""
    command = html.escape(pip_command(package, extra))
    return [*RAW_HTML,
            f'<div class="highlight-bash notranslate tabbook-pip"><div class="highlight">'
            f'<pre data-index="{INDEX}/" data-placeholder="{SITE_PLACEHOLDER}">{command}</pre></div></div>', "```"]


def _install_lines(facts: FrontFacts, package: Package) -> list[str]:
    """"Use the code": the install line of the package this site serves, one per framework's
    extra, and the wheel itself."""
    out = ["```{rubric} Use the code", ":heading-level: 2", "```", "",
           f"The code every section saves is the `{facts.package}` package, served by this site "
           f"(version `{package.version}`: pip takes it from here, never another project named "
           f"`{package.name}` from the package index):", "", *_pip_block(package), ""]
    if facts.extras:
        out += ["With a framework's own dependencies:", "", "::::{tab-set}"]
        for fw in facts.tabs:
            if fw in facts.extras:
                out += [f":::{{tab-item}} {facts.labels[fw]}", f":sync: {fw}", "",
                        *_pip_block(package, facts.extras[fw]), ":::"]
        out += ["::::", ""]
    out += [*RAW_HTML, f'<p>The wheel itself: <a class="reference external" href="{INDEX}/{package.name}/index.html">'
            f"this site's package index</a>.</p>", "```", ""]
    return out


def front_matter(facts: FrontFacts) -> str:
    """The MyST the root page gains (pure). Directives nest with colon fences, outermost longest,
    so no fence inside can close one around it."""
    style = compact_css(FRONT_CSS.read_text(encoding="utf-8"))
    out = [":::::{only} html", *RAW_HTML, f"<style>{style}</style>", _picker(facts), "```", ""]
    out += ["```{rubric} Contents", ":heading-level: 2", "```", ""]
    out += _contents(facts.contents) + [""]
    out += ["```{rubric} Downloads", ":heading-level: 2", "```", "", *RAW_HTML, _downloads(facts), "```", ""]
    if facts.install is not None:
        out += _install_lines(facts, facts.install)
    if facts.computed:
        out += ["```{rubric} Where the outputs were computed", ":heading-level: 2", "```", "",
                "Every output in the book was produced by running its code:", ""]
        for fw in facts.tabs:
            for line in facts.computed.get(fw, []):
                out.append(f"- **{facts.labels[fw]}**: {line}.")
        out.append("")
    out.append(":::::")
    return "\n".join(out)


def hide_root_toctree(text: str) -> str:
    """The root page's toctree stays for the navigation, without its bare list on the page."""
    return re.sub(r"^```\{toctree\}\n(?!:hidden:)", "```{toctree}\n:hidden:\n", text, flags=re.M)
