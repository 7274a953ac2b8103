"""``make check``: lint the book's sources without starting a kernel.

It sits after the library in the pipeline (errors → config → files → source → book → library →
check → execute …) because it ends by asking the library stage, which knows the ``#@save``
rules best. Works on a :class:`~tabbook.book.Book` (every page read once, with the problems
reading, the toc walk and the label index found), then adds the book-wide
checks: references, images, toc membership, ``#@save`` placement and syntax,
and what the library stage reports. All problems are returned together so
one run lists everything to fix.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tabbook.book import Book, page_exists, read_book
from tabbook.config import Config, config_error
from tabbook.errors import BookError, BookErrors, stops
from tabbook.library.cache import book_library
from tabbook.problems import Problem
from tabbook.settings import leads_outside
from tabbook.source.constructs import Kind
from tabbook.source.dialect import BIBLIOGRAPHY, IMAGE, SAVE_MARK, unclosed_slide_marks
from tabbook.source.model import Cell, Section
from tabbook.source.pycode import mask_magics
from tabbook.source.split import resolve_tabs
from tabbook.source.toc import OUTSIDE, leaves_book, page_entries


def _errors(exc: BookError) -> list[BookError]:
    return list(exc.errors) if isinstance(exc, BookErrors) else [exc]


def _toc_members(book: Book) -> set[str]:
    members = {book.config.rel(book.config.index)}
    for section in [*book.pages.values(), *book.rst_tocs.values()]:
        members.update(path for _, _, path in page_entries(section))
    return members

def _check_save(section: Section, problems: list[BookError], tabs: tuple[str, ...]) -> None:
    for cell in section.code_cells:
        if "save" not in cell.flags:
            continue
        for fw in cell.tabs:
            try:
                source = resolve_tabs(cell.source, fw, (cell.path, cell.line), cell.source_lines)
                ast.parse(mask_magics(source)[0])
            except BookError as exc:
                problems.append(exc)
                break
            except SyntaxError as exc:
                n = (exc.lineno or 1) - 1
                line = cell.source_lines[n] if n < len(cell.source_lines) else cell.line + 1 + n
                problems.append(BookError(f"[{fw}] syntax error in a #@save cell: {exc.msg}", cell.path, line))
                break
        for i, raw in enumerate(cell.source.split("\n")):
            if SAVE_MARK.search(raw) and raw[:1] in (" ", "\t") and raw.strip() != "#@save":
                line = cell.source_lines[i] if i < len(cell.source_lines) else cell.line + 1 + i
                problems.append(BookError("#@save marks a statement that is not top-level", cell.path, line))


def check_book(book: Book | Config, *, partial: bool = False, executes: bool = True) -> list[BookError]:
    """Every problem found in the book's sources (empty list: clean), each with its kind where
    the build goes on past it (:mod:`tabbook.problems`; :func:`tabbook.errors.judge` says which
    are warnings): d2lbook's contract, under which a reference to a label no page defines, a
    page no toc lists or a missing image is reported and built past.

    ``partial``: the book is part of a larger one (a few chapters built on their own; its
    library is the whole book's, :func:`tabbook.book.read_book`).
    ``executes=False`` (a build that runs nothing): saved code that uses, inside a
    function, a name no section saves is a warning; the call is never made.
    """
    if isinstance(book, Config):
        book = read_book(book, extra_files=not partial, whole_library=partial)
    config = book.config
    problems: list[BookError] = [*book.problems, *config.problems, *book.outside_problems]
    if config.deploy.google_analytics_tracking_id:
        # d2lbook's tracker script loads from Google: tabbook's pages load nothing from outside.
        problems.append(config_error(config, "deploy", "google_analytics_tracking_id", "is not "
                                     "emitted: tabbook's pages load nothing from other sites (no "
                                     "tracker); remove the key to silence this warning",
                                     kind=Problem.CONFIG_UNUSED))
    for module in config.missing_extensions():
        problems.append(config_error(config, "build", "sphinx_extensions", f"names {module}, which cannot be "
                                     "imported: left out", kind=Problem.CONFIG_EXTENSION))
    members = _toc_members(book)
    for section in book.pages.values():
        problems.extend(section.warnings)
        _check_references(book, section, problems)
        if section.path not in members and section.path not in book.unread_entries:
            # d2lbook builds such a page as an orphan (reachable by links only): so do we.
            problems.append(BookError("section is not listed in any ```toc block: built as an orphan page "
                                      "(no toc lists it)", section.path, 1, kind=Problem.ORPHAN_PAGE))
        if section.path not in book.toc:  # the toc walk checked the entries of the pages it reached
            for block, entry, target in page_entries(section):
                found = OUTSIDE if leaves_book(target) else page_exists(config.root / target)
                if found is not True:
                    problems.append(BookError(f"toc entry {entry!r}: {target} {found}", section.path,
                                              block.line_of(entry),
                                              kind=None if found is OUTSIDE else Problem.TOC_ENTRY))
        _check_prose(config, section, problems)
        _check_save(section, problems, config.tabs)
    if not any(stops(p) for p in problems):
        # The library stage knows #@save rules best (add_to_class targets, syntax): ask it.
        # The book caches the result, so a build that checks first generates the library once.
        try:
            book_library(book)  # generating is the check
            problems.extend(book.library_problems if executes else
                            [BookError(p.message, p.path, p.line, kind=Problem.LIBRARY_UNSAVED_NAME)
                             for p in book.library_problems])
        except BookError as exc:
            problems.extend(e for e in _errors(exc)
                            if e.location_message() not in {p.location_message() for p in problems})
    problems.sort(key=lambda e: (e.path or "", e.line or 0))
    return problems


def _check_references(book: Book, section: Section, problems: list[BookError]) -> None:
    """A reference to a label no page defines: shown as its text, as d2lbook shows it."""
    for role, target, line in section.refs:
        name = target.rsplit("<", 1)[-1].rstrip(">").strip()  # "text <label>" or "label"
        if name not in book.labels and name not in book.unread_labels:
            problems.append(BookError(f":{role}: to undefined label {name!r}", section.path, line,
                                      kind=Problem.UNDEFINED_REFERENCE))


def _check_prose(config: Config, section: Section, problems: list[BookError]) -> None:
    """Slide marks and images of a page's prose."""
    for cell in section.cells:
        if cell.kind != "markdown":
            continue
        for row, opener in unclosed_slide_marks(cell.source):
            closer = opener[1:] + ("]" if opener[0] == "[" else ")")
            problems.append(BookError(f"slide mark {opener} is never closed by {closer}: the slides "
                                      "leave its text out", section.path, cell.line + row, kind=Problem.SLIDE_MARK))
        for m in IMAGE.finditer(cell.source):  # the alt text may span lines
            src = m.group(1)
            if "://" in src:
                continue
            image = (config.root / Path(section.path).parent / src).resolve()
            i = cell.source.count("\n", 0, m.start())
            if not image.is_relative_to(config.root.resolve()):  # Sphinx would publish it
                problems.append(BookError(f"image file {src} is outside the book's folder", section.path,
                                          cell.line + i))
            elif not image.is_file():
                problems.append(BookError(f"image file {src} does not exist", section.path, cell.line + i,
                                          kind=Problem.MISSING_IMAGE))
        _check_bibliography(config, section, cell, problems)


def _check_bibliography(config: Config, section: Section, cell: Cell, problems: list[BookError]) -> None:
    """A ``:bibliography:`` line's file outside the book is an error at the line: the bib files
    are read into the site and the PDFs (:func:`tabbook.book.named_bibfiles` leaves such a file out).
    A name that leads nowhere reads nothing and stays as d2lbook has it (its line names a file
    d2lbook never opens: a root page's ``../d2l.bib`` is common), so only a file there counts."""
    rows = cell.prose.split("\n") if cell.blocks else []
    for block in (b for b in cell.blocks if b.kind is Kind.BIBLIOGRAPHY):
        m = BIBLIOGRAPHY.match(rows[block.start]) if block.start < len(rows) else None
        named = m.group(1).strip() if m else ""
        real = leads_outside(config.root, config.root / Path(section.path).parent / named) if named else None
        if real is not None and real.exists():
            line = cell.source_lines[block.start] if block.start < len(cell.source_lines) else cell.line + block.start
            problems.append(BookError(f"bibliography file {named} is outside the book's folder (it leads to {real}): "
                                      "the builder reads no file outside the book", section.path, line))
