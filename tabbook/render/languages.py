"""The book in other languages: each page's translations (``[site] languages``).

d2l is written in several languages, each its own book in its own repository and its own site
(d2l.ai, zh.d2l.ai, ...), linked only at their front pages; nobody reading a page can tell
whether its translation exists or is behind. Here every sibling stays what it is: built by
itself, served at its own address, with its own search index (so the search stays per
language). A book names its siblings' sources and addresses; this module reads each sibling's
pages (never builds it, never publishes any of its files) and maps every page of this book to
the same page there:

1. by its source path (``chapter_preliminaries/ndarray.md`` in both books), else
2. by its own label, the first ``:label:`` of its file (the one under its title): the sibling's
   page that defines it (a page renamed in a translation keeps its label). Only that one: a
   subsection's or a figure's label names where that part went, not the page (on d2l-en and
   d2l-zh, matching by any label sent two pages to pages that share one subsection with them);
   or the sibling's page whose own label this page defines (so two books link each other alike).

A page with no counterpart links nothing for that language: no guess at a parent page (a
reader who follows a language link lands on the same text, or is not offered one).

Freshness: the first line of ``[site] languages`` is the original (and the pages'
``x-default``). A page's date is the commit date of its file's last commit (``git log``; a
book outside git, or a page never committed, has none, and nothing is said rather than
guessed). On the original's page, a translation whose file was last committed on an earlier day
is marked *older*; on a translation's page, the original's link is marked *newer* when the
original changed on a later day than this translation.

What is computed here is data (:func:`translations`: document → its links), made by the
builder into the render context; :mod:`tabbook.render.ext.languages` writes it into pages.
"""

from __future__ import annotations

import html
import re
import subprocess
import tarfile
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from tabbook.book import book_markdown_files
from tabbook.config import Config, config_error, load_config
from tabbook.errors import BookError
from tabbook.files import BuildDir

#: Names readers know their language by, written in that language (a tag not listed shows as itself).
NAMES = {
    "en": "English", "zh": "中文", "zh-cn": "简体中文", "zh-tw": "繁體中文", "ja": "日本語", "ko": "한국어",
    "fr": "Français", "de": "Deutsch", "es": "Español", "pt": "Português", "pt-br": "Português (Brasil)",
    "ru": "Русский", "tr": "Türkçe", "vi": "Tiếng Việt", "it": "Italiano", "ar": "العربية", "fa": "فارسی",
    "hi": "हिन्दी", "id": "Bahasa Indonesia", "pl": "Polski", "uk": "Українська",
}
#: The line's name ("Translations") in the page's own language (a language not listed: English).
LINE_NAMES = {
    "en": "Translations", "zh": "其他语言", "ja": "他の言語", "ko": "다른 언어", "fr": "Traductions",
    "de": "Übersetzungen", "es": "Traducciones", "pt": "Traduções", "ru": "Переводы", "tr": "Çeviriler",
    "vi": "Bản dịch", "it": "Traduzioni",
}
#: Right-to-left scripts: their name is written with ``dir="rtl"``.
RTL = ("ar", "fa", "he", "ur")

LABEL = re.compile(r":label:`([^`]+)`")

#: A link's role on the page: the page itself, another language, the x-default.
SELF, OTHER, DEFAULT = "self", "other", "x-default"
#: What a link's note says (the two dates follow).
OLDER, NEWER = "older", "newer"


def html_tag(tag: str) -> str:
    """A tag as HTML's ``lang``/``hreflang`` take it (BCP 47: ``zh_CN`` → ``zh-CN``)."""
    return tag.replace("_", "-")


def language_name(tag: str) -> str:
    t = html_tag(tag).lower()
    return NAMES.get(t) or NAMES.get(t.split("-")[0]) or tag


@dataclass
class Pages:
    """What the mapping needs of one book: its pages (document → root-relative file), the labels
    each page defines in order, who defines each label first, and each page's commit date."""

    files: dict[str, str]
    page_labels: dict[str, list[str]]
    owners: dict[str, str]
    dates: dict[str, int]


def read_pages(config: Config, dates: dict[str, int]) -> Pages:
    """A book's pages as Sphinx will name them, from the same walk the build reads (every
    Markdown file its ``notebooks`` patterns match, orphans included: they are built too).
    ``dates``: root-relative file → commit time (:func:`commit_dates`)."""
    files: dict[str, str] = {}
    page_labels: dict[str, list[str]] = {}
    owners: dict[str, str] = {}
    for path in book_markdown_files(config):
        rel = path.relative_to(config.root).as_posix()
        doc = rel.removesuffix(".md")
        files[doc] = rel
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            text = ""
        page_labels[doc] = list(dict.fromkeys(LABEL.findall(text)))
        for label in page_labels[doc]:
            owners.setdefault(label, doc)
    return Pages(files, page_labels, owners,
                 {doc: dates[rel] for doc, rel in files.items() if rel in dates})


def _git(folder: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(["git", "-C", str(folder), *args], capture_output=True, check=False)
    except OSError:  # no git on this machine
        return None
    return done.stdout.decode("utf-8", errors="replace") if done.returncode == 0 else None


def commit_dates(folder: Path, ref: str = "HEAD") -> dict[str, int]:
    """Each file under ``folder`` (relative to it) → the committer time of the last commit of
    ``ref`` that changed it; {} outside a git repository. One ``git log`` for the whole book."""
    prefix = _git(folder, "rev-parse", "--show-prefix")
    if prefix is None:
        return {}
    prefix = prefix.strip()
    log = _git(folder, "-c", "core.quotePath=off", "log", "--format=%x00%ct", "--name-only",
               "--no-renames", ref, "--", ".")
    if log is None:
        return {}
    dates: dict[str, int] = {}
    when = 0
    for line in log.splitlines():
        if line.startswith("\0"):
            when = int(line[1:])
        elif line and line.startswith(prefix):
            dates.setdefault(line[len(prefix):], when)  # newest first: the first seen is the last change
    return dates


class Dates:
    """:func:`commit_dates` of each repository, kept between commands (``build/``'s
    ``languages`` memo) by the folder and the commit it was read at: a no-op build of a book
    with a long history runs ``git rev-parse`` per book, not ``git log``."""

    def __init__(self, config: Config) -> None:
        self.memo = BuildDir(config.build_dir).memo("languages")
        loaded = self.memo.load()
        self.known: dict[str, dict[str, int]] = loaded if isinstance(loaded, dict) else {}
        self.used: dict[str, dict[str, int]] = {}

    def of(self, folder: Path, ref: str = "HEAD") -> dict[str, int]:
        commit = _git(folder, "rev-parse", "--verify", "--quiet", ref + "^{commit}")
        if commit is None:
            return {}  # not a repository, or one with no commit yet
        key = f"{folder.resolve()}@{commit.strip()}"
        if key not in self.used:
            self.used[key] = self.known[key] if key in self.known else commit_dates(folder, ref)
        return self.used[key]

    def save(self) -> None:
        self.memo.save(self.used)


def match(own: Pages, other: Pages) -> dict[str, str]:
    """This book's document → the sibling's page for it: the same path, else the page that
    defines this page's own (first) label, else the page whose own label this page defines."""
    found = {}
    for doc in own.files:
        if doc in other.files:
            found[doc] = doc
            continue
        label = next(iter(own.page_labels[doc]), None)
        if label is not None and label in other.owners:
            found[doc] = other.owners[label]
    # and the other way round, so that the two books link each other alike: a sibling page whose
    # own label this book defines (d2l-zh's environment.md opens with a figure's label that
    # d2l-en's renamed page defines, but not the reverse)
    taken = set(found.values())
    for theirs in sorted(other.files):
        label = next(iter(other.page_labels[theirs]), None)
        if theirs in own.files or theirs in taken or label is None or label not in own.owners:
            continue
        if own.owners[label] not in found:
            found[own.owners[label]] = theirs
            taken.add(theirs)
    return found


#: A sibling is read without its own ``[site] languages`` (its paths are its machine's, and
#: only its pages matter here).
NOT_ITS_SIBLINGS = ("site.languages=",)


def _sibling(config: Config, tag: str, source: str, dates: Dates) -> Pages:
    """The pages of the sibling ``source`` names: a folder, or this book's repository at a ref
    (its tree taken out with ``git archive`` into a temporary folder, read, then removed)."""
    def failed(why: str) -> BookError:
        return config_error(config, "site", "languages", f"{tag}: {why}")

    if not source.startswith("git:"):
        folder = Path(source)
        try:
            sibling = load_config(folder, overrides=NOT_ITS_SIBLINGS)
        except BookError as exc:
            raise failed(f"the book at {folder} does not read: {exc}") from None
        return read_pages(sibling, dates.of(folder))
    ref = source[4:]
    prefix = _git(config.root, "rev-parse", "--show-prefix")
    if prefix is None or _git(config.root, "rev-parse", "--verify", "--quiet", ref + "^{commit}") is None:
        raise failed(f"{source}: {ref} is not a commit of this book's git repository")
    with tempfile.TemporaryDirectory(prefix="tabbook-language-") as tmp:
        archive = Path(tmp) / "tree.tar"
        with archive.open("wb") as out:
            done = subprocess.run(["git", "-C", str(config.root), "archive", "--format=tar",
                                   f"{ref}:{prefix.strip()}"], stdout=out, check=False)
        if done.returncode:
            raise failed(f"{source}: git archive of {ref} failed")
        tree = Path(tmp) / "book"
        with tarfile.open(archive) as tar:
            tar.extractall(tree, filter="data")
        if not (tree / "config.ini").is_file():
            raise failed(f"{source}: the book at {ref} has no config.ini")
        try:
            sibling = load_config(tree, overrides=NOT_ITS_SIBLINGS)
        except BookError as exc:
            raise failed(f"the book at {ref} does not read: {exc}") from None
        return read_pages(sibling, dates.of(config.root, ref))


def _day(when: int) -> str:
    return time.strftime("%Y-%m-%d", time.gmtime(when))


#: One link of a page: (role, language tag, URL relative to this site's root or absolute, note).
#: The note is "" or "older DATE DATE" / "newer DATE DATE" (theirs, this page's).
Link = tuple[str, str, str, str]


def translations(config: Config) -> dict[str, tuple[Link, ...]]:
    """Every page of this book → its links (this page's own, each language that has it, the
    x-default), in ``[site] languages`` order; {} without the key."""
    entries = config.site.languages
    if not entries:
        return {}
    if not any(source == "." for _, source, _ in entries):  # this book's language: [project] lang, else en
        entries = ((config.lang or "en", ".", ""), *entries)
    dates = Dates(config)
    own = read_pages(config, dates.of(config.root))
    books = {tag: own if source == "." else _sibling(config, tag, source, dates) for tag, source, _ in entries}
    dates.save()
    maps = {tag: {doc: doc for doc in own.files} if source == "." else match(own, books[tag])
            for tag, source, _ in entries}
    original = entries[0][0]
    own_is_original = entries[0][1] == "."
    out: dict[str, tuple[Link, ...]] = {}
    for doc in own.files:
        links: list[Link] = []
        mine = own.dates.get(doc)
        for tag, source, url in entries:
            target = maps[tag].get(doc)
            if target is None:
                continue
            if source == ".":
                links.append((SELF, tag, url + target + ".html" if _absolute(url) else target + ".html", ""))
                continue
            theirs = books[tag].dates.get(target)
            note = ""
            if mine is not None and theirs is not None:
                if own_is_original and _day(theirs) < _day(mine):
                    note = f"{OLDER} {_day(theirs)} {_day(mine)}"
                elif tag == original and _day(theirs) > _day(mine):
                    note = f"{NEWER} {_day(theirs)} {_day(mine)}"
            links.append((OTHER, tag, url + target + ".html", note))
        if not any(role == OTHER for role, *_ in links):
            continue  # no translation of this page: nothing to link
        first = next((link for link in links if link[1] == original), None)
        if first is not None:
            links.append((DEFAULT, DEFAULT, first[2], ""))
        out[doc] = tuple(links)
    return out


def _absolute(url: str) -> bool:
    return "://" in url or url.startswith("/")


def _href(url: str, to_root: str) -> str:
    return url if _absolute(url) else to_root + url


def head_html(links: Iterable[Link], to_root: str) -> str:
    """The ``<link rel="alternate" hreflang>`` lines of a page's head (its own included, as
    search engines ask)."""
    return "".join(f'<link rel="alternate" hreflang="{html.escape(html_tag(tag))}" '
                   f'href="{html.escape(_href(url, to_root))}">\n' for _, tag, url, _ in links)


def _note(note: str) -> str:
    if not note:
        return ""
    kind, theirs, mine = note.split()
    text = (f"older: last changed {theirs}, this page {mine}" if kind == OLDER else
            f"newer: changed {theirs}, after this page ({mine}); this translation may be behind")
    return f' <span class="tabbook-languages-{kind}">({text})</span>'


def nav_html(links: Iterable[Link], to_root: str) -> str:
    """The visible line at the top of a page, named in the page's language: each other
    language's name, written in that language (``lang``) and linking the same page there
    (``hreflang``), with its note (in English)."""
    items = []
    own = "en"
    for role, tag, url, note in links:
        if role == SELF:
            own = html_tag(tag).lower()
        if role != OTHER:
            continue
        t = html.escape(html_tag(tag))
        direction = ' dir="rtl"' if html_tag(tag).lower().split("-")[0] in RTL else ""
        items.append(f'<a href="{html.escape(_href(url, to_root))}" hreflang="{t}" lang="{t}"{direction}>'
                     f"{html.escape(language_name(tag))}</a>{_note(note)}")
    if not items:
        return ""
    name = LINE_NAMES.get(own) or LINE_NAMES.get(own.split("-")[0]) or LINE_NAMES["en"]
    return (f'<nav class="tabbook-downloads tabbook-languages" aria-label="{name}"><p>'
            f'<span class="tabbook-downloads-kind">{name}</span> ' + " ".join(items) + "</p></nav>")
