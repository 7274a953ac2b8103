"""Sphinx extension: record the modules a successful run imported, when the builder asks.

The warm processes (:mod:`tabbook.warm`: the warm builder, the live preview's server) import
them before they fork the next run (:mod:`tabbook.warm.preload`), which then starts with them
loaded. Every HTML run records them, in a new interpreter or a fork alike: the first build of a
book, which runs before any warm process exists, is what the warm builder it starts learns
from. The builder asks with ``$TABBOOK_LEARN_MODULES`` in the run's own environment
(:func:`tabbook.render.sphinx.learn_env`). The book's own modules (its library changes as the
book does) are left out.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from sphinx.application import Sphinx
from sphinx.util.typing import ExtensionMetadata

from tabbook.files import write_if_changed
from tabbook.render.sphinx import LEARN_ENV


def learn_modules(app: Sphinx, exception: Exception | None) -> None:
    path = os.environ.get(LEARN_ENV)
    if exception is not None or not path:
        return
    book = app.config.tabbook_root or "\0"  # the book's folder (tabbook.render.ext.paths)
    names = sorted(n for n, m in list(sys.modules.items()) if "__main__" not in n
                   and not str(getattr(m, "__file__", None) or "").startswith(book))
    write_if_changed(Path(path), json.dumps(names))


def setup(app: Sphinx) -> ExtensionMetadata:
    app.connect("build-finished", learn_modules)
    return {"version": "0.1", "parallel_read_safe": True, "parallel_write_safe": True}
