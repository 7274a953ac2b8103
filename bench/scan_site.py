"""Scan a built site for dialect constructs that leaked through unrendered.

Reads every ``*.html`` under SITE_DIR and counts, per construct, what a reader would see
verbatim: the dialect's roles and attribute lines (``:numref:``, ``:label:``, ``:begin_tab:`` …)
and MyST that was not parsed (``{numref}`…```, a ```` ```{table} ```` line) in prose; slide
marks (``(**``/``**)``, ``[**``/``**]``, or ``(**x**)`` rendered as ``(<strong>x</strong>)``);
``$`` outside math (not a price, ``$5``); ``%%tab`` lines, a ``#@tab`` first line and
``#@hide``/``#@raises`` lines shown in code; empty tabs (a tab whose panel has no code and no
text); and references Sphinx could not resolve (bare text, not a link: a ``:numref:`` to a label
that names no figure or table). Lone ``#@save`` lines and ``#@tab`` lines inside a cell are
listed but not counted: d2lbook shows them as well.

Prose means text outside ``pre``, ``code``, rendered math, scripts and styles, so literal code
that shows the dialect is not counted.

Usage: ``.venv/bin/python bench/scan_site.py SITE_DIR [--examples N]``. Prints each construct's
count with example ``file: snippet`` lines; exits 1 if anything was found, 0 otherwise.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import defaultdict
from pathlib import Path

from bs4 import BeautifulSoup, NavigableString, Tag

#: Elements whose text is not prose: code, rendered math, scripts.
SKIP_TAGS = {"pre", "code", "script", "style", "math", "annotation", "kbd", "samp", "textarea"}
SKIP_CLASSES = {"math", "katex", "katex-display", "highlight"}
#: Pages that are generated (search, index) and hold no book prose.
SKIP_PAGES = {"search.html", "genindex.html", "py-modindex.html"}

PROSE = {
    "raw :numref:/:ref:": re.compile(r":(?:numref|ref):`?"),
    "raw :eqref:": re.compile(r":eqref:`?"),
    "raw :cite:/:citet:/:citep:": re.compile(r":cite[tp]?:`?"),
    "raw :label:/:eqlabel:/:width:": re.compile(r":(?:label|eqlabel|width):`?"),
    "raw :begin_tab:/:end_tab:": re.compile(r":(?:begin_tab|end_tab):"),
    "raw :bibliography:": re.compile(r":bibliography:`"),
    "unparsed MyST role": re.compile(r"\{(?:numref|ref|eq|cite:[pt]|cite|doc)\}`"),
    "unparsed MyST directive": re.compile(r"(?:```|~~~|:::)\s*\{[\w-]+\}"),
    "slide mark (** / **)": re.compile(r"\(\*\*|\*\*\)|\[\*\*|\*\*\]|\(~~|~~\)|\[~~|~~\]"),
    # a dollar sign before a digit is a price ("$1 million"), not math
    "stray $": re.compile(r"\$(?!\d)"),
}
CODE = {
    "%%tab in code": re.compile(r"^\s*%%tab\b", re.M),
    "#@tab as a cell's first line": re.compile(r"\A\s*#\s*@tab\b"),
    "#@hide/#@raises line in code": re.compile(r"^\s*#\s*@(?:hide|hide_code|hide_output|raises)\b.*$", re.M),
}
#: Shown because d2lbook shows them too (comments the reader may see): listed, not counted.
INFO = {
    "#@save line in code (as d2lbook)": re.compile(r"^\s*#\s*@save\s*$", re.M),
    "#@tab inside code (as d2lbook)": re.compile(r"(?<=\n)\s*#\s*@tab\b.*$", re.M),
}
SLIDE_BOLD = "slide mark rendered as (<strong>…</strong>)"
EMPTY_TAB = "empty tab"
UNRESOLVED = "unresolved reference (:numref: to no target)"
KINDS = [*PROSE, SLIDE_BOLD, *CODE, EMPTY_TAB, UNRESOLVED]


def _skipped(node: Tag) -> bool:
    for parent in (node, *node.parents):
        if not isinstance(parent, Tag):
            continue
        if parent.name in SKIP_TAGS or SKIP_CLASSES.intersection(parent.get("class") or ()):
            return True
    return False


def _snippet(text: str, start: int, end: int, width: int = 50) -> str:
    left = max(0, start - width)
    return " ".join(text[left:end + width].split())


def _main_content(soup: BeautifulSoup) -> Tag:
    return soup.select_one("article[role=main]") or soup.select_one('[role="main"]') or soup.body or soup


def scan_page(html: str) -> dict[str, list[str]]:
    """Construct → snippets found in one page."""
    found: dict[str, list[str]] = defaultdict(list)
    main = _main_content(BeautifulSoup(html, "html.parser"))
    for text in main.find_all(string=True):
        if not isinstance(text, NavigableString) or not text.strip() or _skipped(text.parent):
            continue
        s = str(text)
        for kind, pattern in PROSE.items():
            for m in pattern.finditer(s):
                found[kind].append(_snippet(s, m.start(), m.end()))
    for strong in main.find_all("strong"):
        before, after = strong.previous_sibling, strong.next_sibling
        if (isinstance(before, NavigableString) and isinstance(after, NavigableString)
                and str(before).endswith(("(", "[")) and str(after).startswith((")", "]"))):
            found[SLIDE_BOLD].append(_snippet(str(before) + "**" + strong.get_text() + "**" + str(after),
                                              len(before), len(before) + len(strong.get_text()) + 4))
    for pre in main.find_all("pre"):
        code = pre.get_text()
        for kind, pattern in (*CODE.items(), *INFO.items()):
            for m in pattern.finditer(code):
                found[kind].append(_snippet(code, m.start(), m.end()))
    for xref in main.select(".xref"):
        if xref.find_parent("a") is None:  # Sphinx writes a reference it could not resolve as bare text
            found[UNRESOLVED].append(" ".join(xref.get("class", [])[1:3]) + ": " + xref.get_text())
    for panel in main.select(".sd-tab-content"):
        if not panel.get_text().strip() and not panel.find(["img", "svg", "iframe", "video"]):
            label = panel.find_previous_sibling("label")
            found[EMPTY_TAB].append(f"tab {label.get_text().strip() if label else '?'!r} (#{panel.get('id', '')})")
    return found


def scan_site(site: Path) -> dict[str, list[tuple[str, str]]]:
    """Construct → (page, snippet) for every ``*.html`` under ``site``."""
    out: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for page in sorted(site.rglob("*.html")):
        rel = page.relative_to(site).as_posix()
        if page.name in SKIP_PAGES or rel.startswith(("_static/", "_sources/", "_images/")):
            continue
        for kind, snippets in scan_page(page.read_text(encoding="utf-8", errors="replace")).items():
            out[kind] += [(rel, s) for s in snippets]
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("site", type=Path, help="the built HTML site, e.g. build/html")
    ap.add_argument("--examples", type=int, default=3, help="example snippets per construct (default 3)")
    args = ap.parse_args(argv)
    if not args.site.is_dir():
        ap.error(f"{args.site} is not a directory")
    found = scan_site(args.site)
    total = 0
    for kind in KINDS:
        hits = found.get(kind, [])
        total += len(hits)
        pages = len({p for p, _ in hits})
        print(f"{len(hits):6d}  {kind}" + (f"  ({pages} pages)" if hits else ""))
        for page, snippet in hits[:args.examples]:
            print(f"          {page}: {snippet}")
    print(f"{total:6d}  total")
    for kind in INFO:
        hits = found.get(kind, [])
        print(f"{len(hits):6d}  {kind}: not counted" + (f"  ({len({p for p, _ in hits})} pages)" if hits else ""))
        for page, snippet in hits[:args.examples]:
            print(f"          {page}: {snippet}")
    return 1 if total else 0


if __name__ == "__main__":
    sys.exit(main())
