"""What an incremental render redoes: only what the change needs (issue 18).

Each test pins one piece of work that used to be repeated on every build, whatever changed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from procs import processes

from tabbook.render import katex


def _fake_package(tmp_path: Path) -> Path:
    package = tmp_path / "katex"
    (package / "dist" / "fonts").mkdir(parents=True)
    for name in ("KaTeX_Main-Regular.woff2", "KaTeX_Math-Italic.woff2"):
        (package / "dist" / "fonts" / name).write_bytes(b"font " + name.encode())
    return package


@pytest.mark.parametrize("glyphs", [set(), {"x", "2"}])
def test_fonts_are_cut_once_while_the_sites_glyphs_stay_the_same(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, glyphs: set[str]) -> None:
    """A book without formulas (no glyphs) used to have KaTeX's 20 fonts cut again on every
    build, a second of a prose edit's rebuild; now the recorded state says they are current."""
    package = _fake_package(tmp_path)
    cuts: list[str] = []

    def fake_subset(src: Path, dst: Path, text: str) -> bool:
        cuts.append(src.name)
        dst.write_bytes(b"cut " + text.encode())
        return True

    monkeypatch.setattr(katex, "subset_font", fake_subset)
    static, state = tmp_path / "static", tmp_path / "state.json"
    katex.publish_fonts(package, static, glyphs, state)
    assert len(cuts) == 2
    katex.publish_fonts(package, static, glyphs, state)
    assert len(cuts) == 2  # nothing cut again
    katex.publish_fonts(package, static, glyphs | {"y"}, state)
    assert len(cuts) == 4  # a new glyph: cut again
    (static / "katex" / "fonts" / "KaTeX_Math-Italic.woff2").unlink()
    katex.publish_fonts(package, static, glyphs | {"y"}, state)
    assert len(cuts) == 6 and (static / "katex" / "fonts" / "KaTeX_Math-Italic.woff2").is_file()


def test_whole_fonts_without_fonttools_are_copied_again_not_recorded_as_cut(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    package = _fake_package(tmp_path)
    monkeypatch.setattr(katex, "subset_font", lambda src, dst, text: False)
    static, state = tmp_path / "static", tmp_path / "state.json"
    katex.publish_fonts(package, static, {"x"}, state)
    font = static / "katex" / "fonts" / "KaTeX_Main-Regular.woff2"
    assert font.read_bytes() == b"font KaTeX_Main-Regular.woff2"
    calls: list[str] = []
    monkeypatch.setattr(katex, "subset_font", lambda src, dst, text: calls.append(src.name) or False)
    katex.publish_fonts(package, static, {"x"}, state)
    assert len(calls) == 2  # whole fonts are not a record of cut ones: fontTools is tried again


def test_the_sphinx_process_leaves_out_myst_nbs_executing_clients(tmp_path: Path) -> None:
    """Evaluating a book's Sphinx settings keeps jupyter-cache, SQLAlchemy and nbclient out of the
    Sphinx process (~0.3 s of every run), and myst-nb still sets up with execution off."""
    root = Path(__file__).resolve().parent.parent
    probe = (
        "import sys\nfrom pathlib import Path\n"
        "from tabbook.render.sphinx_conf import sphinx_settings\n"
        f"settings = sphinx_settings(Path({str(root)!r}))\n"
        "assert settings['nb_execution_mode'] == 'off'\n"
        "import myst_nb.sphinx_ext, myst_nb.core.execute as ex\n"
        "print(sorted(m for m in ('jupyter_cache.base', 'sqlalchemy', 'nbclient') if m in sys.modules))\n"
        "try:\n    ex.NotebookClientCache(None, None, None, None)\n"
        "except RuntimeError as e:\n    print(e)\n")
    proc = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True,
                          env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr
    first, second = proc.stdout.splitlines()[:2]
    assert first == "[]"
    assert "nb_execution_mode = 'off'" in second and "left out of this Sphinx process" in second


# --- the walk for pages enters only folders that can hold one --------------------------------

def test_the_walk_for_pages_never_enters_folders_that_cannot_hold_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """It used to read the whole tree (a book's .venv: most of a no-op build) and filter after."""
    import tabbook.book as book_module
    from tabbook.config import load_config

    root = tmp_path / "book"
    for rel in ("index.md", "README.md", "chapter_a/one.md", "chapter_a/deep/no.md", "chapter_b.md/two.md",
                "notes/no.md", ".venv/lib/site/no.md", "build/src/no.md", "chapter_c/.ipynb_checkpoints/x.md"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("# page\n")
    (root / "chapter_a" / "loop").symlink_to(root / "chapter_a")
    (root / "config.ini").write_text("[project]\nname = b\ntitle = B\nauthor = A\nversion = 1\n\n[build]\nindex = index.md\n"
                                     "notebooks = *.md chapter_*/*.md\ntabs = t\n\n[framework:t]\npython = current\n")
    visited: list[str] = []
    real_walk = os.walk

    def recording_walk(top, *args, **kwargs):  # type: ignore[no-untyped-def]
        for dirpath, dirnames, filenames in real_walk(top, *args, **kwargs):
            visited.append(Path(dirpath).relative_to(root).as_posix())
            yield dirpath, dirnames, filenames

    monkeypatch.setattr(book_module.os, "walk", recording_walk)
    pages = [p.relative_to(root).as_posix() for p in book_module.book_markdown_files(load_config(root))]
    # The patterns are followed as d2lbook follows them: README.md is a page unless excluded.
    assert pages == ["README.md", "chapter_a/one.md", "chapter_b.md/two.md", "index.md"]
    assert sorted(visited) == [".", "chapter_a", "chapter_b.md", "chapter_c"]
    # Without `notebooks` every folder but the ignored ones may hold pages; a link loop ends.
    config_ini = root / "config.ini"
    config_ini.write_text(config_ini.read_text().replace("notebooks = *.md chapter_*/*.md\n", ""))
    visited.clear()
    pages = [p.relative_to(root).as_posix() for p in book_module.book_markdown_files(load_config(root))]
    assert "chapter_a/deep/no.md" in pages and "notes/no.md" in pages
    assert "README.md" in pages  # d2lbook's default **/*.md builds it too (issue 52): exclusions leave it out
    assert not any(p.startswith((".venv", "build")) for p in pages)
    assert not any(v.startswith((".venv", "build")) for v in visited)


# --- Sphinx started while the build reads and executes ---------------------------------------

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "book"
ROOT = Path(__file__).resolve().parent.parent


def _tabbook(book: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tabbook", "-C", str(book), *args], cwd=ROOT,
                          capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT), "TABBOOK_CACHE": str(book / ".cache")})


def _sphinx_processes(book: Path) -> list[str]:
    return processes(lambda args, here: b"sphinx" in args and any(str(book).encode() in a for a in args))


def test_an_early_sphinx_renders_what_a_late_one_does(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A cold build starts Sphinx before it executes (the gate holds it until the sources are
    written); its pages are byte for byte those of a build whose Sphinx starts afterwards."""
    from tabbook.build import Options, build
    from tabbook.config import load_config
    from tabbook.render import sphinx

    early, late = tmp_path / "early", tmp_path / "late"
    shutil.copytree(FIXTURE, early)
    shutil.copytree(FIXTURE, late)
    proc = _tabbook(early, "build")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    started: list[bool] = []
    monkeypatch.setattr(sphinx.SphinxRun, "start", lambda self: started.append(True))
    monkeypatch.setenv("TABBOOK_CACHE", str(late / ".cache"))
    build(load_config(late), Options(), log=lambda line: None)
    assert started  # the late build would have started early; it ran Sphinx after the sources

    def pages(book: Path) -> dict[str, str]:
        html = book / "build" / "html"
        return {p.relative_to(html).as_posix(): p.read_text().replace(str(book), "BOOK")
                for p in html.rglob("*.html")}

    assert pages(early) == pages(late) and "sec.html" in pages(early)


def test_a_build_that_fails_before_rendering_calls_the_early_sphinx_off(tmp_path: Path) -> None:
    """A page changed, so Sphinx starts at once; the check then fails: Sphinx ends without
    writing a page, and no Sphinx process outlives the build."""
    book = tmp_path / "book"
    shutil.copytree(FIXTURE, book)
    sec = book / "sec.md"
    sec.write_text(sec.read_text() + "\n```{.python .input}\nx = 1\n")  # a fence never closed: it stops the build
    proc = _tabbook(book, "build")
    assert proc.returncode == 1
    assert "sec.md:" in proc.stderr and "code fence is never closed" in proc.stderr
    html = book / "build" / "html"
    assert not (html.exists() and any(html.rglob("*.html")))
    assert _sphinx_processes(book) == []


def test_the_pygments_stylesheet_keeps_only_rules_pages_can_use(tmp_path: Path) -> None:
    """Every page loads pygments.css: the rules of token classes the lean formatter never writes,
    and the comments naming token types, are left out; every class the code carries keeps its rule."""
    import re

    book = tmp_path / "book"
    shutil.copytree(FIXTURE, book)
    proc = _tabbook(book, "build")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    css = (book / "build" / "html" / "_static" / "pygments.css").read_text()
    assert "/*" not in css
    assert not re.search(r"\.highlight \.(n|p|w) \{", css)  # Name, Punctuation, Whitespace: plain text
    html = (book / "build" / "html" / "sec.html").read_text()
    used = set()
    for block in re.findall(r'<div class="highlight">(.*?)</div>', html, re.S):
        used |= set(re.findall(r'<span class="([\w-]+)">', block))
    assert used, "the fixture's code is highlighted"
    assert all(re.search(rf"\.highlight \.{re.escape(c)} \{{", css) for c in used), used


def test_a_label_and_an_equation_may_move_to_an_earlier_page(tmp_path: Path) -> None:
    """Sphinx's serial reader met the moved label in a.md while b.md's old copy was still
    registered ("duplicate label"): an incremental build failed that a clean one passes."""
    book = tmp_path / "book"
    book.mkdir()
    (book / "config.ini").write_text("[project]\nname = mv\ntitle = Move\nauthor = A\nversion = 1\n\n"
                                     "[build]\nindex = index.md\ntabs = py\n\n[framework:py]\npython = current\n")
    (book / "index.md").write_text("# Book\n\n```toc\n:maxdepth: 1\n\na\nb\n```\n")
    (book / "a.md").write_text("# A\n\nText of a.\n")
    moving = "## Part\n:label:`sec_part`\n\n$$x = 1$$\n:eqlabel:`eq_x`\n"
    (book / "b.md").write_text(f"# B\n\nText of b.\n\n{moving}\nSee :eqref:`eq_x`.\n")
    proc = _tabbook(book, "build")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (book / "a.md").write_text(f"# A\n\nText of a.\n\n{moving}")
    (book / "b.md").write_text("# B\n\nSee :eqref:`eq_x` and :ref:`sec_part`.\n")
    proc = _tabbook(book, "build")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert 'href="a.html#equation-eq-x"' in (book / "build" / "html" / "b.html").read_text()


def test_new_rendering_code_rewrites_pages_sphinx_would_keep(tmp_path: Path) -> None:
    """Sphinx re-writes a page when its source or the config changed, not when an extension did:
    a new tabbook left pages as the old one wrote them (a script the new one no longer links).
    The rendering code's hash is a config value, so a new value rewrites every page; a change
    to conf.py that Sphinx does not see keeps them."""
    from tabbook.files import builder_fingerprint
    from tabbook.render.sphinx_conf import sphinx_settings

    book = tmp_path / "book"
    shutil.copytree(FIXTURE, book)
    assert sphinx_settings(book)["tabbook_code"] == builder_fingerprint()
    proc = _tabbook(book, "build")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    page = book / "build" / "html" / "sec.html"

    def rebuilt(line: str) -> bool:
        before = page.stat().st_mtime_ns
        with (book / "conf.py").open("a") as conf:
            conf.write(line + "\n")
        proc = _tabbook(book, "build")
        assert proc.returncode == 0, proc.stdout + proc.stderr
        return page.stat().st_mtime_ns != before

    assert not rebuilt("_unrelated = 1")
    assert rebuilt("tabbook_code = 'another builder'")


# --- A no-op build imports nothing it does not use (issue 43) --------------------------------

#: Runs ``tabbook`` as ``python -m tabbook`` does and writes, at exit, the modules the process
#: imported of the Sphinx stack (its top-level package names).
_RECORD_IMPORTS = """
import atexit, json, runpy, sys
out = sys.argv.pop(1)
def record():
    tops = {name.split(".")[0] for name in sys.modules}
    with open(out, "w") as f:
        json.dump(sorted(tops & {"sphinx", "docutils", "myst_nb", "myst_parser", "sphinx_design", "furo",
                                 "jinja2", "pygments", "nbclient", "jupyter_client", "zmq",
                                 "markdown_it"}), f)
atexit.register(record)
sys.argv[0] = "tabbook"
runpy.run_module("tabbook", run_name="__main__", alter_sys=True)
"""


def test_a_no_op_build_imports_no_sphinx(tmp_path: Path) -> None:
    """With nothing changed the build ends before rendering ("[html] nothing changed"), so it must
    not import Sphinx, docutils or a kernel client: they were a third of a no-op's time (the
    finish step imported an extension's module only to read a constant). Nor markdown-it: a
    no-op parses no page (the parsed pages are kept in build/), and its import was a tenth. A first build, then the
    same build again, recording what the second imported."""
    import json

    book = tmp_path / "book"
    shutil.copytree(FIXTURE, book)
    proc = _tabbook(book, "build")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    record = tmp_path / "imported.json"
    again = subprocess.run([sys.executable, "-c", _RECORD_IMPORTS, str(record), "-C", str(book), "build"],
                           cwd=ROOT, capture_output=True, text=True,
                           env={**os.environ, "PYTHONPATH": str(ROOT), "TABBOOK_CACHE": str(book / ".cache")})
    assert again.returncode == 0, again.stdout + again.stderr
    assert "nothing changed" in again.stdout + again.stderr
    assert json.loads(record.read_text()) == []
