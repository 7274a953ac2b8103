"""Slides from the dialect's slide marks: one reveal.js deck per (section, framework).

An author marks what a lecture shows: ``[**text**]`` starts a new slide with that text,
``(**text**)`` adds it to the current one; ``[~~text~~]``/``(~~text~~)`` do the same with text
the book itself leaves out (:func:`tabbook.source.dialect.strip_slide_marks`). As d2lbook does,
a deck holds the marked text and the code the framework runs, each cell under the text before
it, with comments and ``#@save`` marks taken out and a cell without outputs shown together with
the next one; a section without marks has no deck. The outputs are the freeze store's, the
same the page shows. A cell marked ``#@hide``/``#@hide_code`` is left out, ``#@hide_output``
shows its code only. The first slide after a subsection's heading carries it as its title.
A slide too long for its frame goes on over more slides under the same heading (:func:`paginate`,
cut between cells by an estimate of their height), and the decks' script shrinks each slide to fit
its 1100×700 frame (``slides_static/tabbook-slides.js``): a presenter sees all of it, unscrolled.
An error output shows the exception's statement, not its frames (:func:`error_text`).

The decks are plain HTML under ``build/html/_slides/<section>-<framework>.html``, written before
Sphinx runs so the pages can link the ones that exist; reveal.js (from the npm registry, the
same pinned project as KaTeX: ``tabbook/render/node``) is copied beside them, and nothing is
loaded from elsewhere. Math is typeset at build time with KaTeX, as on the pages.

:func:`build_deck` is pure (marks and executed cells → :class:`Deck`); :func:`deck_html` renders
one; :func:`write_decks` is the I/O.
"""

from __future__ import annotations

import base64
import hashlib
import html
import io
import json
import posixpath
import re
import tokenize
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from tabbook.config import Config
from tabbook.execute.outputs import SLIDE_IMAGES
from tabbook.execute.store import Entry
from tabbook.execute.store import text as nb_text
from tabbook.files import BuildDir, write_atomic, write_if_changed
from tabbook.nbjson import CellOutput, Notebook
from tabbook.render.context import SLIDES
from tabbook.render.site import deck_target
from tabbook.source.constructs import Marker, Slides, deck_use
from tabbook.source.dialect import ROLE
from tabbook.source.model import Section

if TYPE_CHECKING:
    from tabbook.render.katex import Katex

#: ``[**…**]``/``[~~…~~]`` (not a link's text: no ``(`` right after) or ``(**…**)``/``(~~…~~)``.
MARK = re.compile(r"\[(\*\*|~~)(?P<new>.+?)\1\](?!\()|\((\*\*|~~)(?P<more>.+?)\3\)", re.S)
_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,}).*?^[ \t]*\1[ \t]*$", re.S | re.M)
_TICKS = re.compile(r"`+")
_DELIMITER = re.compile(r"\[\*\*|\*\*\]|\(\*\*|\*\*\)|\[~~|~~\]|\(~~|~~\)")
_HEADING = re.compile(r"^(#{2,6})\s+(.+?)\s*#*\s*$", re.M)  # the page title is the deck's
_COMMENT_LINE = re.compile(r"^\s*#")
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
REVEAL_FILES = ("dist/reset.css", "dist/reveal.css", "dist/reveal.js", "LICENSE")
STATIC = Path(__file__).resolve().parent / "slides_static"  # not the pages' _static: decks only


@dataclass(frozen=True)
class Mark:
    """One marked piece of prose: its text and whether it starts a slide."""

    text: str
    new_slide: bool


@dataclass(frozen=True)
class Code:
    """A code block on a slide and the outputs shown under it (notebook output dicts)."""

    source: str
    outputs: tuple[CellOutput, ...] = ()


@dataclass
class Slide:
    title: str = ""
    items: list[str | Code] = field(default_factory=list)  # str: Markdown of marked text


@dataclass
class Deck:
    docname: str
    framework: str
    label: str
    title: str
    slides: list[Slide]


def marks(markdown: str) -> list[Mark]:
    """The slide marks of a piece of prose, in order. Fenced code in it is not prose (a fence of
    four backticks shows an example that has fences of three), and a delimiter written in a code
    span (`` `(**` ``) is text, not a mark."""
    text = _mask_delimiter_spans(_FENCE.sub("", markdown))
    return [Mark(" ".join((m.group("new") or m.group("more")).split()), m.group("new") is not None)
            for m in MARK.finditer(text)]


def _mask_delimiter_spans(text: str) -> str:
    """``text`` with every code span that holds a mark delimiter blanked out. Code spans are
    found left to right as CommonMark finds them: a run of backticks opens one, the next run of
    the same length closes it (no such run: the backticks are text)."""
    out, pos = [], 0
    while (opener := _TICKS.search(text, pos)) is not None:
        closer = next((m for m in _TICKS.finditer(text, opener.end()) if len(m.group()) == len(opener.group())), None)
        if closer is None:  # the backticks are text; a later run may still open a span
            out.append(text[pos:opener.end()])
            pos = opener.end()
            continue
        span = text[opener.start():closer.end()]
        out += [text[pos:opener.start()], " " * len(span) if _DELIMITER.search(span) else span]
        pos = closer.end()
    return "".join(out) + text[pos:]


def slide_text(pieces: Sequence[str]) -> str:
    """Marked pieces as one slide paragraph: capitalised, without a dangling comma or colon
    (a mark is usually part of a sentence)."""
    text = " ".join(p.strip() for p in pieces if p.strip())
    text = text.rstrip(",;: ")
    return text[:1].upper() + text[1:]


def lecture_code(source: str) -> str:
    """A cell's code as a slide shows it: comments and ``#@save`` marks removed (the lecturer
    explains instead), lines left empty by that dropped. Comments are found by Python's own
    tokenizer; code it cannot read (an IPython magic) loses only its whole-line comments."""
    lines = source.splitlines()
    comments: dict[int, int] = {}  # 0-based row -> column where its comment starts
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if tok.type == tokenize.COMMENT:
                comments[tok.start[0] - 1] = tok.start[1]
    except (tokenize.TokenError, IndentationError, SyntaxError):
        comments = {i: len(line) - len(line.lstrip()) for i, line in enumerate(lines) if _COMMENT_LINE.match(line)}
    out: list[str] = []
    for i, line in enumerate(lines):
        if i in comments:
            line = line[:comments[i]].rstrip()
            if not line:
                continue
        line = line.rstrip()
        if line or (out and out[-1]):  # one blank line where the comments left several
            out.append(line)
    return "\n".join(out).strip("\n")


def build_deck(section: Section, framework: str, label: str, executed: Notebook | None) -> Deck | None:
    """The deck of ``section`` for ``framework`` from its executed notebook, or None without marks.

    The k-th code cell the framework runs is the k-th cell of its executed notebook (what the
    freeze key covers); a missing notebook gives code without outputs. Exercise solutions are
    not lecture material: their cells stay out of the deck."""
    ran = (executed or {}).get("cells", [])
    deck = Deck(section.path[:-3], framework, label, section.title, [Slide()])
    current = deck.slides[0]
    pending: list[str] = []  # code of cells without outputs, shown with the next cell
    heading = ""  # the latest subsection heading not yet on a slide
    any_marks = False
    k = 0
    # the construct table says what a deck does with a prose tab's cells and a solution's
    per_tab = deck_use(Marker.OPEN_TAB) is Slides.FRAMEWORK
    solutions_out = deck_use(Marker.OPEN_SOLUTION) is Slides.LEFT_OUT
    for cell in section.cells:
        if cell.kind == "markdown":
            if (per_tab and cell.tabs and framework not in cell.tabs) or (solutions_out and cell.solution):
                continue
            headings = _HEADING.findall(_FENCE.sub("", cell.source))
            if headings:
                heading = headings[-1][1]  # the subsection the text below belongs to
            found = marks(cell.source)
            if not found:
                continue
            any_marks = True
            if any(m.new_slide for m in found):
                if pending:
                    current.items.append(Code("\n\n".join(pending)))
                    pending = []
                current = Slide(title=heading)
                heading = ""  # one slide carries it; the next ones of the subsection do not
                deck.slides.append(current)
            current.items.append(slide_text([m.text for m in found]))
            continue
        if framework not in cell.tabs:
            continue
        out = ran[k] if k < len(ran) else None
        k += 1
        if cell.flags & {"hide", "hide_code"} or (solutions_out and cell.solution):
            continue
        code = lecture_code(out["source"] if out and isinstance(out.get("source"), str) else cell.source)
        outputs = tuple(out.get("outputs", [])) if out and "hide_output" not in cell.flags else ()
        if not code.strip() and not outputs:
            continue
        if not outputs:
            pending.append(code)
            continue
        current.items.append(Code("\n\n".join([*pending, code]), outputs))
        pending = []
    if pending:
        current.items.append(Code("\n\n".join(pending)))
    if not any_marks:
        return None
    deck.slides = [page for i, slide in enumerate(deck.slides)
                   for page in paginate(slide, first=i == 0, heading=deck.title if i == 0 else slide.title)]
    return deck


# How tall a slide's parts are, in lines of the deck's body text (1100×700 at 32 px, see
# tabbook-slides.css): a frame holds about 16. A line of code or output is 0.6 of one and holds
# about 90 characters; a line of text about 55. Estimates only: the decks' script shrinks what
# still does not fit, so these need only keep a slide from being shrunk past reading.
FRAME_LINES = 16.0
_TITLE_LINES = {True: 5.5, False: 1.8}  # the title slide's title, framework and link; a heading


def item_lines(item: str | Code) -> float:
    """The estimated height of a slide item (see :data:`FRAME_LINES`)."""
    if isinstance(item, str):
        return 0.6 + sum(max(1, -(-len(line) // 55)) for line in item.splitlines() or [""])
    rows = nb_text(item.source).splitlines() + [
        line for o in item.outputs for line in _output_rows(o)]
    return 1.0 + 0.6 * sum(max(1, -(-len(line) // 90)) for line in rows)


def _output_rows(out: CellOutput) -> list[str]:
    if out.get("output_type") == "stream":
        return nb_text(out.get("text", "")).splitlines()
    if out.get("output_type") == "error":
        return error_text(out).splitlines()
    data = out.get("data", {})
    if any(mime in data for mime in SLIDE_IMAGES):
        return [""] * 14  # an image: at most 360 px high
    return nb_text(data.get("text/plain", "")).splitlines()


def paginate(slide: Slide, first: bool = False, heading: str | None = None) -> list[Slide]:
    """``slide`` as one slide or, when its items would not fit a frame at a readable size,
    several, the later ones under ``heading`` (by default the slide's own; the title slide's
    overflow goes under the deck's title). A slide is cut only between items, and a piece of text stays
    with the code after it (it introduces that code); an item taller than a frame gets a
    slide of its own."""
    groups: list[list[str | Code]] = []
    for item in slide.items:
        if groups and isinstance(groups[-1][-1], str):
            groups[-1].append(item)
        else:
            groups.append([item])
    pages = [Slide(slide.title)]
    used = _TITLE_LINES[first] if first or slide.title else 0.0
    for group in groups:
        height = sum(item_lines(i) for i in group)
        if pages[-1].items and used + height > FRAME_LINES:
            pages.append(Slide(slide.title if heading is None else heading))
            used = _TITLE_LINES[False]
        pages[-1].items.extend(group)
        used += height
    return pages


# ---- HTML ---------------------------------------------------------------------------------------

class Renderer:
    """Markdown, math and code of the decks to HTML: markdown-it (raw HTML off, so a deck shows
    what the author wrote as text), KaTeX when it is available, Pygments with classes."""

    def __init__(self, katex: Katex | None = None) -> None:
        from markdown_it import MarkdownIt
        from pygments.formatters import HtmlFormatter

        self.md = MarkdownIt("commonmark", {"html": False}).enable("table")
        self.formatter = HtmlFormatter(nowrap=True)
        self.katex = katex
        self.classes: set[str] = set()

    def math(self, tex: str, display: bool) -> str:
        if self.katex is not None:
            from tabbook.render.katex import TexError, classes_of

            try:
                out = str(self.katex.render(tex, display))
            except TexError:
                pass
            else:
                self.classes |= classes_of(out)
                return out
        return f'<code class="tabbook-tex">{html.escape(tex)}</code>'

    def markdown(self, text: str) -> str:
        """Inline Markdown of a slide's text; ``$…$``/``$$…$$`` typeset; roles as their target."""
        formulas: list[str] = []

        def keep(m: re.Match[str]) -> str:
            display = m.group(1) is not None
            formulas.append(self.math(m.group(1) if display else m.group(2), display))
            return f"\ue000{len(formulas) - 1}\ue001"  # private-use marks: markdown-it keeps them

        text = re.sub(r"\$\$(.+?)\$\$|\$([^$\n]+?)\$", keep, text, flags=re.S)
        text = ROLE.sub(lambda m: "" if m.group("role").startswith("cite") else m.group("target"), text)
        out = self.md.render(text)
        return re.sub("\ue000(\\d+)\ue001", lambda m: formulas[int(m.group(1))], out)

    def code(self, source: str) -> str:
        from pygments import highlight
        from pygments.lexers import PythonLexer

        return f'<pre class="highlight"><code>{highlight(source, PythonLexer(), self.formatter)}</code></pre>'

    def output(self, out: CellOutput) -> str:
        kind = out.get("output_type")
        if kind == "stream":
            text = _ANSI.sub("", nb_text(out.get("text", "")))
            return f'<pre class="output {html.escape(out.get("name", "stdout"))}">{html.escape(text)}</pre>'
        if kind == "error":
            return f'<pre class="output error">{html.escape(error_text(out))}</pre>'
        data = out.get("data", {})
        for mime in SLIDE_IMAGES:
            if mime in data:
                raw = nb_text(data[mime])
                b64 = base64.b64encode(raw.encode()).decode() if mime == "image/svg+xml" else raw.replace("\n", "")
                return f'<img class="output" alt="output" src="data:{mime};base64,{b64}">'
        if "text/plain" in data:
            return f'<pre class="output">{html.escape(_ANSI.sub("", nb_text(data["text/plain"])))}</pre>'
        return ""


def error_text(out: CellOutput) -> str:
    """What a slide shows of an error: the exception's own statement (``ValueError: …``), not the
    frames above it, which a lecture does not read out and which filled whole slides. The last
    line naming the exception starts it (an exception whose message holds another traceback, as
    MXNet's do, ends with its real statement); at most three lines of it, or the traceback's last
    three lines when no line names it."""
    lines = [line for line in _ANSI.sub("", "\n".join(out.get("traceback", []))).splitlines() if line.strip()]
    name = str(out.get("ename", ""))
    starts = [i for i, line in enumerate(lines) if name and line.startswith(f"{name}:")]
    return "\n".join(lines[starts[-1]:][:3] if starts else lines[-3:])


def deck_html(deck: Deck, r: Renderer, katex_css: str = "") -> str:
    """The deck's page. Paths are relative to where it is written (``_slides/<section>-<fw>.html``)."""
    here = deck_target(deck.docname, deck.framework)
    up = posixpath.relpath(".", posixpath.dirname(here)) + "/"
    reveal = posixpath.relpath(f"{SLIDES}/reveal", posixpath.dirname(here)) + "/"
    page = f"{up}{deck.docname}.html?tab={deck.framework}"
    parts = []
    first = deck.slides[0]
    body = [f"<h1>{r.markdown(deck.title).strip().removeprefix('<p>').removesuffix('</p>')}</h1>",
            f'<p class="tabbook-deck-fw">{html.escape(deck.label)}</p>',
            f'<p class="tabbook-deck-back"><a href="{html.escape(page)}">Read the section</a></p>']
    parts.append(_section(body + _items(first.items, r)))
    for slide in deck.slides[1:]:
        head = [f"<h2>{r.markdown(slide.title).strip().removeprefix('<p>').removesuffix('</p>')}</h2>"] \
            if slide.title else []
        parts.append(_section(head + _items(slide.items, r)))
    css = f'<link rel="stylesheet" href="{up}_static/{html.escape(katex_css)}">\n' if katex_css else ""
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{html.escape(deck.title)} ({html.escape(deck.label)}): slides</title>
<link rel="icon" href="{up}_static/favicon.svg" type="image/svg+xml">
<link rel="stylesheet" href="{reveal}reset.css">
<link rel="stylesheet" href="{reveal}reveal.css">
<link rel="stylesheet" href="{reveal}tabbook-slides.css">
{css}</head>
<body>
<div class="reveal"><div class="slides">
{chr(10).join(parts)}
</div></div>
<script src="{reveal}reveal.js"></script>
<script src="{reveal}tabbook-slides.js"></script>
</body>
</html>
"""


def _items(items: list[str | Code], r: Renderer) -> list[str]:
    out = []
    for item in items:
        if isinstance(item, str):
            out.append(f'<div class="tabbook-deck-text">{r.markdown(item)}</div>')
        else:
            outs = "".join(r.output(o) for o in coalesced(item.outputs))
            out.append(f'<div class="tabbook-deck-cell">{r.code(item.source)}'
                       + (f'<div class="tabbook-deck-out">{outs}</div>' if outs else "") + "</div>")
    return out


def coalesced(outputs: Sequence[CellOutput]) -> list[CellOutput]:
    """Consecutive stream outputs of one stream as one, as the page shows them: how a kernel cuts
    what a cell prints into messages depends on timing (``print(x)`` may arrive as ``x`` and then
    ``\\n``), and a deck must not depend on it."""
    out: list[CellOutput] = []
    for o in outputs:
        last = out[-1] if out else None
        if (last is not None and o.get("output_type") == "stream" and last.get("output_type") == "stream"
                and o.get("name") == last.get("name")):
            out[-1] = {**last, "text": nb_text(last.get("text", "")) + nb_text(o.get("text", ""))}
        else:
            out.append(o)
    return out


def _section(lines: list[str]) -> str:
    return "<section>\n" + "\n".join(lines) + "\n</section>"


# ---- I/O --------------------------------------------------------------------------------------

@dataclass
class Written:
    decks: int = 0  # decks the book has now
    written: int = 0  # of those, rewritten (their text changed)
    removed: int = 0  # decks of sections that lost their marks


def _katex() -> Katex | None:
    from tabbook.render.katex import Katex, MathUnavailable, ensure_katex

    try:
        return Katex(ensure_katex(log=lambda *_: None))
    except MathUnavailable:
        return None


def publish_reveal(html_dir: Path) -> None:
    """reveal.js and the decks' own style and start-up script, under ``_slides/reveal/``."""
    from tabbook.render.katex import MathUnavailable, ensure_katex

    try:
        package = ensure_katex(log=lambda *_: None).parent / "reveal.js"
    except MathUnavailable as exc:
        from tabbook.errors import BookError

        raise BookError(f"slides: {exc}") from exc
    out = html_dir / SLIDES / "reveal"
    out.mkdir(parents=True, exist_ok=True)
    files = [(package / rel, out / Path(rel).name) for rel in REVEAL_FILES]
    files += [(STATIC / name, out / name) for name in ("tabbook-slides.css", "tabbook-slides.js")]
    for src, dst in files:
        write_if_changed(dst, src.read_bytes())


def deck_key(section: Section, framework: str, executed: Notebook | None) -> str:
    """What a deck is made of: the section's cells, the framework and its executed notebook (the
    store's key for it when it has one: the key decides the outputs); the deck code is the
    slides memo's builder fingerprint."""
    h = hashlib.sha256(f"{framework}\0".encode())
    for cell in section.cells:
        h.update(f"{cell.kind}\0{','.join(cell.tabs)}\0{','.join(sorted(cell.flags))}\0{cell.solution}\0"
                 f"{cell.source}\0".encode())
    key = Entry(executed).key if executed is not None else None
    h.update((key or json.dumps(executed, sort_keys=True, default=str)).encode())
    return h.hexdigest()


def write_decks(config: Config, sections: Sequence[Section], notebooks: dict[tuple[str, str], Notebook],
                html_dir: Path) -> Written:
    """Write every section's decks and remove decks that no longer have marks. A deck whose
    inputs (:func:`deck_key`) are those of the file on disk is not rendered again, so a build
    that changed nothing costs a hash per deck (d2l-en: 261 decks). Each file is written whole or
    not at all."""
    result = Written()
    wanted: set[Path] = set()
    renderer: Renderer | None = None
    katex = None
    memo = BuildDir(config.build_dir).memo("slides")
    known = memo.load() or {}
    keys: dict[str, str] = {}
    try:
        for section in sections:
            if not any(c.kind == "markdown" and MARK.search(c.source) for c in section.cells):
                continue
            fws = [fw for fw in config.tabs if (section.path, fw) in notebooks] if section.code_cells \
                else [config.default_tab]
            for fw in fws:  # the tabs the section exists for (its units), prose only: the default
                executed = notebooks.get((section.path, fw))
                rel = deck_target(section.path[:-3], fw)
                path = html_dir / rel
                key = deck_key(section, fw, executed)
                if known.get(rel) == key and path.is_file():
                    keys[rel] = key
                    wanted.add(path)
                    result.decks += 1
                    continue
                deck = build_deck(section, fw, config.framework(fw).label, executed)
                if deck is None:
                    continue
                if renderer is None:
                    katex = _katex()
                    renderer = Renderer(katex)
                renderer.classes = set()
                text = deck_html(deck, renderer)
                if renderer.classes and katex is not None:
                    from tabbook.render.katex import page_stylesheet

                    name = page_stylesheet(katex.package, renderer.classes, html_dir / "_static")
                    text = deck_html(deck, renderer, name)
                wanted.add(path)
                keys[rel] = key
                result.decks += 1
                if not path.is_file() or path.read_text(encoding="utf-8") != text:
                    write_atomic(path, text)
                    result.written += 1
    finally:
        if katex is not None:
            katex.close()
    if wanted:
        publish_reveal(html_dir)
    root = html_dir / SLIDES
    if root.is_dir():
        for path in root.rglob("*.html"):
            if path not in wanted:
                path.unlink()
                result.removed += 1
    memo.save(keys)
    return result
