"""Check that every internal link and anchor of a built site resolves, and, on request, every
external one.

This walks ``build/html`` with the standard library's HTML parser and checks ``href``/``src``
targets inside the site: the file exists and, for ``#fragment``, an element with that id (or
a named anchor) exists in the target page. ``tabbook linkcheck [DIR]``, offline. The Markdown
links of ``llms.txt`` at the site's root (:mod:`tabbook.render.llms`) are checked as well. A
link to another language's site (it carries ``hreflang``: ``[site] languages``) that leads out
of the site is left to that site; check sites served side by side from their common folder.

``--external`` (``tabbook linkcheck --external``, ``tabbook build linkcheck --external``) also
asks every distinct ``http``/``https`` address the pages link to, a few at a time: a HEAD
request, then a GET where the server refuses HEAD; a status of 400 or more, or no answer within
the timeout, is a broken link, reported at each page and line that uses it. It is the one part
of tabbook that uses the network, and only when asked: a build never does.
"""

from __future__ import annotations

import re
import sys
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()
        self.links: list[tuple[str, int]] = []
        # links to the same page in another language's site ([site] languages: they carry
        # ``hreflang``): a relative one that leads out of this site is that site's to check
        self.sibling_links: set[int] = set()  # their indices in ``links``

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        sibling = any(name == "hreflang" for name, _ in attrs)
        for name, value in attrs:
            if value is None:
                continue
            if name == "id" or (tag == "a" and name == "name"):
                self.ids.add(value)
            elif (name == "href" and tag in ("a", "link")) or (name == "src" and tag in ("img", "script")):
                self.links.append((value, self.getpos()[0]))
                if sibling:
                    self.sibling_links.add(len(self.links) - 1)


def _parse(path: Path, cache: dict[Path, _Page]) -> _Page:
    if path not in cache:
        page = _Page()
        page.feed(path.read_text(encoding="utf-8", errors="replace"))
        cache[path] = page
    return cache[path]


def broken_links(site: Path) -> list[str]:
    """``page.html:LINE: broken link target`` for every internal link that does not resolve."""
    site = site.resolve()
    cache: dict[Path, _Page] = {}
    problems: list[str] = []
    for page_path in sorted(site.rglob("*.html")):
        page = _parse(page_path, cache)
        for number, (link, line) in enumerate(page.links):
            parts = urlsplit(link)
            if parts.scheme or parts.netloc or link.startswith(("mailto:", "javascript:", "data:")):
                continue
            target = page_path if not parts.path else (page_path.parent / unquote(parts.path)).resolve()
            if target.is_dir():
                target = target / "index.html"
            where = f"{page_path.relative_to(site)}:{line}"
            if site not in (target, *target.parents) and number in page.sibling_links:
                continue
            if not target.is_file() or site not in (target, *target.parents):
                problems.append(f"{where}: broken link {link}")
                continue
            frag = unquote(parts.fragment)
            if frag and target.suffix == ".html" and frag not in _parse(target, cache).ids:
                problems.append(f"{where}: missing anchor #{frag} in {target.relative_to(site)}")
    return problems + _broken_markdown_links(site, "llms.txt")


#: A Markdown inline link's target: ``[text](target)`` (text without brackets, as llms.txt writes it).
_MD_LINK = re.compile(r"\[(?:[^\]\\]|\\.)*\]\(([^)\s]+)\)")


def _broken_markdown_links(site: Path, name: str) -> list[str]:
    """``llms.txt:LINE: broken link target`` for each link of a Markdown file at the site's root
    whose target inside the site is not a file (none when the site has no such file)."""
    path = site / name
    if not path.is_file():
        return []
    problems = []
    for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
        for m in _MD_LINK.finditer(line):
            link = m.group(1)
            parts = urlsplit(link)
            if parts.scheme or parts.netloc or link.startswith(("mailto:", "#")):
                continue
            target = (site / unquote(parts.path)).resolve()
            if not target.is_file() or site not in target.parents:
                problems.append(f"{name}:{number}: broken link {link}")
    return problems


def external_links(site: Path) -> dict[str, list[str]]:
    """Every ``http(s)`` address the site's pages link to → the ``page.html:LINE`` places using it."""
    site = site.resolve()
    cache: dict[Path, _Page] = {}
    found: dict[str, list[str]] = {}
    for page_path in sorted(site.rglob("*.html")):
        for link, line in _parse(page_path, cache).links:
            if urlsplit(link).scheme in ("http", "https"):
                found.setdefault(link.split("#", 1)[0], []).append(f"{page_path.relative_to(site)}:{line}")
    return found


#: Sent with every request: some servers refuse Python's default agent outright.
USER_AGENT = "tabbook-linkcheck (+https://pypi.org/project/tabbook/)"


def check_url(url: str, timeout: float = 15.0) -> str | None:
    """None when ``url`` answers below 400 (redirects followed), else why it is broken."""
    for method in ("HEAD", "GET"):
        request = urllib.request.Request(url, method=method, headers={"User-Agent": USER_AGENT})
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310 - http(s) only
                if response.status < 400:
                    return None
                status = f"HTTP {response.status}"
        except urllib.error.HTTPError as exc:
            status = f"HTTP {exc.code}"
            if method == "HEAD" and exc.code in (403, 405, 501):  # HEAD refused: ask with GET
                continue
            return status
        except (urllib.error.URLError, OSError, ValueError) as exc:
            reason = getattr(exc, "reason", exc)
            return f"no answer ({reason})"
        if method == "GET":
            return status
    return status


def broken_external_links(site: Path, jobs: int = 8, timeout: float = 15.0) -> list[str]:
    """``page.html:LINE: broken external link URL (why)``, once per broken address, at its first
    place; the other places that use it follow (a theme's link is on every page: one line)."""
    found = external_links(site)
    urls = sorted(found)
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        answers = list(pool.map(lambda u: check_url(u, timeout), urls))
    problems = []
    for url, why in zip(urls, answers, strict=True):
        if why is not None:
            first, *others = found[url]
            more = f"; also {', '.join(others[:3])}{f' and {len(others) - 3} more' if len(others) > 3 else ''}"
            problems.append(f"{first}: broken external link {url} ({why}{more if others else ''})")
    return sorted(problems)


def report_broken_links(site: Path, external: bool = False) -> int:
    """``tabbook linkcheck [SITE] [--external]``: print every broken link; 1 if there is any."""
    problems = broken_links(site)
    for p in problems:
        print(p, file=sys.stderr)
    print(f"[linkcheck] {len(problems)} broken internal links in {site}")
    if external:
        count = len(external_links(site))
        outside = broken_external_links(site)
        for p in outside:
            print(p, file=sys.stderr)
        print(f"[linkcheck] {len(outside)} broken external links ({count} addresses asked)")
        problems += outside
    return 1 if problems else 0
