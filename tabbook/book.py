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
import json
import os
import re
from dataclasses import dataclass, field, replace
from functools import cache, cached_property
from pathlib import Path

from tabbook.config import Config
from tabbook.errors import BookError, BookErrors
from tabbook.source.read import Section, read_section
from tabbook.source.toc import entry_path, is_external, walk_toc

#: The repository's own documents at the book root are not book pages.
REPO_DOCS = frozenset({"README.MD", "CONTRIBUTING.MD", "BENCHMARKS.MD", "CHANGELOG.MD", "LICENSE.MD",
                       "AGENTS.MD", "ARCHITECTURE.MD"})
#: Top-level folders that never hold book pages (build output, stores, tooling).
IGNORED_DIRS = frozenset({"build", "_freeze", ".venv", "tests", "d2l", "envs", "node_modules", "bench"})


def book_markdown_files(config: Config) -> list[Path]:
    """Every Markdown file that belongs to the book (what ``check`` lints and ``serve`` watches).

    A walk that never enters a folder that cannot hold a page (the ignored top-level folders,
    hidden ones, and any folder outside the ``notebooks`` patterns' reach): walking everything
    and filtering afterwards read the whole ``.venv`` and took most of a no-op build.
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
        for name in filenames:
            if not name.endswith(".md") or (not parts and name.upper() in REPO_DOCS):
                continue
            path = here / name
            if path.is_file() and not config.excluded("/".join((*parts, name))):
                out.append(path)
    return sorted(out)


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
    column; a byte-order mark (some Windows editors write one) and CRLF line ends are read
    through, each with a warning; an empty (or blank) file is an error, since a page needs
    at least its title.
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
        warnings.append(BookError("the file starts with a byte-order mark (U+FEFF); it is ignored", rel, 1))
    if "\r" in text:
        line = text.count("\n", 0, text.index("\r")) + 1
        warnings.append(BookError("CRLF (Windows) line ends, read as LF", rel, line))
    if not text.strip():
        raise BookError("the file is empty: a page needs at least a # title", rel, 1)
    return text, warnings


def read_page(config: Config, rel: str, hashes: dict[str, str] | None = None,
              parsed: dict[str, tuple[str, Section]] | None = None) -> Section:
    """Read one page of the book by its root-relative path (raises its problems as BookError).

    ``parsed``: sections read before, by page, with the hash of the bytes they were read from
    (:class:`PageCache`); a page whose bytes have that hash is not parsed again, and one that
    is parsed is put there.
    """
    path = config.root / rel
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
    """Pages as parsed by the last command, in ``build/pages-cache.pickle``.

    Every command reads every page, and parsing is most of what a no-op rebuild of a large
    book costs (issue 14: a no-op of 200 sections must cost about what one of 10 does). A
    page's parse depends only on its bytes, the tabs and the builder's code, so sections are
    kept by the hash of their bytes, under a key of the other two. A cache that cannot be
    read or written only costs time. Pages that fail to read are never kept.
    """

    NAME = "pages-cache.pickle"

    def __init__(self, config: Config) -> None:
        self.path = config.build_dir / self.NAME
        self.key = hashlib.sha256(json.dumps([_builder_code_hash(), list(config.tabs),
                                              config.default_tab]).encode()).hexdigest()
        self.sections: dict[str, tuple[str, Section]] = {}
        try:
            import pickle

            key, sections = pickle.loads(self.path.read_bytes())
            if key == self.key and isinstance(sections, dict):
                self.sections = sections
        except Exception:  # missing, damaged, or from another builder: parse everything
            pass
        self._before = dict(self.sections)

    def save(self, root: Path) -> None:
        """Write the cache if a page was parsed anew (pages whose file is gone are dropped)."""
        import os
        import pickle
        import tempfile

        if self.sections == self._before:
            return
        sections = {rel: v for rel, v in self.sections.items() if (root / rel).is_file()}
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=f".{self.NAME}.")
        except OSError:
            return
        try:
            with os.fdopen(fd, "wb") as f:
                pickle.dump((self.key, sections), f, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(tmp, self.path)
        except (OSError, pickle.PicklingError):
            Path(tmp).unlink(missing_ok=True)


@cache
def _builder_code_hash() -> str:
    """The builder's own code: a cached library is only as good as the code that made it."""
    h = hashlib.sha256()
    here = Path(__file__).resolve().parent
    for path in sorted(here.rglob("*.py")):
        h.update(path.read_bytes())
    return h.hexdigest()


LIBRARY_CACHE = "library-cache.json"


@dataclass
class Book:
    """What every stage knows about the book. Made by :func:`read_book`; never re-read."""

    config: Config
    pages: dict[str, Section]  # every page read cleanly, by root-relative path
    toc: list[str]  # root-relative paths in reading order, the root index first
    labels: dict[str, tuple[str, int]]  # label -> (page, line) of its first definition
    problems: list[BookError] = field(default_factory=list)  # reading, toc and label problems
    library_problems: list[BookError] = field(default_factory=list)  # call-time names nothing saves
    page_hashes: dict[str, str] = field(default_factory=dict)  # page -> sha256 of its text
    # What pages that failed to read seem to define (their labels, their toc entries), read
    # from the raw text: references and toc membership that depend on such a page are not
    # reported again, since its own parse error is the one cause (issue 13: no cascades).
    unread_labels: set[str] = field(default_factory=set)
    unread_entries: set[str] = field(default_factory=set)
    # Pages read (``extra_files``) that the toc walk did not reach: d2lbook builds them, as
    # Sphinx orphans (no toctree lists them, no number), so does a full build.
    orphans: list[str] = field(default_factory=list)

    @property
    def sections(self) -> list[Section]:
        """The pages of the table of contents in reading order; raises if the book did not read cleanly."""
        self.raise_problems()
        return [self.pages[rel] for rel in self.toc]

    @property
    def rendered(self) -> list[Section]:
        """The pages a build renders: the toc's in reading order, then the orphans."""
        return [*self.sections, *(self.pages[rel] for rel in self.orphans)]

    def raise_problems(self) -> None:
        if self.problems:
            raise self.problems[0] if len(self.problems) == 1 else BookErrors(list(self.problems))

    @cached_property
    def library(self) -> dict[str, str]:
        """The generated ``d2l`` files (path → text), generated once per book.

        Names used only at call time that no section saves
        (:class:`~tabbook.library.generate.CallTimeName`) do not stop generation: they
        are kept in :attr:`library_problems` for each command to judge.
        """
        from tabbook.execute.store import write_atomic
        from tabbook.library.generate import CallTimeName, generate_library, hand_written_tops

        sections = self.sections
        tops = hand_written_tops(self.config)
        key = self._library_key(tops)
        cache = self.config.build_dir / LIBRARY_CACHE
        pages = [self.page_hashes.get(rel) for rel in self.toc]
        try:
            cached = json.loads(cache.read_text(encoding="utf-8"))
            # Problems name Markdown lines, which prose edits move: kept only for the same pages.
            if cached.get("key") == key and (not cached["problems"] or cached.get("pages") == pages):
                self.library_problems.extend(CallTimeName(m, p, n) for m, p, n in cached["problems"])
                return dict(cached["files"])
        except (OSError, ValueError, KeyError, TypeError):
            pass  # no cache, or an unreadable one: generate
        files = generate_library(self.config, sections, tops, self.library_problems)
        record = {"key": key, "files": files, "pages": pages,
                  "problems": [[e.message, e.path, e.line] for e in self.library_problems]}
        try:
            write_atomic(cache, json.dumps(record))
        except OSError:
            pass  # a cache that cannot be written only costs time
        return files

    def _library_key(self, tops: dict[str, str]) -> str:
        """What the generated library depends on: each toc page's title and code cells (their
        text, tabs and marks; not the prose, which saves nothing), in toc order, the
        configuration, the hand-written tops and the builder's code. Equal keys: the same files,
        so a no-op rebuild, and a prose edit, skip the generation (a second on this book's
        chapter; more on a book of hundreds of sections)."""
        config = self.config
        code = [(rel, self.pages[rel].title,
                 [(c.source, c.tabs, sorted(c.flags), c.raises, c.every_tab)
                  for c in self.pages[rel].cells if c.kind == "code"]) for rel in self.toc]
        parts = [_builder_code_hash(), [config.rel(f) for f in (config.root / "config.ini", config.overlay) if f],
                 [(f.read_bytes() if f and f.is_file() else b"").hex()
                  for f in (config.root / "config.ini", config.overlay)],
                 tops, code, str(config.root)]
        return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


_SALVAGE_LABEL = re.compile(r":(?:label|eqlabel):`([^`]+)`")
_SALVAGE_TOC = re.compile(r"^\s*(`{3,}|~{3,})\s*toc\s*$(.*?)^\s*\1\s*$", re.M | re.S)


def salvage(config: Config, rel: str) -> tuple[set[str], set[str]]:
    """Labels and toc entries a page that did not read seems to have (a lenient regex scan)."""
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


def read_book(config: Config, extra_files: bool = True) -> Book:
    """Read every page once. ``extra_files``: also read book Markdown that no toc lists (``check``)."""
    index = Path(config.index)
    problems: list[BookError] = []
    pages: dict[str, Section] = {}
    hashes: dict[str, str] = {}
    failed: set[str] = set()
    cache = PageCache(config)

    def read(rel: str) -> Section | None:
        if rel in pages:
            return pages[rel]
        if rel in failed:
            return None
        try:
            pages[rel] = read_page(config, rel, hashes, cache.sections)
        except BookError as exc:
            problems.extend(_errors(exc))
            failed.add(rel)
            return None
        return pages[rel]

    if extra_files:
        for path in book_markdown_files(config):
            read(config.rel(path))
    if not index.is_file():
        problems.append(BookError(f"the table of contents root {config.rel(index)} does not exist", "config.ini"))
        return Book(config, pages, [], {}, problems)
    root = index.resolve().relative_to(config.root.resolve()).as_posix()
    toc, toc_problems = walk_toc(root, read, lambda rel: page_exists(config.root / rel))
    problems.extend(toc_problems)
    labels: dict[str, tuple[str, int]] = {}
    for section in pages.values():
        for name, line in section.labels.items():
            if name in labels:
                first = "{}:{}".format(*labels[name])
                problems.append(BookError(f"duplicate label {name!r} (also at {first})", section.path, line))
            else:
                labels[name] = (section.path, line)
    problems.sort(key=lambda e: (e.path or "", e.line or 0))
    cache.save(config.root)
    book = Book(config, pages, [rel for rel in toc if rel in pages], labels, problems, page_hashes=hashes)
    reached = set(toc)
    book.orphans = sorted(rel for rel in pages if rel not in reached)
    for rel in failed:
        found_labels, found_entries = salvage(config, rel)
        book.unread_labels |= found_labels
        book.unread_entries |= found_entries
    return book
