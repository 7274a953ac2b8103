"""From saving a prose edit to seeing it in the browser: ``make serve`` beside sphinx-autobuild.

Both live previews serve the generated book of ``bench/peer_mystnb.py`` (N pages, three numpy
cells each; built once before timing): tabbook's ``serve`` on the tabbook book, and plain
sphinx-autobuild (the peer stack: Sphinx + myst-nb with its execution cache, same pinned
versions) on the peer's. A headless Chromium keeps the middle page open; each round appends a
sentence to that page's Markdown and times from the write until the open page shows it (both
servers reload it through their websocket). The tools alternate round by round; the median and
the range are printed, with issue 18's target (≤ 1 s for tabbook).

Usage: ``.venv/bin/python bench/serve_latency.py [--pages 40] [--repeat 5]``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import peer_mystnb  # noqa: E402  (bench/ is not a package)

ROOT = peer_mystnb.ROOT
TARGET_S = 1.0


def wait_for_url(proc: subprocess.Popen[str], url: str, timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while True:
        if proc.poll() is not None:
            raise SystemExit(f"the server exited ({proc.returncode}) before serving {url}")
        try:
            with urllib.request.urlopen(url, timeout=5) as response:
                if response.status == 200:
                    return
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise SystemExit(f"nothing served at {url} after {timeout} s")
        time.sleep(0.2)


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(name: str, root: Path, port: int, log: Path) -> subprocess.Popen[str]:
    py = str(ROOT / ".venv" / "bin" / "python")
    if name == "tabbook":
        cmd = [py, "-m", "tabbook", "-C", str(root), "serve", "--port", str(port)]
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
    else:
        cmd = [str(ROOT / ".venv" / "bin" / "sphinx-autobuild"), "-q", ".", "_build/html", "--port", str(port),
               "--ignore", str(root / "_cache"), "--no-initial"]
        env = {**os.environ, "JUPYTER_PATH": str(root / "jupyter")}
    with log.open("w") as out:
        return subprocess.Popen(cmd, cwd=root, env=env, stdout=out, stderr=subprocess.STDOUT, text=True,
                                start_new_session=True)


def stop(proc: subprocess.Popen[str]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGINT)
        proc.wait(timeout=20)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pages", type=int, default=40)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--workdir", type=Path)
    args = ap.parse_args(argv)
    from playwright.sync_api import sync_playwright

    python = peer_mystnb.kernel_python()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="tabbook-serve-latency-"))
    books = {}
    for cls, key, writer in ((peer_mystnb.Tabbook, "tabbook", peer_mystnb.write_tabbook_book),
                             (peer_mystnb.Peer, "sphinx-autobuild", peer_mystnb.write_peer_book)):
        root = workdir / key
        shutil.rmtree(root, ignore_errors=True)
        writer(root, args.pages, python)
        cls(root, args.pages).build()  # built once: the servers start on a current site
        books[key] = root
    middle = f"p{args.pages // 2:03d}"
    times: dict[str, list[float]] = {k: [] for k in books}
    procs, pages = {}, {}
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
        try:
            for key, root in books.items():
                port = free_port()
                procs[key] = start(key, root, port, workdir / f"{key}.log")
                url = f"http://127.0.0.1:{port}/pages/{middle}.html"
                wait_for_url(procs[key], url)
                page = browser.new_page()
                page.goto(url, wait_until="networkidle")
                pages[key] = page
            for r in range(args.repeat):
                order = list(books) if r % 2 == 0 else list(reversed(books))
                for key in order:
                    src = books[key] / "pages" / f"{middle}.md"
                    marker = f"Saved edit {key} {r}."
                    text = src.read_text()
                    at = text.index("every entry.") + len("every entry.")
                    t0 = time.perf_counter()
                    src.write_text(text[:at] + " " + marker + text[at:])
                    pages[key].wait_for_function(f"document.body.innerText.includes({marker!r})", timeout=120_000)
                    times[key].append(round(time.perf_counter() - t0, 3))
                    time.sleep(1.0)  # let the server settle (its post-build steps) before the next save
                print(f"[serve-latency] round {r + 1}: " + ", ".join(f"{k} {times[k][-1]:.2f} s" for k in order),
                      file=sys.stderr, flush=True)
        finally:
            browser.close()
            for proc in procs.values():
                stop(proc)
    med = {k: statistics.median(v) for k, v in times.items()}
    print(f"save → visible in the open page, prose edit, book of {args.pages} pages, median of {args.repeat}:")
    print("| live preview | median s | min–max | target |")
    print("| --- | ---: | ---: | --- |")
    for key, values in times.items():
        target = (f"≤ {TARGET_S} s — {'met' if med[key] <= TARGET_S else 'NOT met'}" if key == "tabbook"
                  else "–")
        print(f"| {key} | {med[key]:.2f} | {min(values):.2f}–{max(values):.2f} | {target} |")
    print(f"tabbook / sphinx-autobuild: {med['tabbook'] / med['sphinx-autobuild']:.2f}")
    if not args.workdir:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
