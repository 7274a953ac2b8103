"""The table of contents: ``toc`` blocks walked from the root ``index.md``, in reading order.

Each ```` ```toc ```` block lists pages relative to the file that contains it,
without the ``.md`` extension (the d2lbook convention). The walk is depth first
(a page, then the pages its toc lists), which is the order the book is read,
the order numbers are given in, and the order in which later ``#@save``
definitions replace earlier ones in the library. A missing page, or a page
listed twice, is an error at the toc block that names it.
"""

from __future__ import annotations

import posixpath
from pathlib import Path

from tabbook.config import Config
from tabbook.errors import BookError
from tabbook.source.read import Section, read_section


def entry_path(containing: str, entry: str) -> str:
    """``chapter_gpus/index.md`` + ``devices`` → ``chapter_gpus/devices.md`` (book-root relative)."""
    rel = posixpath.normpath(posixpath.join(posixpath.dirname(containing), entry.strip()))
    return rel if rel.endswith(".md") else rel + ".md"


def read_page(config: Config, rel: str) -> Section:
    """Read one page of the book by its root-relative path."""
    text = (config.root / rel).read_text(encoding="utf-8")
    return read_section(text, rel, config.tabs, config.default_tab)


def toc_sections(config: Config) -> list[Section]:
    """Every page of the book as a :class:`Section`, the root index first, in reading order."""
    index = Path(config.index)
    if not index.is_file():
        raise BookError(f"the table of contents root {config.rel(index)} does not exist", "config.ini")
    root = index.resolve().relative_to(config.root.resolve()).as_posix()
    out: list[Section] = []
    seen: dict[str, tuple[str, int]] = {root: ("config.ini", 0)}

    def visit(rel: str) -> None:
        section = read_page(config, rel)
        out.append(section)
        for block in section.toc:
            for entry in block.entries:
                if "://" in entry:
                    continue  # an external link in the toc: not a page of ours
                child = entry_path(rel, entry)
                if child in seen:
                    first, line = seen[child]
                    raise BookError(f"{child} is listed twice in the table of contents "
                                    f"(first at {first}:{line})", rel, block.line)
                if not (config.root / child).is_file():
                    raise BookError(f"toc entry {entry!r}: {child} does not exist", rel, block.line)
                seen[child] = (rel, block.line)
                visit(child)

    visit(root)
    return out
