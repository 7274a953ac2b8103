"""``make serve``: the live preview rebuilds on save, reuses the freeze store, and reloads the page."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tabbook.serve import changes, inject, snapshot

ROOT = Path(__file__).resolve().parents[2]


def test_inject_puts_the_reload_script_before_body_end() -> None:
    out = inject(b"<html><body><p>x</p></body></html>", "<script>r()</script>")
    assert out == b"<html><body><p>x</p><script>r()</script></body></html>"
    assert inject(b"<p>x</p>", "<s>") == b"<p>x</p><s>"


def test_changes_sees_edits_additions_and_removals(tmp_path: Path) -> None:
    a, b = tmp_path / "a.md", tmp_path / "b.md"
    a.write_text("one")
    before = snapshot([a, b])
    a.write_text("one two")
    b.write_text("new")
    assert changes(before, snapshot([a, b])) == [a, b]
    b.unlink()
    assert changes(before, snapshot([a, b])) == [a]


def test_serve_rebuilds_on_save_and_reloads_the_page(browser: Any, site: Path, book_dir: Path,
                                                     tmp_path: Path) -> None:
    book = tmp_path / "book"
    shutil.copytree(book_dir, book, symlinks=True)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (env.get("PYTHONPATH"), str(ROOT)) if p)
    proc = subprocess.Popen([sys.executable, "-m", "tabbook.serve", "-C", str(book), "--port", "0", "--no-build"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("[serve] http://127.0.0.1:"), line
        url = line.split()[1]
        ctx = browser.new_context()
        page = ctx.new_page()
        page.goto(url + "other.html", wait_until="networkidle")
        assert "A second page" in page.inner_text("article")
        time.sleep(1)  # the watcher's first snapshot is taken after the server starts
        src = book / "other.md"
        src.write_text(src.read_text().replace("A second page", "An edited page"))
        page.wait_for_function("document.body.innerText.includes('An edited page')", timeout=120_000)
        report = json.loads((book / "build" / "report.json").read_text())
        assert {u["status"] for u in report["units"]} == {"reused"}  # a prose edit starts no kernel
        ctx.close()
    finally:
        proc.terminate()
        proc.wait(timeout=10)
