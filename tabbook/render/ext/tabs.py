"""Render: framework cells become tab sets (the one part every output format needs).

The merge stage leaves, for each piece of code written once per framework, a run of sibling
cells, each marked with its framework and run as data (:class:`tabbook.render.names.TabMark`: a
code cell's metadata, which myst-nb keeps on its node; a prose tab's ``{tabbook-tab}``
directive, which :class:`ProseTab` turns into a node carrying the same). A post-transform (priority 150:
after myst-nb's mime selection and reference resolution, before sphinx-design's HTML tab
transform at 200) replaces each run with the format-neutral tab-set nodes sphinx-design's own
directives build, so sphinx-design makes the HTML radio tabs, synced by framework name (group
``tab``: ``?tab=jax`` and localStorage work). For any other format (one PDF per framework)
the same transform keeps only the cells of ``tabbook_framework`` and no tab structure.

A run whose every cell renders nothing (prose tabs that only set an ``eval_rst``
``currentmodule``) makes no tab set: it would be a row of empty panels.

Also here, because it is about tabs and nothing else: each HTML tab set opens on the book's
default framework (also without JavaScript), and the tab script and stylesheet are shipped.

The config values shared by every tabbook extension module are registered here; the other
modules (:mod:`.latex`, :mod:`.html`, :mod:`.math`) set this one up first.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.transforms.post_transforms import SphinxPostTransform
from sphinx.util.docutils import SphinxDirective
from sphinx.util.typing import ExtensionMetadata

from tabbook.render.formats import ForFormat, Format, Tabs, format_of_transform
from tabbook.render.names import CELL_KEY, PROSE_TAB, SYNC_GROUP, TabMark

#: The node attribute of a prose tab holding its :class:`TabMark` (as metadata).
MARK_ATTRIBUTE = "tabbook_mark"


class ProseTab(SphinxDirective):
    """``{tabbook-tab} FRAMEWORK RUN``: a prose tab the merge stage wrote; its content, in a
    container that carries the mark."""

    required_arguments = 2
    has_content = True

    def run(self) -> list[nodes.Node]:
        from sphinx_design.shared import create_component

        mark = TabMark(self.arguments[0], int(self.arguments[1]))
        # sphinx-design's plain <div> (as its ``{div}`` makes), carrying the mark
        node = create_component("div", classes=["tabbook-tab"])
        node[MARK_ATTRIBUTE] = mark.as_metadata()
        self.set_source_info(node)
        self.state.nested_parse(self.content, self.content_offset, node)
        return [node]


def _mark(node: nodes.Node) -> TabMark | None:
    """The mark of a node the merge stage produced (a code cell's or a prose tab's), else None."""
    if not isinstance(node, nodes.Element):
        return None
    data = node.get(MARK_ATTRIBUTE) or (node.get("cell_metadata") or {}).get(CELL_KEY)
    return TabMark.from_metadata(data) if isinstance(data, dict) else None


def _runs(parent: nodes.Element) -> list[list[tuple[nodes.Element, TabMark]]]:
    """Maximal runs of consecutive marked children sharing one run."""
    runs: list[list[tuple[nodes.Element, TabMark]]] = []
    for run, group in itertools.groupby(parent.children, key=lambda child: getattr(_mark(child), "run", None)):
        if run is not None:
            runs.append([(child, mark) for child in group if isinstance(child, nodes.Element)
                         and (mark := _mark(child)) is not None])
    return runs


_VISIBLE = (nodes.image, nodes.raw, nodes.math, nodes.math_block, nodes.table, nodes.literal_block)


def _shows_nothing(node: nodes.Element) -> bool:
    """True when ``node`` renders nothing a reader sees: no text, image, math or raw output."""
    return not node.astext().strip() and not any(isinstance(n, _VISIBLE) for n in node.findall())


def _tab_set(run: list[tuple[nodes.Element, TabMark]], order: list[str], labels: dict[str, str]) -> nodes.Element:
    from sphinx_design.shared import create_component

    by_fw: dict[str, list[nodes.Element]] = {}
    for node, mark in run:
        by_fw.setdefault(mark.framework, []).append(node)
    names = [fw for fw in order if fw in by_fw] + [fw for fw in by_fw if fw not in order]
    tab_set = create_component("tab-set", classes=["sd-tab-set", "tabbook-tabs"])
    tab_set.source, tab_set.line = run[0][0].source, run[0][0].line
    for fw in names:
        label = nodes.rubric(labels.get(fw, fw), nodes.Text(labels.get(fw, fw)), classes=["sd-tab-label"])
        label["sync_group"] = SYNC_GROUP
        label["sync_id"] = fw
        content = create_component("tab-content", classes=["sd-tab-content"], children=by_fw[fw])
        item = create_component("tab-item", classes=["sd-tab-item"], children=[label, content])
        tab_set += item
    return tab_set



class GroupFrameworkTabs(SphinxPostTransform):
    """HTML: each run of framework cells becomes one tab set; other formats keep one framework."""

    default_priority = 150

    def run(self, **kwargs: Any) -> None:
        config = self.config
        order = list(config.tabbook_tabs)
        labels = dict(config.tabbook_labels)
        only = config.tabbook_framework if format_of_transform(self).tabs is Tabs.ONE else None
        parents = {id(n.parent): n.parent for n in self.document.findall(nodes.Element)
                   if _mark(n) is not None and n.parent is not None}
        for parent in parents.values():
            for run in _runs(parent):
                if only:
                    for node, mark in run:
                        if mark.framework != only:
                            parent.remove(node)
                    continue
                at = parent.index(run[0][0])
                for node, _ in run:
                    parent.remove(node)
                if not all(_shows_nothing(node) for node, _ in run):
                    parent.insert(at, _tab_set(run, order, labels))
                # else: a tab set of empty panels (prose tabs holding only a ``currentmodule``) is left out


class SelectDefaultTab(ForFormat, SphinxPostTransform):
    """Mark the default framework's tab selected, before sphinx-design's HTML transform (200)
    picks the first selected item (else the first item)."""

    default_priority = 199

    @staticmethod
    def applies(fmt: Format) -> bool:
        return fmt.tabs is Tabs.SETS

    def run(self, **kwargs: Any) -> None:
        from sphinx_design.shared import is_component

        default = self.config.tabbook_framework
        if not default:
            return
        for tab_set in self.document.findall(lambda n: is_component(n, "tab-set")):
            items = [c for c in tab_set.children if is_component(c, "tab-item")]
            if any(item.get("selected") for item in items):
                continue
            for item in items:
                label = item.children[0] if item.children else None
                if isinstance(label, nodes.Element) and label.get("sync_id") == default:
                    item["selected"] = True
                    break


def _add_static(app: Sphinx) -> None:
    """Ship the extension's own CSS/JS, whatever the book's html_static_path says."""
    static = str(Path(__file__).resolve().parents[1] / "static")
    if static not in app.config.html_static_path:
        app.config.html_static_path.append(static)


def setup_tabs(app: Sphinx) -> None:
    """Register the shared config values, the tab transforms and the tab script/stylesheet."""
    app.add_config_value("tabbook_tabs", [], "env")
    app.add_config_value("tabbook_labels", {}, "env")
    # Read at write time only: changing it (one PDF per framework) keeps the doctrees.
    app.add_config_value("tabbook_framework", "", "", types=frozenset({str}))
    app.add_directive(PROSE_TAB, ProseTab)
    app.add_post_transform(GroupFrameworkTabs)
    app.add_post_transform(SelectDefaultTab)
    app.connect("builder-inited", _add_static)
    app.add_css_file("tabbook.css")
    app.add_js_file("tabbook.js")


def setup(app: Sphinx) -> ExtensionMetadata:
    setup_tabs(app)
    return {"version": "0.1", "parallel_read_safe": True, "parallel_write_safe": True}
