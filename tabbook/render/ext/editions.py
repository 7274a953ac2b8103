"""The edition selector on every page of an edition's site (``tabbook site`` with ``[site]
versions``): the table and the links come from :mod:`tabbook.render.editions`; this module only
puts the selector above the page's content. A build with no editions is unchanged."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sphinx.util.osutil import relative_uri

from tabbook.render.context import RenderContext
from tabbook.render.editions import Edition, selector_html
from tabbook.render.ext import prepend_to_page
from tabbook.render.formats import format_of

if TYPE_CHECKING:
    from docutils import nodes
    from sphinx.application import Sphinx
    from sphinx.util.typing import ExtensionMetadata

    from tabbook.render.ext import PageContext

#: A few rules of its own, inline: a book without editions gets no stylesheet more.
STYLE = ("<style>.tabbook-editions{margin:0 0 1em;font-size:.9em}.tabbook-editions summary{cursor:pointer}"
         ".tabbook-editions ul{margin:.3em 0 0;padding-left:1.2em}"
         ".tabbook-edition-note{display:block;font-size:.9em;opacity:.85}</style>")


def _selector(app: Sphinx, pagename: str, templatename: str, context: PageContext,
              doctree: nodes.document | None) -> None:
    data = app.config.tabbook_context
    if not format_of(app.builder).navigation or not data:
        return
    opts = RenderContext.from_dict(data)
    if not opts.editions:
        return
    editions = tuple(Edition.from_row(row) for row in opts.editions)
    to_root = relative_uri(app.builder.get_target_uri(pagename), "")
    html = selector_html(editions, opts.edition, pagename, to_root, app.builder.get_target_uri)
    prepend_to_page(context, STYLE + html)


def setup_editions(app: Sphinx) -> None:
    # After [html] header_links (priority 500), so the selector is the first thing on the page.
    app.connect("html-page-context", _selector, priority=600)


def setup(app: Sphinx) -> ExtensionMetadata:
    setup_editions(app)
    return {"version": "0.1", "parallel_read_safe": True, "parallel_write_safe": True}
