"""Render: the tabbook Sphinx extensions, one module per concern.

``extensions = [..., "tabbook.render.ext"]`` sets up all of them: :mod:`.tabs` (framework cells
as tab sets, every format), :mod:`.latex` (the per-framework PDFs), :mod:`.html` (the reader's
site), :mod:`.math` (KaTeX at build time, fonts cut to the book's glyphs), :mod:`.preview`
(the live preview's error banner, only under ``make serve``), :mod:`.references` (a reference
that cannot resolve shown as d2lbook shows it), :mod:`.bib` (the dialect's ``:bibliography:`` in a
book without bib files), :mod:`.apidoc` (autodoc of the book's own library, read from source)
, :mod:`.diagnostics` (every warning recorded for the builder to map to the Markdown),
:mod:`.gate` (a Sphinx started early waits for the sources before reading them), :mod:`.purge`
(the pages to read again are all purged first, so a label may move between pages),
:mod:`.navtree` (furo's sidebar tree made once per folder, not once per page), :mod:`.learn`
(what the run imported, for the warm processes to import before their next fork), :mod:`.paths`
(every file a page makes Sphinx read or copy stays inside the book; TeX that reads files is refused), :mod:`.access`
(alt text, image sizes, header cells and landmark names: what every reader needs),
:mod:`.solutions` (exercise solutions behind a summary a reader opens; out of the PDFs),
:mod:`.rawhtml` (``[html] raw_html``: the pages' own HTML published, or shown as text),
:mod:`.progress` (what the run reads and writes, as it goes, for the build to show),
:mod:`.nesting` (MyST's parsers given the reader's room for nested blocks),
:mod:`.incremental` (an incremental run ends where a clean one does: duplicate labels,
references whose target changed, files of removed pages), :mod:`.editions` (the edition
selector, in ``tabbook site``'s editions), :mod:`.languages` (each page's
translations, ``[site] languages``) and :mod:`.fignumbers` (figure numbers from each page's
recorded outline, not from every doctree unpickled again). Each
module is also an extension on its own, so a test or a book can load just the parts it needs.
"""

from __future__ import annotations

import signal
from typing import TYPE_CHECKING, Any, TypeAlias

from tabbook.files import SPHINX_PARENT_ENV, end_with_parent

if TYPE_CHECKING:
    from sphinx.application import Sphinx
    from sphinx.util.typing import ExtensionMetadata

#: What Sphinx's ``html-page-context`` event hands its handlers: the page's template variables,
#: Sphinx's own namespace (its type is ``dict[str, Any]``), which a handler reads and adds to.
PageContext: TypeAlias = dict[str, Any]


def prepend_to_page(context: PageContext, html: str) -> None:
    """``html`` above the page's content: before its ``body``, or, on the pages Sphinx writes from
    a template of its own and gives no ``body`` (the search page, the general index), into
    ``tabbook_prelude``, which tabbook's overrides of those templates (render/templates/) show
    first. Why: the edition selector and ``[html] header_links`` belong on every page."""
    if "body" in context:
        context["body"] = html + (context.get("body") or "")
    else:
        context["tabbook_prelude"] = html + (context.get("tabbook_prelude") or "")

PARTS = ("tabbook.render.ext.tabs", "tabbook.render.ext.latex", "tabbook.render.ext.html",
         "tabbook.render.ext.math", "tabbook.render.ext.preview", "tabbook.render.ext.references",
         "tabbook.render.ext.bib", "tabbook.render.ext.apidoc", "tabbook.render.ext.diagnostics",
         "tabbook.render.ext.gate", "tabbook.render.ext.purge", "tabbook.render.ext.navtree",
         "tabbook.render.ext.learn", "tabbook.render.ext.paths", "tabbook.render.ext.access",
         "tabbook.render.ext.solutions", "tabbook.render.ext.rawhtml",
         "tabbook.render.ext.progress", "tabbook.render.ext.nesting", "tabbook.render.ext.incremental",
         "tabbook.render.ext.editions", "tabbook.render.ext.languages", "tabbook.render.ext.fignumbers")


def setup(app: Sphinx) -> ExtensionMetadata:
    # A build killed outright takes its Sphinx with it: no writing build/ without the book's lock.
    end_with_parent(signal.SIGKILL, SPHINX_PARENT_ENV)
    # Set by tabbook.render.sphinx_conf; a change makes Sphinx read and write every page again.
    app.add_config_value("tabbook_code", "", "env", types=frozenset({str}))
    for name in PARTS:
        app.setup_extension(name)
    return {"version": "0.1", "parallel_read_safe": True, "parallel_write_safe": True}
