"""Render: the tabbook Sphinx extensions, one module per concern.

``extensions = [..., "tabbook.render.ext"]`` sets up all of them: :mod:`.tabs` (framework cells
as tab sets, every format), :mod:`.latex` (the per-framework PDFs), :mod:`.html` (the reader's
site), :mod:`.math` (KaTeX at build time, fonts cut to the book's glyphs), :mod:`.preview`
(the live preview's error banner, only under ``make serve``), :mod:`.partial` (references
out of a partial build shown as text), :mod:`.bib` (the dialect's ``:bibliography:`` in a
book without bib files), :mod:`.apidoc` (autodoc of the book's own library, read from source)
, :mod:`.diagnostics` (every warning recorded for the builder to map to the Markdown),
:mod:`.gate` (a Sphinx started early waits for the sources before reading them), :mod:`.purge`
(the pages to read again are all purged first, so a label may move between pages),
:mod:`.navtree` (furo's sidebar tree made once per folder, not once per page) and :mod:`.paths`
(an image outside the book is refused before Sphinx copies it into the site). Each
module is also an extension on its own, so a test or a book can load just the parts it needs.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from sphinx.application import Sphinx

from tabbook.files import write_if_changed

PARTS = ("tabbook.render.ext.tabs", "tabbook.render.ext.latex", "tabbook.render.ext.html",
         "tabbook.render.ext.math", "tabbook.render.ext.preview", "tabbook.render.ext.partial",
         "tabbook.render.ext.bib", "tabbook.render.ext.apidoc", "tabbook.render.ext.diagnostics",
         "tabbook.render.ext.gate", "tabbook.render.ext.purge", "tabbook.render.ext.navtree",
         "tabbook.render.ext.paths")


def setup(app: Sphinx) -> dict[str, Any]:
    # Set by tabbook.render.sphinx_conf; a change makes Sphinx read and write every page again.
    app.add_config_value("tabbook_code", "", "env", types=frozenset({str}))
    for name in PARTS:
        app.setup_extension(name)
    app.connect("build-finished", learn_modules)
    return {"version": "0.1", "parallel_read_safe": True, "parallel_write_safe": True}


def learn_modules(app: Sphinx, exception: Exception | None) -> None:
    """Record the modules a successful run has imported (the builder asks for it with
    ``$TABBOOK_LEARN_MODULES``): a warm builder (:mod:`tabbook.warm`) imports them before it
    forks the next run, which then starts with them loaded. The book's own modules (its
    library changes as the book does) are left out."""
    path = os.environ.get("TABBOOK_LEARN_MODULES")  # tabbook.render.sphinx.LEARN_ENV
    if exception is not None or not path:
        return
    book = os.environ.get("TABBOOK_BOOK_ROOT") or "\0"  # tabbook.render.sphinx.BOOK_ROOT_ENV
    names = sorted(n for n, m in list(sys.modules.items()) if "__main__" not in n
                   and not str(getattr(m, "__file__", None) or "").startswith(book))
    write_if_changed(Path(path), json.dumps(names))
