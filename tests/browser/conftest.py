"""Browser tests: build a small book into a temp dir, serve it on 127.0.0.1, drive Debian's Chromium.

The book (``tests/browser/book``) has three "frameworks" named like the real ones that all run in
the builder's own Python, so the build takes seconds and needs no framework environment.
Chromium is ``/usr/bin/chromium`` (``scripts/install-browser.sh`` installs it; ``$TABBOOK_CHROMIUM``
overrides); Playwright drives it through ``executable_path`` and never downloads a browser.
"""

from __future__ import annotations

import functools
import http.server
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from prerequisites import require

ROOT = Path(__file__).resolve().parents[2]
BOOK = Path(__file__).resolve().parent / "book"
CHROMIUM = os.environ.get("TABBOOK_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--no-first-run", "--disable-component-update", "--disable-sync",
]


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass


@dataclass
class Server:
    root: Path
    url: str
    httpd: http.server.ThreadingHTTPServer


def serve(root: Path) -> Server:
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(QuietHandler, directory=str(root)))
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return Server(root, f"http://127.0.0.1:{httpd.server_port}", httpd)


def build_book(book: Path) -> Path:
    """Build ``book`` with the repository's builder; returns its ``build/html``."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (env.get("PYTHONPATH"), str(ROOT)) if p)
    proc = subprocess.run([sys.executable, "-m", "tabbook", "-C", str(book), "build"],
                          cwd=book, env=env, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(f"building the test book failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return book / "build" / "html"


@pytest.fixture(scope="session", name="build_book")
def build_book_fixture() -> Any:
    """:func:`build_book`, for tests that rebuild a changed copy of the book."""
    return build_book


@pytest.fixture(scope="session")
def serve_dir() -> Any:
    """:func:`serve`: a static server for another directory (stop it with ``.httpd.shutdown()``)."""
    return serve


@pytest.fixture(scope="session")
def book_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    book = tmp_path_factory.mktemp("browser") / "book"
    shutil.copytree(BOOK, book)
    return book


@pytest.fixture(scope="session")
def site(book_dir: Path) -> Path:
    return build_book(book_dir)


@pytest.fixture(scope="session")
def server(site: Path) -> Iterator[Server]:
    srv = serve(site)
    yield srv
    srv.httpd.shutdown()
    srv.httpd.server_close()


#: The book itself as `make html` built it (`make test` builds it before the tests: frozen-site).
REAL_SITE = ROOT / "build" / "html"


@pytest.fixture(scope="session")
def real_server() -> Iterator[Server]:
    """:data:`REAL_SITE`, served (tests that need it are skipped, or fail under `make test`,
    when it is not built)."""
    srv = serve(REAL_SITE)
    yield srv
    srv.httpd.shutdown()
    srv.httpd.server_close()


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    require(Path(CHROMIUM).exists(), f"no Chromium at {CHROMIUM} (scripts/install-browser.sh installs Debian's)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is in envs/builder.txt")
    with sync_api.sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


@dataclass
class Watch:
    """What a page did: every request, console errors, uncaught exceptions, dialogs."""

    requests: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)

    def foreign(self, origin: str) -> list[str]:
        return [u for u in self.requests if not (u.startswith(origin + "/") or u.startswith("data:"))]


def watch(page: Any) -> Watch:
    w = Watch()
    page.on("request", lambda r: w.requests.append(r.url))
    page.on("console", lambda m: w.errors.append(f"console.{m.type}: {m.text}") if m.type == "error" else None)
    page.on("pageerror", lambda e: w.errors.append(f"pageerror: {e}"))

    def on_dialog(d: Any) -> None:
        w.dialogs.append(d.message)
        d.dismiss()

    page.on("dialog", on_dialog)
    return w


@pytest.fixture
def context(browser: Any) -> Iterator[Any]:
    ctx = browser.new_context(viewport={"width": 1280, "height": 900})
    yield ctx
    ctx.close()


@pytest.fixture
def page(context: Any) -> Any:
    p = context.new_page()
    p.watch = watch(p)
    return p
