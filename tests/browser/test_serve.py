"""``make serve``: sphinx-autobuild rebuilds on save, reuses the freeze store, reloads the page and
shows a failed build's error."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tabbook.config import load_config
from tabbook.serve import BUILDER_STATIC, STATUS_URL, autobuild_args, error_page, watch_rules

ROOT = Path(__file__).resolve().parents[2]
BOOK = Path(__file__).resolve().parent / "book"


def _values(args: list[str], option: str) -> list[str]:
    return [args[i + 1] for i, a in enumerate(args) if a == option]


def test_sphinx_runs_like_the_render_stage() -> None:
    from tabbook.render.sources import source_dir

    config = load_config(BOOK)
    args = autobuild_args(config, "127.0.0.1", 8123)
    build = config.build_dir
    assert args[:11] == ["-b", "html", "-c", str(BOOK), str(source_dir(config)), str(build / "html"),
                         "-d", str(build / "doctrees" / "html"), "-q", "--keep-going", "-D"]
    assert args[11] == f"tabbook_preview_status={STATUS_URL}"
    assert _values(args, "--host") == ["127.0.0.1"] and _values(args, "--port") == ["8123"]
    # No pre- or post-build commands: each rebuild's steps run in-process (serve.PreviewRebuild).
    assert "--pre-build" not in args and "--post-build" not in args
    assert "--no-initial" not in args
    assert "--no-initial" in autobuild_args(config, initial_build=False)


def test_the_watcher_takes_sources_and_ignores_what_the_build_writes(tmp_path: Path) -> None:
    filt = pytest.importorskip("sphinx_autobuild.filter", reason="sphinx-autobuild is in envs/builder.txt")
    book = tmp_path / "book"
    shutil.copytree(BOOK, book)
    config = load_config(book)
    watch, ignore, re_ignore = watch_rules(config)
    assert watch == [book, BUILDER_STATIC]
    ignored = filt.IgnoreFilter(ignore, re_ignore)  # what sphinx-autobuild does with --ignore/--re-ignore
    # README.md and the like are pages under d2lbook's default notebooks (issue 52): watched
    for rel in ("other.md", "index.md", "part/deep/page.md", "config.ini", "conf.py", "references.bib",
                "img/cat.png", "static/extra.css", "README.md", "Contributing.md"):
        assert not ignored(str(book / rel)), rel
    assert not ignored(str(BUILDER_STATIC / "tabbook.js"))
    for rel in ("build/src/other.md", "build/html/other.html", "build/report.json", "build/src/x.ipynb",
                "_freeze/other.md/pytorch.json", "d2l/torch.py", "tests/book/page.md",
                ".git/index", ".other.md.swp", ".#other.md", "part/.page.md.swp", "other.md~",
                "4913", "notes.txt", "tabbook/serve.py"):
        assert ignored(str(book / rel)), rel
    assert ignored(str(BUILDER_STATIC.parent / "ext" / "html.py"))
    # ... and ignored once the book excludes them
    (book / "config.ini").write_text((book / "config.ini").read_text().replace("[build]\n", "[build]\nexclusions = README.md\n"))
    ignored = filt.IgnoreFilter(*watch_rules(load_config(book))[1:])
    assert ignored(str(book / "README.md")) and ignored(str(book / "readme.md"))
    assert not ignored(str(book / "Contributing.md")) and not ignored(str(book / "other.md"))


def test_error_page_only_before_the_first_good_build(tmp_path: Path) -> None:
    book = tmp_path / "book"
    shutil.copytree(BOOK, book)
    config = load_config(book)
    error_page(config, "other.md:3: code fence is <never> closed")
    index = book / "build" / "html" / "index.html"
    assert "other.md:3: code fence is &lt;never&gt; closed" in index.read_text()
    assert index.stat().st_mtime == 0  # older than index.md: Sphinx replaces it
    index.write_text("the site")
    error_page(config, "another error")
    assert index.read_text() == "the site"


def _stop(proc: subprocess.Popen[str]) -> None:
    """Stop the server, then anything left in its session (a build, Sphinx, a kernel)."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait(timeout=10)


def _wait_until_served(proc: subprocess.Popen[str], url: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while True:
        assert proc.poll() is None, "the server exited"
        try:
            with urllib.request.urlopen(url, timeout=5) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        assert time.monotonic() < deadline, f"nothing served at {url} after {timeout}s"
        time.sleep(0.3)


def test_serve_rebuilds_on_save_reloads_and_shows_errors(browser: Any, site: Path, book_dir: Path,
                                                         tmp_path: Path) -> None:
    pytest.importorskip("sphinx_autobuild", reason="sphinx-autobuild is in envs/builder.txt")
    book = tmp_path / "book"
    shutil.copytree(book_dir, book, symlinks=True)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (env.get("PYTHONPATH"), str(ROOT)) if p)
    log = tmp_path / "serve.log"
    with log.open("w") as out:
        proc = subprocess.Popen([sys.executable, "-m", "tabbook", "-C", str(book), "serve", "--port", "0", "--no-build"],
                                stdout=out, stderr=subprocess.STDOUT, text=True, env=env, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while not log.read_text().startswith("[serve] http://127.0.0.1:") or "\n" not in log.read_text():
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.1)
        url = log.read_text().split()[1]
        _wait_until_served(proc, url + "other.html")
        ctx = browser.new_context()
        page = ctx.new_page()
        page.goto(url + "other.html", wait_until="networkidle")
        assert "A second page" in page.inner_text("article")

        # A prose edit: the open page reloads with it, and no kernel started.
        src = book / "other.md"
        good = src.read_text().replace("A second page", "An edited page")
        src.write_text(good)
        page.wait_for_function("document.body.innerText.includes('An edited page')", timeout=120_000)
        report = json.loads((book / "build" / "report.json").read_text())
        assert {u["status"] for u in report["units"]} == {"reused"}  # a prose edit starts no kernel
        assert page.locator("#tabbook-preview-error").count() == 0

        # A code edit executes only that (section, framework).
        good = good.replace("print('other page, jax')", "print('other page, jax, edited')")
        src.write_text(good)
        page.wait_for_function("document.body.textContent.includes('other page, jax, edited')", timeout=120_000)
        report = json.loads((book / "build" / "report.json").read_text())
        assert [(u["section"], u["framework"]) for u in report["units"] if u["status"] != "reused"] == [
            ("other.md", "jax")]

        # A broken edit: the page reloads, still shows the last good build, and says what is wrong.
        assert good.endswith("\n")
        fence_line = good.count("\n") + 4
        src.write_text(good + "\nBroken prose.\n\n```{.python .input}\nprint(1)\n")
        bar = page.wait_for_selector("#tabbook-preview-error", timeout=120_000)
        assert bar is not None
        assert f"other.md:{fence_line}: code fence is never closed" in bar.inner_text()
        assert "An edited page" in page.inner_text("article")

        # Fixing it clears the error.
        src.write_text(good)
        page.wait_for_selector("#tabbook-preview-error", state="detached", timeout=120_000)
        page.wait_for_load_state("networkidle")  # the reloaded page has read the status
        assert page.locator("#tabbook-preview-error").count() == 0
        assert "An edited page" in page.inner_text("article")
        ctx.close()
    finally:
        _stop(proc)
    assert not (book / "build" / "html" / "_preview-status.json").exists()  # removed on exit
