"""The book's generated library, made once per command and kept between commands.

Why here and not on the :class:`~tabbook.book.Book`: the book is read before the library
exists (the pipeline imports only downward), so the stage that generates the library also
remembers it: in the book's :attr:`~tabbook.book.Book.derived` for the rest of the command
(``check`` and the build ask for it, generation runs once), and in ``build/``'s ``library``
memo between commands, keyed by what the library depends on (not the prose: a prose edit, or a
no-op rebuild, generates nothing).
"""

from __future__ import annotations

from typing import TypedDict

from tabbook.book import Book
from tabbook.files import BuildDir, Memo
from tabbook.library import generate
from tabbook.source.dialect import SAVE_MARK

_DERIVED = "library"


class LibraryRecord(TypedDict):
    """What ``build/library-cache.json`` keeps: the generated files (path → text), the hashes of
    the pages they were made from, and the call-time names found (message, page, line)."""

    files: dict[str, str]
    pages: list[str | None]
    problems: list[tuple[str, str | None, int | None]]


def book_library(book: Book) -> dict[str, str]:
    """The generated ``d2l`` files (path → text), generated once per book.

    Names used only at call time that no section saves
    (:class:`~tabbook.library.generate.CallTimeName`) do not stop generation: they
    are kept in :attr:`~tabbook.book.Book.library_problems` for each command to judge.
    """
    known = book.derived.get(_DERIVED)
    if isinstance(known, dict):
        return known
    files = _generate_or_reuse(book) if saves_anything(book) else {}
    book.derived[_DERIVED] = files
    return files


def saves_anything(book: Book) -> bool:
    """Whether the book has a library at all: some ``#@save`` in its code, or d2lbook's
    ``[library-<tab>] lib_file``. A book that saves nothing gets no ``d2l/`` package written
    into it, and no API page (as with d2lbook)."""
    if any(fw.library.lib_file for fw in book.config.frameworks.values()):
        return True
    return any(SAVE_MARK.search(line) for section in book.sections for cell in section.cells
               if cell.kind == "code" for line in cell.source.splitlines())


def _generate_or_reuse(book: Book) -> dict[str, str]:
    sections = book.library_sections  # the toc's pages; a partial build's: the whole book's
    tops = generate.hand_written_tops(book.config)
    memo = library_memo(book, tops)
    pages = [book.page_hashes.get(s.path) for s in sections]
    cached = memo.load()
    try:
        # Problems name Markdown lines, which prose edits move: kept only for the same pages.
        if cached is not None and (not cached["problems"] or cached.get("pages") == pages):
            book.library_problems.extend(generate.CallTimeName(m, p, n) for m, p, n in cached["problems"])
            return dict(cached["files"])
    except (KeyError, TypeError, ValueError, AttributeError):
        pass  # a record of another shape: generate
    # Looked up on the module at call time: a test counts the generations by replacing it.
    files = generate.generate_library(book.config, sections, tops, book.library_problems)
    memo.save({"files": files, "pages": pages,
               "problems": [(e.message, e.path, e.line) for e in book.library_problems]})
    return files


def library_memo(book: Book, tops: dict[str, str]) -> Memo[LibraryRecord]:
    """What the generated library depends on: each library page's title and code cells (their
    text, tabs and marks; not the prose, which saves nothing), in their order, the
    configuration, the hand-written tops and the builder (the memo's fingerprint). Equal keys:
    the same files, so a no-op rebuild, and a prose edit, skip the generation (a second on this
    book's chapter; more on a book of hundreds of sections)."""
    config = book.config
    code: list[object] = [(page.path, page.title,
                        [(c.source, c.tabs, sorted(c.flags), c.raises, c.every_tab)
                         for c in page.cells if c.kind == "code"]) for page in book.library_sections]
    settings = [(config.rel(f), (f.read_bytes() if f.is_file() else b"").hex())
                for f in (config.root / "config.ini", config.overlay) if f]
    return BuildDir(config.build_dir).memo("library", settings=settings, tops=tops, code=code, root=config.root)
