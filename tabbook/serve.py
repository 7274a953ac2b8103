"""``make serve``: a live preview. Serves ``build/html`` on localhost and rebuilds on save.

Usage: ``python -m tabbook.serve [-C BOOK] [--port 8000] [--host 127.0.0.1] [--no-build]``.

It watches the book's Markdown (every page, as ``tabbook check`` finds them), ``config.ini``,
``img/``, ``static/``, ``references.bib`` and the site's own ``tabbook/static``; after a save it runs
``python -m tabbook build``, which reuses the freeze store: a prose edit re-renders that page and
starts no kernel, a code edit executes only that (section, framework). Pages open in a browser
reload themselves once the build is done (a small script the server adds to each HTML response; the
files in ``build/html`` are not changed) and show the error when a build fails.
"""

from __future__ import annotations

import argparse
import functools
import http.server
import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from tabbook.config import Config, load_config

POLL_SECONDS = 0.4
SETTLE_SECONDS = 0.3  # editors write in several steps: wait for quiet
STATUS_PATH = "/__tabbook__/status"
RELOAD_SNIPPET = """<script>/* tabbook serve: live reload (not part of the built site) */
(() => { let seen = null; const bar = document.createElement("div");
  bar.style.cssText = "position:fixed;left:0;right:0;bottom:0;z-index:99;padding:.5em 1em;" +
    "font:13px/1.4 monospace;white-space:pre-wrap;background:#b00020;color:#fff;max-height:40vh;overflow:auto";
  async function poll() {
    try {
      const s = await (await fetch("__STATUS__", {cache: "no-store"})).json();
      if (seen !== null && s.version !== seen) { location.reload(); return; }
      seen = s.version;
      if (s.error) { bar.textContent = "build failed:\\n" + s.error; document.body.append(bar); }
      else bar.remove();
    } catch (e) { /* server restarting */ }
    setTimeout(poll, 700);
  }
  poll(); })();
</script>""".replace("__STATUS__", STATUS_PATH)


def watched_files(config: Config) -> list[Path]:
    """Every file whose change should rebuild the site."""
    from tabbook.source.check import book_markdown_files

    files = list(book_markdown_files(config))
    for name in ("config.ini", "references.bib", "conf.py"):
        if (config.root / name).is_file():
            files.append(config.root / name)
    dirs = [config.root / "img", config.root / "static", Path(__file__).resolve().parent / "render" / "static"]
    for d in dirs:
        if d.is_dir():
            files += [p for p in d.rglob("*") if p.is_file()]
    return files


def snapshot(files: Iterable[Path]) -> dict[Path, tuple[int, int]]:
    out: dict[Path, tuple[int, int]] = {}
    for f in files:
        try:
            st = f.stat()
        except OSError:
            continue
        out[f] = (st.st_mtime_ns, st.st_size)
    return out


def changes(old: dict[Path, tuple[int, int]], new: dict[Path, tuple[int, int]]) -> list[Path]:
    """Files added, removed or modified between two snapshots."""
    return sorted({p for p in old.keys() | new.keys() if old.get(p) != new.get(p)})


def inject(html: bytes, snippet: str = RELOAD_SNIPPET) -> bytes:
    """``html`` with the live-reload script before ``</body>`` (appended when there is none)."""
    tag = b"</body>"
    at = html.rfind(tag)
    code = snippet.encode()
    return html[:at] + code + html[at:] if at >= 0 else html + code


class Status:
    """The build counter and last error, shared between the builder loop and the HTTP handler."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.version = 0
        self.error = ""

    def set(self, ok: bool, error: str = "") -> None:
        with self.lock:
            if ok:
                self.version += 1
            self.error = error

    def as_json(self) -> bytes:
        with self.lock:
            return json.dumps({"version": self.version, "error": self.error}).encode()


class PreviewHandler(http.server.SimpleHTTPRequestHandler):
    status: Status

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass

    def end_headers(self) -> None:
        self.send_header("Cache-Control", "no-store")
        super().end_headers()

    def do_GET(self) -> None:  # noqa: N802
        if self.path.split("?")[0] == STATUS_PATH:
            self._send(200, "application/json", self.status.as_json())
            return
        path = Path(self.translate_path(self.path))
        if path.is_dir():
            path = path / "index.html"
        if path.suffix == ".html" and path.is_file():
            self._send(200, "text/html; charset=utf-8", inject(path.read_bytes()))
            return
        super().do_GET()

    def _send(self, code: int, ctype: str, body: bytes) -> None:
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def run_build(root: Path, log: Callable[[str], None] = print) -> tuple[bool, str]:
    """One ``tabbook build`` in a child process (a fresh interpreter sees edited config)."""
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "tabbook", "-C", str(root), "build"],
                          capture_output=True, text=True)
    out = (proc.stdout + proc.stderr).strip()
    for line in out.splitlines()[-12:]:
        log(f"  {line}")
    log(f"[serve] build {'ok' if proc.returncode == 0 else 'FAILED'} in {time.monotonic() - t0:.1f}s")
    return proc.returncode == 0, "" if proc.returncode == 0 else out[-4000:]


def serve_forever(root: Path, host: str, port: int, build_first: bool = True,
                  build: Callable[[Path], tuple[bool, str]] = run_build,
                  stop: threading.Event | None = None, ready: Callable[[str], None] | None = None) -> None:
    config = load_config(root)
    html = config.build_dir / "html"
    status = Status()
    if build_first or not (html / "index.html").is_file():
        ok, err = build(root)
        status.set(ok, err)
    html.mkdir(parents=True, exist_ok=True)
    handler = type("Handler", (PreviewHandler,), {"status": status})
    httpd = http.server.ThreadingHTTPServer((host, port), functools.partial(handler, directory=str(html)))
    url = f"http://{host}:{httpd.server_port}/"
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    print(f"[serve] {url}  (watching {config.rel(config.root) or '.'}; Ctrl-C stops)", flush=True)
    if ready:
        ready(url)
    stop = stop or threading.Event()
    seen = snapshot(watched_files(config))
    try:
        while not stop.wait(POLL_SECONDS):
            now = snapshot(watched_files(config))
            if not changes(seen, now):
                continue
            while True:  # let a burst of saves finish
                time.sleep(SETTLE_SECONDS)
                later = snapshot(watched_files(config))
                if not changes(now, later):
                    break
                now = later
            changed = changes(seen, now)
            seen = now
            print(f"[serve] changed: {', '.join(config.rel(p) for p in changed[:5])}"
                  + (f" and {len(changed) - 5} more" if len(changed) > 5 else ""), flush=True)
            ok, err = build(root)
            status.set(ok, err)
            seen = snapshot(watched_files(config))  # the build may have written watched files
    except KeyboardInterrupt:
        print("\n[serve] stopped", flush=True)
    finally:
        httpd.shutdown()
        httpd.server_close()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tabbook.serve", description=__doc__.split("\n\n")[0])
    p.add_argument("-C", "--root", type=Path, default=Path.cwd(), help="book root (holds config.ini)")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default: localhost only)")
    p.add_argument("--port", type=int, default=8000, help="0 picks a free port")
    p.add_argument("--no-build", action="store_true", help="serve the existing build/html first")
    args = p.parse_args(argv)
    serve_forever(args.root.resolve(), args.host, args.port, build_first=not args.no_build)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
