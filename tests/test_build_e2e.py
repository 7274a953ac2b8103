"""End-to-end builds of a small two-framework fixture book (real kernels, real Sphinx).

Both fixture "frameworks" run in the builder's own Python, so these tests need
no framework environment and take seconds.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = Path(__file__).resolve().parent / "fixtures" / "book"


def tabbook(book: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tabbook", "-C", str(book), *args],
        cwd=ROOT, capture_output=True, text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT), "TABBOOK_CACHE": str(book / ".cache")},
    )


def report(book: Path) -> dict[tuple[str, str], str]:
    data = json.loads((book / "build" / "report.json").read_text())
    return {(u["section"], u["framework"]): u["status"] for u in data["units"]}


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    book = tmp_path_factory.mktemp("e2e") / "book"
    shutil.copytree(FIXTURE, book)
    proc = tabbook(book, "build")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return book


def test_cold_build_executes_each_framework_and_renders_tabs(built: Path) -> None:
    assert report(built) == {("sec.md", "alpha"): "executed", ("sec.md", "beta"): "executed"}
    html = (built / "build" / "html" / "sec.html").read_text()
    assert 'data-sync-group="tab"' in html and 'data-sync-id="alpha"' in html and 'data-sync-id="beta"' in html
    assert "framework: alpha" in html and "framework: beta" in html  # real outputs of each kernel
    assert "Alpha-only prose." in html and "Beta-only prose." in html
    assert "ZeroDivisionError" in html  # the expected-to-raise cell shows its traceback
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "<script>alert(1)" not in html
    assert "slide only" not in html and "keeps slide text" in html
    assert "Figure 1.1" in html  # :numref: resolved to the numbered figure
    assert "tab.selected" not in html


def test_llms_files_hold_every_page_per_framework_with_its_outputs(built: Path) -> None:
    """llms.txt and llms-full.txt at the site's root (render/llms.py): every toc page for every
    framework, the stored outputs, no other framework's prose tab; llms.txt's links resolve."""
    from tabbook.render.linkcheck import broken_links

    html = built / "build" / "html"
    index = (html / "llms.txt").read_text()
    assert index.startswith("# Fixture Book\n\n> ")
    for fw in ("alpha", "beta"):
        for page in ("index", "sec"):
            assert f"](_llms/{fw}/{page}.md)" in index
    full = (html / "llms-full.txt").read_text()
    alpha, beta = full.split("<!-- Beta: index.md", 1)
    assert "<!-- Alpha: index.md" in alpha and "<!-- Alpha: sec.md" in alpha and "<!-- Beta: sec.md" in beta
    assert "```text\nframework: alpha\n```" in alpha and "```text\nframework: beta\n```" in beta
    assert "```text\n42\n```" in beta and "42" not in alpha  # beta's own cell, its kernel's output
    assert "ZeroDivisionError: division by zero" in alpha and "ZeroDivisionError: division by zero" in beta
    assert "Alpha-only prose." in alpha and "Beta-only prose." not in alpha
    assert "*Alpha outputs computed on CPU only" in alpha and "*Beta outputs computed on CPU only" in beta
    assert "Beta-only prose." in beta and "Alpha-only prose." not in beta
    assert "slide only" not in full and "keeps slide text" in full and "tab.selected" not in full
    assert (html / "_llms" / "beta" / "sec.md").read_text() in beta
    assert broken_links(html) == []


def test_freeze_store_and_library_written(built: Path) -> None:
    for fw in ("alpha", "beta"):
        nb = json.loads((built / "_freeze" / "sec" / f"{fw}.ipynb").read_text())
        meta = nb["metadata"]["tabbook"]
        assert len(meta["key"]) == 64 and meta["provenance"]["cpu"]
    assert "def double" in (built / "d2l" / "beta.py").read_text()
    assert "def double" not in (built / "d2l" / "alpha.py").read_text()


def test_prose_edit_reuses_everything_and_code_edit_reexecutes_one_unit(built: Path) -> None:
    sec = built / "sec.md"
    sec.write_text(sec.read_text().replace("Shared prose", "Shared, edited prose"))
    proc = tabbook(built, "build")
    assert proc.returncode == 0, proc.stderr
    assert set(report(built).values()) == {"reused"}
    assert "Shared, edited prose" in (built / "build" / "html" / "sec.html").read_text()
    sec.write_text(sec.read_text().replace("print(double(21))", "print(double(21))  # edited"))
    proc = tabbook(built, "build")
    assert proc.returncode == 0, proc.stderr
    assert report(built) == {("sec.md", "alpha"): "reused", ("sec.md", "beta"): "executed"}


def test_frozen_check_fails_on_stale_store(built: Path, tmp_path: Path) -> None:
    book = tmp_path / "book"
    shutil.copytree(built, book, ignore=shutil.ignore_patterns("build"))
    assert tabbook(book, "build", "--frozen", "--no-render").returncode == 0
    sec = book / "sec.md"
    sec.write_text(sec.read_text().replace("name = 'beta'", "name = 'BETA'"))
    proc = tabbook(book, "build", "--frozen", "--no-render")
    assert proc.returncode == 1
    # at the unit's first code cell (line 10): the store keeps no finer record of what changed
    assert "sec.md:10: [beta] freeze entry _freeze/sec/beta.ipynb is stale" in proc.stderr


def _broken_copy(tmp_path: Path, old: str, new: str) -> Path:
    book = tmp_path / "book"
    shutil.copytree(FIXTURE, book)
    sec = book / "sec.md"
    text = sec.read_text()
    assert old in text
    sec.write_text(text.replace(old, new, 1))
    return book


def test_unexpected_error_names_cell_line_and_keeps_other_units(tmp_path: Path) -> None:
    book = _broken_copy(tmp_path, "def double(x):  #@save", "raise KeyError('boom')\ndef double(x):  #@save")
    proc = tabbook(book, "build")
    assert proc.returncode == 1
    # the line that raised, not the cell's fence
    line = next(i for i, t in enumerate((book / "sec.md").read_text().splitlines(), 1) if t == "raise KeyError('boom')")
    assert f"sec.md:{line}: [beta] unexpected error" in proc.stderr
    assert "KeyError" in proc.stderr
    assert report(book)[("sec.md", "alpha")] == "executed"
    assert report(book)[("sec.md", "beta")] == "failed"
    assert (book / "_freeze" / "sec" / "alpha.ipynb").is_file()
    assert not (book / "_freeze" / "sec" / "beta.ipynb").exists()
    assert not list((book / "_freeze").rglob("*.tmp"))


def test_expected_raise_that_does_not_raise_fails(tmp_path: Path) -> None:
    book = _broken_copy(tmp_path, "1 / 0", "1 / 1")
    proc = tabbook(book, "build", "--no-render")
    assert proc.returncode == 1
    assert "is marked #@raises ZeroDivisionError but did not raise" in proc.stderr


def test_unresolved_reference_fails_with_line(tmp_path: Path) -> None:
    book = _broken_copy(tmp_path, ":numref:`fig_box`", ":numref:`fig_missing`")
    proc = tabbook(book, "build", "--no-render")  # d2lbook's contract: a warning, the build goes on
    assert proc.returncode == 0 and "warning: sec.md:4: :numref: to undefined label 'fig_missing'" in proc.stdout
    proc = tabbook(book, "build", "--no-render", "--strict")
    assert proc.returncode == 1
    assert "sec.md:4: :numref: to undefined label 'fig_missing'" in proc.stderr


def test_every_internal_link_and_anchor_resolves(built: Path) -> None:
    from tabbook.render.linkcheck import broken_links

    assert broken_links(built / "build" / "html") == []


def test_linkcheck_reports_a_broken_anchor(tmp_path: Path) -> None:
    from tabbook.render.linkcheck import broken_links

    (tmp_path / "a.html").write_text('<p id="x"></p>\n<a href="b.html#nope">b</a>\n<a href="#x">x</a>')
    (tmp_path / "b.html").write_text('<p id="here"></p><a href="missing.html">m</a>')
    assert broken_links(tmp_path) == [
        "a.html:2: missing anchor #nope in b.html",
        "b.html:1: broken link missing.html",
    ]
