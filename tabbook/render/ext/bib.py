"""Sphinx extension: the dialect's ``:bibliography:`` and ``:cite:`` where the book has no bibliography.

The dialect's ``:bibliography:`FILE``` line becomes sphinxcontrib-bibtex's
``{bibliography}`` directive (:mod:`tabbook.render.myst`), which lists the cited entries of
the conf's ``bibtex_bibfiles`` (``[pdf] bibfile`` and the files those lines name,
:func:`tabbook.book.named_bibfiles`). A book without bib files does not load sphinxcontrib-bibtex
(:mod:`tabbook.render.sphinx_conf`): then the directive renders nothing, rather than an
"unknown directive" error on the page, and a citation shows its keys, with a warning at its
line (:attr:`~tabbook.problems.Problem.MISSING_CITATION`), as a key no bib file has.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from collections.abc import Set as AbstractSet
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from docutils import nodes
from docutils.parsers.rst import Directive
from sphinx.application import Sphinx
from sphinx.config import Config
from sphinx.domains import Domain
from sphinx.util import logging

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

    from pybtex.database import BibliographyData, Entry
    from pybtex.style import FormattedEntry
    from pybtex.style.formatting import BaseStyle
    from sphinx.builders import Builder
    from sphinx.environment import BuildEnvironment
from sphinx.util.docutils import is_directive_registered
from sphinx.util.typing import ExtensionMetadata

from tabbook.problems import Problem

logger = logging.getLogger(__name__)


class NoBibliography(Directive):
    """``{bibliography}`` without sphinxcontrib-bibtex: nothing to list."""

    optional_arguments = 1
    final_argument_whitespace = True
    has_content = True
    option_spec = None  # any option is accepted (and ignored)

    def run(self) -> list[nodes.Node]:
        return []


def _keys_as_text(name: str, rawtext: str, text: str, lineno: int, inliner: Any,
                  options: dict[str, Any] | None = None, content: list[str] | None = None) -> tuple[list[nodes.Node], list[nodes.system_message]]:
    """``{cite:p}`key``` without a bib file: the keys, as a citation of a key no file has shows."""
    node = nodes.inline(rawtext, f"[{text}]", classes=["tabbook-unresolved"])
    node.source, node.line = inliner.reporter.get_source_and_line(lineno)
    logger.warning(f"citation {text!r}: the book has no bib file ([pdf] bibfile or a :bibliography: line "
                   "naming one that exists): shown as its key", location=node, type="tabbook",
                   subtype=Problem.MISSING_CITATION.slug)
    return [node], []


class NoCitations(Domain):
    """sphinxcontrib-bibtex's ``cite`` domain where it is not loaded: ``{cite:p}``/``{cite:t}``
    show their keys (a role of an unknown domain is reported without a place, once per use)."""

    name = "cite"
    label = "citations without a bib file"
    roles = {"p": _keys_as_text, "t": _keys_as_text}  # type: ignore[dict-item]

    def merge_domaindata(self, docnames: AbstractSet[str], otherdata: dict[str, Any]) -> None:
        """Nothing to merge from a parallel reader: the domain keeps no data."""

    def clear_doc(self, docname: str) -> None:
        """Nothing kept per document."""


def _keys_shown(domain_class: type[Domain]) -> type[Domain]:
    """sphinxcontrib-bibtex's ``cite`` domain, but a key that no bib file the book names has is
    shown as ``[key]`` (``tabbook-unresolved``), as in a book with no bib file at all, where the
    domain renders an empty ``[]`` (or drops the key from a citation of several). Its warning,
    at the citation's line, stays (reworded by :mod:`tabbook.render.diagnostics`)."""
    from sphinxcontrib.bibtex.citation_target import parse_citation_targets

    class KeysShown(domain_class):  # type: ignore[valid-type, misc]
        def resolve_xref(self, env: BuildEnvironment, fromdocname: str, builder: Builder, typ: str, target: str,
                         node: Any, contnode: Any) -> Any:
            result = super().resolve_xref(env, fromdocname, builder, typ, target, node, contnode)
            wanted = [t.key for t in parse_citation_targets(target)]
            found = {cit.key for cit in self.citations if cit.key in wanted
                     and self.bibliographies[cit.bibliography_key].list_ == "citation"}
            missing = [key for key in wanted if key not in found]
            if not missing:
                return result
            shown = nodes.inline(target, f"[{', '.join(missing)}]", classes=["tabbook-unresolved"])
            if not found:
                return shown
            result += [nodes.Text(" "), shown]
            return result

        def env_updated(self) -> Iterable[str]:
            # Formatted entries kept in the environment (pickled with it) for the next run:
            # sphinxcontrib-bibtex formats every cited entry of the book again in every run
            # (d2l-en: 432 entries, twice each with tooltips; 21 of a one-page edit's 48 s
            # profiled). Only this run's entries are kept.
            made: dict[str, FormattedEntry] = {}
            with _formatting_kept(getattr(self.env, "tabbook_bib_formatted", {}), made):
                rewrite = list(super().env_updated())
            self.env.tabbook_bib_formatted = made
            return rewrite

    KeysShown.__name__ = KeysShown.__qualname__ = domain_class.__name__
    return KeysShown


def _entry_key(style: BaseStyle, label: str, entry: Entry) -> str:
    """What a formatted entry is made from: the style, the label and the entry's whole data."""
    persons = {role: [[list(getattr(p, part)) for part in ("first_names", "middle_names", "prelast_names",
                                                            "last_names", "lineage_names")] for p in people]
               for role, people in entry.persons.items()}
    return repr((type(style).__module__, type(style).__qualname__, label, entry.key, entry.type,
                 sorted((k.lower(), str(v)) for k, v in entry.fields.items()), sorted(persons.items())))


@contextmanager
def _formatting_kept(kept: dict[str, FormattedEntry], made: dict[str, FormattedEntry]) -> Iterator[None]:
    """pybtex's ``BaseStyle.format_entry`` answered from ``kept`` (the last run's entries) where
    the same style, label and entry were formatted then; each answer is also put in ``made``.
    A style's formatting is a function of those alone (its template reads the entry's fields
    and persons; the label is computed before, from the whole sorted list, as before)."""
    from pybtex.style.formatting import BaseStyle

    real = BaseStyle.format_entry

    def format_entry(self: BaseStyle, label: str, entry: Entry,
                     bib_data: BibliographyData | None = None) -> FormattedEntry:
        if bib_data is not None:
            return real(self, label, entry, bib_data)
        key = _entry_key(self, label, entry)
        found = kept.get(key)
        if found is None:
            found = real(self, label, entry)
        made[key] = found
        return found

    BaseStyle.format_entry = format_entry  # type: ignore[method-assign]
    try:
        yield
    finally:
        BaseStyle.format_entry = real  # type: ignore[method-assign]


def _fallback(app: Sphinx, config: Config) -> None:
    if "sphinxcontrib.bibtex" not in app.extensions and not is_directive_registered("bibliography"):
        app.add_directive("bibliography", NoBibliography)
        app.add_domain(NoCitations)
    elif "sphinxcontrib.bibtex" in app.extensions:
        from sphinxcontrib.bibtex.domain import BibtexDomain

        app.add_domain(_keys_shown(BibtexDomain), override=True)
        _entry_points_read_once()


def _entry_points_read_once() -> None:
    """pybtex looks up a plugin (the text backend, a style, a name formatter) by asking
    ``importlib.metadata`` for the installed entry points each time, which reads the metadata
    of every installed distribution again; sphinxcontrib-bibtex formats every cited entry in
    every run, and :mod:`tabbook.render.ext.incremental` renders each as text, so on d2l-en
    (432 citations) a one-page edit spent most of its time in those lookups (profiled: 43 of
    84 s). The installed distributions do not change while Sphinx runs, so each query is
    answered once; pybtex's runtime registrations (``register_plugin``) are still consulted
    first on every lookup, as before."""
    import functools

    import pybtex.plugin

    if getattr(pybtex.plugin.entry_points, "tabbook_cached", False):
        return
    looked_up = pybtex.plugin.entry_points

    @functools.cache
    def entry_points(**query: str) -> tuple[EntryPoint, ...]:
        return tuple(looked_up(**query))

    entry_points.tabbook_cached = True  # type: ignore[attr-defined]
    pybtex.plugin.entry_points = entry_points  # type: ignore[assignment]


def setup(app: Sphinx) -> ExtensionMetadata:
    app.connect("config-inited", _fallback)
    return {"version": "0.1", "parallel_read_safe": True, "parallel_write_safe": True}
