"""The site's pure parts, without a browser: download links, Colab links, reader notebooks, glyphs."""

from __future__ import annotations

from pathlib import Path

import pytest

from tabbook.render.context import RenderContext, github_repo
from tabbook.render.katex import classes_of, glyphs_of, prune_stylesheet
from tabbook.render.site import (
    compact_css,
    compact_js,
    page_links,
    reader_notebook,
    zip_bytes,
)


def options(tmp_path: Path, **kw: str) -> RenderContext:
    base = dict(
        name="book", tabs=("pytorch", "jax"), labels={"pytorch": "PyTorch", "jax": "JAX"},
        default_tab="pytorch", root=str(tmp_path), freeze_dir=str(tmp_path / "_freeze"),
        pdf_dir=str(tmp_path / "build" / "pdf"), pdf_url="", repo="", branch="main", colab_url="",
    )
    base.update(kw)
    return RenderContext(**base)  # type: ignore[arg-type]


@pytest.mark.parametrize("url, repo", [
    ("https://github.com/d2l-ai/gpus", "d2l-ai/gpus"),
    ("https://github.com/d2l-ai/gpus.git", "d2l-ai/gpus"),
    ("git@github.com:d2l-ai/gpus.git", "d2l-ai/gpus"),
    ("d2l-ai/gpus", "d2l-ai/gpus"),
    ("https://gitlab.com/d2l-ai/gpus", ""),
    ("", ""),
])
def test_github_repo(url: str, repo: str) -> None:
    assert github_repo(url) == repo


def test_notebook_links_follow_the_tab_order(tmp_path: Path) -> None:
    links = page_links(options(tmp_path), "chapter/sec", {"jax", "pytorch"}, set())
    assert [(lk.kind, lk.label, lk.url) for lk in links] == [
        ("Notebook", "PyTorch", "_downloads/notebooks/chapter/sec-pytorch.ipynb"),
        ("Notebook", "JAX", "_downloads/notebooks/chapter/sec-jax.ipynb"),
    ]


def test_a_page_without_notebooks_offers_only_the_books_pdf(tmp_path: Path) -> None:
    links = page_links(options(tmp_path, repo="o/r", colab_url="x{path}"), "index", set(), {"pytorch"})
    assert [(lk.kind, lk.fw, lk.url) for lk in links] == [("PDF", "pytorch", "_downloads/pdf/book-pytorch.pdf")]


def test_slides_links_per_framework_with_a_deck(tmp_path: Path) -> None:
    links = page_links(options(tmp_path), "c/s", {"pytorch", "jax"}, set(), slides={"jax"})
    assert [(lk.kind, lk.fw, lk.url) for lk in links if lk.kind == "Slides"] == [
        ("Slides", "jax", "_slides/c/s-jax.html")]


def test_notebook_zips_are_deterministic() -> None:
    files = {"b/x.ipynb": "{}\n", "a/y.ipynb": "[]\n"}
    one, two = zip_bytes(files), zip_bytes(dict(reversed(list(files.items()))))
    assert one == two
    import io
    import zipfile

    with zipfile.ZipFile(io.BytesIO(one)) as zf:
        assert zf.namelist() == ["a/y.ipynb", "b/x.ipynb"]
        assert zf.read("b/x.ipynb") == b"{}\n"


def test_pdf_links_only_when_present_or_configured(tmp_path: Path) -> None:
    local = page_links(options(tmp_path), "sec", {"pytorch"}, {"jax"})
    assert [(lk.kind, lk.url) for lk in local if lk.kind == "PDF"] == [("PDF", "_downloads/pdf/book-jax.pdf")]
    remote = page_links(options(tmp_path, pdf_url="https://example.org/{name}-{fw}.pdf"), "sec", {"pytorch"},
                        {"pytorch", "jax"})
    assert [lk.url for lk in remote if lk.kind == "PDF"] == ["https://example.org/book-pytorch.pdf",
                                                             "https://example.org/book-jax.pdf"]


def test_colab_links_only_with_a_repository(tmp_path: Path) -> None:
    assert not [lk for lk in page_links(options(tmp_path), "c/s", {"pytorch"}, set()) if lk.kind == "Colab"]
    opts = options(tmp_path, repo="o/r", branch="dev",
                   colab_url="https://colab.research.google.com/github/{repo}/blob/{branch}/{path}")
    colab = [lk.url for lk in page_links(opts, "c/s", {"pytorch"}, set()) if lk.kind == "Colab"]
    assert colab == ["https://colab.research.google.com/github/o/r/blob/dev/_freeze/c/s/pytorch.ipynb"]


def test_reader_notebook_keeps_provenance_and_a_plain_kernel() -> None:
    nb = {"cells": [], "metadata": {"kernelspec": {"name": "tabbook-jax"},
                                    "tabbook": {"key": "abc", "provenance": {"device": "cpu"}}}}
    out = reader_notebook(nb)
    assert out["metadata"]["kernelspec"]["name"] == "python3"
    assert out["metadata"]["tabbook"] == {"provenance": {"device": "cpu"}}
    assert nb["metadata"]["tabbook"]["key"] == "abc"  # the store's copy is untouched


def test_glyphs_of_ignores_mathml_and_markup() -> None:
    html = ('<span class="katex"><span class="katex-mathml"><math><mi>z</mi></math></span>'
            '<span class="katex-html" aria-hidden="true"><span class="mord">x&lt;</span></span></span>')
    assert glyphs_of(html) == {"x", "<"}


def test_prune_stylesheet_keeps_the_rules_and_fonts_a_page_uses() -> None:
    css = ("@font-face{font-family:KaTeX_Main;src:url(a.woff2)}@font-face{font-family:KaTeX_AMS;src:url(b.woff2)}"
           ".katex{font:1em KaTeX_Main}.katex .mord{x:1}.katex .amsrm{font-family:KaTeX_AMS}"
           ".katex .sizing.reset-size1.size2,.katex .mord:not(.accent-full){y:2}")
    used = classes_of('<span class="katex"><span class="mord">x</span></span>')
    assert used == {"katex", "mord"}
    assert prune_stylesheet(css, used) == (
        "@font-face{font-family:KaTeX_Main;src:url(a.woff2)}"
        ".katex{font:1em KaTeX_Main}.katex .mord{x:1}.katex .mord:not(.accent-full){y:2}")


def test_compact_js_and_css_drop_only_comments_and_layout() -> None:
    js = "// head\n(() => {\n  /** doc\n   * more */\n  const a = 1; // keep\n\n  return a;\n})();\n"
    assert compact_js(js) == "(() => {\nconst a = 1; // keep\nreturn a;\n})();\n"
    css = "/* c */\n.a,\n.b {\n  color: red;\n  margin: 0 1em\n}\n"
    assert compact_css(css) == ".a,.b {color: red;margin: 0 1em }"
