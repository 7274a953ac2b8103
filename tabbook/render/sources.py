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
from pathlib import Path
from typing import Any

from tabbook.config import Config
from tabbook.errors import BookError
from tabbook.files import write_atomic, write_if_changed
from tabbook.render.front import hide_root_toctree
from tabbook.render.names import APPENDIX_CAPTION
from tabbook.source.read import Section

#: d2lbook's role that places the bibliography on a page of the book's own.
BIBLIOGRAPHY_ROLE = ":bibliography:`"
#: autodoc directives: the book documents its package on a page of its own.
AUTODOC = re.compile(r"^\s*\.\. auto(class|function|module|data|exception)::", re.M)


def source_dir(config: Config) -> Path:
    return config.build_dir / "src"


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
    import hashlib

    from tabbook.book import _builder_code_hash

    settings = [f.read_bytes().hex() if f and f.is_file() else "" for f in (config.root / "config.ini", config.overlay)]
    key = hashlib.sha256(json.dumps([_builder_code_hash(), settings, str(config.root), library],
                                    sort_keys=True).encode()).hexdigest()
    cache = config.build_dir / "apiref-cache.json"
    try:
        cached = json.loads(cache.read_text(encoding="utf-8"))
        if cached.get("key") == key:
            return str(cached["text"])
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        pass
    text = make(config, library)
    try:
        write_atomic(cache, json.dumps({"key": key, "text": text}))
    except OSError:
        pass  # only slower next time
    return text


#: Per generated page, what it was made from at the last build (see :func:`write_sources`).
SOURCES_MEMO = "sources-memo.json"


def _page_key(config: Config, section: Section, labels: dict[str, str],
              origins: dict[tuple[str, str], str], page_hashes: dict[str, str], orphan: bool = False) -> str | None:
    """What a generated page is made from, as one hash; None when that cannot be said cheaply
    (a notebook made in this build, a page whose text was not hashed)."""
    import hashlib

    from tabbook.book import _builder_code_hash

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
    return hashlib.sha256(json.dumps([_builder_code_hash(), page, section.path, list(config.tabs), labels,
                                      units, orphan]).encode()).hexdigest()


def write_sources(
    config: Config, sections: list[Section], notebooks: dict[tuple[str, str], dict[str, Any]],
    extra: dict[str, str] | None = None, origins: dict[tuple[str, str], str] | None = None,
    page_hashes: dict[str, str] | None = None, orphans: Collection[str] = (),
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
    from tabbook.render.merge import merge_section

    src = source_dir(config)
    src.mkdir(parents=True, exist_ok=True)
    changed = 0
    labels = {fw: config.framework(fw).label for fw in config.tabs}
    wanted: set[Path] = set()
    memo_path = config.build_dir / SOURCES_MEMO
    try:
        memo_before = json.loads(memo_path.read_text(encoding="utf-8")) if origins is not None else {}
    except (OSError, ValueError):
        memo_before = {}
    memo: dict[str, str] = {}
    for section in sections:
        stem = section.path[:-3]
        orphan = section.path in orphans
        key = _page_key(config, section, labels, origins, page_hashes or {}, orphan) \
            if origins is not None else None
        out = src / f"{stem}.ipynb" if section.code_cells else src / f"{stem}.md"
        if key is not None and memo_before.get(stem) == key and out.is_file() \
                and line_map_path(config, stem).is_file():
            memo[stem] = key
            wanted.add(out)
            continue
        if key is not None:
            memo[stem] = key
        executed = {fw: notebooks[(section.path, fw)] for fw in config.tabs if (section.path, fw) in notebooks}
        maps: list[list[int]] = []
        if section.code_cells:
            doc = merge_section(section, executed, config.tabs, labels, line_maps=maps)
            if orphan:
                doc["metadata"]["orphan"] = True  # myst-nb passes it on as front matter
            # Compact JSON: Python's C encoder only serves dumps without indent, and every build
            # serializes every page to compare it with the file (a tenth of a second per hundred
            # pages with indent). Sphinx and the line maps count cells, never file lines.
            changed += write_if_changed(src / f"{stem}.ipynb",
                                        json.dumps(doc, ensure_ascii=False, sort_keys=True))
            wanted.add(src / f"{stem}.ipynb")
            line_map = {"source": section.path, "cells": maps}
        else:
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
            if orphan:
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
            changed += write_if_changed(src / f"{stem}.md", text + "\n")
            wanted.add(src / f"{stem}.md")
            line_map = {"source": section.path, "lines": lines}
        # Beside the sources, not among them: Sphinx reads build/src, the warnings step this.
        write_if_changed(line_map_path(config, stem), json.dumps(line_map))
    for rel, text in (extra or {}).items():
        changed += write_if_changed(src / rel, text)
        wanted.add(src / rel)
    changed += _write_rsts(config, src, wanted)
    for name in config.resources:  # d2lbook's [build] resources: what pages refer to, seen in place
        target, link = config.root / name, src / name
        if target.exists() and not link.exists() and not link.is_symlink():
            link.parent.mkdir(parents=True, exist_ok=True)
            link.symlink_to(target.resolve(), target_is_directory=target.is_dir())
            changed += 1
    for name in config.root_files:  # [build] root_files: at the root of the sources, by name
        target, link = config.root / name, src / Path(name).name
        if not target.is_file():
            where = config.rel(config.overlay) if config.overlay else "config.ini"
            raise BookError(f"[build] root_files names {name}, which does not exist", where)
        if not link.is_symlink() or link.resolve() != target.resolve():
            link.unlink(missing_ok=True)
            link.symlink_to(target.resolve())
            changed += 1
    if config.bibfile is not None:
        changed += write_if_changed(src / config.bibfile.name, config.bibfile.read_text(encoding="utf-8"))
    for path in list(src.rglob("*")):
        if path.suffix in (".md", ".ipynb", ".rst") and path.is_file() and path not in wanted \
                and not any(p.is_symlink() for p in path.parents if src in p.parents):
            path.unlink()
            changed += 1
    if origins is not None and memo != memo_before:
        write_atomic(memo_path, json.dumps(memo, sort_keys=True))
    return changed


def _write_rsts(config: Config, src: Path, wanted: set[Path]) -> int:
    """``[build] rsts``: the book's reStructuredText pages, at their place in the sources (Sphinx
    reads them beside the Markdown). A toc lists Markdown pages only, so each is an orphan, reached
    by the links to it, as the API pages of a d2lbook book are. Returns the files written."""
    changed = 0
    for path in config.files(config.rsts):
        text = path.read_text(encoding="utf-8")
        if not text.lstrip().startswith(":orphan:"):
            text = ":orphan:\n\n" + text
        out = src / config.rel(path)
        changed += write_if_changed(out, text)
        wanted.add(out)
    return changed


def front_page(config: Config, root: Section, sections: list[Section],
               notebooks: dict[tuple[str, str], dict[str, Any]]) -> str:
    """The generated front matter of the root page (:mod:`tabbook.render.front`), or "" when
    ``[site] front_page`` is off."""
    from tabbook.render.front import front_matter, front_page_facts
    from tabbook.render.site import load_site_options

    if not load_site_options(config).front_page:
        return ""
    return front_matter(front_page_facts(config, root, {s.path: s for s in sections}, notebooks))


def line_map_path(config: Config, stem: str) -> Path:
    """Where the line map of the generated page ``<stem>.ipynb``/``<stem>.md`` is kept."""
    return config.build_dir / "linemaps" / f"{stem}.json"


