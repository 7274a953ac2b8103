"""Render: the merged sources Sphinx reads (``build/src``), one file per page.

A page with code becomes a merged notebook (:mod:`.merge`); a page of prose only
becomes MyST Markdown. Generated pages (the API reference, the bibliography) are
added, and the root index gains their toctree. Files whose text is unchanged are
not rewritten, so their mtimes stay and Sphinx re-reads only the pages that
changed (what keeps a prose edit's rebuild small); pages no longer in the book
are removed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tabbook.config import Config
from tabbook.errors import BookError
from tabbook.files import BuildDir, write_if_changed
from tabbook.nbjson import Notebook
from tabbook.render.front import hide_root_toctree
from tabbook.render.names import APPENDIX_CAPTION
from tabbook.source.model import Section

#: d2lbook's role that places the bibliography on a page of the book's own.
BIBLIOGRAPHY_ROLE = ":bibliography:`"
#: autodoc directives: the book documents its package on a page of its own.
AUTODOC = re.compile(r"^\s*\.\. auto(class|function|module|data|exception)::", re.M)


def source_dir(config: Config) -> Path:
    """``build/src`` (:class:`tabbook.files.BuildDir`)."""
    return BuildDir(config.build_dir).src


def extra_pages(config: Config, library: dict[str, str], sections: Sequence[Section] = ()) -> dict[str, str]:
    """Pages the builder generates: the API reference, and the bibliography when there is one.

    A book that places its bibliography itself (d2lbook's ``:bibliography:`` role on
    a page of its own) gets no second one; a book that documents its package with
    autodoc gets no generated API reference beside it.
    """
    from tabbook.render.apiref import api_reference_markdown

    prose = [cell.source for s in sections for cell in s.cells if cell.kind == "markdown"]
    extra = {}
    # A d2lbook book documents d2l with autodoc; a book that saves nothing has no library to list.
    if library and not any(AUTODOC.search(text) for text in prose):
        extra["api.md"] = _cached_api_reference(config, library, api_reference_markdown)
    placed = any(BIBLIOGRAPHY_ROLE in text for text in prose)
    if config.bibfile is not None and not placed:
        # The entries the book cites (as a d2lbook book's own ``:bibliography:`` page lists
        # them), not every entry of the file: an entry cited nowhere is not the book's.
        extra["references.md"] = "# References\n\n```{bibliography}\n:cited:\n```\n"
    return extra


def _cached_api_reference(config: Config, library: dict[str, str], make: Any) -> str:
    """The API page, made again only when the library, the configuration or the builder changed.

    Making it parses the whole generated library, on every build: a cost that grows with the
    book and that a prose edit or a no-op rebuild should not pay (issue 14).
    """
    settings = [f.read_bytes().hex() if f and f.is_file() else "" for f in (config.root / "config.ini", config.overlay)]
    memo = BuildDir(config.build_dir).memo("apiref", settings=settings, root=config.root, library=library)
    return str(memo.get(lambda: make(config, library)))


def _page_key(config: Config, section: Section, labels: dict[str, str],
              origins: dict[tuple[str, str], str], page_hashes: dict[str, str], orphan: bool = False) -> str | None:
    """What a generated page is made from, as one hash (the builder is the sources memo's
    fingerprint); None when that cannot be said cheaply (a notebook made in this build, a page
    whose text was not hashed)."""
    import hashlib

    page = page_hashes.get(section.path)
    if page is None or config.root / section.path == config.index or (section.toc and not section.code_cells):
        # The root page carries the front page, and a chapter's index the line saying where
        # its sections' outputs were computed: both made from other pages, so always made.
        return None
    units = []
    for fw in config.tabs:
        if (section.path, fw) in origins:
            units.append([fw, origins[(section.path, fw)]])
        elif section.code_cells and any(fw in c.tabs for c in section.code_cells):
            return None  # executed now (or unknown): merge it
    return hashlib.sha256(json.dumps([page, section.path, list(config.tabs), labels,
                                      units, orphan, list(section.shadowed)]).encode()).hexdigest()


@dataclass
class PageJob:
    """One page of ``build/src`` as the planner sees it: where it goes, what it is made from
    (``key``, None when that cannot be said), and whether the file there is already it."""

    section: Section
    stem: str
    out: Path
    key: str | None
    orphan: bool
    current: bool


@dataclass
class SourceTree:
    """What the writers did to ``build/src``: the files that belong there, and how many
    were written or removed (0: Sphinx would read what it read last time)."""

    src: Path
    wanted: set[Path] = field(default_factory=set)
    changed: int = 0

    def write(self, path: Path, text: str) -> None:
        self.changed += write_if_changed(path, text)
        self.wanted.add(path)


def write_sources(
    config: Config, sections: list[Section], notebooks: dict[tuple[str, str], Notebook],
    extra: dict[str, str] | None = None, origins: dict[tuple[str, str], str] | None = None,
    page_hashes: dict[str, str] | None = None, orphans: Collection[str] = (),
    notebook_pages: Collection[str] = (),
) -> int:
    """Write Sphinx's source tree: one merged notebook (or MyST page) per section.

    Returns how many files were written or removed: 0 means Sphinx would read
    exactly what it read last time (what lets a no-op build skip Sphinx).

    With ``origins`` (where each notebook came from, :class:`tabbook.execute.plan.Plan`) and
    the pages' ``page_hashes``, a page made from the same text, the same store entries and
    the same builder as at the last build, whose files are still there, is not merged again:
    merging every page of a book of hundreds of sections is most of a no-op rebuild (issue 14).

    ``orphans``: pages no toc lists, marked so for Sphinx (``orphan`` front matter), which
    then builds them without its "not included in any toctree" warning, as d2lbook's does.
    """
    build = BuildDir(config.build_dir)
    tree = SourceTree(build.src)
    tree.src.mkdir(parents=True, exist_ok=True)
    labels = {fw: config.framework(fw).label for fw in config.tabs}
    memo = build.memo("sources") if origins is not None else None
    before = (memo.load() if memo is not None else None) or {}
    jobs = plan_pages(config, build, sections, labels, before, origins, page_hashes or {}, orphans)
    _unlink_folders_holding_pages(tree, config, jobs)
    for job in jobs:
        if job.current:
            tree.wanted.add(job.out)
            continue
        executed = {fw: notebooks[(job.section.path, fw)] for fw in config.tabs
                    if (job.section.path, fw) in notebooks}
        if job.section.code_cells:
            line_map = _write_notebook_page(tree, job, executed, config.tabs, labels)
        else:
            line_map = _write_prose_page(tree, job, config, sections, notebooks, labels, extra)
        write_if_changed(build.line_map(job.stem), json.dumps(line_map))
    for rel, text in (extra or {}).items():
        tree.write(tree.src / rel, text)
    for rel in notebook_pages:
        text, line_map = notebook_page(config, rel)
        tree.write(tree.src / rel, text)
        write_if_changed(build.line_map(rel.removesuffix(".ipynb")), json.dumps(line_map))
    _write_rsts(tree, config)
    _link_book_files(tree, config)
    _remove_unwanted(tree)
    if memo is not None:
        memo.save({job.stem: job.key for job in jobs if job.key is not None})
    return tree.changed


def plan_pages(config: Config, build: BuildDir, sections: list[Section], labels: dict[str, str],
               before: dict[str, str], origins: dict[tuple[str, str], str] | None,
               page_hashes: dict[str, str], orphans: Collection[str]) -> list[PageJob]:
    """Each page's job: its target, its key, and whether the last build left it current
    (the same key in the sources memo, its file and line map still there)."""
    jobs = []
    for section in sections:
        stem = section.path[:-3]
        orphan = section.path in orphans
        key = _page_key(config, section, labels, origins, page_hashes, orphan) if origins is not None else None
        out = build.src / f"{stem}.ipynb" if section.code_cells else build.src / f"{stem}.md"
        current = key is not None and before.get(stem) == key and out.is_file() and build.line_map(stem).is_file()
        jobs.append(PageJob(section, stem, out, key, orphan, current))
    return jobs


def _write_notebook_page(tree: SourceTree, job: PageJob, executed: dict[str, Notebook],
                         tabs: tuple[str, ...], labels: dict[str, str]) -> Notebook:
    """A page with code: its executed notebooks merged into one; returns its line map."""
    from tabbook.render.merge import merge_section

    maps: list[list[int]] = []
    doc = merge_section(job.section, executed, tabs, labels, line_maps=maps)
    if job.orphan:
        doc["metadata"]["orphan"] = True  # myst-nb passes it on as front matter
    # Compact JSON: Python's C encoder only serves dumps without indent, and every build
    # serializes every page to compare it with the file (a tenth of a second per hundred
    # pages with indent). Sphinx and the line maps count cells, never file lines.
    tree.write(job.out, json.dumps(doc, ensure_ascii=False, sort_keys=True))
    return {"source": job.section.path, "cells": maps}


def _write_prose_page(tree: SourceTree, job: PageJob, config: Config, sections: list[Section],
                      notebooks: dict[tuple[str, str], Notebook], labels: dict[str, str],
                      extra: dict[str, str] | None) -> Notebook:
    """A page of prose: MyST, with the front page under the root page's prose, a chapter
    index's "where computed" line and the generated pages' toctree; returns its line map."""
    from tabbook.render.merge import merge_section

    section = job.section
    maps: list[list[int]] = []
    doc = merge_section(section, {}, config.tabs, labels, line_maps=maps)
    is_root = config.root / section.path == config.index
    front = front_page(config, section, sections, notebooks) if is_root else ""
    if front:
        for cell in doc["cells"]:
            cell["source"] = hide_root_toctree(cell["source"])
    text = "\n\n".join(c["source"] for c in doc["cells"])
    lines: list[int] = []
    for cell, rows in zip(doc["cells"], maps, strict=True):
        if lines:
            lines.append(lines[-1])  # the blank line between two cells
        n = cell["source"].count("\n") + 1
        lines += (rows + [rows[-1] if rows else 0] * n)[:n]  # 0: a line the builder wrote
    if job.orphan:
        text, lines = "---\norphan: true\n---\n" + text, [0, 0, 0, *lines]
    if front:
        text += "\n\n" + front
    elif section.toc and not is_root:
        from tabbook.render.front import where_line

        where = where_line(section, {s.path: s for s in sections}, labels, notebooks)
        if where:
            text += "\n\n" + where
    if is_root and extra:
        pages = "\n".join(p[:-3] for p in extra)
        text += f"\n\n```{{toctree}}\n:caption: {APPENDIX_CAPTION}\n:maxdepth: 1\n\n{pages}\n```"
    tree.write(job.out, text + "\n")
    return {"source": section.path, "lines": lines}


def _unlink_folders_holding_pages(tree: SourceTree, config: Config, jobs: list[PageJob]) -> None:
    """A resource folder that holds pages (d2l-vi's ``img/README.md``: d2lbook renders what its
    ``notebooks`` patterns match, in a resource folder too) is a real folder in ``build/src``, its
    files linked one by one (:func:`_link_into`): a page must never be written through a link
    into the book."""
    for name in config.resources:
        link = tree.src / name
        if link.is_symlink() and any(link in job.out.parents for job in jobs):
            link.unlink()
            tree.changed += 1


def _link_into(folder: Path, target: Path) -> int:
    """Link each file of ``target`` into the real ``folder`` (sub-folders: as a whole, or one by
    one where the folder is real too), leaving Markdown out (a page there is generated) and
    what is there already; returns how many links were made."""
    made = 0
    for child in sorted(target.iterdir()):
        link = folder / child.name
        if child.suffix == ".md" or link.is_symlink() and link.resolve() == child.resolve():
            continue
        if child.is_dir() and link.is_dir() and not link.is_symlink():
            made += _link_into(link, child)
        elif not link.exists():
            link.unlink(missing_ok=True)  # a dangling link
            link.symlink_to(child.resolve(), target_is_directory=child.is_dir())
            made += 1
    return made


def _link_book_files(tree: SourceTree, config: Config) -> None:
    """What pages refer to, seen in place: d2lbook's ``[build] resources`` (linked; a folder
    that holds pages, file by file), ``root_files`` (linked at the root, by name) and the bib
    file (copied)."""
    src = tree.src
    for name in config.resources:
        target, link = config.root / name, src / name
        if target.is_dir() and link.is_dir() and not link.is_symlink():
            tree.changed += _link_into(link, target)
            continue
        if not target.exists() or (link.exists() and not link.is_symlink()):
            continue
        # A link left by a build of the book in another folder (a copied or moved checkout,
        # build/ included) leads there: it is made again to lead into this book.
        if not link.is_symlink() or link.resolve() != target.resolve():
            link.unlink(missing_ok=True)
            link.parent.mkdir(parents=True, exist_ok=True)
            link.symlink_to(target.resolve(), target_is_directory=target.is_dir())
            tree.changed += 1
    for name in config.root_files:
        target, link = config.root / name, src / Path(name).name
        if not target.is_file():
            where = config.rel(config.overlay) if config.overlay else "config.ini"
            raise BookError(f"[build] root_files names {name}, which does not exist", where)
        if not link.is_symlink() or link.resolve() != target.resolve():
            link.unlink(missing_ok=True)
            link.symlink_to(target.resolve())
            tree.changed += 1
    if config.bibfile is not None:
        tree.changed += write_if_changed(src / config.bibfile.name, config.bibfile.read_text(encoding="utf-8"))


def _remove_unwanted(tree: SourceTree) -> None:
    """Pages no longer in the book leave ``build/src`` (not those under a linked folder)."""
    src = tree.src
    for path in list(src.rglob("*")):
        if path.suffix in (".md", ".ipynb", ".rst") and path.is_file() and path not in tree.wanted \
                and not path.is_symlink() and not any(p.is_symlink() for p in path.parents if src in p.parents):
            path.unlink()
            tree.changed += 1


_SOURCE_KEY = re.compile(r'^\s*"source":\s*(\[?)')


def notebook_page(config: Config, rel: str) -> tuple[str, Notebook]:
    """A toc entry that is a notebook of the book (d2l-java's ``x.ipynb``, made by its own build
    script), as Sphinx reads it: its Markdown cells read as the dialect (they hold ``:label:``
    and ``:numref:``, which d2lbook converts), its outputs cleaned of script unless the book trusts
    them; and its line map, so a warning names the notebook's own line (of its JSON text)."""
    from tabbook.render.myst import to_myst_rows
    from tabbook.render.sanitize import untrusted_notebook

    raw = (config.root / rel).read_text(encoding="utf-8")
    try:
        nb = json.loads(raw)
        firsts = [i + (2 if m.group(1) else 1) for i, line in enumerate(raw.split("\n"))
                  if (m := _SOURCE_KEY.match(line))]
        cells, maps = [], []
        for cell, first in zip(nb["cells"], firsts, strict=False):
            source = "".join(cell.get("source", ""))
            if cell.get("cell_type") == "markdown":
                text, rows = to_myst_rows(source)
                cells.append({**cell, "source": text})
                maps.append([first + r for r in rows])
            elif cell.get("cell_type") == "code":
                shown = {**cell, "source": source}
                cells.append(shown if config.site.trusted_outputs else untrusted_notebook({"cells": [shown]})["cells"][0])
                maps.append([first + r for r in range(source.count("\n") + 1)])
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise BookError(f"the notebook cannot be read: {exc}", rel) from None
    meta = {k: v for k, v in nb.get("metadata", {}).items() if k != "widgets" or config.site.trusted_outputs}
    return json.dumps({**nb, "cells": cells, "metadata": meta}, ensure_ascii=False), {"source": rel, "cells": maps}


def _write_rsts(tree: SourceTree, config: Config) -> None:
    """``[build] rsts``: the book's reStructuredText pages, at their place in the sources (Sphinx
    reads them beside the Markdown). A toc lists Markdown pages only, so each is an orphan, reached
    by the links to it, as the API pages of a d2lbook book are."""
    root = config.index if config.index.suffix == ".rst" else None  # the root (no orphan), rsts or not
    build = BuildDir(config.build_dir)
    for path in sorted(set(config.files(config.rsts)) | ({root} if root is not None else set())):
        text = path.read_text(encoding="utf-8")
        lines = list(range(1, text.count("\n") + 2))
        if path != root and not text.lstrip().startswith(":orphan:"):
            text, lines = ":orphan:\n\n" + text, [0, 0, *lines]
        rel = config.rel(path)
        tree.write(tree.src / rel, text)
        # its line map, so Sphinx's warnings about it name the book's file and line
        write_if_changed(build.line_map(rel.removesuffix(".rst")), json.dumps({"source": rel, "lines": lines}))


def front_page(config: Config, root: Section, sections: list[Section],
               notebooks: dict[tuple[str, str], Notebook]) -> str:
    """The generated front matter of the root page (:mod:`tabbook.render.front`), or "" when
    ``[site] front_page`` is off."""
    from tabbook.render.front import front_matter, front_page_facts
    if not config.site.front_page:
        return ""
    return front_matter(front_page_facts(config, root, {s.path: s for s in sections}, notebooks))
