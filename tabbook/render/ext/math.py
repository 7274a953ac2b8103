"""Render: math typeset at build time by KaTeX, with fonts cut to the book's glyphs.

Registered as the HTML math renderer ``tabbook_katex`` (:mod:`tabbook.render.katex` runs KaTeX
in one node process per Sphinx process): no MathJax, no CDN, no script on the reader's side.
A page with math links a KaTeX stylesheet cut to the constructs it uses, and every page shares
KaTeX's fonts cut to the characters the whole site typesets.

Why an environment collector: the site-wide glyph set must be complete when the fonts are cut
(``build-finished``, in the main process). Under ``sphinx-build -j N`` pages are read and written
in forked processes, and whatever a forked writer records on the app object dies with it (the
fonts came out empty). So each document's formulas are typeset once when it is read, and its
glyphs and KaTeX classes are kept in the build environment (:class:`MathCollector`): Sphinx merges
what parallel readers collected (``merge_other``), forgets a changed or removed document
(``clear_doc``) and pickles the rest, so an incremental build still knows the pages it does not
rewrite. Writers render again from the per-process cache (or a fresh one in a forked writer); the
HTML comes out the same either way.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.environment import BuildEnvironment
from sphinx.environment.collectors import EnvironmentCollector
from sphinx.locale import _
from sphinx.util import logging
from sphinx.util.math import get_node_equation_number
from sphinx.util.typing import ExtensionMetadata

from tabbook.problems import Problem
from tabbook.render import katex as mathrender
from tabbook.render.ext import PageContext
from tabbook.render.formats import Math, format_of

logger = logging.getLogger(__name__)
RENDERER = "tabbook_katex"
ENV_KEY = "tabbook_math"  # env attribute: docname -> (glyphs, KaTeX classes) of its formulas


class _Renderer:
    """Per Sphinx process: the KaTeX renderer, or why there is none. Nothing here outlives the
    process; what the build needs afterwards lives in the environment (see the module doc)."""

    def __init__(self) -> None:
        self.katex: mathrender.Katex | None = None
        self.unavailable: str | None = None


def _renderer(app: Sphinx) -> _Renderer:
    state = getattr(app, "_tabbook_katex", None)
    if state is None:
        state = _Renderer()
        app._tabbook_katex = state  # type: ignore[attr-defined]
    return state


def _prepare_math(app: Sphinx) -> None:
    if format_of(app.builder).math is not Math.KATEX:
        return
    state = _renderer(app)
    try:
        package = mathrender.ensure_katex(log=logger.info)
        state.katex = mathrender.Katex(package, dict(app.config.tabbook_math_macros))
    except (mathrender.MathUnavailable, OSError) as exc:
        state.unavailable = str(exc)
        logger.warning("math will show as TeX source: %s", exc, type="tabbook", subtype="math")


def _display_tex(node: nodes.math_block) -> str:
    """Sphinx's convention (as in its MathJax renderer): blank-line-separated parts are aligned
    equations, a part with ``\\\\`` is a split equation; ``nowrap`` blocks are taken as they are."""
    text = node.astext()
    if node.get("no-wrap", node.get("nowrap", False)):
        return text
    parts = [p for p in text.split("\n\n") if p.strip()]
    wrapped = [rf"\begin{{aligned}}{p}\end{{aligned}}" if r"\\" in p and r"\begin" not in p else p
               for p in parts]
    if len(wrapped) > 1:
        return r"\begin{aligned}" + r"\\".join(wrapped) + r"\end{aligned}"
    return wrapped[0] if wrapped else ""


def _formulas(doctree: nodes.Node) -> list[tuple[str, bool]]:
    """(TeX, display) of every formula, exactly as the HTML writer will hand them to KaTeX."""
    found: list[tuple[str, bool]] = []
    for node in doctree.findall(lambda n: isinstance(n, (nodes.math, nodes.math_block))):
        if isinstance(node, nodes.math_block):
            found.append((_display_tex(node), True))
        else:
            found.append((node.astext(), False))
    return found


class MathCollector(EnvironmentCollector):
    """Each document's glyphs and KaTeX classes, in the environment: parallel- and incremental-safe."""

    def clear_doc(self, app: Sphinx, env: BuildEnvironment, docname: str) -> None:
        getattr(env, ENV_KEY, {}).pop(docname, None)

    def merge_other(self, app: Sphinx, env: BuildEnvironment, docnames: set[str],
                    other: BuildEnvironment) -> None:
        mine = _env_math(env)
        theirs = getattr(other, ENV_KEY, {})
        for docname in docnames:
            if docname in theirs:
                mine[docname] = theirs[docname]

    def process_doc(self, app: Sphinx, doctree: nodes.document) -> None:
        state = _renderer(app)
        if format_of(app.builder).math is not Math.KATEX or state.katex is None:
            return
        glyphs: set[str] = set()
        classes: set[str] = set()
        for tex, display in _formulas(doctree):
            try:
                rendered = state.katex.render(tex, display)
            except mathrender.TexError:
                continue  # reported where it is written
            except mathrender.MathUnavailable:
                return  # the writer reports it and shows TeX source
            glyphs |= mathrender.glyphs_of(rendered)
            classes |= mathrender.classes_of(rendered)
        if glyphs or classes:
            _env_math(app.env)[app.env.docname] = ("".join(sorted(glyphs)), tuple(sorted(classes)))


def _env_math(env: BuildEnvironment) -> dict[str, tuple[str, tuple[str, ...]]]:
    data = getattr(env, ENV_KEY, None)
    if data is None:
        data = {}
        setattr(env, ENV_KEY, data)
    return data


def site_glyphs(env: BuildEnvironment) -> set[str]:
    """Every character the site's formulas draw, over all documents (read in any process)."""
    return {g for glyphs, _classes in getattr(env, ENV_KEY, {}).values() for g in glyphs}


#: Alignment outside an environment (``a &= b \\ c &= d``): MathJax, which d2lbook's pages load,
#: shows an error; KaTeX too. In an ``aligned`` block it reads as meant.
_ALIGNMENT = re.compile(r"&|\\\\")


def _fallback(katex: Any, tex: str, display: bool) -> tuple[str, str]:
    """What KaTeX makes of TeX it cannot read as it is: an ``aligned`` block, where the TeX
    aligns outside one, else the TeX typeset with the part KaTeX cannot read shown in the error
    colour. Nothing is loaded from other sites (d2lbook's pages load MathJax from a CDN)."""
    if display and not tex.lstrip().startswith("\\begin{") and _ALIGNMENT.search(tex):
        try:
            return katex.render(f"\\begin{{aligned}}{tex}\\end{{aligned}}", display), "typeset as an aligned block"
        except mathrender.TexError:
            pass
    return katex.render(tex, display, lenient=True), "typeset with what it cannot read marked"


def _render(self: Any, node: nodes.Element, tex: str, display: bool) -> str:
    state = _renderer(self.builder.app)
    if state.katex is not None:
        try:
            return state.katex.render(tex, display)
        except mathrender.TexError as exc:
            try:
                html, how = _fallback(state.katex, tex, display)
                logger.warning("%s: %s", exc, how, location=node, type="tabbook", subtype=Problem.MATH.slug)
                return html
            except mathrender.TexError:
                logger.warning("%s", exc, location=node, type="tabbook", subtype=Problem.MATH.slug)
        except mathrender.MathUnavailable as exc:
            state.katex, state.unavailable = None, str(exc)
            logger.warning("math will show as TeX source: %s", exc, type="tabbook", subtype="math")
    code = self.encode(tex)
    return f'<code class="tabbook-math-source">{code}</code>'


def visit_math(self: Any, node: nodes.math) -> None:
    self.body.append(self.starttag(node, "span", "", CLASS="math notranslate"))
    self.body.append(_render(self, node, node.astext(), display=False))
    self.body.append("</span>")
    raise nodes.SkipNode


def visit_displaymath(self: Any, node: nodes.math_block) -> None:
    self.body.append(self.starttag(node, "div", CLASS="math notranslate"))
    if node.get("number"):
        number = get_node_equation_number(self, node)
        self.body.append(f'<span class="eqno">({number})')
        self.add_permalink_ref(node, _("Link to this equation"))
        self.body.append("</span>")
    self.body.append(_render(self, node, _display_tex(node), display=True))
    self.body.append("</div>\n")
    raise nodes.SkipNode


def _page_stylesheet(app: Sphinx, pagename: str, templatename: str, context: PageContext,
                     doctree: nodes.document | None) -> None:
    """Link the KaTeX stylesheet cut to the classes this page's formulas use."""
    if format_of(app.builder).math is not Math.KATEX or not context.get("has_maths_elements"):
        return
    state = _renderer(app)
    entry = getattr(app.env, ENV_KEY, {}).get(pagename)
    if state.katex is None or not entry or not entry[1]:
        return
    name = mathrender.page_stylesheet(state.katex.package, set(entry[1]), Path(app.outdir) / "_static")
    app.builder.add_css_file(name, priority=400)  # type: ignore[attr-defined]


def _publish_fonts(app: Sphinx, exception: BaseException | None) -> None:
    """Cut KaTeX's fonts to the glyphs of every document, once, in the main process."""
    if exception is not None or format_of(app.builder).math is not Math.KATEX:
        return
    state = _renderer(app)
    if state.katex is None:
        return
    mathrender.publish_fonts(state.katex.package, Path(app.outdir) / "_static", site_glyphs(app.env),
                             Path(app.doctreedir) / "tabbook-katex-glyphs.json")
    # Fuzz seed 211: an equation removed from the book's only math page left its stylesheet.
    mathrender.remove_unused_stylesheets(
        state.katex.package, [set(entry[1]) for entry in getattr(app.env, ENV_KEY, {}).values() if entry and entry[1]],
        Path(app.outdir) / "_static")
    state.katex.close()


def setup_math(app: Sphinx) -> None:
    """Register the KaTeX renderer, the glyph collector and the font/stylesheet publishing."""
    # "env": the macros change the glyphs the collector recorded at read time.
    app.add_config_value("tabbook_math_macros", {}, "env", types=(dict,))
    app.add_html_math_renderer(RENDERER, (visit_math, None), (visit_displaymath, None))
    app.add_env_collector(MathCollector)
    app.connect("builder-inited", _prepare_math)
    app.connect("html-page-context", _page_stylesheet)
    app.connect("build-finished", _publish_fonts)


def setup(app: Sphinx) -> ExtensionMetadata:
    setup_math(app)
    # env_version: environments pickled before the collector existed lack its data; re-read them.
    return {"version": "0.1", "env_version": 1, "parallel_read_safe": True, "parallel_write_safe": True}
