"""The parsers of keys that name somewhere else: the site's address, a link, another language's
book, an edition, a Colab library.

Each is a parser of :mod:`tabbook.settings`' kind (text and its :class:`~tabbook.settings.At` in,
a value or ``ValueError(why)`` out), kept apart from the path and Python parsers there because
they share one concern: an address ends up in a reader's browser, so a link that would run
script (``javascript:``, ``vbscript:``, ``data:``) is refused here, once.
"""

from __future__ import annotations

import os
import re

from tabbook.settings import At

#: A site's address as docstrings cite it: http(s), nothing a docstring or a reader's terminal
#: would cut (spaces, quotes, parentheses, backslashes).
SITE_ADDRESS = re.compile(r"https?://[^\s()\"'\\<>`]+")



def site_address(value: str, at: At) -> str:
    """``[site] url``: the address the site is served at, ending in ``/`` ("": not known)."""
    address = value.strip()
    if not address:
        return ""
    if not SITE_ADDRESS.fullmatch(address):
        raise ValueError(f"{address!r} is not a site's address: https://HOST/PATH/, without spaces, quotes "
                         "or parentheses (the library's docstrings cite pages there)")
    return address if address.endswith("/") else address + "/"



EDITION_LABEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,39}")



def edition_refs(value: str, at: At) -> tuple[tuple[str, str, str], ...]:
    """``[site] versions``: one edition a line, ``LABEL REF [TITLE…]`` → (label, ref, title).
    The label names the edition's folder of the site (``build/html/LABEL/``), so it is a plain
    name; the ref is handed to git as one argument, so it may not start with ``-`` (an option).
    The first line is the default edition, built at the site's root."""
    out: list[tuple[str, str, str]] = []
    for row in (r.strip() for r in value.splitlines()):
        if not row:
            continue
        label, _, rest = row.partition(" ")
        ref, _, title = rest.strip().partition(" ")
        if not EDITION_LABEL.fullmatch(label) or label.startswith("_"):
            raise ValueError(f"{label!r} is not an edition's label: letters, digits and . _ - (at most 40, "
                             "starting with a letter or digit); it names the edition's folder of the site")
        if not ref or ref.startswith("-") or any(c.isspace() or ord(c) < 32 for c in ref):
            raise ValueError(f"{row!r}: each line is LABEL REF [TITLE], REF a git ref or commit")
        if any(label == seen for seen, _, _ in out):
            raise ValueError(f"names the label {label!r} twice")
        out.append((label, ref, title.strip() or label))
    if len(out) == 1:
        raise ValueError("names one edition: list at least two (the first is the default, at the site's root)")
    return tuple(out)



def comma_items(value: str) -> list[str]:
    """d2lbook's comma lists: items split by commas and newlines, blanks dropped."""
    return [item.strip() for line in value.splitlines() for item in line.split(",") if item.strip()]



#: URL schemes whose link runs code in the reader's browser, or shows a page of the link's own making.
SCRIPT_SCHEMES = ("javascript", "vbscript", "data")



def script_url(url: str) -> str | None:
    """The scheme of ``url`` when a link to it would run script (``javascript:``, ``vbscript:``,
    ``data:``), read as a browser reads it: ASCII whitespace and control characters anywhere in
    it ignored (``java&#9;script:`` reaches HTML escaped, but a tab or a newline in the key would
    not), any case. None: a link that only goes somewhere."""
    plain = re.sub(r"[\x00-\x20\x7f]", "", url).lower()
    return next((scheme for scheme in SCRIPT_SCHEMES if plain.startswith(scheme + ":")), None)



def link_url(url: str) -> str:
    """``url``, checked to be a link that runs no script (:func:`script_url`)."""
    scheme = script_url(url)
    if scheme is not None:
        raise ValueError(f"{url!r}: a {scheme}: link runs script in the reader's browser; give an "
                         "http(s) or a relative URL")
    return url



def header_links(value: str, at: At) -> tuple[tuple[str, str, str], ...]:
    """``[html] header_links``: (name, URL, Font Awesome icon) triples, comma-separated over one
    or more lines (d2l-en ends each line with a comma); a URL that would run script is refused."""
    items = comma_items(value)
    if len(items) % 3:
        raise ValueError(f"has {len(items)} items, not triples of name, URL, icon (e.g. GitHub, "
                         "https://github.com/o/r, fab fa-github)")
    return tuple((items[i], link_url(items[i + 1]), items[i + 2]) for i in range(0, len(items), 3))



def url_template(value: str, at: At) -> str:
    """A link's URL template (``[site] pdf_url``, ``colab_url``), checked to run no script."""
    return link_url(value.strip())



#: A language tag as HTML's ``lang`` takes it (BCP 47's shape, d2lbook's ``zh_CN`` spelling too).
LANGUAGE_TAG = re.compile(r"[A-Za-z]{2,8}(?:[-_][A-Za-z0-9]{1,8})*")



def language(value: str, at: At) -> str:
    """``[project] lang``: a language tag, or "" (English). It is written into every page's
    ``<html lang="…">`` and Sphinx's choice of words, so anything else is refused."""
    tag = value.strip()
    if tag and not LANGUAGE_TAG.fullmatch(tag):
        raise ValueError(f"{tag!r} is not a language tag (en, zh, zh-CN, pt_BR, ...)")
    return tag



def sibling_books(value: str, at: At) -> tuple[tuple[str, str, str], ...]:
    """``[site] languages``: one line per language, ``TAG SOURCE [URL]``. SOURCE is ``.`` (this
    book), a sibling book's folder (relative to the file that names it, made absolute here) or
    ``git:REF`` (this book's repository at REF); URL is where that language's site is served, a
    folder ending in ``/`` (absolute, or relative to this site's root; default ``../TAG/``).
    The first line is the pages' ``x-default``. Each sibling's sources are only read for its
    pages, labels and commit dates (nothing of them is published), so a folder outside the book
    is allowed."""
    out: list[tuple[str, str, str]] = []
    for raw in value.splitlines():
        parts = raw.split()
        if not parts:
            continue
        if len(parts) not in (2, 3):
            raise ValueError(f"line {raw.strip()!r} is not TAG SOURCE [URL] (e.g. zh ../d2l-zh https://zh.d2l.ai/)")
        tag, source = parts[0], parts[1]
        if not LANGUAGE_TAG.fullmatch(tag):
            raise ValueError(f"{tag!r} is not a language tag (en, zh, zh-CN, pt_BR, ...)")
        if tag.lower() in (t.lower() for t, _, _ in out):
            raise ValueError(f"names {tag} twice")
        url = link_url(parts[2]) if len(parts) == 3 else f"../{tag}/"
        if not url.endswith("/"):
            raise ValueError(f"{tag}: the site address {url!r} is a folder's: end it with /")
        if source.startswith("git:"):
            if not source[4:]:
                raise ValueError(f"{tag}: git: names no ref (git:REF, e.g. git:zh or git:origin/zh)")
        elif source != ".":
            folder = (at.folder / os.path.expanduser(source)).resolve()
            if not (folder / "config.ini").is_file():
                raise ValueError(f"{tag}: {source} is not a book's folder (it has no config.ini)")
            source = "." if folder == at.root.resolve() else str(folder)
        out.append((tag, source, url))
    if out and sum(source == "." for _, source, _ in out) > 1:
        raise ValueError("names this book (.) more than once")
    return tuple(out)



def colab_libs(value: str, at: At) -> tuple[tuple[str, str, str], ...]:
    """``[colab] libs``: lines of ``TAB, import name, pip argument`` (``import name, pip argument``
    in a book without tabs: the tab is then empty, meaning every tab)."""
    out = []
    for line in value.splitlines():
        items = [item.strip() for item in line.split(",") if item.strip()]
        if not items:
            continue
        if len(items) == 2:
            items = ["", *items]
        if len(items) != 3:
            raise ValueError(f"{line.strip()!r}: each line is TAB, LIBRARY, PIP ARGUMENT "
                             "(or LIBRARY, PIP ARGUMENT in a book without tabs)")
        out.append((items[0], items[1], items[2]))
    return tuple(out)



def prefix_url(value: str, at: At) -> tuple[str, str] | None:
    """``[colab] replace_svg_url``: ``FOLDER, URL`` (d2l-en: ``img, http://d2l.ai/_images``)."""
    items = comma_items(value)
    if not items:
        return None
    if len(items) != 2:
        raise ValueError("must be FOLDER, URL (e.g. img, https://example.org/_images)")
    return items[0].strip("/"), items[1].rstrip("/")
