"""``linkcheck --external`` asks each external address's server (issue 29, item 2).

A local HTTP server stands in for the web (no network): one address answers, one is missing,
one refuses HEAD but answers GET, one redirects to a page that answers, and one port has
no server at all.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tabbook.render.linkcheck import broken_external_links, external_links, report_broken_links

ROOT = Path(__file__).resolve().parent.parent


class _Handler(BaseHTTPRequestHandler):
    asked: list[tuple[str, str]] = []

    def _answer(self, with_body: bool) -> None:
        self.asked.append((self.command, self.path))
        if self.path == "/no-head" and self.command == "HEAD":
            self.send_response(405)
        elif self.path == "/moved":
            self.send_response(301)
            self.send_header("Location", "/ok")
        elif self.path in ("/ok", "/no-head"):
            self.send_response(200)
        else:
            self.send_response(404)
        self.send_header("Content-Length", "2" if with_body else "0")
        self.end_headers()
        if with_body:
            self.wfile.write(b"ok")

    def do_HEAD(self) -> None:  # noqa: N802 - http.server's name
        self._answer(False)

    def do_GET(self) -> None:  # noqa: N802
        self._answer(True)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    _Handler.asked = []
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _site(tmp_path: Path, base: str, dead: str) -> Path:
    site = tmp_path / "html"
    (site / "chap").mkdir(parents=True)
    (site / "index.html").write_text(
        f'<html><body>\n<a href="{base}/ok">fine</a>\n<a href="{base}/missing">gone</a>\n'
        f'<a href="chap/page.html#here">internal</a>\n<a href="{base}/ok#part">fine again</a>\n</body></html>\n')
    (site / "chap" / "page.html").write_text(
        f'<html><body><h1 id="here">x</h1>\n<a href="{base}/missing">gone again</a>\n'
        f'<a href="{base}/no-head">head refused</a>\n<a href="{base}/moved">moved</a>\n'
        f'<img src="{dead}/pic.png">\n<a href="mailto:someone@example.org">mail</a>\n</body></html>\n')
    return site


def test_external_links_are_asked_once_each_and_broken_ones_located(tmp_path: Path, server: str) -> None:
    dead = f"http://127.0.0.1:{_closed_port()}"
    site = _site(tmp_path, server, dead)
    found = external_links(site)
    assert sorted(found) == sorted([f"{server}/ok", f"{server}/missing", f"{server}/no-head", f"{server}/moved",
                                    f"{dead}/pic.png"])
    assert found[f"{server}/ok"] == ["index.html:2", "index.html:5"]  # the fragment is not another address
    problems = broken_external_links(site, timeout=5)
    assert problems == [f"chap/page.html:2: broken external link {server}/missing (HTTP 404; also index.html:3)",
                        f"chap/page.html:5: broken external link {dead}/pic.png (no answer "
                        f"([Errno 111] Connection refused))"]
    heads = [path for method, path in _Handler.asked if method == "HEAD"]
    assert sorted(heads) == ["/missing", "/moved", "/no-head", "/ok"]  # each address once
    assert [path for _, path in _Handler.asked].count("/ok") == 2  # and /moved's redirect followed
    assert ("GET", "/no-head") in _Handler.asked  # HEAD refused: asked again with GET


def test_internal_check_alone_asks_no_server(tmp_path: Path, server: str, capsys: pytest.CaptureFixture) -> None:
    site = _site(tmp_path, server, f"http://127.0.0.1:{_closed_port()}")
    assert report_broken_links(site) == 0
    assert _Handler.asked == []
    assert report_broken_links(site, external=True) == 1
    out = capsys.readouterr()
    assert "[linkcheck] 2 broken external links (5 addresses asked)" in out.out
    assert "chap/page.html:2: broken external link" in out.err


def test_command_line_external_flag(tmp_path: Path, server: str) -> None:
    site = _site(tmp_path, server, f"http://127.0.0.1:{_closed_port()}")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    run = [sys.executable, "-m", "tabbook", "linkcheck", str(site)]
    plain = subprocess.run(run, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert plain.returncode == 0 and "0 broken internal links" in plain.stdout
    asked = subprocess.run([*run, "--external"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert asked.returncode == 1
    assert f"chap/page.html:2: broken external link {server}/missing (HTTP 404; also index.html:3)" in asked.stderr


def test_build_linkcheck_target_with_external(tmp_path: Path, server: str) -> None:
    """d2lbook's ``build linkcheck`` target: internal links always, external ones with --external."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TABBOOK_CACHE": str(tmp_path / ".cache"), "TABBOOK_WARM": "0"}
    env.pop("TABBOOK_OVERLAY", None)

    def tabbook(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "tabbook", *args], cwd=cwd, env=env, capture_output=True,
                              text=True, timeout=600)

    assert tabbook(tmp_path, "new", "mybook").returncode == 0
    book = tmp_path / "mybook"
    page = book / "averages.md"
    page.write_text(page.read_text() + f"\nSee [the data]({server}/missing) and [the notes]({server}/ok).\n")
    plain = tabbook(book, "build", "linkcheck")
    assert plain.returncode == 0, plain.stderr
    assert "0 broken internal links" in plain.stdout and "external" not in plain.stdout
    assert _Handler.asked == []
    asked = tabbook(book, "build", "linkcheck", "--external")
    assert asked.returncode == 1
    # The theme's own links (Sphinx, Furo) are asked too: broken here, where only the local
    # server answers; the book's two links are what this test checks.
    broken = [line for line in asked.stderr.splitlines() if server in line]
    assert len(broken) == 1 and broken[0].startswith("averages.html:"), asked.stderr
    assert broken[0].endswith(f": broken external link {server}/missing (HTTP 404)")
    assert ("HEAD", "/ok") in _Handler.asked
