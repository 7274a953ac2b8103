"""Render: exercise solutions, hidden on the site until a reader opens them, left out of PDFs.

The merge stage brackets the cells of each solution (``<!-- solution … -->`` …
``<!-- end solution -->`` in the Markdown) between two ``{div}`` containers: the first, of
class ``tabbook-solution-start``, holds the summary line ("Solution 3"), the second, of class
``tabbook-solution-end``, is empty. The cells in between are ordinary siblings: prose, and
code cells that the tab transform (:mod:`.tabs`, priority 150) has already grouped into tab
sets. This post-transform runs after it and, for HTML, puts a ``<details>`` element around
them whose ``<summary>`` is the summary line: closed by default, opened by a click, with no
script (the element is HTML's own). For LaTeX the solution is removed with its markers: the
PDFs leave solutions out. Other formats (text, for instance) keep the cells as ordinary
content, as d2lbook shows them. Why raw HTML around siblings rather than a node of our own:
every writer knows ``raw`` nodes and skips those of other formats, while a new node type would
need a visitor for each builder.
"""

from __future__ import annotations

from html import escape
from typing import Any

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.transforms.post_transforms import SphinxPostTransform
from sphinx.util.typing import ExtensionMetadata

from tabbook.render.formats import HTML_NAME, Solutions, format_of_transform
from tabbook.render.names import SOLUTION_CLASS, SOLUTION_END_CLASS, SOLUTION_START_CLASS


def _is(node: nodes.Node, cls: str) -> bool:
    return isinstance(node, nodes.container) and cls in node.get("classes", [])


class WrapSolutions(SphinxPostTransform):
    """Each solution's cells inside a closed ``<details>`` (HTML), out of the document (LaTeX)."""

    default_priority = 160  # after the framework tab sets (150)

    def run(self, **kwargs: Any) -> None:
        treat = format_of_transform(self).solutions
        for start in list(self.document.findall(lambda n: _is(n, SOLUTION_START_CLASS))):
            parent = start.parent
            at = parent.index(start)
            body: list[nodes.Node] = []
            end = None
            for sibling in parent.children[at + 1:]:
                if _is(sibling, SOLUTION_END_CLASS):
                    end = sibling
                    break
                body.append(sibling)
            summary = start.astext().strip()
            for node in [start, *body] + ([end] if end is not None else []):
                parent.remove(node)
            if treat is Solutions.OMITTED:
                continue  # the PDFs leave solutions out
            if treat is Solutions.DETAILS:
                opening = nodes.raw("", f'<details class="{SOLUTION_CLASS}"><summary>{escape(summary)}'
                                    "</summary>\n", format=HTML_NAME)
                closing = nodes.raw("", "</details>\n", format=HTML_NAME)
                parent[at:at] = [opening, *body, closing]
            else:
                parent[at:at] = [nodes.rubric(summary, summary), *body]


def setup_solutions(app: Sphinx) -> None:
    app.add_post_transform(WrapSolutions)


def setup(app: Sphinx) -> ExtensionMetadata:
    setup_solutions(app)
    return {"version": "0.1", "parallel_read_safe": True, "parallel_write_safe": True}
