"""Images that lead outside the book are refused before Sphinx copies them into the site; a
``raw`` directive's ``:file:`` is found in the book.

``check`` refuses a Markdown image outside the book; this covers every other way a page names
an image (an ``eval_rst`` ``.. image::`` or ``.. figure::``, a MyST figure), since Sphinx copies
whatever file an image names into ``_images/``: ``.. image:: ../../../../home/me/secret.png``
would publish a file of the machine on the site. The image is dropped from the page, so nothing
is copied, and a warning at its line fails every build, strict or not (:mod:`.diagnostics`). "Outside" is where
the path really leads (symbolic links followed): the book's resources are linked into
``build/src``, and lead back into the book.

A ``.. raw:: html`` with ``:file: frontpage.html`` (d2l-en's front page, which its build script
copies beside the generated reST) names a file relative to the page; Sphinx reads the page from
``build/src``, where no such file is. :class:`BookRaw` looks for it beside the page in the book
too, so a book's own front page is used when the book has it; when it has not, the block is left
out with a warning at its line (``missing-include``: :mod:`tabbook.problems`), where
docutils would report a severe error naming a generated path.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from docutils import nodes
from docutils.parsers.rst.directives.misc import Raw
from sphinx.application import Sphinx
from sphinx.util import logging

logger = logging.getLogger(__name__)


def refuse_outside_images(app: Sphinx, doctree: nodes.document) -> None:
    """Drop, with a warning at its line, every image whose file is outside the book's folder."""
    root = app.config.tabbook_root
    if not root:
        return
    book = Path(root).resolve()
    for node in list(doctree.findall(nodes.image)):
        uri = node.get("uri", "")
        if not uri or "://" in uri or uri.startswith("data:") or uri.endswith("*"):
            continue
        _, file = app.env.relfn2path(uri, app.env.docname)
        if not Path(file).resolve().is_relative_to(book):
            # An error in every build (no kind: tabbook.render.diagnostics.STOPS): the site would
            # publish a file of the machine.
            logger.warning(f"image file {uri} is outside the book's folder", location=node, type="tabbook",
                           subtype="error")
            node.parent.remove(node)


class BookRaw(Raw):
    """docutils' ``raw``, its ``:file:`` found beside the page in the book as well."""

    def run(self) -> list[nodes.Node]:
        named = self.options.get("file")
        env = self.state.document.settings.env
        root = env.config.tabbook_root
        if not named or not root:
            return super().run()
        here = Path(self.state.document.current_source or "").parent / named
        book = Path(root).resolve()
        there = (book / Path(env.docname).parent / named).resolve()
        if here.is_file():
            return super().run()
        if there.is_file() and there.is_relative_to(book):
            self.options["file"] = str(there)
            return super().run()
        # docutils' own report, so it is located as its others are (inside an eval_rst block too);
        # its words say its kind (tabbook.render.diagnostics).
        return [self.reporter.warning(f"{self.name}:: {self.arguments[0]} :file: {named} does not exist "
                                      "beside the page: the block is left out", line=self.lineno)]


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_directive("raw", BookRaw, override=True)
    # The book's folder, from tabbook.render.sphinx_conf; empty (a plain Sphinx project): no check.
    app.add_config_value("tabbook_root", "", "env", types=frozenset({str}))
    # Before Sphinx's image collector (priority 500) records the file to copy.
    app.connect("doctree-read", refuse_outside_images, priority=400)
    return {"version": "0.1", "parallel_read_safe": True, "parallel_write_safe": True}
