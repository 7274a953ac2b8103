"""The output formats tabbook writes, declared once: what each does with tabs, math, solutions,
images, outputs, downloads and navigation.

Why: these choices used to be spelled as comparisons of Sphinx's builder name or format
(``app.builder.format != "html"``) in every extension that makes one, so a new format (EPUB, say)
meant re-judging each of them. Now an extension asks the running builder's :class:`Format`
(:func:`format_of`, :func:`format_of_transform`, :class:`ForFormat`) for the one property it acts
on, and the builder's side asks :func:`format_named`; nothing outside this module compares a
builder name or format string (``tests/test_formats.py`` fails when something does).

Sphinx's builders map to formats by name (:data:`HTML` is the ``html`` builder, :data:`PDF` the
``latex`` builder); a builder tabbook does not declare gets the format of its Sphinx output format
(:data:`OTHER_HTML` for ``dirhtml``, ``singlehtml``, ``epub``; :data:`PLAIN` for the rest), which
is what those builders always got. :data:`SLIDES`, :data:`NOTEBOOK` and :data:`LLMS` are written by
tabbook itself, not by Sphinx; they are declared for the same questions and name their driver.

This module imports nothing of Sphinx: the builder's side reads it before any Sphinx run.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from sphinx.builders import Builder
    from sphinx.environment import BuildEnvironment

#: The docutils name of HTML: raw HTML blocks, Sphinx's HTML output format, Pygments' HTML bridge.
HTML_NAME = "html"
#: The docutils name of LaTeX: raw LaTeX blocks, Sphinx's LaTeX output format and builder.
LATEX_NAME = "latex"


class Tabs(Enum):
    """What a format does with a run of framework cells (and prose tabs)."""

    #: One sphinx-design tab set per run, the book's default framework selected; the reader picks.
    SETS = "tab sets"
    #: The document is one framework's (``tabbook_framework``): the others' cells are dropped,
    #: as are their provenance notes and API-reference sections.
    ONE = "one framework"


class Math(Enum):
    """Who typesets a formula."""

    #: At build time with KaTeX: HTML in the page, a stylesheet cut to the page's classes, fonts cut
    #: to every document's glyphs (``render/ext/math.py``, ``render/katex.py``).
    KATEX = "KaTeX at build time"
    #: The writer's own way (LaTeX typesets it; a notebook's reader renders it).
    NATIVE = "the writer's own"


class Solutions(Enum):
    """What a format does with an exercise's solution (``<!-- solution -->`` … ``<!-- end solution -->``)."""

    #: Inside a closed ``<details>`` whose summary is the solution's text.
    DETAILS = "closed details"
    #: Left out.
    OMITTED = "left out"
    #: Under a heading (a rubric) with the solution's text.
    HEADED = "under a heading"
    #: Kept in place as ordinary cells.
    INLINE = "ordinary cells"


class Images(Enum):
    """What a format does to a page's images besides showing them."""

    #: Alt text where the source gave none, ``loading="lazy"``, sizes from the file.
    WEB = "web"
    #: SVG converted to PDF (rsvg); a missing image becomes a boxed note instead of stopping LaTeX.
    PRINT = "print"
    #: As they are.
    AS_IS = "as is"


@dataclass(frozen=True)
class Format:
    """One output format: the answers every format-dependent step asks of it."""

    #: Its name in tabbook's own words.
    name: str
    #: The Sphinx builder names that write it (none: tabbook writes it itself, see ``driver``).
    builders: tuple[str, ...]
    #: The module that writes it: the one to read (and, for a new format, to write) besides this entry.
    driver: str
    #: The docutils raw format it passes through as written (``{raw} html`` / ``{raw} latex``); None: none.
    raw: str | None
    tabs: Tabs
    math: Math
    solutions: Solutions
    images: Images
    #: Outputs made printable: HTML-only outputs as text, widgets and scripts as a note, SVG left to
    #: the converter, tracebacks shortened to the book's frame (``render/ext/latex.py``), in
    #: the order of myst-nb's mime priority for the format's builder.
    printable_outputs: bool = False
    #: A download bar under each page's title, the front page's PDF cells, and the downloads
    #: (notebooks, zips) published beside the pages after the run (``render/ext/html.py``).
    downloads: bool = False
    #: ``[html] header_links`` above each page's content.
    navigation: bool = False
    #: Pages as the site serves them: named landmarks, sized images and header cells, per-page
    #: CSS and JavaScript trimmed, lean and cached highlighting, compacted static files, the
    #: preview's status banner.
    web_page: bool = False
    #: Every page inlined into one document: a root toctree captioned "Appendix…" starts
    #: ``\\appendix``, the bibliography page's entries go to the end.
    one_document: bool = False
    #: The writer numbers every section itself, so a ``:numref:`` to an unnumbered section stays one.
    numbers_sections: bool = False
    #: After a successful run, output files no current page accounts for are removed (``render/ext/incremental.py``).
    prunes_stale: bool = False
    #: The build publishes the site with it: slide decks, the package and its index, ``llms.txt``,
    #: the record of what Sphinx imported (for the warm builder), the "the site:" line.
    site: bool = False

    @property
    def builder(self) -> str:
        """The Sphinx builder the build runs for this format."""
        if not self.builders:
            raise ValueError(f"{self.name} is written by {self.driver}, not by a Sphinx builder")
        return self.builders[0]


#: The site: ``build/html``.
HTML = Format(
    "html", builders=("html",), driver="tabbook.render.sphinx", raw=HTML_NAME, tabs=Tabs.SETS,
    math=Math.KATEX, solutions=Solutions.DETAILS, images=Images.WEB, downloads=True, navigation=True,
    web_page=True, prunes_stale=True, site=True)

#: The PDFs, one per framework: ``build/pdf/<name>-<fw>.pdf`` (LaTeX, then latexmk).
PDF = Format(
    "pdf", builders=(LATEX_NAME,), driver="tabbook.render.pdf", raw=LATEX_NAME, tabs=Tabs.ONE,
    math=Math.NATIVE, solutions=Solutions.OMITTED, images=Images.PRINT, printable_outputs=True,
    one_document=True, numbers_sections=True)

#: Sphinx's other HTML builders (``dirhtml``, ``singlehtml``, ``epub``, …): pages as the site's,
#: without the site's publishing or pruning (which know ``build/html``'s layout).
OTHER_HTML = Format(
    "other html", builders=(), driver="sphinx", raw=HTML_NAME, tabs=Tabs.SETS, math=Math.KATEX,
    solutions=Solutions.DETAILS, images=Images.WEB, downloads=True, navigation=True, web_page=True)

#: Any other Sphinx builder (``text``, ``man``, ``xml``, …): one framework, nothing of the web's.
PLAIN = Format(
    "plain", builders=(), driver="sphinx", raw=None, tabs=Tabs.ONE, math=Math.NATIVE,
    solutions=Solutions.HEADED, images=Images.AS_IS)

#: The reveal.js decks, one per (section, framework), written before Sphinx runs.
SLIDES = Format(
    "slides", builders=(), driver="tabbook.render.slides", raw=None, tabs=Tabs.ONE, math=Math.KATEX,
    solutions=Solutions.OMITTED, images=Images.AS_IS)

#: The notebooks readers download (one per page and framework, and the zips of them).
NOTEBOOK = Format(
    "notebook", builders=(), driver="tabbook.render.site", raw=None, tabs=Tabs.ONE, math=Math.NATIVE,
    solutions=Solutions.INLINE, images=Images.AS_IS)

#: ``llms.txt``, ``llms-full.txt`` and ``_llms/<fw>/<page>.md``: each page as one framework's Markdown.
LLMS = Format(
    "llms", builders=(), driver="tabbook.render.llms", raw=None, tabs=Tabs.ONE, math=Math.NATIVE,
    solutions=Solutions.HEADED, images=Images.AS_IS)

#: Every declared format.
FORMATS: tuple[Format, ...] = (HTML, PDF, OTHER_HTML, PLAIN, SLIDES, NOTEBOOK, LLMS)

_BY_BUILDER = {name: f for f in FORMATS for name in f.builders}


def format_named(builder: str, sphinx_format: str | None = None) -> Format:
    """The format a Sphinx builder named ``builder`` writes. ``sphinx_format``: its Sphinx output
    format, where known (a builder tabbook does not declare gets the fallback of that format)."""
    declared = _BY_BUILDER.get(builder)
    if declared is not None:
        return declared
    return OTHER_HTML if sphinx_format == HTML_NAME else PLAIN


def format_of(builder: Builder | type[Builder]) -> Format:
    """The format of a running Sphinx builder (``app.builder``: its ``name`` and ``format``)."""
    return format_named(str(builder.name), str(builder.format))


class _InEnvironment(Protocol):
    """A transform as :func:`format_of_transform` reads it: its build environment."""

    @property
    def env(self) -> BuildEnvironment: ...


def format_of_transform(transform: _InEnvironment) -> Format:
    """The format a post-transform runs for. ``transform.app`` is deprecated in Sphinx 9 and the
    environment has no public way to name its builder; this is what Sphinx's own
    ``SphinxPostTransform.is_supported`` reads (pinned Sphinx)."""
    return format_of(transform.env._builder_cls)


class ForFormat:
    """A mixin for a ``SphinxPostTransform`` that runs only for the formats :meth:`applies` accepts
    (in place of Sphinx's ``builders`` / ``formats`` name lists). List it before the transform
    class: ``class T(ForFormat, SphinxPostTransform)``."""

    if TYPE_CHECKING:  # the transform's own (SphinxTransform.env), which it is mixed into
        @property
        def env(self) -> BuildEnvironment: ...

    @staticmethod
    def applies(fmt: Format) -> bool:
        return True

    def is_supported(self) -> bool:
        return self.applies(format_of_transform(self))
