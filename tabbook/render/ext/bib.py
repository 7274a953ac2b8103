"""Sphinx extension: the dialect's ``:bibliography:`` where the book has no bibliography.

The dialect's ``:bibliography:`FILE``` line becomes sphinxcontrib-bibtex's
``{bibliography}`` directive (:mod:`tabbook.render.myst`), which lists the cited entries of
the conf's ``bibtex_bibfiles``. A book without bib files does not load sphinxcontrib-bibtex
(:mod:`tabbook.render.sphinx_conf`): then the directive renders nothing, rather than an
"unknown directive" error on the page.
"""

from __future__ import annotations

from typing import Any

from docutils import nodes
from docutils.parsers.rst import Directive
from sphinx.application import Sphinx
from sphinx.config import Config
from sphinx.util.docutils import is_directive_registered


class NoBibliography(Directive):
    """``{bibliography}`` without sphinxcontrib-bibtex: nothing to list."""

    optional_arguments = 1
    final_argument_whitespace = True
    has_content = True
    option_spec = None  # any option is accepted (and ignored)

    def run(self) -> list[nodes.Node]:
        return []


def _fallback(app: Sphinx, config: Config) -> None:
    if "sphinxcontrib.bibtex" not in app.extensions and not is_directive_registered("bibliography"):
        app.add_directive("bibliography", NoBibliography)


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("config-inited", _fallback)
    return {"version": "0.1", "parallel_read_safe": True, "parallel_write_safe": True}
