"""The table of contents: ``toc`` blocks walked from the root ``index.md``, in reading order.

Each ```` ```toc ```` block lists pages relative to the file that contains it,
without the ``.md`` extension (the d2lbook convention); an entry with ``://``
is an external link, not a page. The walk is depth first (a page, then the
pages its toc lists), which is the order the book is read, the order numbers
are given in, and the order in which later ``#@save`` definitions replace
earlier ones in the library. A missing page, or a page listed twice, is a problem at the toc
block that names it, which the build goes on past as Sphinx does (the entry is left out;
:attr:`~tabbook.problems.Problem.TOC_ENTRY`); an entry outside the book's folder is an error.

This module is the one place that resolves toc entries: ``check`` asks it too,
so the linter and the build can never disagree about what the toc lists.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Iterator

from tabbook.errors import BookError
from tabbook.problems import Problem
from tabbook.source.model import Section, TocBlock

#: A reStructuredText ``.. toctree::`` line (its options and entries follow, indented).
_RST_TOCTREE = re.compile(r"^(\s*)\.\.\s+toctree::\s*$")
_RST_EXPLICIT = re.compile(r"^.*<([^<>]+)>\s*$")  # "Title <target>"


def is_external(entry: str) -> bool:
    """An external link in a toc block (``https://…``): listed in the navigation, not a page."""
    return "://" in entry


def entry_path(containing: str, entry: str) -> str:
    """``chapter_gpus/index.md`` + ``devices`` → ``chapter_gpus/devices.md`` (book-root relative)."""
    rel = posixpath.normpath(posixpath.join(posixpath.dirname(containing), entry.strip()))
    return rel if rel.endswith(".md") else rel + ".md"


def leaves_book(rel: str) -> bool:
    """Whether a root-relative path from :func:`entry_path` points outside the book's folder
    (``../outside/page``, ``/etc/page``): its store entry and its page in ``build/src`` would
    be written outside the store and the sources."""
    return rel.startswith("/") or rel == ".." or rel.startswith("../")


#: What a toc entry outside the book is told.
OUTSIDE = "leaves the book's folder (a toc lists pages inside the book)"


def page_entries(section: Section) -> Iterator[tuple[TocBlock, str, str]]:
    """Every page a section's toc blocks list: (block, entry as written, root-relative path)."""
    for block in section.toc:
        for entry in block.entries:
            if not is_external(entry):
                yield block, entry, entry_path(section.path, entry)


def walk_toc(root: str, page: Callable[[str], Section | None],
             exists: Callable[[str], bool | str]) -> tuple[list[str], list[BookError]]:
    """Pages reachable from ``root`` in reading order, and every toc problem found on the way.

    ``page(rel)`` returns the read page, or ``None`` when it could not be read (its own
    error is reported by whoever read it: the walk does not repeat it, nor descend).
    ``exists(rel)``: True, or False / a reason ("is a directory") when the entry is no page.
    Problems are reported at the entry's own line.
    """
    order: list[str] = []
    errors: list[BookError] = []
    seen: dict[str, tuple[str, int]] = {root: ("config.ini", 0)}

    def visit(rel: str) -> None:
        order.append(rel)
        section = page(rel)
        if section is None:
            return
        for block, entry, child in page_entries(section):
            at = block.line_of(entry)
            if child in seen:
                first, line = seen[child]
                errors.append(BookError(f"{child} is listed twice in the table of contents "
                                        f"(first at {first}:{line})", section.path, at, kind=Problem.TOC_ENTRY))
                continue
            found = OUTSIDE if leaves_book(child) else exists(child)
            if found is not True:
                why = found if isinstance(found, str) else "does not exist"
                errors.append(BookError(f"toc entry {entry!r}: {child} {why}", section.path, at,
                                        kind=None if found is OUTSIDE else Problem.TOC_ENTRY))
                continue
            seen[child] = (section.path, at)
            visit(child)

    visit(root)
    return order, errors



def rst_toc_section(text: str, path: str) -> Section:
    """The toc of a reStructuredText page (``.. toctree::`` blocks), as a :class:`Section` with
    no cells: what the walk needs to reach the Markdown pages an ``index.rst`` root lists
    (deepnumpy-doc's). Its title is its first line of text before an underline."""
    lines = text.replace("\r\n", "\n").split("\n")
    blocks, title = [], ""
    for i, line in enumerate(lines[:-1]):
        if not title and line.strip() and re.match(r"^([=\-~^\"'`#*+:.]){3,}\s*$", lines[i + 1]):
            title = line.strip()
    i = 0
    while i < len(lines):
        m = _RST_TOCTREE.match(lines[i])
        i += 1
        if m is None:
            continue
        start, indent, numbered = i, len(m.group(1)), False
        entries, entry_lines, maxdepth = [], [], None
        while i < len(lines) and (not lines[i].strip() or len(lines[i]) - len(lines[i].lstrip()) > indent):
            s = lines[i].strip()
            if s.startswith(":maxdepth:") and s.split(":", 2)[2].strip().isdigit():
                maxdepth = int(s.split(":", 2)[2])
            numbered = numbered or s.startswith(":numbered:")
            if s and not s.startswith(":") and s != "self":
                explicit = _RST_EXPLICIT.match(s)
                entries.append(explicit.group(1).strip() if explicit else s)
                entry_lines.append(i + 1)
            i += 1
        blocks.append(TocBlock(start, tuple(entries), maxdepth, numbered, tuple(entry_lines)))
    return Section(path, title, (), tuple(blocks))
