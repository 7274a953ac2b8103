"""An incremental Sphinx run ends where a clean run of the same sources does (issue 49, class C).

Sphinx re-reads only the pages whose source changed and re-writes only those (and the pages
whose own numbers or toctrees changed). Five things of a clean run it does not redo, and
each left a site that only ``tabbook clear`` mended (``tests/incremental_fuzz.py`` finds them):

1. **Labels defined twice.** Sphinx keeps one owner per label (the page read last) and, when
   that page is read again, forgets the label, though another page still defines it: a
   duplicate ``:label:`` added to ``b.md`` and removed again left every reference to the label
   undefined. A clean run reads pages in name order, so the owner of a label several pages
   define is the last of them by name. Here each page's definitions (its std labels and its
   equations, as Sphinx recorded them when it read the page) are kept in the environment, and
   after every read the owner of each label that a re-read or removed page defined (before or
   now) is set to what a clean run would have set (:func:`_reconcile`).
2. **Pages that refer to a label whose target changed.** A ``:numref:`` in an unchanged page
   kept the old target, number or title (a label moved, duplicated, removed, a section
   renumbered). Each page's cross-references are kept, with what each resolved to (the label's
   owner, and the numbers and title of its page); a page whose references now resolve to
   anything else is written again (:func:`_referrers`, at ``env-get-updated`` after Sphinx has
   numbered the sections).
3. **The navigation every page shows.** furo's sidebar and the previous/next links hold the
   whole toc's titles and numbers; Sphinx re-writes the pages whose own toctree changed, not
   the others. When the toc's tree, titles or numbers change, every page is written again; the
   numbers Sphinx wrote into the pages' tocs and titles are cleared before it numbers them again, since it
   never takes one away (:func:`_forget_section_numbers`).
4. **The search index.** Sphinx's index keeps a word whose pages are all gone, with no pages
   (:func:`_prune_search_terms` drops them), and loses the index entries of every page it does
   not write again (:func:`_restore_index_entries` puts them back).
5. **Files of pages that are gone.** Sphinx never deletes an output: a removed page's ``.html``
   and an image no page shows any longer stayed on the site. After a successful HTML run, the
   pages no source makes and the images and downloads no page names are removed
   (:func:`_remove_stale`).
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

from docutils import nodes
from sphinx import addnodes
from sphinx.application import Sphinx
from sphinx.environment import BuildEnvironment
from sphinx.util.typing import ExtensionMetadata

from tabbook.render.ext import PageContext
from tabbook.render.formats import format_of
from tabbook.render.package import INDEX

#: The folder Sphinx copies a ``{download}`` file into: the MD5 of its source path.
_SPHINX_DOWNLOAD = re.compile(r"[0-9a-f]{32}")
#: A page's definitions: (domain, name) → what the domain held for it after the page was read:
#: for "std", [labels entry or None, anonlabels entry or None]; for "math", the equation entry.
Definitions = dict[tuple[str, str], Any]


def _defines(env: BuildEnvironment) -> dict[str, Definitions]:
    if not hasattr(env, "tabbook_defines"):
        env.tabbook_defines = {}  # type: ignore[attr-defined]
    return env.tabbook_defines  # type: ignore[attr-defined, no-any-return]


def _xrefs(env: BuildEnvironment) -> dict[str, list[tuple[str, str, str]]]:
    if not hasattr(env, "tabbook_xrefs"):
        env.tabbook_xrefs = {}  # type: ignore[attr-defined]
    return env.tabbook_xrefs  # type: ignore[attr-defined, no-any-return]


def _touched(env: BuildEnvironment) -> set[tuple[str, str]]:
    """The names defined by pages purged in this run (before their read): their owners may change."""
    if not hasattr(env, "tabbook_touched"):
        env.tabbook_touched = set()  # type: ignore[attr-defined]
    return env.tabbook_touched  # type: ignore[attr-defined, no-any-return]


def _record(app: Sphinx, doctree: nodes.document) -> None:
    """What the page just read defines and refers to (``doctree-read`` runs after the domains
    have processed the page, so their entries for it are this page's)."""
    env = app.env
    docname = env.current_document.docname
    std = env.domains.standard_domain
    found: Definitions = {}
    for name, explicit in doctree.nametypes.items():
        if not explicit:
            continue
        anon = std.anonlabels.get(name)
        if anon is None or anon[0] != docname:
            continue
        label = std.labels.get(name)
        found[("std", name)] = [list(label) if label and label[0] == docname else None, list(anon)]
    equations = env.domains["math"].data.get("objects", {})
    for node in doctree.findall(nodes.math_block):
        label = node.get("label")
        if label and equations.get(label, ("",))[0] == docname:
            found[("math", label)] = list(equations[label])
    _defines(env)[docname] = found
    _xrefs(env)[docname] = sorted({(str(x.get("refdomain", "")), str(x.get("reftype", "")), str(x.get("reftarget", "")))
                                   for x in doctree.findall(addnodes.pending_xref)})


def _purge(app: Sphinx, env: BuildEnvironment, docname: str) -> None:
    old = _defines(env).pop(docname, None)
    if old:
        _touched(env).update(old)
    _xrefs(env).pop(docname, None)


def _merge(app: Sphinx, env: BuildEnvironment, docnames: set[str], other: BuildEnvironment) -> None:
    """A parallel read's records join the main environment's."""
    for docname in docnames:
        if docname in _defines(other):
            _defines(env)[docname] = _defines(other)[docname]
        if docname in _xrefs(other):
            _xrefs(env)[docname] = _xrefs(other)[docname]


def _reconcile(app: Sphinx, env: BuildEnvironment) -> None:
    """Every label a purged or re-read page defined (before or now) owned as a clean run would
    own it: by the last page, in name order, that defines it (for ``labels``, the last whose
    definition has a title)."""
    defines = _defines(env)
    touched = _touched(env)
    for docname in getattr(env, "tabbook_reading", ()):
        touched.update(defines.get(docname, {}))
    if not touched:
        return
    owners: dict[tuple[str, str], list[str]] = {}
    for docname in sorted(defines):
        if docname not in env.all_docs:
            continue
        for key in defines[docname]:
            if key in touched:
                owners.setdefault(key, []).append(docname)
    std = env.domains.standard_domain
    equations = env.domains["math"].data.setdefault("objects", {})
    for key in sorted(touched):
        kind, name = key
        docs = owners.get(key, [])
        if kind == "std":
            anon = [defines[d][key][1] for d in docs if defines[d][key][1]]
            titled = [defines[d][key][0] for d in docs if defines[d][key][0]]
            if anon:
                std.anonlabels[name] = tuple(anon[-1])
            else:
                std.anonlabels.pop(name, None)
            if titled:
                std.labels[name] = tuple(titled[-1])
            else:
                std.labels.pop(name, None)
        elif kind == "math":
            if docs:
                equations[name] = tuple(defines[docs[-1]][key])
            else:
                equations.pop(name, None)
    touched.clear()
    env.tabbook_reading = []  # type: ignore[attr-defined]


def _reading(app: Sphinx, env: BuildEnvironment, docnames: list[str]) -> None:
    env.tabbook_reading = list(docnames)  # type: ignore[attr-defined]


def _resolution(env: BuildEnvironment, xref: tuple[str, str, str], pages: dict[str, Any],
                citations: dict[str, Any]) -> Any:
    """What a reference resolves to, as data: the owner of its label and what its page shows
    (title, section and figure numbers)."""
    domain, reftype, target = xref
    if domain == "std" and reftype == "doc":
        page = target
        found: Any = None
    elif domain == "std":
        std = env.domains.standard_domain
        name = target.lower()
        found = [std.labels.get(name), std.anonlabels.get(name)]
        page = found[1][0] if found[1] else ""
    elif domain == "math":
        found = env.domains["math"].data.get("objects", {}).get(target)
        page = found[0] if found else ""
    elif domain == "cite":
        return [citations.get(key.strip()) for key in target.split(",")]
    else:
        return None
    if page and page not in pages:
        title = env.titles.get(page)
        pages[page] = [title.astext() if title is not None else None, env.toc_secnumbers.get(page),
                       env.toc_fignumbers.get(page)]
    return [found, pages.get(page)]


def _citations(env: BuildEnvironment) -> dict[str, Any]:
    """sphinxcontrib-bibtex's citations (key → its page, target, label and text), as data;
    computed at ``env-updated`` for the whole book (empty without the extension)."""
    found: dict[str, Any] = {}
    data = env.domaindata.get("cite")
    for citation in (data or {}).get("citations", ()):
        entry = citation.formatted_entry
        found[citation.key] = [citation.bibliography_key.docname, citation.citation_id, entry.label,
                               entry.text.render_as("text")]
    return found


def _bibliographies(env: BuildEnvironment, citations: dict[str, Any]) -> dict[str, list[Any]]:
    """Each page holding a bibliography → the citations it lists (bibtex lists those cited
    anywhere, but re-writes the page only when its own source changed)."""
    pages: dict[str, list[Any]] = {}
    for key, citation in sorted(citations.items()):
        pages.setdefault(citation[0], []).append([key, *citation[1:]])
    data = env.domaindata.get("cite") or {}
    for bib_key in data.get("bibliographies", {}):
        pages.setdefault(bib_key.docname, [])
    return pages


def _forget_section_numbers(app: Sphinx, env: BuildEnvironment) -> list[str]:
    """Every page's table of contents without the section numbers the last run gave it, before
    Sphinx numbers them again. Sphinx writes a number into the toc of each page a numbered
    toctree holds, and never takes one away: with ``:numbered:`` removed, the pages not read
    again kept "2. Beta" in every page's navigation."""
    for toc in env.tocs.values():
        for reference in toc.findall(nodes.reference):
            reference.attributes.pop("secnumber", None)
    for titles in (env.titles, env.longtitles):  # the page's title: <title>, previous and next links
        for title in titles.values():
            title.attributes.pop("secnumber", None)
    return []


def _referrers(app: Sphinx, env: BuildEnvironment) -> list[str]:
    """The pages whose references resolve otherwise than when they were last written."""
    before: dict[str, str] = getattr(env, "tabbook_resolved", {})
    now: dict[str, str] = {}
    pages: dict[str, Any] = {}
    citations = _citations(env)
    listed = _bibliographies(env, citations)
    for docname in sorted(set(_xrefs(env)) | set(listed)):
        xrefs = _xrefs(env).get(docname, [])
        if docname not in env.all_docs:
            continue
        seen = [[*x, _resolution(env, x, pages, citations)] for x in xrefs] + [listed.get(docname)]
        now[docname] = hashlib.sha256(json.dumps(seen, default=str, sort_keys=True).encode()).hexdigest()
    env.tabbook_resolved = now  # type: ignore[attr-defined]
    # Every page shows the whole book's navigation (furo's sidebar, the previous and next
    # links): what it shows of the toc changed, every page is written again.
    navigation = json.dumps([sorted(env.toctree_includes.items()),
                             sorted((d, t.astext()) for d, t in env.titles.items()),
                             sorted((d, n.get("")) for d, n in env.toc_secnumbers.items()),
                             sorted((d, _shown(toc)) for d, toc in env.tocs.items())], default=str, sort_keys=True)
    nav_hash = hashlib.sha256(navigation.encode()).hexdigest()
    nav_before = getattr(env, "tabbook_navigation", None)
    env.tabbook_navigation = nav_hash  # type: ignore[attr-defined]
    ancestors = _toc_ancestors(env)
    if nav_before is not None and nav_before != nav_hash:
        return sorted(env.found_docs)
    return sorted({d for d, h in now.items() if d in before and before[d] != h} | ancestors)


def _shown(toc: nodes.Node) -> list[object]:
    """What a titles-only navigation (furo's sidebar: ``navtree.FURO_CALL``) shows of one page's
    table of contents: its top-level entries (text, anchor, number) and every toctree under
    them, never a subsection. A subsection's anchor or number (a ``:label:`` added under a
    heading renames its anchor) is shown only by the page and the toctrees above it
    (:func:`_toc_ancestors`), so it does not write the whole book again."""
    shown: list[object] = []
    for child in toc.children:
        if isinstance(child, nodes.list_item):
            head = child[0] if len(child) else None
            ref = next(iter(head.findall(nodes.reference)), None) if isinstance(head, nodes.Element) else None
            place = [ref.get(k) for k in ("refuri", "anchorname", "secnumber")] if ref is not None else None
            shown.append(["item", head.astext() if head is not None else "", place,
                          [_toctree(t) for t in child.findall(addnodes.toctree)]])
        elif isinstance(child, addnodes.toctree):
            shown.append(["toctree", _toctree(child)])
        elif isinstance(child, nodes.Element):  # an ``only`` node and what it holds
            shown.append([child.tagname, child.get("expr"), _shown(child)])
    return shown


def _toctree(node: addnodes.toctree) -> str:
    return json.dumps(sorted(node.attributes.items()), default=str)


def _toc_ancestors(env: BuildEnvironment) -> set[str]:
    """The pages that hold, through their toctrees at any depth, a page whose table of contents
    (any entry's text, anchor or number) changed since the last run: a toctree of depth 3 in a
    chapter's parent shows that chapter's pages' sections, and Sphinx writes again only the
    page whose own toctree names the changed one (``env.files_to_rebuild``, one level)."""
    before: dict[str, str] = getattr(env, "tabbook_tocs", {})
    now = {d: hashlib.sha256(json.dumps([[r.get("refuri"), r.get("anchorname"), r.get("secnumber"), r.astext()]
                                         for r in toc.findall(nodes.reference)], default=str).encode()).hexdigest()
           for d, toc in env.tocs.items()}
    env.tabbook_tocs = now  # type: ignore[attr-defined]
    if not before:
        return set()
    pending = [d for d, h in now.items() if before.get(d, h) != h]
    found: set[str] = set()
    while pending:
        for parent in env.files_to_rebuild.get(pending.pop(), ()):
            if parent not in found and parent in env.found_docs:
                found.add(parent)
                pending.append(parent)
    return found


def _remove_stale(app: Sphinx, exception: BaseException | None) -> None:
    """After a successful HTML run: the pages, images and downloads no current page accounts for."""
    if exception is not None or not format_of(app.builder).prunes_stale:
        return
    env = app.env
    out = Path(app.outdir)
    suffix = getattr(app.builder, "out_suffix", ".html")
    written = getattr(app, "tabbook_rendered", set())
    for page in out.rglob(f"*{suffix}"):
        rel = page.relative_to(out).as_posix()
        if rel.startswith("_") or rel.startswith(f"{INDEX}/"):
            # Sphinx's and tabbook's own folders (_static, _slides, …), and the book's package
            # index (render/package.py: written before Sphinx runs, by the build, not a page).
            continue
        docname = rel[: -len(suffix)]
        if docname not in env.found_docs and docname not in written:
            page.unlink()
    images = out / "_images"
    if images.is_dir():
        keep = {unique for _docs, unique in env.images.values()}
        for path in images.iterdir():
            if path.is_file() and path.name not in keep:
                path.unlink()
    (out / ".buildinfo.bak").unlink(missing_ok=True)  # Sphinx's copy of an older .buildinfo
    downloads = out / "_downloads"
    if downloads.is_dir():
        keep = {dest for _docs, dest in env.dlfiles.values()}
        for folder in downloads.iterdir():
            if not folder.is_dir() or not _SPHINX_DOWNLOAD.fullmatch(folder.name):
                continue  # tabbook's own (notebooks, PDFs): render/site.py publish_downloads
            for path in folder.iterdir():
                if path.is_file() and f"{folder.name}/{path.name}" not in keep:
                    path.unlink()
            if not any(folder.iterdir()):
                folder.rmdir()


def _rendered(app: Sphinx, pagename: str, templatename: str, context: PageContext, doctree: Any) -> None:
    if not hasattr(app, "tabbook_rendered"):
        app.tabbook_rendered = set()  # type: ignore[attr-defined]
    _before_first_page(app)
    app.tabbook_rendered.add(pagename)  # type: ignore[attr-defined]


def _resolved(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    _before_first_page(app)


def _before_first_page(app: Sphinx) -> None:
    """Once a run, after Sphinx has loaded the last search index and before the first page
    of this run adds itself to it (at the first page resolved, or, when no page is written, the
    first generated one)."""
    if getattr(app, "tabbook_index_mended", False) or getattr(app.builder, "indexer", None) is None:
        return
    app.tabbook_index_mended = True  # type: ignore[attr-defined]
    _restore_index_entries(app)
    _prune_search_terms(app)


def _restore_index_entries(app: Sphinx) -> None:
    """The index entries of the pages this run does not write, as the last run left them.

    Sphinx keeps them in the environment, but adds a page's entries while writing it, after
    the environment was saved, and does not read them back from the last index: every page
    not written again lost its entries from the search (an API page's functions). The last
    index (``searchindex.js``, not yet replaced) has them; the pages written in this run put
    their own back as they are written."""
    from sphinx.search import js_index

    indexer = app.builder.indexer  # type: ignore[attr-defined]
    entries = getattr(indexer, "_index_entries", None)
    path = Path(app.outdir) / getattr(app.builder, "searchindex_filename", "searchindex.js")
    if not isinstance(entries, dict) or not path.is_file():
        return
    try:
        frozen = js_index.loads(path.read_text(encoding="utf-8"))
        index2fn = frozen["docnames"]
        restored: dict[str, list[tuple[str, str, str]]] = {}
        for entry, places in frozen.get("indexentries", {}).items():
            for doc, target, main in places:
                restored.setdefault(index2fn[doc], []).append((entry, target, main))
    except (OSError, ValueError, KeyError, IndexError, TypeError):
        return  # no usable last index: Sphinx's own state stands
    for docname in app.env.found_docs:
        entries[docname] = sorted(restored.get(docname, []))
    for docname in [d for d in entries if d not in app.env.found_docs]:
        del entries[docname]


def _prune_search_terms(app: Sphinx) -> None:
    """The search index without words no page has any longer. Sphinx loads the last run's index
    and takes the re-read pages out of each word's pages, but keeps the words left with none
    (``"gone":[]`` in ``searchindex.js``, which a clean run never writes). Called once a run, at
    its first page, after Sphinx has pruned and before it dumps the index."""
    indexer = getattr(app.builder, "indexer", None)
    for name in ("_mapping", "_title_mapping"):
        mapping = getattr(indexer, name, None)
        if isinstance(mapping, dict):
            for word in [w for w, pages in mapping.items() if not pages]:
                del mapping[word]


def setup(app: Sphinx) -> ExtensionMetadata:
    app.connect("doctree-read", _record)
    app.connect("env-purge-doc", _purge)
    app.connect("env-merge-info", _merge)
    app.connect("env-before-read-docs", _reading, priority=400)
    app.connect("env-updated", _reconcile, priority=100)  # before any handler that reads labels
    app.connect("env-get-updated", _forget_section_numbers, priority=400)  # before the toctree collector
    app.connect("env-get-updated", _referrers, priority=900)  # after the toctree collector numbers
    app.connect("html-page-context", _rendered)
    app.connect("doctree-resolved", _resolved)
    app.connect("build-finished", _remove_stale, priority=800)
    return {"version": "0.1", "parallel_read_safe": True, "parallel_write_safe": True, "env_version": 1}
