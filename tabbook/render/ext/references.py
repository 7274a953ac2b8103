"""A reference that cannot resolve is shown as d2lbook shows it, with a warning at its line.

d2lbook's contract (:mod:`tabbook.problems`): a ``:numref:``/``:eqref:``/``:ref:`` to a label
no page defines (or one out of a ``--partial`` build) is reported and rendered as the label's
text, which is what Sphinx shows under d2lbook. The build's check already reported those at
``file.md:LINE``; here the reference becomes that text (``tabbook-unresolved``), and one that
the check could not see (inside an ``eval_rst`` block) is reported too, with the check's words,
so the builder drops the second report of the same one.

Better than d2lbook where it loses something: a ``:numref:`` to a section whose page has no
number (its toc is not ``:numbered:``) is a link with the section's title, where Sphinx would
show the bare label (``Any number is not assigned``); a warning says so. A ``:numref:`` to a
label that has no number at all (an equation, a paragraph) stays its text, with a warning.
"""

from __future__ import annotations

import posixpath
from pathlib import Path
from typing import Any

from docutils import nodes
from sphinx import addnodes
from sphinx.application import Sphinx
from sphinx.environment import BuildEnvironment
from sphinx.transforms.post_transforms import SphinxPostTransform
from sphinx.util import logging
from sphinx.util.typing import ExtensionMetadata

from tabbook.problems import Problem
from tabbook.render.formats import format_of_transform

logger = logging.getLogger(__name__)

#: Cross-references shown as their text when they cannot resolve: section/figure/table and
#: equation references, with the dialect's name of each.
REFS = {("std", "numref"): "numref", ("std", "ref"): "ref", ("math", "eq"): "eqref"}


def _warn(kind: Problem, message: str, node: nodes.Element) -> None:
    logger.warning(message, location=node, type="tabbook", subtype=kind.slug)


def _as_text(app: Sphinx, env: BuildEnvironment, node: nodes.Element,
             contnode: nodes.Element) -> nodes.Node | None:
    role = REFS.get((node.get("refdomain"), node.get("reftype")))
    if role is None:
        return None
    target = node.get("reftarget", "")
    std = env.domains.standard_domain
    if role != "eqref" and target in std.anonlabels:
        _warn(Problem.UNNUMBERED_REFERENCE, f":{role}: to {target!r}, which has no number (not a figure, "
              "table or section): shown as its text", node)
    else:
        _warn(Problem.UNDEFINED_REFERENCE, f":{role}: to undefined label {target!r}", node)
    return nodes.inline(target, target, classes=["tabbook-unresolved"])


class UnnumberedSections(SphinxPostTransform):
    """``:numref:`` to a section without a number → ``:ref:`` (a link with its title), warned."""

    default_priority = 5  # before Sphinx's ReferencesResolver (10)

    def run(self, **kwargs: Any) -> None:
        if format_of_transform(self).numbers_sections:  # LaTeX numbers every section itself
            return
        std = self.env.domains.standard_domain
        for node in self.document.findall(addnodes.pending_xref):
            if node.get("refdomain") != "std" or node.get("reftype") != "numref":
                continue
            target = node.get("reftarget", "")
            docname, labelid, _ = std.labels.get(target, ("", "", ""))
            if not docname:
                continue
            target_node = self.env.get_doctree(docname).ids.get(labelid)
            if target_node is None or std.get_enumerable_node_type(target_node) != "section":
                continue
            try:
                number = std.get_fignumber(self.env, self.app.builder, "section", docname, target_node)
            except ValueError:
                number = None
            if number:
                continue
            node["reftype"], node["refexplicit"] = "ref", False
            _warn(Problem.UNNUMBERED_REFERENCE, f":numref: to {target!r}, which has no number (its page's "
                  "toc is not :numbered:): shown as a link with the section's title", node)


class PlainLinks(SphinxPostTransform):
    """A Markdown link MyST would look up among the book's documents and labels, but that d2lbook
    (pandoc, then reST) keeps as the URL it is: site-absolute (``/summer22``, a page of the site
    the book is published in) or a file path (``slides/lec1.pdf``). MyST would send it to an
    anchor of the page (``#/summer22``); here it links where it says. A file the book does not
    have is reported (:attr:`~tabbook.problems.Problem.LINK_TARGET`): the link is broken, as in
    d2lbook, which says nothing."""

    default_priority = 8  # before MyST's resolver (9)

    def run(self, **kwargs: Any) -> None:
        root = self.app.config.tabbook_root
        for node in list(self.document.findall(addnodes.pending_xref)):
            target = node.get("reftarget", "")
            if node.get("reftype") != "myst" or node.get("refdomain") == "doc" or not _a_url(target):
                continue
            if not target.startswith("/") and root and not self._page_of(target):
                page = Path(self.env.doc2path(self.env.docname)).parent
                source = Path(root) / Path(self.env.docname).parent / target.split("#")[0]
                if not (page / target.split("#")[0]).exists() and not source.exists():
                    _warn(Problem.LINK_TARGET, f"link to {target}, which the book does not have: linked as "
                          "it is", node)
            link = nodes.reference("", "", *node.children, refuri=target, internal=False)
            node.replace_self(link)


    def _page_of(self, target: str) -> bool:
        """Whether ``x.html`` is the page the book's ``x.md`` becomes (a link d2lbook keeps works)."""
        path = target.split("#")[0]
        if not path.endswith(".html"):
            return False
        doc = posixpath.normpath(posixpath.join(posixpath.dirname(self.env.docname), path[:-5]))
        return doc in self.env.found_docs


def _a_url(target: str) -> bool:
    """A link target that names a place on the web, not a page or label of the book: site-absolute,
    or a path whose last part has an extension other than a page's."""
    if not target or "://" in target or target.startswith(("#", "mailto:")):
        return False
    if target.startswith("/"):
        return True
    last = target.split("#")[0].rstrip("/").rsplit("/", 1)[-1]
    return "." in last and last.rsplit(".", 1)[-1].lower() not in ("md", "ipynb", "rst", "txt")


def setup(app: Sphinx) -> ExtensionMetadata:
    app.connect("missing-reference", _as_text)
    app.add_post_transform(UnnumberedSections)
    app.add_post_transform(PlainLinks)
    return {"version": "0.2", "parallel_read_safe": True, "parallel_write_safe": True}
