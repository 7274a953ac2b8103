"""``[site] languages`` in the pages: each page's translations, as a visible line at its top and
as ``<link rel="alternate" hreflang>`` in its head (:mod:`tabbook.render.languages` computed
them in the builder; they reach Sphinx in the render context, whose change rewrites every page).

The line is prepended to the body early (priority 400), so the other header hooks' bars
(``[html] header_links``, an edition selector) land above it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sphinx.util.osutil import relative_uri

from tabbook.render.context import RenderContext
from tabbook.render.formats import format_of
from tabbook.render.languages import head_html, nav_html

if TYPE_CHECKING:
    from docutils import nodes
    from sphinx.application import Sphinx
    from sphinx.util.typing import ExtensionMetadata

    from tabbook.render.ext import PageContext


def _translations(app: Sphinx, pagename: str, templatename: str, context: PageContext,
                  doctree: nodes.document | None) -> None:
    data = getattr(app.config, "tabbook_context", None)
    if not format_of(app.builder).navigation or not data or "body" not in context:
        return
    links = RenderContext.from_dict(data).translations.get(pagename)
    if not links:
        return
    to_root = relative_uri(app.builder.get_target_uri(pagename), "").removeprefix("./")
    context["metatags"] = (context.get("metatags") or "") + head_html(links, to_root)
    context["body"] = nav_html(links, to_root) + (context.get("body") or "")


def setup_languages(app: Sphinx) -> None:
    app.connect("html-page-context", _translations, priority=400)


def setup(app: Sphinx) -> ExtensionMetadata:
    setup_languages(app)
    return {"version": "0.1", "parallel_read_safe": True, "parallel_write_safe": True}
