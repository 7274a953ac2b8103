"""The book's generated library, made once per command and kept between commands.

Why here and not on the :class:`~tabbook.book.Book`: the book is read before the library
exists (the pipeline imports only downward), so the stage that generates the library also
remembers it: in the book's :attr:`~tabbook.book.Book.derived` for the rest of the command
(``check`` and the build ask for it, generation runs once), and in ``build/library-cache.json``
between commands, keyed by what the library depends on (not the prose: a prose edit, or a
no-op rebuild, generates nothing).
"""

from __future__ import annotations

import hashlib
import json

from tabbook.book import Book, _builder_code_hash
from tabbook.files import write_atomic
from tabbook.library import generate

LIBRARY_CACHE = "library-cache.json"
_DERIVED = "library"


def book_library(book: Book) -> dict[str, str]:
    """The generated ``d2l`` files (path → text), generated once per book.

    Names used only at call time that no section saves
    (:class:`~tabbook.library.generate.CallTimeName`) do not stop generation: they
    are kept in :attr:`~tabbook.book.Book.library_problems` for each command to judge.
    """
    known = book.derived.get(_DERIVED)
    if known is not None:
        return known
    files = _generate_or_reuse(book)
    book.derived[_DERIVED] = files
    return files


def _generate_or_reuse(book: Book) -> dict[str, str]:
    sections = book.library_sections  # the toc's pages; a partial build's: the whole book's
    tops = generate.hand_written_tops(book.config)
    key = library_key(book, tops)
    cache = book.config.build_dir / LIBRARY_CACHE
    pages = [book.page_hashes.get(s.path) for s in sections]
    try:
        cached = json.loads(cache.read_text(encoding="utf-8"))
        # Problems name Markdown lines, which prose edits move: kept only for the same pages.
        if cached.get("key") == key and (not cached["problems"] or cached.get("pages") == pages):
            book.library_problems.extend(generate.CallTimeName(m, p, n) for m, p, n in cached["problems"])
            return dict(cached["files"])
    except (OSError, ValueError, KeyError, TypeError):
        pass  # no cache, or an unreadable one: generate
    # Looked up on the module at call time: a test counts the generations by replacing it.
    files = generate.generate_library(book.config, sections, tops, book.library_problems)
    record = {"key": key, "files": files, "pages": pages,
              "problems": [[e.message, e.path, e.line] for e in book.library_problems]}
    try:
        write_atomic(cache, json.dumps(record))
    except OSError:
        pass  # a cache that cannot be written only costs time
    return files


def library_key(book: Book, tops: dict[str, str]) -> str:
    """What the generated library depends on: each library page's title and code cells (their
    text, tabs and marks; not the prose, which saves nothing), in their order, the
    configuration, the hand-written tops and the builder's code. Equal keys: the same files,
    so a no-op rebuild, and a prose edit, skip the generation (a second on this book's
    chapter; more on a book of hundreds of sections)."""
    config = book.config
    code = [(page.path, page.title,
             [(c.source, c.tabs, sorted(c.flags), c.raises, c.every_tab)
              for c in page.cells if c.kind == "code"]) for page in book.library_sections]
    parts = [_builder_code_hash(), [config.rel(f) for f in (config.root / "config.ini", config.overlay) if f],
             [(f.read_bytes() if f and f.is_file() else b"").hex()
              for f in (config.root / "config.ini", config.overlay)],
             tops, code, str(config.root)]
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()
