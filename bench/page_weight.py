"""Page weight of the reader's site: what a first visit to each page downloads, in headless Chromium.

Each page is opened in a fresh browser context (empty cache) from a local server; every response
the page causes until the network is idle is summed (body + headers): the HTML, stylesheets,
scripts, fonts, and the images it shows. Lazy images in closed tabs or far below are not fetched
by a browser on first load; the "all images" column adds them anyway (sizes on disk), as the
worst case of a reader who opens every tab and scrolls to the end. "gzip" is what the same bytes
weigh compressed, as most static hosts send them.

Budget: the heaviest chapter page ≤ 300 kB. d2lbook's weight for the same page is measured, on
d2lbook's own build of the chapter, by ``bench/d2lbook_chapter.py`` (no fixed figure here).

Usage: ``.venv/bin/python bench/page_weight.py [--site build/html] [--json]``. Without a built
site (``make html``) it builds the browser tests' small book into a temp dir and measures that.
"""

from __future__ import annotations

import argparse
import gzip
import json
import shutil
import sys
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from urllib.parse import unquote, urlsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "browser"))
sys.path.insert(1, str(ROOT / "tests"))  # the browser fixtures import tests/prerequisites.py

from conftest import BOOK, CHROMIUM, CHROMIUM_ARGS, build_book, serve  # noqa: E402

BUDGET = 300_000
SKIP = {"search.html", "genindex.html", "py-modindex.html"}


@dataclass
class Weight:
    page: str
    bytes: int = 0  # first load: bodies + headers of every response
    gzip: int = 0  # the same bodies gzip-compressed (+ headers)
    requests: int = 0
    all_images: int = 0  # first load + every image of the page not fetched yet (disk size)
    foreign: list[str] = field(default_factory=list)  # requests to another origin (must be none)
    assets: list[tuple[str, int]] = field(default_factory=list)


def _local_file(site: Path, origin: str, url: str) -> Path | None:
    if not url.startswith(origin):
        return None
    path = unquote(urlsplit(url).path).lstrip("/") or "index.html"
    f = site / path
    return f if f.is_file() else None


def measure(site: Path, pages: list[str]) -> list[Weight]:
    from playwright.sync_api import sync_playwright

    server = serve(site)
    origin = server.url
    out: list[Weight] = []
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            for rel in pages:
                ctx = browser.new_context(viewport={"width": 1280, "height": 900})
                page = ctx.new_page()
                done: list = []

                def keep(request: object, done: list = done) -> None:
                    done.append(request)

                page.on("requestfinished", keep)
                page.goto(f"{origin}/{rel}", wait_until="networkidle")
                w = Weight(rel)
                fetched: set[str] = set()
                for req in done:
                    sizes = req.sizes()
                    body, headers = sizes["responseBodySize"], sizes["responseHeadersSize"]
                    w.bytes += body + headers
                    w.requests += 1
                    local = _local_file(site, origin, req.url)
                    packed = len(gzip.compress(local.read_bytes(), 6)) if local else body
                    w.gzip += min(packed, body) + headers
                    w.assets.append((req.url[len(origin):] if req.url.startswith(origin) else req.url, body))
                    fetched.add(req.url.split("?")[0])
                    if not req.url.startswith(origin) and not req.url.startswith("data:"):
                        w.foreign.append(req.url)
                extra = 0
                for src in set(page.eval_on_selector_all("img[src]", "imgs => imgs.map(i => i.src)")):
                    local = _local_file(site, origin, src)
                    if src.split("?")[0] not in fetched and local:
                        extra += local.stat().st_size
                w.all_images = w.bytes + extra
                out.append(w)
                ctx.close()
            browser.close()
    finally:
        server.httpd.shutdown()
        server.httpd.server_close()
    return out


def kb(n: int) -> str:
    return f"{n / 1000:7.1f} kB"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--site", type=Path, default=ROOT / "build" / "html", help="built HTML (default build/html)")
    ap.add_argument("--json", action="store_true", help="print the measurements as JSON")
    ap.add_argument("--assets", action="store_true", help="list what the heaviest page loads")
    args = ap.parse_args()
    if not Path(CHROMIUM).exists():
        print(f"no Chromium at {CHROMIUM}: run scripts/install-browser.sh", file=sys.stderr)
        return 2
    tmp: Path | None = None
    site = args.site
    label = str(site)
    if not (site / "index.html").is_file():
        tmp = Path(tempfile.mkdtemp(prefix="tabbook-weight-"))
        shutil.copytree(BOOK, tmp / "book")
        print(f"{site} has no built site (make html); measuring the browser tests' book instead", file=sys.stderr)
        site = build_book(tmp / "book")
        label = "tests/browser/book (fixture)"
    try:
        pages = sorted(p.relative_to(site).as_posix() for p in site.rglob("*.html")
                       if p.name not in SKIP and not p.relative_to(site).parts[0].startswith("_"))
        weights = measure(site, pages)
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)
    if args.json:
        print(json.dumps([asdict(w) for w in weights], indent=1))
        return 0
    chapter = [w for w in weights if w.page.startswith("chapter")] or weights
    heaviest = max(chapter, key=lambda w: w.bytes)
    print(f"page weight, first load in headless Chromium, site: {label}")
    print(f"{'page':<44} {'first load':>10} {'gzip':>10} {'all images':>10} {'requests':>8}")
    for w in sorted(weights, key=lambda w: -w.bytes):
        print(f"{w.page:<44} {kb(w.bytes)} {kb(w.gzip)} {kb(w.all_images)} {w.requests:8d}")
    print()
    print(f"heaviest chapter page: {heaviest.page}")
    print(f"  tabbook   {kb(heaviest.bytes)}  (gzip {kb(heaviest.gzip).strip()})  budget {kb(BUDGET).strip()}"
          f"  -> {'OK' if heaviest.bytes <= BUDGET else 'OVER BUDGET'}")
    print("  (d2lbook's build of the same page: bench/d2lbook_chapter.py measures it)")
    foreign = sorted({u for w in weights for u in w.foreign})
    print(f"  requests to other origins: {len(foreign)}" + "".join(f"\n    {u}" for u in foreign))
    if args.assets:
        for url, size in sorted(heaviest.assets, key=lambda a: -a[1]):
            print(f"    {kb(size)}  {url}")
    return 0 if heaviest.bytes <= BUDGET and not foreign else 1


if __name__ == "__main__":
    raise SystemExit(main())
