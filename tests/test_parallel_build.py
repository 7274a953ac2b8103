"""``sphinx-build -j 2`` makes the same site as ``-j 1``, KaTeX fonts included.

Sphinx reads and writes documents in forked processes under ``-j N``; whatever an extension
records on the app object in a forked process is lost. The KaTeX fonts are cut to the glyphs of
every formula in the book, so they are the canary: they once came out empty under ``-j 2``.

The fixture book gets three math pages (so that, with ``index`` written by the main process,
Sphinx's parallel reader and writer handle the rest in child processes), is built once by
tabbook (execution, merge into ``build/src``), and ``build/src`` is then built by Sphinx twice.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from prerequisites import require

from tabbook.render import katex

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = Path(__file__).resolve().parent / "fixtures" / "book"

PAGES = {
    "alg": "# Algebra\n\nInline $x^2 + y^2 = z^2$ and a display:\n\n$$\\sum_{i=1}^{n} a_i = \\frac{n(n+1)}{2}$$\n",
    "greek": "# Greek\n\nThe rate $\\alpha$ and $\\beta \\geq \\gamma$.\n\n$$\n\\int_0^1 \\lambda(t)\\,dt\n$$\n"
             ":eqlabel:`eq_int`\n\nSee :eqref:`eq_int`.\n",
    "sets": "# Sets\n\n$$A \\cup B \\subseteq \\mathbb{R}$$\n\n$$\\mathcal{L}(\\theta) = -\\log p$$\n",
}


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (env.get("PYTHONPATH"), str(ROOT)) if p)
    return env


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def sites(tmp_path_factory: pytest.TempPathFactory) -> dict[int, Path]:
    try:
        katex.ensure_katex(log=lambda _msg: None)
    except (katex.MathUnavailable, OSError) as exc:
        require(False, f"KaTeX unavailable: {exc}")
    pytest.importorskip("fontTools")
    book = tmp_path_factory.mktemp("parallel") / "book"
    shutil.copytree(FIXTURE, book)
    for name, text in PAGES.items():
        (book / f"{name}.md").write_text(text, encoding="utf-8")
    index = book / "index.md"
    index.write_text(index.read_text().replace("\nsec\n", "\nsec\n" + "".join(f"{n}\n" for n in PAGES)))
    proc = subprocess.run([sys.executable, "-m", "tabbook", "-C", str(book), "build"],
                          cwd=book, env=_env(), capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    out: dict[int, Path] = {}
    for jobs in (1, 2):
        site = book / "out" / f"j{jobs}"
        proc = subprocess.run(
            [sys.executable, "-m", "sphinx", "-b", "html", "-j", str(jobs), "-c", str(book),
             str(book / "build" / "src"), str(site), "-d", str(book / "out" / f"doctrees-j{jobs}")],
            cwd=book, env=_env(), capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        assert "not safe for parallel" not in proc.stderr  # -j 2 really ran in parallel
        out[jobs] = site
    return out


def test_parallel_site_has_the_same_files(sites: dict[int, Path]) -> None:
    assert sorted(_tree(sites[1])) == sorted(_tree(sites[2]))


def test_parallel_katex_fonts_are_the_same_non_empty_subsets(sites: dict[int, Path]) -> None:
    from fontTools.ttLib import TTFont

    fonts = {jobs: _tree(site / "_static" / "katex" / "fonts")
             for jobs, site in sites.items()}
    assert fonts[1] and fonts[1] == fonts[2]
    wanted = {  # a character of each page, in the font KaTeX draws it with
        "KaTeX_Math-Italic.woff2": "xyzαβγλθ",
        "KaTeX_Main-Regular.woff2": "+=≥∪⊆(",
        "KaTeX_AMS-Regular.woff2": "R",
        "KaTeX_Caligraphic-Regular.woff2": "L",
    }
    for jobs, site in sites.items():
        for name, chars in wanted.items():
            cmap = TTFont(site / "_static" / "katex" / "fonts" / name).getBestCmap()
            assert {chr(c) for c in cmap} >= set(chars), (jobs, name)


def test_parallel_html_is_the_same(sites: dict[int, Path]) -> None:
    # Byte for byte, every file: nothing in these pages depends on the process that wrote them
    # (no temp paths, no timestamps: Sphinx's html_last_updated_fmt is off, and .buildinfo hashes
    # the config, where -j does not appear). Any difference is a parallel-safety bug.
    one, two = _tree(sites[1]), _tree(sites[2])
    differ = sorted(name for name in one if one[name] != two.get(name))
    assert differ == [], differ
    for name in PAGES:
        html = one[f"{name}.html"].decode()
        assert 'class="katex"' in html and "tabbook-math-source" not in html
        assert "_static/katex/katex-" in html  # the page's cut stylesheet


def test_incremental_parallel_build_keeps_the_glyphs_of_pages_it_does_not_reread(
        sites: dict[int, Path], tmp_path: Path) -> None:
    """Edit one page and rebuild with -j 2 over a copy of the -j 2 build: the fonts gain the new
    glyph and keep those of pages Sphinx neither re-read nor re-wrote (kept in the pickled env).
    Runs last: it edits the shared ``build/src`` in place (a moved source dir is a full rebuild)."""
    from fontTools.ttLib import TTFont

    book = sites[2].parents[1]
    site, doctrees = tmp_path / "site", tmp_path / "doctrees"
    shutil.copytree(sites[2], site)
    shutil.copytree(book / "out" / "doctrees-j2", doctrees)
    src = book / "build" / "src"
    page = src / "alg.md"
    text = page.read_text(encoding="utf-8")
    assert "Inline $x^2" in text
    page.write_text(text.replace("Inline $x^2", "Inline $\\omega + x^2"), encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, "-m", "sphinx", "-b", "html", "-j", "2", "-c", str(book), str(src), str(site),
         "-d", str(doctrees)], cwd=book, env=_env(), capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "0 added, 1 changed, 0 removed" in proc.stdout, proc.stdout[-2000:]  # only alg re-read
    cmap = {chr(c) for c in TTFont(site / "_static" / "katex" / "fonts" / "KaTeX_Math-Italic.woff2").getBestCmap()}
    assert "ω" in cmap and set("xyzαβγλθ") <= cmap
