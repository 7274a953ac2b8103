"""Partial builds: a reference to a page that is not in this build renders as its text.

Building a few chapters of a large book on their own is how authors work on it
(d2lbook allows it). There, ``:numref:`` and ``:eqref:`` to the other chapters
cannot resolve; the build's check already warned about each one at its
``file.md:LINE``, so here such a reference becomes its plain target text, with
no second warning. Off (``tabbook_partial = False``) in every full build, where
an unresolved reference is an error.
"""

from __future__ import annotations

from typing import Any

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.environment import BuildEnvironment

#: Cross-references a partial build may leave unresolved: section/figure/table and equation refs.
PARTIAL_REFS = {("std", "numref"), ("std", "ref"), ("math", "eq")}


def _as_text(app: Sphinx, env: BuildEnvironment, node: nodes.Element,
             contnode: nodes.Element) -> nodes.Node | None:
    if not app.config.tabbook_partial:
        return None
    if (node.get("refdomain"), node.get("reftype")) not in PARTIAL_REFS:
        return None
    return nodes.inline(node.get("reftarget", ""), node.get("reftarget", ""), classes=["tabbook-unresolved"])


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_config_value("tabbook_partial", False, "env", [bool])
    app.connect("missing-reference", _as_text)
    return {"version": "0.1", "parallel_read_safe": True, "parallel_write_safe": True}
