"""Check that every internal link and anchor of a built site resolves.

Sphinx's own linkcheck is about external URLs; this walks ``build/html`` with
the standard library's HTML parser and checks ``href``/``src`` targets inside
the site: the file exists and, for ``#fragment``, an element with that id (or
a named anchor) exists in the target page. ``python -m tabbook linkcheck DIR``.
"""

from __future__ import annotations

import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()
        self.links: list[tuple[str, int]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if value is None:
                continue
            if name == "id" or (tag == "a" and name == "name"):
                self.ids.add(value)
            elif (name == "href" and tag in ("a", "link")) or (name == "src" and tag in ("img", "script")):
                self.links.append((value, self.getpos()[0]))


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
        for link, line in page.links:
            parts = urlsplit(link)
            if parts.scheme or parts.netloc or link.startswith(("mailto:", "javascript:", "data:")):
                continue
            target = page_path if not parts.path else (page_path.parent / unquote(parts.path)).resolve()
            if target.is_dir():
                target = target / "index.html"
            where = f"{page_path.relative_to(site)}:{line}"
            if not target.is_file() or site not in (target, *target.parents):
                problems.append(f"{where}: broken link {link}")
                continue
            frag = unquote(parts.fragment)
            if frag and target.suffix == ".html" and frag not in _parse(target, cache).ids:
                problems.append(f"{where}: missing anchor #{frag} in {target.relative_to(site)}")
    return problems


def report_broken_links(site: Path) -> int:
    """``python -m tabbook linkcheck [SITE]``: print every broken link; 1 if there is any."""
    problems = broken_links(site)
    for p in problems:
        print(p, file=sys.stderr)
    print(f"[linkcheck] {len(problems)} broken internal links in {site}")
    return 1 if problems else 0
