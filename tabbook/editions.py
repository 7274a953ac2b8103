"""``tabbook site`` with ``[site] versions``: every edition of the book, each from its own commit.

Each edition listed (``LABEL REF [TITLE]``) is checked out in a temporary git worktree
(``git worktree add --detach``, removed afterwards) and built there by *this* tabbook from that
commit's sources and ``_freeze/``, never executing: an entry that is missing or stale for its
page is an error naming the ref and the page (``REF:page.md:LINE: …``, git's name of a file at
a commit), as ``build --frozen`` says it of the working tree. Old commits' builders do not
matter: the current one reads their sources and store, whose keys it still matches (the store's
``KeyParts.legacy_key`` covers an older key scheme; nothing is re-executed to make one fit).

Every edition's pages are read before any is built, so each build's render context carries the
table of all of them (:func:`tabbook.render.context.set_editions`) and every page's selector
(:mod:`tabbook.render.editions`) links the same page of the others. The sites are assembled
beside ``build/html`` (the first edition at the root, each other in ``LABEL/``) and put in its
place in one rename: a failed edition leaves the last site as it was. Each edition keeps its own
PDFs, notebooks, slides and package index, since each is a whole site of its own commit.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tabbook.config import Config, config_error, load_config
from tabbook.errors import BookError, BookErrors
from tabbook.files import BuildDir
from tabbook.render.editions import SPHINX_PAGES, Edition


@dataclass
class Checkout:
    """One edition checked out: where, and the configuration read there."""

    label: str
    ref: str
    title: str
    commit: str
    worktree: Path
    config: Config | None = None


def _git(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "-C", str(cwd), *args], capture_output=True, text=True, check=False)


def relocated(err: BookError, ref: str, prefix: str) -> BookError:
    """An edition's problem located in the edition's commit: ``REF:page.md:LINE``."""
    if isinstance(err, BookErrors):
        return BookErrors([relocated(e, ref, prefix) for e in err.errors])
    path = f"{ref}:{prefix}{err.path}" if err.path else f"{ref}:{prefix}config.ini"
    return BookError(err.message, path, err.line, err.column, kind=err.kind)


def resolve(config: Config) -> tuple[Path, str, list[tuple[str, str, str, str]]]:
    """The repository's top folder, the book's folder in it (``""`` or ``book/``) and each
    edition's (label, ref, title, commit); a ref that names no commit is an error at the key."""
    top = _git(config.root, "rev-parse", "--show-toplevel")
    if top.returncode != 0:
        raise config_error(config, "site", "versions", "needs the book in a git repository (its editions "
                           "are git refs)")
    prefix = _git(config.root, "rev-parse", "--show-prefix").stdout.strip()
    out = []
    for label, ref, title in config.site.versions:
        found = _git(config.root, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}")
        if found.returncode != 0:
            raise config_error(config, "site", "versions", f"names {ref!r} (edition {label}), which is no "
                               "commit of this repository")
        out.append((label, ref, title, found.stdout.strip()))
    return Path(top.stdout.strip()), prefix, out


def docname(rel: str) -> str:
    """A page's Sphinx name (``part/page.md`` → ``part/page``)."""
    return rel.removesuffix(".md")


def edition_of(config: Config, label: str, title: str, folder: str) -> Edition:
    """An edition's row of the selector's table: its pages (the toc's and the generated ones,
    with their titles) and each page's toc parent."""
    from tabbook.book import read_book
    from tabbook.library.cache import book_library
    from tabbook.render.sources import extra_pages
    from tabbook.source.toc import page_entries

    book = read_book(config)
    pages = [(docname(rel), book.pages[rel].title) for rel in book.toc if rel in book.pages]
    parents = [(docname(child), docname(rel)) for rel in book.toc if rel in book.pages
               for _, _, child in page_entries(book.pages[rel])]
    generated = extra_pages(config, book_library(book), book.sections)
    pages += [(docname(name), name.removesuffix(".md").capitalize()) for name in generated]
    pages += [(name, name) for name in SPHINX_PAGES]
    root_doc = docname(config.rel(config.index))
    return Edition(label, title, folder, root_doc, tuple(pages), tuple(parents))


def build_editions(config: Config, *, pdfs: bool = True, jobs: int = 0,
                   log: Callable[[str], object] = print) -> list[tuple[str, str, str]]:
    """Build every edition into ``build/html`` (see the module's docstring); returns each
    edition's (label, commit, folder in the site)."""
    from tabbook.build import Options, build, build_pdfs
    from tabbook.execute.outcome import Selection
    from tabbook.render.context import set_editions

    top, prefix, listed = resolve(config)
    build_dir = BuildDir(config.build_dir)
    build_dir.path.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".editions-", dir=build_dir.path))
    checkouts: list[Checkout] = []
    try:
        for label, ref, title, commit in listed:
            worktree = tmp / label
            added = _git(top, "worktree", "add", "--detach", "--quiet", str(worktree), commit)
            if added.returncode != 0:
                raise config_error(config, "site", "versions", f"edition {label}: git could not check out "
                                   f"{ref} ({added.stderr.strip()})")
            checkouts.append(Checkout(label, ref, title, commit, worktree))
        rows = []
        for i, c in enumerate(checkouts):
            root = c.worktree / prefix
            if not (root / "config.ini").is_file():
                raise config_error(config, "site", "versions", f"edition {c.label}: {c.ref} has no "
                                   f"{prefix}config.ini (no book there)")
            folder = "" if i == 0 else c.label + "/"
            sets = [f"site.url={config.site.url}{folder}"] if config.site.url else []
            try:
                c.config = load_config(root, overrides=sets)
                rows.append(edition_of(c.config, c.label, c.title, folder))
            except BookError as err:
                raise relocated(err, c.ref, prefix) from None
        table = tuple(row.as_row() for row in rows)
        for c in checkouts:
            assert c.config is not None
            log(f"[site] edition {c.label} ({c.ref}, {c.commit[:12]})")
            set_editions(c.config, c.label, table)
            try:
                if pdfs:
                    build_pdfs(c.config, None, frozen=True, jobs=jobs, log=log)
                build(c.config, Options(Selection(frozen_only=True), jobs=jobs), log=log)
            except BookError as err:
                raise relocated(err, c.ref, prefix) from None
        _assemble(config, tmp, checkouts, rows)
    finally:
        for c in checkouts:
            _git(top, "worktree", "remove", "--force", str(c.worktree))
        shutil.rmtree(tmp, ignore_errors=True)
        _git(top, "worktree", "prune")
    return [(c.label, c.commit, row.folder) for c, row in zip(checkouts, rows, strict=True)]


def _assemble(config: Config, tmp: Path, checkouts: list[Checkout], rows: list[Edition]) -> None:
    """The editions' sites into one, beside ``build/html``, then put in its place."""
    site = tmp / "site"
    for c, row in zip(checkouts, rows, strict=True):
        assert c.config is not None
        html = BuildDir(c.config.build_dir).html
        target = site / row.folder if row.folder else site
        if row.folder and target.exists():
            raise config_error(config, "site", "versions", f"labels an edition {c.label!r}, a name the "
                               f"default edition's site already has ({row.folder})")
        shutil.copytree(html, target, symlinks=True, dirs_exist_ok=not row.folder)
    html = BuildDir(config.build_dir).html
    old = tmp / "old-html"
    if html.exists():
        html.rename(old)
    site.rename(html)
