"""Figure numbers without reading every page's doctree again (issue 50, item 2).

With ``numfig`` on (d2lbook's books number their figures, tables and listings), Sphinx's toctree
collector numbers them at the end of every read phase by walking the whole book from the root
page, loading each page's doctree from its pickle (``env.get_doctree``) on the way: on d2l-en, a
one-word edit in one page unpickled all 192 doctrees for that alone (8 of a profiled 84 s, and
13 s with the walk). The walk needs very little of a doctree: its sections (their first id) and
their nesting, its toctrees (their entries) and its numbered nodes (their type and first id), in
document order. That outline is recorded for each page when it is read (``doctree-read``, after
every other handler, so it is the doctree Sphinx pickles), kept in the environment beside the
page (purged with it, merged from parallel readers, pickled with the environment), and the
collector's ``assign_figure_numbers`` walks the outlines instead, in the same order with the
same counters, so it assigns the same numbers (``tests/test_fignumbers.py`` compares both walks
on a book with numbered figures, tables, listings, sections and nested toctrees). A page without
an outline (an environment pickled before this module) is walked from its doctree, as before.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from docutils import nodes
from sphinx import addnodes
from sphinx.application import Sphinx
from sphinx.domains.std import StandardDomain
from sphinx.environment import BuildEnvironment
from sphinx.environment.collectors.toctree import TocTreeCollector
from sphinx.util import url_re

if TYPE_CHECKING:
    from sphinx.util.typing import ExtensionMetadata

#: A page's outline: ``("s", first id, [items])`` a section, ``("t", [docnames])`` a toctree,
#: ``("f", figtype, first id)`` a numbered node (its own items follow it, as the walk meets them).
Outline = list[tuple[Any, ...]]


def _outlines(env: BuildEnvironment) -> dict[str, Outline]:
    if not hasattr(env, "tabbook_outlines"):
        env.tabbook_outlines = {}  # type: ignore[attr-defined]
    return env.tabbook_outlines  # type: ignore[attr-defined, no-any-return]


def _figtype(env: BuildEnvironment, node: nodes.Element) -> str | None:
    """The collector's ``get_figtype``: the first domain that numbers the node (the standard
    domain only when it has a caption)."""
    for domain in env.domains.sorted():
        figtype = domain.get_enumerable_node_type(node)
        if isinstance(domain, StandardDomain) and not domain.get_numfig_title(node):
            continue
        if figtype:
            return figtype
    return None


def outline(env: BuildEnvironment, tree: nodes.Element) -> Outline:
    """What the numbering walk reads of ``tree``, in the order it reads it."""
    items: Outline = []
    for child in tree.children:
        if isinstance(child, nodes.section):
            items.append(("s", child["ids"][0] if child["ids"] else None, outline(env, child)))
        elif isinstance(child, addnodes.toctree):
            items.append(("t", [name for _title, name in child["entries"]]))
        elif isinstance(child, nodes.Element):
            figtype = _figtype(env, child)
            if figtype and child["ids"]:
                items.append(("f", figtype, child["ids"][0]))
            items.extend(outline(env, child))
    return items


def _record(app: Sphinx, doctree: nodes.document) -> None:
    env = app.env
    _outlines(env)[env.current_document.docname] = outline(env, doctree)


def _purge(app: Sphinx, env: BuildEnvironment, docname: str) -> None:
    _outlines(env).pop(docname, None)


def _merge(app: Sphinx, env: BuildEnvironment, docnames: set[str], other: BuildEnvironment) -> None:
    for docname in docnames:
        if docname in _outlines(other):
            _outlines(env)[docname] = _outlines(other)[docname]


#: Sphinx's own walk, kept for the test that compares the two.
SPHINX_ASSIGN = getattr(TocTreeCollector.assign_figure_numbers, "tabbook_sphinx", TocTreeCollector.assign_figure_numbers)


def assign_figure_numbers(self: TocTreeCollector, env: BuildEnvironment) -> list[str]:
    """Sphinx's ``TocTreeCollector.assign_figure_numbers`` (8.x), walking the recorded outlines."""
    generated = frozenset(env.domains.standard_domain._virtual_doc_names)  # noqa: SLF001 - as Sphinx reads it
    outlines = _outlines(env)
    assigned: set[str] = set()
    old = env.toc_fignumbers
    env.toc_fignumbers = {}
    counters: dict[str, dict[tuple[int, ...], int]] = {}
    depth = env.config.numfig_secnum_depth

    def section_number(docname: str, anchor: str | None) -> tuple[int, ...]:
        if anchor is None:
            raise IndexError("list index out of range")  # Sphinx's own failure: section['ids'][0]
        secnumbers = env.toc_secnumbers.get(docname, {})
        found = secnumbers.get("#" + anchor) if "#" + anchor in secnumbers else secnumbers.get("")
        return found or ()

    def walk(docname: str, items: Outline, secnum: tuple[int, ...]) -> None:
        for item in items:
            if item[0] == "s":
                walk(docname, item[2], section_number(docname, item[1]) or secnum)
            elif item[0] == "t":
                for sub in item[1]:
                    if url_re.match(sub) or sub == "self" or sub in generated:
                        continue
                    walk_doc(sub, secnum)
            else:
                _, figtype, figure_id = item
                counter = counters.setdefault(figtype, {})
                key = secnum[:depth]
                counter[key] = counter.get(key, 0) + 1
                env.toc_fignumbers.setdefault(docname, {}).setdefault(figtype, {})[figure_id] = (*key, counter[key])

    def walk_doc(docname: str, secnum: tuple[int, ...]) -> None:
        if docname in assigned:
            return
        assigned.add(docname)
        items = outlines.get(docname)
        if items is None:  # read before this module recorded outlines: from its doctree
            items = outlines[docname] = outline(env, env.get_doctree(docname))
        walk(docname, items, secnum)

    rewrite = []
    if env.config.numfig:
        walk_doc(env.config.root_doc, ())
        rewrite = [d for d, numbers in env.toc_fignumbers.items() if numbers != old.get(d)]
    return rewrite


def setup(app: Sphinx) -> ExtensionMetadata:
    app.connect("doctree-read", _record, priority=950)  # after every other handler: what is pickled
    app.connect("env-purge-doc", _purge)
    app.connect("env-merge-info", _merge)
    assign_figure_numbers.tabbook_sphinx = SPHINX_ASSIGN  # type: ignore[attr-defined]
    TocTreeCollector.assign_figure_numbers = assign_figure_numbers  # type: ignore[method-assign]
    return {"version": "0.1", "parallel_read_safe": True, "parallel_write_safe": True, "env_version": 1}
