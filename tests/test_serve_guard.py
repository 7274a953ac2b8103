"""The live preview answers only local names and its own pages (issue 49, item 3).

A real ``tabbook serve`` on 127.0.0.1 is asked with real HTTP requests and websocket handshakes:
a foreign ``Host`` (DNS rebinding: an attacker's name pointed at 127.0.0.1) and a foreign
``Origin`` (another site's page) are refused, local names with the port are served. The warm
builder is no HTTP server: it listens on a Unix socket, checks its peer's user and reads nothing
from a connection that does not start with its own request byte.
"""

from __future__ import annotations

import base64
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tabbook.new import new_book
from tabbook.serve import LocalOnly, allowed_hosts


def _ask(port: int, request: str) -> tuple[int, bytes]:
    """Send one raw HTTP/1.1 request to 127.0.0.1:port; the status and the whole reply."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(request.encode("latin-1"))
        reply = b""
        while b"\r\n\r\n" not in reply or (not reply.startswith(b"HTTP/1.1 101") and not _complete(reply)):
            chunk = sock.recv(65536)
            if not chunk:
                break
            reply += chunk
    return int(reply.split(b" ", 2)[1]), reply


def _complete(reply: bytes) -> bool:
    head, _, body = reply.partition(b"\r\n\r\n")
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            return len(body) >= int(line.split(b":", 1)[1])
    return False


def _get(port: int, path: str, host: str, origin: str | None = None) -> tuple[int, bytes]:
    extra = f"Origin: {origin}\r\n" if origin is not None else ""
    return _ask(port, f"GET {path} HTTP/1.1\r\nHost: {host}\r\n{extra}Connection: close\r\n\r\n")


def _handshake(port: int, host: str, origin: str | None) -> int:
    key = base64.b64encode(os.urandom(16)).decode()
    extra = f"Origin: {origin}\r\n" if origin is not None else ""
    status, _ = _ask(port, f"GET /websocket-reload HTTP/1.1\r\nHost: {host}\r\n{extra}Upgrade: websocket\r\n"
                           f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n")
    return status


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def preview(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    """``tabbook serve --no-build`` of a new book whose build/html holds one page; its port."""
    book = tmp_path_factory.mktemp("serve") / "book"
    new_book(book)
    html = book / "build" / "html"
    html.mkdir(parents=True)
    (html / "index.html").write_text("<!doctype html><title>draft</title><p>a draft page</p>\n")
    port = _free_port()
    env = {**os.environ, "TABBOOK_WARM": "0"}
    proc = subprocess.Popen([sys.executable, "-m", "tabbook", "-C", str(book), "serve", "--no-build",
                             "--port", str(port)], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 120
        while True:  # bounded: the server's start-up (it preloads Sphinx)
            assert proc.poll() is None, proc.stdout.read().decode() if proc.stdout else ""
            try:
                if _get(port, "/", f"127.0.0.1:{port}")[0] == 200:
                    break
            except OSError:
                pass
            assert time.monotonic() < deadline, "the preview did not start"
            time.sleep(0.2)
        yield port
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.mark.parametrize("name", ["127.0.0.1", "localhost", "LocalHost"])
def test_local_names_with_the_port_are_served(preview: int, name: str) -> None:
    status, reply = _get(preview, "/", f"{name}:{preview}")
    assert status == 200 and b"a draft page" in reply
    status, reply = _get(preview, "/_preview-status.json", f"{name}:{preview}", origin=f"http://{name}:{preview}")
    assert status == 200 and json.loads(reply.partition(b"\r\n\r\n")[2]) == {"ok": True, "error": ""}


@pytest.mark.parametrize("host", ["attacker.example:{port}", "attacker.example", "127.0.0.1",
                                  "localhost:1", "127.0.0.1:{port}.attacker.example", "localhost.:{port}"])
def test_a_foreign_host_is_refused(preview: int, host: str) -> None:
    """DNS rebinding: the browser sends the attacker's name. Neither the page nor the status
    file (which holds the draft's error messages) is served."""
    for path in ("/", "/_preview-status.json", "/index.html"):
        status, reply = _get(preview, path, host.format(port=preview))
        assert status == 403, reply
        assert b"a draft page" not in reply and b'"ok"' not in reply


def test_a_request_without_host_or_with_two_is_refused(preview: int) -> None:
    status, _ = _ask(preview, f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{preview}\r\nHost: attacker.example\r\n"
                              "Connection: close\r\n\r\n")
    assert status in (400, 403)
    status, _ = _ask(preview, "GET / HTTP/1.0\r\n\r\n")
    assert status in (400, 403)


@pytest.mark.parametrize("origin", ["http://attacker.example", "null", "https://127.0.0.1:{port}",
                                    "http://127.0.0.1:1"])
def test_a_foreign_origin_is_refused(preview: int, origin: str) -> None:
    status, reply = _get(preview, "/_preview-status.json", f"127.0.0.1:{preview}", origin.format(port=preview))
    assert status == 403 and b'"ok"' not in reply


def test_the_reload_websocket_refuses_a_foreign_origin_or_host(preview: int) -> None:
    here = f"127.0.0.1:{preview}"
    assert _handshake(preview, here, f"http://{here}") == 101
    assert _handshake(preview, f"localhost:{preview}", f"http://localhost:{preview}") == 101
    assert _handshake(preview, here, None) == 101  # a program on this machine, not a page
    assert _handshake(preview, here, "http://attacker.example") == 403
    assert _handshake(preview, here, "null") == 403
    assert _handshake(preview, f"attacker.example:{preview}", f"http://attacker.example:{preview}") == 403


def test_allowed_hosts() -> None:
    assert allowed_hosts("127.0.0.1", 8000) == {"localhost:8000", "127.0.0.1:8000", "[::1]:8000"}
    assert allowed_hosts("0.0.0.0", 8000) == {"localhost:8000", "127.0.0.1:8000", "[::1]:8000"}
    assert "192.168.1.5:8000" in allowed_hosts("192.168.1.5", 8000)  # bound by name: asked for
    assert "[fe80::1]:8000" in allowed_hosts("fe80::1", 8000)
    assert "localhost" in allowed_hosts("127.0.0.1", 80) and "localhost" not in allowed_hosts("127.0.0.1", 81)


def test_lifespan_passes_through() -> None:
    """The app's start-up and shut-down (sphinx-autobuild's watcher) are not requests."""
    import asyncio

    seen: list[str] = []

    async def app(scope: dict, receive: object, send: object) -> None:
        seen.append(scope["type"])

    # On a loop of its own in a thread: in the full suite an earlier test leaves an event loop
    # marked running in the main thread, where asyncio.run refuses to start.
    worker = threading.Thread(target=lambda: asyncio.run(
        LocalOnly(app, "127.0.0.1", 8000)({"type": "lifespan"}, None, None)))
    worker.start()
    worker.join(30)
    assert seen == ["lifespan"]


def test_the_warm_builder_is_no_http_server(tmp_path: Path) -> None:
    """The warm builder listens on a Unix socket in a private folder (no browser reaches one, so
    there is no Host or Origin to check) and checks its peer's user (``SO_PEERCRED``); an
    HTTP request on it is not a build request and runs nothing."""
    from tabbook.warm.server import Server

    path = tmp_path / "builder.sock"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    listener.listen(1)
    ran: list[list[str]] = []
    server = Server(listener, lambda argv, *, sphinx: ran.append(argv) or 0, preloaded=None)  # type: ignore[arg-type]
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
        client.settimeout(10)
        client.connect(str(path))
        client.sendall(b"GET / HTTP/1.1\r\nHost: attacker.example\r\nOrigin: http://attacker.example\r\n\r\n")
        assert server._accept() is False
        try:
            said = client.recv(100)
        except ConnectionResetError:  # closed with the request unread
            said = b""
        assert said == b""  # hung up on, nothing said
    assert server.builds == {} and ran == []
    assert listener.family == socket.AF_UNIX
    listener.close()
