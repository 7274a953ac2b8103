"""Furo's sidebar tree made once per folder (tabbook.render.ext.navtree) is furo's, on every page.

A generated book of 23 sections in three chapter folders (bench/scale.py's generator, entries
frozen through the store) is rendered twice: with the tree made once per folder, every page's
tree also made furo's way and compared (none may differ), and with the option off (furo's way
only). The two sites are the same byte for byte, but for Sphinx's record of the configuration.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def book(tmp_path_factory: pytest.TempPathFactory) -> Path:
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        from scale import freeze, make_book
    finally:
        sys.path.remove(str(ROOT / "bench"))
    book = make_book(tmp_path_factory.mktemp("navtree"), 23)
    assert freeze(book) == 92
    proc = subprocess.run([sys.executable, "-m", "tabbook", "-C", str(book), "build", "--frozen", "--builder", ""],
                          cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    from tabbook.config import load_config
    from tabbook.render.sphinx import conf_dir

    assert conf_dir(load_config(book)) == book / "build" / "sphinx-conf"  # the generated book has none
    return book


def test_every_page_has_furos_tree_and_the_site_is_the_same(book: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from sphinx.cmd.build import main

    import tabbook.render.ext.navtree as navtree

    differ: list[str] = []
    monkeypatch.setattr(navtree, "CHECKED_PAGES", 10**9)  # compare on every page, not the first few
    monkeypatch.setattr(navtree.logger, "debug", lambda msg, *args: differ.append(msg % args))
    conf = book / "build" / "sphinx-conf"
    fast, slow = book / "out" / "fast", book / "out" / "slow"
    assert main(["-b", "html", "-c", str(conf), str(book / "build" / "src"), str(fast),
                 "-d", str(book / "out" / "dt-fast"), "-q"]) == 0
    assert differ == []
    proc = subprocess.run(
        [sys.executable, "-m", "sphinx", "-b", "html", "-c", str(conf), str(book / "build" / "src"), str(slow),
         "-d", str(book / "out" / "dt-slow"), "-q", "-D", "tabbook_fast_navigation=0"],
        cwd=book, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    one, two = _tree(fast), _tree(slow)
    assert sorted(one) == sorted(two)
    assert [n for n in one if one[n] != two[n]] == [".buildinfo"]  # it hashes the configuration
    page = one["chapter_1/step_3.html"].decode()
    assert 'class="toctree-l2 current current-page"' in page and 'href="#">2.4. Step 1.3</a>' in page
    assert page.count("toctree-l2") == 23
