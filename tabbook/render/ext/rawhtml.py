"""``[html] raw_html``: whether the HTML written in the book's pages is published or shown as text.

HTML in prose is the author's, as in d2lbook: an HTML block, an inline tag, a ```` ```{raw} html ````
block, an ``eval_rst`` ``.. raw:: html`` are published as they are (``allow``, the default). A
book that takes pull requests from people it does not review line by line may declare
``raw_html = escape``: then every such piece of a page reads as its text (a block as a literal
block, an inline tag as inline code), so a ``<script>`` in a page is seen, not run. HTML comments, which
show nothing either way, are left out.

What is not the pages' HTML, and so not this key's: the outputs of cells (``[site]
trusted_outputs`` and :mod:`tabbook.render.sanitize` decide those), and the HTML the builder
writes itself: its extensions' nodes, made after pages are read, and the front page's
generated part, whose raw blocks carry :data:`~tabbook.render.names.GENERATED_HTML`. That
mark counts only inside the root page's last ``{only}`` block while the front page is on: the
sources step appends that block after everything the author wrote, so no page can claim it.
The mark is taken off in every mode, so a site is the same bytes as before it existed.
"""

from __future__ import annotations

import re
from typing import Any

from docutils import nodes
from sphinx import addnodes
from sphinx.application import Sphinx
from sphinx.config import Config
from sphinx.transforms import SphinxTransform
from sphinx.util.typing import ExtensionMetadata

from tabbook.render.formats import HTML_NAME
from tabbook.render.names import GENERATED_HTML

ALLOW, ESCAPE = "allow", "escape"
#: The class of the code a piece of the pages' HTML is shown as under ``escape``.
SHOWN_CLASS = "tabbook-raw-html"
_COMMENTS = re.compile(r"\s*(?:<!--.*?-->\s*)+", re.S)


def _in_output(node: nodes.Node) -> bool:
    """Whether ``node`` is inside a code cell (myst-nb's ``cell_code`` containers): an output's."""
    parent = node.parent
    while parent is not None:
        if isinstance(parent, nodes.container) and str(parent.get("nb_element", "")).startswith("cell_code"):
            return True
        parent = parent.parent
    return False


def _front_block(config: Config, document: nodes.document, docname: str) -> nodes.Node | None:
    """The front page's generated block: the root page's last ``{only}`` node, when there is a
    front page."""
    context = getattr(config, "tabbook_context", None) or {}
    if docname != config.root_doc or not context.get("front_page", True):
        return None
    outermost = [n for n in document.findall(addnodes.only) if not _inside(n, None, addnodes.only)]
    return outermost[-1] if outermost else None


def _inside(node: nodes.Node, block: nodes.Node | None, kind: type | None = None) -> bool:
    """Whether ``node`` is inside ``block`` (or, given ``kind``, inside any node of that kind)."""
    parent = node.parent
    while parent is not None:
        if parent is block or (kind is not None and isinstance(parent, kind)):
            return True
        parent = parent.parent
    return False


class RawHtmlPolicy(SphinxTransform):
    """Under ``escape``, each raw HTML node of a page becomes its text; in every mode the
    generated mark comes off."""

    default_priority = 10  # right after parsing: before any transform of the builder adds nodes

    def apply(self, **kwargs: Any) -> None:
        escape = self.config.tabbook_raw_html == ESCAPE
        front = _front_block(self.config, self.document, self.env.docname) if escape else None
        for node in list(self.document.findall(nodes.raw)):
            generated = GENERATED_HTML in node["classes"]
            if generated:
                node["classes"].remove(GENERATED_HTML)
            if not escape or HTML_NAME not in node.get("format", "").split() or _in_output(node):
                continue
            if generated and front is not None and _inside(node, front):
                continue
            text = node.astext()
            if _COMMENTS.fullmatch(text):
                node.parent.remove(node)
            elif isinstance(node.parent, nodes.TextElement):  # as code: no smart quotes in it
                node.replace_self(nodes.literal(text, text, classes=[SHOWN_CLASS]))
            else:
                block = nodes.literal_block(text, text, classes=[SHOWN_CLASS], language="text")
                block.source, block.line = node.source, node.line
                node.replace_self(block)


def setup(app: Sphinx) -> ExtensionMetadata:
    # [html] raw_html, from tabbook.render.sphinx_conf; a change reads every page again.
    app.add_config_value("tabbook_raw_html", ALLOW, "env", types=frozenset({str}))
    app.add_transform(RawHtmlPolicy)
    return {"version": "0.1", "parallel_read_safe": True, "parallel_write_safe": True}
