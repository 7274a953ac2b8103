"""What a stored output may do on the site (issue 33, item 3), in the fault catalog's style.

A forged freeze entry passes ``build --frozen`` (its key is the real one); what it publishes is
cleaned: no script on the page, in ``_images/``, in the downloadable notebooks or the decks,
while a pandas table, an SVG figure and plain Markdown look as they did. The store keeps what
it holds (the build changes nothing there), and ``[site] trusted_outputs = true`` publishes the
outputs as they are. The browser half: ``tests/browser/test_forged_outputs.py``.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from trust_book import ENTRY, FIGURE, FORGED_JS, TABLE, forged_book, tabbook

from tabbook.render.sanitize import (
    DROPPED_NOTE,
    clean_bundle,
    clean_html,
    clean_svg,
    markdown_has_html,
    untrusted_notebook,
)

SCRIPT_MARKS = ("window.forged", "onerror", "onload")  # the fixture prints "<script>alert(1)" as text


def _no_script(text: str) -> list[str]:
    return [m for m in SCRIPT_MARKS if m in text]


# --- the cleaning itself ------------------------------------------------------------------------

@pytest.mark.parametrize("html", [
    "<script>alert(1)</script>", '<img src="x" onerror="alert(1)">', '<a href="javascript:alert(1)">x</a>',
    '<a href=" jav&#x09;ascript:alert(1)">x</a>', '<iframe src="https://example.org"></iframe>',
    '<a href="data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==">x</a>',
    '<svg><script>alert(1)</script></svg>', '<form action="https://example.org"><input name="q"></form>',
    '<object data="x.swf"></object>', '<div onmouseover="alert(1)">x</div>', '<noscript><p title="</noscript><img src=x onerror=alert(1)>"></noscript>',
])
def test_html_that_runs_script_is_cleaned(html: str) -> None:
    cleaned = clean_html(html)
    assert not any(m in cleaned.lower() for m in ("<script", "onerror", "onmouseover", "javascript:", "<iframe",
                                                  "<form", "<object", "data:text")), cleaned


def test_a_pandas_table_and_a_data_image_survive() -> None:
    # The same document: only the empty attribute is written out (``scoped=""``).
    assert clean_html(TABLE) == TABLE.replace("<style scoped>", '<style scoped="">')
    img = '<img src="data:image/png;base64,iVBORw0KGgo=" alt="plot" width="10">'
    assert clean_html(img) == img


def test_svg_figures_are_kept_byte_for_byte_and_script_is_removed() -> None:
    assert clean_svg(FIGURE) == FIGURE
    evil = ('<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" onload="a()">'
            '<script>b()</script><a xlink:href="javascript:c()"><text>t</text></a>'
            '<foreignObject><div xmlns="http://www.w3.org/1999/xhtml"><script>d()</script></div></foreignObject>'
            '<set attributeName="href" to="javascript:e()"/><image href="data:text/html,f"/>'
            '<rect width="1" height="1" style="fill: red"/></svg>')
    cleaned = clean_svg(evil)
    assert cleaned is not None
    for mark in ("onload", "script", "javascript", "foreignObject", "<set", "data:text", "d()"):
        assert mark not in cleaned, (mark, cleaned)
    assert '<rect width="1" height="1" style="fill: red" />' in cleaned  # the drawing stays
    # Not well-formed: dropped (Chromium runs a script that precedes the parse error).
    assert clean_svg('<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script><g>') is None
    # An entity that expands to markup is seen expanded and the document written anew.
    entity = ('<!DOCTYPE svg [<!ENTITY e "&#60;script&#62;x()&#60;/script&#62;">]>'
              '<svg xmlns="http://www.w3.org/2000/svg">&e;</svg>')
    assert "script" not in (clean_svg(entity) or "script")


def test_bundles_lose_javascript_and_markdown_html_but_keep_the_rest() -> None:
    assert clean_bundle({"application/javascript": FORGED_JS}) == {"text/plain": DROPPED_NOTE}
    assert clean_bundle({"application/javascript": FORGED_JS, "text/plain": "<Javascript>"}) == \
        {"text/plain": "<Javascript>"}
    widget = {"application/vnd.jupyter.widget-view+json": {"model_id": "1"}, "text/plain": "w"}
    assert clean_bundle(widget) == {"text/plain": "w"}
    plain_md = {"text/markdown": "Some **bold** text, $x < 1$", "text/plain": "md"}
    assert clean_bundle(plain_md) == plain_md  # no HTML in it: kept for myst-nb to render
    assert not markdown_has_html(plain_md["text/markdown"])
    md = clean_bundle({"text/markdown": 'a <img src="y" onerror="z()"> **b**'})
    assert set(md) == {"text/html"} and "onerror" not in md["text/html"] and "<strong>b</strong>" in md["text/html"]
    latex = {"text/latex": r"$\frac{1}{2} x^2 \operatorname{out}$", "image/png": "iVBORw0KGgo=", "text/plain": "x"}
    assert clean_bundle(latex) == latex
    for tex in (r"$\input{/etc/passwd}$", r"$\immediate\write18{id}$", r"$^^5cinput{x}$", r"$\def\a{b}\a$"):
        assert clean_bundle({"text/latex": tex, "text/plain": "x"}) == {"text/plain": "x"}, tex


def test_a_notebook_without_active_outputs_is_returned_as_it_is() -> None:
    for entry in sorted(Path(__file__).resolve().parent.parent.glob("_freeze/**/*.ipynb")):
        nb = json.loads(entry.read_text(encoding="utf-8"))
        assert untrusted_notebook(nb) is nb, entry  # the GPUs chapter's outputs publish unchanged
    md_cell = {"cells": [{"cell_type": "markdown", "metadata": {}, "source": "```{raw} html\n<script>x()</script>\n```"}],
               "metadata": {"widgets": {"state": {}}}}
    cleaned = untrusted_notebook(md_cell)
    assert cleaned["cells"][0]["cell_type"] == "code" and cleaned["cells"][0]["outputs"] == []
    assert "widgets" not in cleaned["metadata"]


def test_entries_found_clean_are_not_scanned_again_until_they_change(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    from tabbook.render import sanitize

    clean = {"cells": [{"cell_type": "code", "source": "", "metadata": {},
                        "outputs": [{"output_type": "display_data", "metadata": {}, "data": {"image/svg+xml": FIGURE}}]}]}
    forged = json.loads(json.dumps(clean))
    forged["cells"][0]["outputs"][0]["data"]["text/html"] = "<script>x()</script>"
    scanned: list[int] = []
    real = sanitize.untrusted_notebook
    monkeypatch.setattr(sanitize, "untrusted_notebook", lambda nb: scanned.append(1) or real(nb))
    memo = tmp_path / "clean-outputs.json"
    key = ("sec.md", "alpha")
    first = sanitize.PublishedNotebooks({key: clean}, {key: "entry 10 1"}, memo)
    assert first[key] is clean and scanned == [1]
    first.save()
    again = sanitize.PublishedNotebooks({key: clean}, {key: "entry 10 1"}, memo)
    assert again[key] is clean and scanned == [1]  # known clean: not scanned
    # The entry rewritten (another signature): scanned, and its script cleaned.
    changed = sanitize.PublishedNotebooks({key: forged}, {key: "entry 31 2"}, memo)
    assert "<script" not in json.dumps(changed[key]) and scanned == [1, 1]
    # Code only (a unit not run): never remembered.
    code_only = sanitize.PublishedNotebooks({key: clean}, {key: "code only: execution is off"}, memo)
    assert code_only[key] is clean and scanned == [1, 1, 1]


# --- a forged entry through a real build ----------------------------------------------------------

@pytest.fixture(scope="module")
def forged(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return forged_book(tmp_path_factory.mktemp("trust"))


def test_a_forged_entry_publishes_no_script(forged: Path) -> None:
    html = forged / "build" / "html"
    page = (html / "sec.html").read_text(encoding="utf-8")
    assert _no_script(page) == [], "script from the forged entry reached the page"
    assert 'id="forged-html"' in page  # the forged HTML is shown, cleaned
    assert DROPPED_NOTE.split(":")[0] in page  # the JavaScript output says why it is not shown
    assert "Some <strong>bold</strong> text" in page  # HTML inside Markdown, rendered and cleaned
    # The table as pandas wrote it, its style included.
    assert 'class="dataframe"' in page and "vertical-align: middle;" in page and "<td>0.125</td>" in page
    images = {p.name: p.read_text(encoding="utf-8") for p in (html / "_images").glob("*.svg")}
    assert [n for n, text in images.items() if _no_script(text) or "<script" in text] == []
    # Byte for byte (myst-nb writes the image without its final newline, trusted or not).
    assert FIGURE.rstrip("\n") in images.values(), "the SVG figure is not in _images/ byte for byte"
    assert any('id="forged-rect"' in text for text in images.values())  # the cleaned SVG is there
    for notebook in (html / "_downloads" / "notebooks").glob("*.ipynb"):
        assert _no_script(notebook.read_text(encoding="utf-8")) == [], notebook
    downloaded = (html / "_downloads" / "notebooks" / "sec-alpha.ipynb").read_text(encoding="utf-8")
    assert "dataframe" in downloaded and "forged-rect" in downloaded
    for deck in (html / "_slides").rglob("*.html"):
        assert _no_script(deck.read_text(encoding="utf-8")) == [], deck
    # The store keeps what it holds: the build wrote nothing there.
    assert "window.forgedJs" in (forged / ENTRY).read_text(encoding="utf-8")


def test_trusted_outputs_publish_the_entry_as_it_is(forged: Path, tmp_path: Path) -> None:
    book = tmp_path / "book"
    shutil.copytree(forged, book, symlinks=True)
    config = book / "config.ini"
    config.write_text(config.read_text(encoding="utf-8") + "\n[site]\ntrusted_outputs = true\n", encoding="utf-8")
    proc = tabbook(book, "build", "--frozen")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    html = book / "build" / "html"
    page = (html / "sec.html").read_text(encoding="utf-8")
    assert "window.forgedHtml = 1" in page and "window.forgedJs = 1" in page  # the page was merged again
    downloaded = (html / "_downloads" / "notebooks" / "sec-alpha.ipynb").read_text(encoding="utf-8")
    assert "window.forgedJs" in downloaded
    # And back: turning it off cleans the page and the downloads again.
    config.write_text(config.read_text(encoding="utf-8").replace("trusted_outputs = true", "trusted_outputs = false"),
                      encoding="utf-8")
    proc = tabbook(book, "build", "--frozen")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert _no_script((html / "sec.html").read_text(encoding="utf-8")) == []
    assert _no_script((html / "_downloads" / "notebooks" / "sec-alpha.ipynb").read_text(encoding="utf-8")) == []


def test_trusted_outputs_is_the_books_decision_not_an_overlays(tmp_path: Path) -> None:
    book = tmp_path / "book"
    shutil.copytree(Path(__file__).resolve().parent / "fixtures" / "book", book)
    overlay = tmp_path / "tabbook.ini"
    overlay.write_text("[site]\ntrusted_outputs = true\n", encoding="utf-8")
    proc = tabbook(book, "--overlay", str(overlay), "check")
    assert proc.returncode != 0
    assert "trusted_outputs" in proc.stdout + proc.stderr


def test_an_output_kind_is_one_declaration(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 40: a kind of output is one OutputKind line, which the site's cleaning, the PDFs'
    priorities, the slides and verify-freeze all read; an undeclared type is dropped."""
    from tabbook.execute import outputs, verify
    from tabbook.render import sanitize

    bundle = {"image/avif": "AAAA", "text/plain": "<figure>"}
    assert sanitize.clean_bundle(bundle) == {"text/plain": "<figure>"}  # not declared: needs script?
    kinds = {**outputs.KINDS, "image/avif": outputs.OutputKind("image/avif", outputs.Clean.PLAIN, text=True)}
    monkeypatch.setattr(sanitize, "KINDS", kinds)
    monkeypatch.setattr(verify, "KINDS", kinds)
    assert sanitize.clean_bundle(bundle) == bundle
    assert verify.shown({"output_type": "display_data", "data": {"image/avif": "took 3 ms"}}) == [
        ("image/avif", "took <duration>")]
    assert {k.mime for k in outputs.OUTPUT_KINDS if k.pdf is not None} >= {"application/pdf", "text/plain"}


def test_the_declared_kinds_a_page_cannot_show_are_known() -> None:
    """myst-nb writes the pages and shows only the types it renders; a declared kind outside them
    reaches the downloadable notebooks (and the slides, where its line ranks it) but not the
    pages. Declaring a new image type does not put it on a page: that takes a myst-nb mime
    renderer (outputs.py's docstring), and this list says so to whoever adds one."""
    from myst_nb.core.render import get_mime_priority

    from tabbook.execute import outputs

    shown = set(get_mime_priority("html", []))
    assert {k.mime for k in outputs.OUTPUT_KINDS if k.mime not in shown} == {
        "application/pdf", "image/webp", "image/bmp"}
