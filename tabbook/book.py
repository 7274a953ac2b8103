"""The book, read once: configuration, every page, the label index, the toc order, the library.

Every stage used to read what it needed on its own (``check`` every file, the
build the toc's pages again, the library generated once for ``check`` and once
for the build). A :class:`Book` is made once per command by :func:`read_book`
and handed to ``check``, the library, execution and rendering alike, so no
stage reads a page or generates the library twice, and all of them agree on
what the book is.

Reading never stops at the first problem: each page that fails to read
records its errors in :attr:`Book.problems` and is left out; the toc walk and
the label index record theirs too. ``check`` reports them all; a build stops
before executing anything if there are any.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from tabbook.config import Config
from tabbook.errors import BookError, BookErrors, leads_out, raise_all
from tabbook.files import BuildDir
from tabbook.problems import Problem
from tabbook.settings import leads_outside, links_leading_out
from tabbook.source.constructs import Kind
from tabbook.source.dialect import BIBLIOGRAPHY
from tabbook.source.model import Section
from tabbook.source.pycode import saved_names
from tabbook.source.read import read_section
from tabbook.source.toc import entry_path, is_external, page_entries, rst_toc_section, walk_toc

#: The repository's usual documents at the book root. With ``[build] notebooks`` left empty they
#: are pages, as under d2lbook's default ``**/*.md`` (a book that does not want its README.md
#: built names it in ``exclusions``); the live preview ignores those the book excludes.
REPO_DOCS = frozenset({"README.MD", "CONTRIBUTING.MD", "BENCHMARKS.MD", "CHANGELOG.MD", "LICENSE.MD",
                       "AGENTS.MD", "ARCHITECTURE.MD"})
#: Top-level folders that never hold book pages (build output, stores, tooling).
IGNORED_DIRS = frozenset({"build", "_freeze", ".venv", "tests", "d2l", "envs", "node_modules", "bench"})


def book_markdown_files(config: Config, outside: list[Path] | None = None) -> list[Path]:
    """Every Markdown file that belongs to the book (what ``check`` lints and ``serve`` watches).

    A walk that never enters a folder that cannot hold a page (the ignored top-level folders,
    hidden ones, and any folder outside the ``notebooks`` patterns' reach): walking everything
    and filtering afterwards read the whole ``.venv`` and took most of a no-op build.
    Symbolic links are followed while they lead inside the book; a folder or page whose link
    leads out is not entered nor listed, but put in ``outside`` (reading it would publish
    files that are not the book's, and writing beside it would write there).
    """
    out = []
    root = config.root
    seen: set[str] = set()
    for dirpath, dirnames, filenames in os.walk(root, followlinks=True):
        here = Path(dirpath)
        real = os.path.realpath(dirpath)
        if real in seen:  # a symlink loop
            dirnames[:] = []
            continue
        seen.add(real)
        parts = here.relative_to(root).parts
        dirnames[:] = sorted(d for d in dirnames if not (
            not parts and (d in IGNORED_DIRS or d.startswith("."))) and config.may_hold_pages((*parts, d)))
        for d in [d for d in dirnames if leads_outside(root, here / d)]:
            dirnames.remove(d)
            if outside is not None:
                outside.append(here / d)
        for name in filenames:
            if not name.endswith(".md"):
                continue
            path = here / name
            if config.excluded("/".join((*parts, name))):
                continue
            if leads_outside(root, path):
                if outside is not None:
                    outside.append(path)
            elif path.is_file():
                out.append(path)
    return sorted(out)


def outside_links(config: Config, pages: list[Path]) -> list[BookError]:
    """Links that lead out of the book where the builder reads to publish: the pages' folders
    and pages (``pages``, from :func:`book_markdown_files`), the resources (``img/``,
    ``static/``: Sphinx copies ``static/`` whole) and the files keys name."""
    found = [(p, leads_outside(config.root, p)) for p in pages]
    found += links_leading_out(config.root, [config.root / r for r in config.resources])
    found += [(p, real) for p in config.named_files() if (real := leads_outside(config.root, p)) is not None]
    return [leads_out(p.relative_to(config.root).as_posix(), real) for p, real in sorted(set(found))]

def named_bibfiles(config: Config) -> list[Path]:
    """The bib files citations are resolved against: ``[pdf] bibfile``, then each file a page
    names on its ``:bibliography:`FILE``` line (relative to the page), those that exist, each
    once. d2lbook uses the key's alone, and a book that names its bib file only on the line
    (d2l-ar) loses every citation there."""
    found = [config.bibfile] if config.bibfile is not None else []
    for path in book_markdown_files(config):
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        if ":bibliography:" not in text:
            continue
        for line in text.splitlines():
            m = BIBLIOGRAPHY.match(line)
            named = (path.parent / m.group(1).strip()).resolve() if m and m.group(1).strip() else None
            if named is not None and named.is_file() and named.is_relative_to(config.root.resolve()) \
                    and named not in found:
                found.append(named)
    return found


def notebook_page(config: Config, rel: str) -> str | None:
    """The notebook a toc entry names where the book has ``x.ipynb`` and no ``x.md``; else None."""
    if not rel.endswith(".md") or (config.root / rel).exists():
        return None
    notebook = rel[:-3] + ".ipynb"
    return notebook if (config.root / notebook).is_file() else None


def rst_page(config: Config, rel: str) -> str | None:
    """The reStructuredText page a toc path names (``x.rst``, or ``x.md`` where only ``x.rst``
    exists: a toctree names pages without their suffix); None when it names none."""
    rst = rel if rel.endswith(".rst") else rel[:-3] + ".rst" if rel.endswith(".md") else None
    if rst is None or (rel.endswith(".md") and (config.root / rel).exists()):
        return None
    return rst if (config.root / rst).is_file() else None


def _errors(exc: BookError) -> list[BookError]:
    return list(exc.errors) if isinstance(exc, BookErrors) else [exc]


def page_exists(path: Path) -> bool | str:
    """True for a page file; otherwise why the path is none (what a toc entry error says)."""
    if path.is_file():
        return True
    if path.is_dir():
        return "is a directory, not a Markdown file"
    if path.suffix == ".md" and path.with_suffix("").is_dir():
        return f"does not exist ({path.stem} is a directory: list its page, e.g. {path.stem}/index)"
    return "does not exist"


def decode_page(data: bytes, rel: str) -> tuple[str, list[BookError]]:
    """A page's bytes as text, and warnings about how they were written.

    Anything can be in a file: bytes that are not UTF-8 are an error at their line and
    column; a byte-order mark (some Windows editors write one), CRLF line ends and NUL bytes
    (which markdown-it would turn into U+FFFD without a word, code cells included) are read
    through, each with a warning; an empty (or blank) file is an error, since a page needs
    at least its title: read as a page that has only one, made from the file's name (d2lbook
    builds it as an empty page, and Sphinx warns it has no title), with a warning.
    """
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise BookError(f"not UTF-8 text: byte 0x{data[exc.start]:02x} at column {column} "
                        "(save the file as UTF-8)", rel, line, column) from None
    warnings: list[BookError] = []
    if text.startswith("\ufeff"):
        text = text[1:]
        warnings.append(BookError("the file starts with a byte-order mark (U+FEFF); it is ignored", rel, 1,
                                  kind=Problem.ENCODING))
    if "\r" in text:
        line = text.count("\n", 0, text.index("\r")) + 1
        warnings.append(BookError("CRLF (Windows) line ends, read as LF", rel, line, kind=Problem.ENCODING))
    if "\0" in text:
        at = text.index("\0")
        line, column = text.count("\n", 0, at) + 1, at - (text.rfind("\n", 0, at) + 1) + 1
        count = text.count("\0")
        text = text.replace("\0", "\ufffd")
        warnings.append(BookError(f"{'a NUL byte' if count == 1 else f'{count:,} NUL bytes'} (U+0000) at column "
                                  f"{column}{'' if count == 1 else ' and after'}: read as U+FFFD, as CommonMark "
                                  "says (in code too)", rel, line, column, kind=Problem.ENCODING))
    if not text.strip():
        title = empty_page_title(rel)
        warnings.append(BookError(f"the file is empty: built as an empty page titled {title!r} (give it a # title)",
                                  rel, 1, kind=Problem.EMPTY_PAGE))
        text = f"# {title}\n"
    return text, warnings


def empty_page_title(rel: str) -> str:
    """The title an empty page is built with: its file's name, ``_`` and ``-`` read as spaces
    (``chapter_a/first_steps.md`` → ``first steps``), or the name itself if that leaves nothing."""
    stem = Path(rel).stem
    return " ".join(stem.replace("_", " ").replace("-", " ").split()) or stem


def shadowed_name(name: str, page: str) -> str:
    """What a label another page owns is renamed to on ``page``: unique in the book, and a name
    Sphinx and MyST take as a target (``eq_x`` on ``ch/a_origin.md`` → ``eq_x--ch-a_origin``)."""
    return f"{name}--" + re.sub(r"[^\w-]", "-", page[:-3] if page.endswith(".md") else page)


def shadow_labels(section: Section) -> Section:
    """``section`` as it is rendered: the labels another page owns (:attr:`Section.shadowed`)
    renamed in its prose (the ``:label:``/``:eqlabel:`` lines, ``$$ :eqlabel:`` closings and the
    blocks' math labels), so Sphinx sees each label once, on its owner. Rows stay where they
    were: only the names change."""
    if not section.shadowed:
        return section
    names = set(section.shadowed)
    target = re.compile(r"(:(?:label|eqlabel):`)\s*([^`]+?)\s*(`)")

    def rename(text: str) -> str:
        return target.sub(lambda m: m.group(1) + (shadowed_name(m.group(2), section.path) if m.group(2) in names
                                                  else m.group(2)) + m.group(3), text)

    cells = []
    for cell in section.cells:
        if cell.kind != "markdown" or not any(n in cell.source for n in names):
            cells.append(cell)
            continue
        blocks = tuple(replace(b, attr=shadowed_name(b.attr, section.path)) if b.kind is Kind.MATH and b.attr in names
                       else b for b in cell.blocks)
        cells.append(replace(cell, source=rename(cell.source), prose=rename(cell.prose), blocks=blocks))
    return replace(section, cells=tuple(cells))


def read_page(config: Config, rel: str, hashes: dict[str, str] | None = None,
              parsed: dict[str, tuple[str, Section]] | None = None) -> Section:
    """Read one page of the book by its root-relative path (raises its problems as BookError).

    ``parsed``: sections read before, by page, with the hash of the bytes they were read from
    (:class:`PageCache`); a page whose bytes have that hash is not parsed again, and one that
    is parsed is put there.
    """
    path = config.root / rel
    if (real := leads_outside(config.root, path)) is not None:
        raise leads_out(rel, real)
    try:
        data = path.read_bytes()
    except IsADirectoryError:
        raise BookError("is a directory, not a Markdown file", rel) from None
    except OSError as exc:
        raise BookError(f"cannot be read: {exc.strerror or exc}", rel) from None
    text, warnings = decode_page(data, rel)
    digest = hashlib.sha256(data).hexdigest()
    if hashes is not None:
        hashes[rel] = digest
    known = parsed.get(rel) if parsed is not None else None
    if known is not None and known[0] == digest:
        section = known[1]
    else:
        section = read_section(text, rel, config.tabs, config.default_tab)
        if parsed is not None:
            parsed[rel] = (digest, section)
    return replace(section, warnings=(*warnings, *section.warnings)) if warnings else section


class PageCache:
    """Pages as parsed by the last command: ``build/``'s ``pages`` memo.

    Every command reads every page, and parsing is most of what a no-op rebuild of a large
    book costs (issue 14: a no-op of 200 sections must cost about what one of 10 does). A
    page's parse depends only on its bytes, the tabs and the builder (the memo's fingerprint),
    so sections are kept by the hash of their bytes, under a key of the other two. A cache that
    cannot be read or written only costs time. Pages that fail to read are never kept.
    """

    def __init__(self, config: Config) -> None:
        self.memo = BuildDir(config.build_dir).memo("pages", tabs=list(config.tabs), default_tab=config.default_tab)
        loaded = self.memo.load()
        self.sections: dict[str, tuple[str, Section]] = dict(loaded) if isinstance(loaded, dict) else {}

    def save(self, root: Path) -> None:
        """Write the cache if a page was parsed anew (pages whose file is gone are dropped)."""
        self.memo.save({rel: v for rel, v in self.sections.items() if (root / rel).is_file()})


@dataclass
class Book:
    """What every stage knows about the book. Made by :func:`read_book`; never re-read."""

    config: Config
    pages: dict[str, Section]  # every page read cleanly, by root-relative path
    toc: list[str]  # root-relative paths in reading order, the root index first
    labels: dict[str, tuple[str, int]]  # label -> (page, line) of its first definition
    problems: list[BookError] = field(default_factory=list)  # reading, toc and label problems
    # Names used only at call time that no section saves: filled when the library is generated
    # (tabbook.library.cache.book_library), for each command to judge.
    library_problems: list[BookError] = field(default_factory=list)
    page_hashes: dict[str, str] = field(default_factory=dict)  # page -> sha256 of its text
    # What pages that failed to read seem to define (their labels, their toc entries), read
    # from the raw text: references and toc membership that depend on such a page are not
    # reported again, since its own parse error is the one cause (issue 13: no cascades).
    unread_labels: set[str] = field(default_factory=set)
    unread_entries: set[str] = field(default_factory=set)
    # Pages read (``extra_files``) that the toc walk did not reach: d2lbook builds them, as
    # Sphinx orphans (no toctree lists them, no number), so does a full build.
    orphans: list[str] = field(default_factory=list)
    # A partial build's library is the whole book's (issue 30, item 4): the pages outside its
    # toc, read (never executed, rendered or checked) only for their #@save code; every page of
    # the library in the order it is made (:func:`library_order`); what kept one from being read.
    outside: dict[str, Section] = field(default_factory=dict)
    library_order: list[str] = field(default_factory=list)
    outside_problems: list[BookError] = field(default_factory=list)
    # The reStructuredText pages the toc walk went through (an ``index.rst`` root and the ``.rst``
    # pages its toctrees list), each as the toc it holds: not pages of the book (Sphinx renders
    # them from [build] rsts), only what leads to its Markdown pages.
    rst_tocs: dict[str, Section] = field(default_factory=dict)
    # Toc entries whose page is a notebook (``x.ipynb``, no ``x.md``: d2l-java's, made by its own
    # build script): rendered as they are, outputs cleaned as every output is, never executed.
    notebook_pages: list[str] = field(default_factory=list)
    # What later stages derive from this book, made once per command and kept here by the
    # stage that makes it (the generated library: tabbook.library.cache.book_library).
    derived: dict[str, object] = field(default_factory=dict, repr=False)

    @property
    def sections(self) -> list[Section]:
        """The pages of the table of contents in reading order; raises if the book did not read cleanly."""
        self.raise_problems()
        return [self.pages[rel] for rel in self.toc]

    @property
    def library_sections(self) -> list[Section]:
        """The pages whose ``#@save`` code makes the library: the toc's, in order; in a partial
        build the whole book's (:func:`library_order`)."""
        if not self.library_order:
            return self.sections
        self.raise_problems()
        return [self.pages.get(rel) or self.outside[rel] for rel in self.library_order]

    @property
    def rendered(self) -> list[Section]:
        """The pages a build renders: the toc's in reading order, then the orphans."""
        return [*self.sections, *(self.pages[rel] for rel in self.orphans)]

    @property
    def rendered_sources(self) -> list[Section]:
        """:attr:`rendered` as the sources step writes them: labels another page owns renamed
        (:func:`shadow_labels`)."""
        return [shadow_labels(section) for section in self.rendered]

    def raise_problems(self) -> None:
        """Raise what stops a build (a page that could not be read); problems of a kind
        (:mod:`tabbook.problems`: a duplicate label, a toc entry for no page) are read past."""
        raise_all([p for p in self.problems if p.kind is None])


_SALVAGE_LABEL = re.compile(r":(?:label|eqlabel):`([^`]+)`")
_SALVAGE_TOC = re.compile(r"^\s*(`{3,}|~{3,})\s*toc\s*$(.*?)^\s*\1\s*$", re.M | re.S)


def salvage(config: Config, rel: str) -> tuple[set[str], set[str]]:
    """Labels and toc entries a page that did not read seems to have (a lenient regex scan)."""
    if leads_outside(config.root, config.root / rel):
        return set(), set()
    try:
        text = (config.root / rel).read_bytes().decode("utf-8", errors="replace")
    except OSError:
        return set(), set()
    labels = set(_SALVAGE_LABEL.findall(text))
    entries = set()
    for m in _SALVAGE_TOC.finditer(text):
        for raw in m.group(2).splitlines():
            entry = raw.strip()
            if entry and not entry.startswith(":") and not is_external(entry):
                entries.add(entry_path(rel, entry))
    return labels, entries


def _saved_names(sections: list[Section]) -> tuple[set[str], set[str]]:
    """(names the pages' ``#@save`` code defines, saved names it uses), as ``ast`` reads them
    (:func:`tabbook.source.pycode.saved_names`, the library's own reading of ``add_to_class``)."""
    defined: set[str] = set()
    used: set[str] = set()
    for section in sections:
        for cell in section.code_cells:
            if "save" in cell.flags:
                names, uses = saved_names(cell.source)
                defined |= names
                used |= uses
    return defined, used


def listed_by(pages: dict[str, Section]) -> set[str]:
    """Every page the toc blocks of ``pages`` list."""
    return {target for section in pages.values() for _, _, target in page_entries(section)}


def library_order(selected: list[str], pages: dict[str, Section], outside: dict[str, Section],
                  exists: Callable[[str], bool | str]) -> tuple[list[str], list[str]]:
    """The pages whose ``#@save`` code makes a partial build's library, in the order the
    library is made: the whole book's, though only part of its toc is known.

    When the whole book's index is there under another name (the partial toc given with
    ``[build] index = partial.md``, ``index.md`` kept), its order is the library's, as in a
    full build. Otherwise the order is inferred. The pages come in blocks (:func:`_blocks`); a
    block that uses a name another defines comes after it (a class before its subclasses and
    its ``add_to_class`` methods, as the whole book orders them); otherwise the partial toc's
    blocks keep their order, then the others by path. Where uses go both ways, that order
    decides. Also returned: the names that blocks save more than once, whose last version an
    inferred order may not pick as the book does.
    """
    known = {**outside, **pages}
    walks = [walk_toc(top, known.get, exists)[0] for top in sorted(set(outside) - listed_by(outside))]
    # The whole book's index: it lists the partial toc's pages and most of the others.
    whole = [w for w in walks if set(selected[1:]) <= set(w) and 2 * len(set(w) & set(outside)) > len(outside)]
    if whole:
        ordered = [rel for rel in max(whole, key=len) if rel in known and rel != selected[0]]
        return [*selected[:1], *ordered, *sorted(rel for rel in outside if rel not in ordered)], []
    blocks = _blocks(selected, pages, outside, exists)
    names = [_saved_names([known[rel] for rel in block]) for block in blocks]
    twice = sorted({name for i, (defined, _) in enumerate(names) for other, _ in names[i + 1:]
                    for name in defined & other})
    return [rel for i in _uses_after_definitions(names) for rel in blocks[i]], twice


def _blocks(selected: list[str], pages: dict[str, Section], outside: dict[str, Section],
            exists: Callable[[str], bool | str]) -> list[list[str]]:
    """The root; each chapter the partial toc lists (its pages in toc order); what that walk
    missed; each toc outside it (a chapter's index no page lists, walked depth first); the rest."""
    blocks: list[list[str]] = [selected[:1]]
    if selected:
        for _, _, child in page_entries(pages[selected[0]]):
            walked, _ = walk_toc(child, pages.get, exists)
            blocks.append([rel for rel in walked if rel in pages and rel in selected])
    placed = {rel for block in blocks for rel in block}
    blocks.append([rel for rel in selected if rel not in placed])
    taken: set[str] = set()
    for top in sorted(set(outside) - listed_by(outside)):
        walked, _ = walk_toc(top, outside.get, exists)
        blocks.append([rel for rel in walked if rel in outside and rel not in taken])
        taken.update(blocks[-1])
    blocks.append(sorted(rel for rel in outside if rel not in taken))
    return [b for b in blocks if b]


def _uses_after_definitions(names: list[tuple[set[str], set[str]]]) -> list[int]:
    """The blocks' order: each after the blocks defining what it uses, else in the given order
    (a cycle: the first block left goes first)."""
    after = [{j for j, (defined, _) in enumerate(names) if j != i and (used - names[i][0]) & defined}
             for i, (_, used) in enumerate(names)]
    order: list[int] = []
    while len(order) < len(names):
        left = [i for i in range(len(names)) if i not in order]
        order.append(next((i for i in left if not after[i] - set(order)), left[0]))
    return order


def _own_labels(pages: dict[str, Section], toc: list[str], problems: list[BookError]) -> dict[str, tuple[str, int]]:
    """Each label's page and line. A label defined on several pages belongs to the first in the
    toc's order, then to the first of the pages no toc lists: Sphinx would send references to the
    page it read last (a book's *_origin.md copy no toc lists: unnumbered, "()" for an equation).
    The others are renamed where they are rendered (:func:`shadow_labels`, ``pages`` updated),
    each said at its line."""
    labels: dict[str, tuple[str, int]] = {}
    in_toc = {rel: i for i, rel in enumerate(toc)}
    shadowed: dict[str, list[str]] = {}
    for section in sorted(pages.values(), key=lambda s: (s.path not in in_toc, in_toc.get(s.path, 0))):
        for name, line in section.labels.items():
            if name in labels:
                owner = "{}:{}".format(*labels[name])
                first = labels[name][0]
                why = ("the page in the toc" if first in in_toc and section.path not in in_toc else
                       "the first in the toc's order" if first in in_toc else "the first page read")
                problems.append(BookError(f"duplicate label {name!r} (also at {owner}): references to it go to "
                                          f"{first}, {why}", section.path, line, kind=Problem.DUPLICATE_LABEL))
                shadowed.setdefault(section.path, []).append(name)
            else:
                labels[name] = (section.path, line)
    for rel, names in shadowed.items():
        pages[rel] = replace(pages[rel], shadowed=tuple(sorted(names)))
    return labels


def read_book(config: Config, extra_files: bool = True, whole_library: bool = False) -> Book:
    """Read every page once. ``extra_files``: also read book Markdown that no toc lists (``check``).
    ``whole_library`` (a partial build): read the book's other pages too, for the library only."""
    index = Path(config.index)
    problems: list[BookError] = []
    pages: dict[str, Section] = {}
    hashes: dict[str, str] = {}
    failed: set[str] = set()
    rst_tocs: dict[str, Section] = {}
    notebooks: list[str] = []
    cache = PageCache(config)

    def read(rel: str) -> Section | None:
        if rel in pages:
            return pages[rel]
        if rel in failed:
            return None
        notebook = notebook_page(config, rel)
        if notebook is not None:  # a page that exists as a notebook: rendered as it is
            if notebook not in notebooks:
                notebooks.append(notebook)
            return None
        rst = rst_page(config, rel)
        if rst is not None:  # a reStructuredText page: its toctrees only; Sphinx renders it
            if rst not in rst_tocs:
                rst_tocs[rst] = rst_toc_section((config.root / rst).read_text(encoding="utf-8", errors="replace"), rst)
            return rst_tocs[rst]
        try:
            pages[rel] = read_page(config, rel, hashes, cache.sections)
        except BookError as exc:
            problems.extend(_errors(exc))
            failed.add(rel)
            return None
        return pages[rel]

    outside: list[Path] = []
    if extra_files:
        for path in book_markdown_files(config, outside):
            read(path.relative_to(config.root).as_posix())
    problems += outside_links(config, outside)
    failed.update(p.relative_to(config.root).as_posix() for p in outside)  # said once, above
    if not index.is_file():
        problems.append(BookError(f"the table of contents root {config.rel(index)} does not exist", "config.ini"))
        return Book(config, pages, [], {}, problems)
    root = index.resolve().relative_to(config.root.resolve()).as_posix()
    toc, toc_problems = walk_toc(root, read, lambda rel: rst_page(config, rel) is not None
                                 or notebook_page(config, rel) is not None or page_exists(config.root / rel))
    problems.extend(toc_problems)
    labels = _own_labels(pages, toc, problems)
    problems.sort(key=lambda e: (e.path or "", e.line or 0))
    cache.save(config.root)
    book = Book(config, pages, [rel for rel in toc if rel in pages], labels, problems, page_hashes=hashes,
                rst_tocs=rst_tocs, notebook_pages=notebooks)
    reached = set(toc)
    book.orphans = sorted(rel for rel in pages if rel not in reached)
    if whole_library:
        for path in book_markdown_files(config):
            rel = path.relative_to(config.root).as_posix()
            if rel in pages or rel in failed:
                continue
            try:
                book.outside[rel] = read_page(config, rel, hashes, cache.sections)
            except BookError as exc:
                book.outside_problems += [BookError(f"{e.message} (outside this partial build: its #@save "
                                                    "code is not in the library)", e.path, e.line,
                                                    kind=Problem.PARTIAL_LIBRARY)
                                          for e in _errors(exc)]
        book.library_order, twice = library_order(book.toc, pages, book.outside,
                                                  lambda rel: page_exists(config.root / rel))
        if twice:
            shown = ", ".join(twice[:5]) + (f" and {len(twice) - 5} more" if len(twice) > 5 else "")
            book.outside_problems.append(BookError(
                f"the library of this partial build is the whole book's, in an order inferred without "
                f"the whole book's index: {shown}, saved in more than one chapter, may not be the "
                f"book's last version (keep the whole index and name this one with [build] index)",
                config.rel(config.index), 1, kind=Problem.PARTIAL_LIBRARY))
        cache.save(config.root)
    for rel in failed:
        found_labels, found_entries = salvage(config, rel)
        book.unread_labels |= found_labels
        book.unread_entries |= found_entries
    return book
