"""Furo's sidebar tree made once per folder instead of once per page (issue 14: scale).

Furo puts the whole book's navigation tree on every page. For each page it asks Sphinx for the
global toctree (Sphinx copies every document's table of contents to build it) and then parses
that HTML with BeautifulSoup to add its checkboxes: work in proportion to the book, on each of
its pages, so a full render grows with the square of the book. On a generated book of 200
sections this was two thirds of the whole render (bench/scale.py).

The tree differs between two pages of one folder only in what marks the current page: the
``current`` classes of the page's link and of the items and lists above it, the current link's
``href="#"``, the ``checked`` checkbox of each item above it and furo's ``current-page`` class.
So the tree is made once per folder, through Sphinx and furo themselves, for a page name that
is not in the book (nothing marked, links relative to that folder), cut into its tags, and each
page gets a copy with its own marks set: a join of strings.

The result is checked against furo's own for the first page of every build; should the two
ever differ (another furo or Sphinx), this process goes back to furo's way for the rest of the
build, so the site is never different, only slower.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field
from typing import Any

from sphinx.application import Sphinx
from sphinx.util import logging
from sphinx.util.typing import ExtensionMetadata

from tabbook.render.ext import PageContext

logger = logging.getLogger(__name__)

#: What furo asks the ``toctree`` template function for (furo._compute_navigation_tree).
FURO_CALL = {"collapse": False, "titles_only": True, "maxdepth": -1, "includehidden": True}
#: Pages whose tree is also made furo's way and compared, at the start of each build process: one,
#: since an incremental build writes few pages and each comparison costs what furo costs.
CHECKED_PAGES = 1
#: A page name in a folder that is no page: its tree marks nothing.
NEUTRAL = ".tabbook-navigation"

_TAG = re.compile(r"(<[^>]*>)")
_NAME = re.compile(r"^</?([a-zA-Z][a-zA-Z0-9]*)")
_CLASS = re.compile(r'\sclass="([^"]*)"')
_HREF = re.compile(r'\shref="([^"]*)"')


@dataclass
class _Tree:
    """A folder's unmarked tree, cut into tags and text, with what a mark would change."""

    parts: list[str]
    links: dict[str, list[int]] = field(default_factory=dict)  # href -> indices of its <a> tags
    above: dict[int, list[int]] = field(default_factory=dict)  # <a> index -> open <li>/<ul> indices
    checkbox: dict[int, int] = field(default_factory=dict)  # <li> index -> its checkbox <input> index


def _cut(html: str) -> _Tree:
    """Cut furo's tree into parts, remembering for each link the items and lists it is in."""
    parts = _TAG.split(html)
    tree = _Tree(parts)
    stack: list[tuple[str, int]] = []  # open elements: (name, index of the start tag)
    for i, part in enumerate(parts):
        if not part.startswith("<") or part.startswith("<!"):
            continue
        m = _NAME.match(part)
        if not m:
            continue
        name = m.group(1).lower()
        if part.startswith("</"):
            while stack:
                if stack.pop()[0] == name:
                    break
            continue
        if name == "a":
            href = _HREF.search(part)
            if href:
                tree.links.setdefault(href.group(1), []).append(i)
                tree.above[i] = [j for n, j in stack if n in ("li", "ul")]
        elif name == "input" and 'class="toctree-checkbox"' in part:
            owner = next((j for n, j in reversed(stack) if n == "li"), None)
            if owner is not None:
                tree.checkbox[owner] = i
        if not part.endswith("/>") and name not in ("input", "br", "img", "hr", "meta", "link"):
            stack.append((name, i))
    return tree


def _classes(tag: str) -> list[str]:
    m = _CLASS.search(tag)
    return m.group(1).split() if m else []


def _add_class(tag: str, name: str, after_first: bool = False, first: bool = False) -> str:
    """``tag`` with class ``name`` added (Sphinx's order: after the toctree level, or first)."""
    m = _CLASS.search(tag)
    if not m:
        end = len(tag) - (2 if tag.endswith("/>") else 1)
        return f'{tag[:end]} class="{name}"{tag[end:]}'
    words = m.group(1).split()
    if first:
        words.insert(0, name)
    elif after_first and words:
        words.insert(1, name)
    else:
        words.append(name)
    return f'{tag[:m.start(1)]}{" ".join(words)}{tag[m.end(1):]}'


_ATTR = re.compile(r'\s([a-zA-Z-]+)="')


def _add_attribute(tag: str, name: str, value: str) -> str:
    """``tag`` with ``name="value"`` where BeautifulSoup writes it (attributes in name order)."""
    at = next((m.start() for m in _ATTR.finditer(tag) if m.group(1) > name), None)
    if at is None:
        at = len(tag) - (2 if tag.endswith("/>") else 1)
    return f'{tag[:at]} {name}="{value}"{tag[at:]}'


def _marked(tree: _Tree, href: str) -> str:
    """The tree as on the page that ``href`` points to (furo's and Sphinx's marks, in their order)."""
    hits = tree.links.get(href)
    if not hits:
        return "".join(tree.parts)
    parts = list(tree.parts)
    current_items: set[int] = set()
    for a in hits:
        tag = _HREF.sub(' href="#"', parts[a], count=1)
        parts[a] = _add_class(tag, "current", first=True)
        for j in tree.above[a]:
            if j in current_items or "current" in _classes(parts[j]):
                continue
            if parts[j].startswith("<li"):
                parts[j] = _add_class(parts[j], "current", after_first=True)
                current_items.add(j)
                box = tree.checkbox.get(j)
                if box is not None and " checked=" not in parts[box]:
                    parts[box] = _add_attribute(parts[box], "checked", "")
            else:
                parts[j] = _add_class(parts[j], "current")
    last = max(current_items) if current_items else None
    if last is not None:
        parts[last] = _add_class(parts[last], "current-page")
    return "".join(parts)


class _Navigation:
    """The trees of one build process, by folder, and whether they still agree with furo's."""

    def __init__(self) -> None:
        self.trees: dict[str, _Tree] = {}
        self.checked = 0
        self.trusted = True

    def tree(self, app: Sphinx, folder: str, toctree: Any) -> _Tree:
        found = self.trees.get(folder)
        if found is None:
            from furo.navigation import get_navigation_tree
            from sphinx.environment.adapters.toctree import global_toctree_for_doc

            neutral = posixpath.join(folder, NEUTRAL) if folder else NEUTRAL
            node = global_toctree_for_doc(app.env, neutral, app.builder, tags=app.builder.tags, **FURO_CALL)
            html = app.builder.render_partial(node)["fragment"] if node is not None else ""
            found = self.trees[folder] = _cut(get_navigation_tree(html))
        return found


def _navigation(app: Sphinx) -> _Navigation:
    nav = getattr(app.builder, "_tabbook_navigation", None)
    if nav is None:
        nav = _Navigation()
        app.builder._tabbook_navigation = nav  # type: ignore[attr-defined]
    return nav


def _before_furo(app: Sphinx, pagename: str, templatename: str, context: PageContext, doctree: Any) -> None:
    """Make furo's own tree cheap to compute (an empty one) and keep the real ``toctree`` aside."""
    nav = _navigation(app)
    toctree = context.get("toctree")
    if (toctree is None or not nav.trusted or app.config.html_theme != "furo"
            or not app.config.tabbook_fast_navigation):
        return

    def cheap(**kwargs: Any) -> str:
        return "" if kwargs == FURO_CALL else toctree(**kwargs)

    context["_tabbook_toctree"] = toctree
    context["toctree"] = cheap


def _after_furo(app: Sphinx, pagename: str, templatename: str, context: PageContext, doctree: Any) -> None:
    """Put this page's tree in furo's context: the folder's tree with the page's marks."""
    toctree = context.pop("_tabbook_toctree", None)
    if toctree is None:
        return
    context["toctree"] = toctree
    nav = _navigation(app)
    folder = posixpath.dirname(pagename)
    neutral = posixpath.join(folder, NEUTRAL) if folder else NEUTRAL
    html = _marked(nav.tree(app, folder, toctree), app.builder.get_relative_uri(neutral, pagename))
    if nav.checked < CHECKED_PAGES:
        from furo.navigation import get_navigation_tree

        nav.checked += 1
        expected = get_navigation_tree(toctree(**FURO_CALL))
        if html != expected:
            nav.trusted = False
            logger.debug("[tabbook] navigation trees differ from furo's on %s: furo's way from here", pagename)
            html = expected
    context["furo_navigation_tree"] = html


def setup_navtree(app: Sphinx) -> None:
    # Off: furo's way on every page (tests compare the two sites byte for byte).
    app.add_config_value("tabbook_fast_navigation", True, "html", bool)
    # furo's html-page-context handler runs at the default priority (500).
    app.connect("html-page-context", _before_furo, priority=450)
    app.connect("html-page-context", _after_furo, priority=550)


def setup(app: Sphinx) -> ExtensionMetadata:
    setup_navtree(app)
    return {"version": "0.1", "parallel_read_safe": True, "parallel_write_safe": True}
