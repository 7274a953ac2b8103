"""Render: MyST's parsers given the room the book's reader gives (``maxNesting``).

myst-parser builds each document's markdown-it parser with the CommonMark preset, whose
``maxNesting`` is 20: a list nested ten deep (a list counts two levels), a quote twenty deep,
and everything after them on the page, vanished from the HTML with exit 0. myst-parser has no
setting for it, so this wraps the one function that makes those parsers
(``myst_parser.parsers.mdit.create_md_parser``), where myst-parser and myst-nb have imported
it, to set ``maxNesting`` as the reader's parser does (:func:`tabbook.source.dialect.max_nesting`).
A page deeper than the reader allows never gets here: reading it is an error at its line.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from tabbook.source.dialect import max_nesting

if TYPE_CHECKING:
    from sphinx.application import Sphinx
    from sphinx.util.typing import ExtensionMetadata

# Where create_md_parser is imported by name (each keeps its own reference to it).
_USERS = ("myst_parser.parsers.mdit", "myst_parser.parsers.sphinx_", "myst_parser.parsers.docutils_",
          "myst_nb.sphinx_", "myst_nb.docutils_", "myst_nb.core.render", "myst_nb.core.read")
# MyST parses a directive's body (a prose tab, a solution) as a document of its own, one
# level in; the margin covers what merge wraps around the author's blocks.
_MARGIN = 20


def _roomier(create: Callable[..., Any]) -> Callable[..., Any]:
    if getattr(create, "tabbook_nesting", False):
        return create

    @functools.wraps(create)
    def create_md_parser(*args: Any, **kwargs: Any) -> Any:
        md = create(*args, **kwargs)
        md.options["maxNesting"] = max_nesting(_MARGIN)
        return md

    create_md_parser.tabbook_nesting = True  # type: ignore[attr-defined]
    return create_md_parser


def setup(app: Sphinx) -> ExtensionMetadata:
    for name in _USERS:
        try:
            module = importlib.import_module(name)
        except ImportError:  # myst-nb is optional for a book that only loads this part
            continue
        if hasattr(module, "create_md_parser"):
            module.create_md_parser = _roomier(module.create_md_parser)
    return {"version": "0.1", "parallel_read_safe": True, "parallel_write_safe": True}
