"""What a reader takes away, in a real browser: the PDF and slides links follow the framework
choice, the front page's picker sets it for the whole site, the slide decks open and advance
with the keyboard, and a site built without PDFs says so."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

Server = Any  # conftest.Server


def open_page(page: Any, server: Server, path: str) -> None:
    page.goto(f"{server.url}/{path}", wait_until="networkidle")


def follow(page: Any, kind: str) -> Any:
    return page.locator(f".tabbook-downloads-{kind} a.tabbook-follow")


@pytest.fixture(scope="module")
def pdf_site(book_dir: Path, site: Path, tmp_path_factory: pytest.TempPathFactory, build_book: Any,
             serve_dir: Any) -> Any:
    """The test book built with a PDF for every framework in build/pdf (what `make site` leaves
    there; typesetting is tests/test_pdf.py's business), served."""
    book = tmp_path_factory.mktemp("pdfsite") / "book"
    shutil.copytree(book_dir, book, symlinks=True)
    for fw in ("pytorch", "jax", "mxnet"):
        pdf = book / "build" / "pdf" / f"browserbook-{fw}.pdf"
        pdf.parent.mkdir(parents=True, exist_ok=True)
        pdf.write_bytes(b"%PDF-1.5 " + fw.encode())
    srv = serve_dir(build_book(book))
    yield srv
    srv.httpd.shutdown()
    srv.httpd.server_close()


def test_pdf_link_follows_the_tab(page: Any, pdf_site: Server) -> None:
    open_page(page, pdf_site, "tabs.html")
    link = follow(page, "pdf")
    assert link.count() == 1
    assert link.inner_text() == "PyTorch" and link.get_attribute("href") == "_downloads/pdf/browserbook-pytorch.pdf"
    page.locator(".sd-tab-label[data-sync-id='jax']").first.click()
    assert link.inner_text() == "JAX"
    href = link.get_attribute("href")
    assert href == "_downloads/pdf/browserbook-jax.pdf"
    assert page.request.get(f"{pdf_site.url}/{href}").body() == b"%PDF-1.5 jax"
    # The choice is remembered: another page opens with the JAX PDF, though it has no tab clicked.
    open_page(page, pdf_site, "other.html")
    assert follow(page, "pdf").get_attribute("href") == "_downloads/pdf/browserbook-jax.pdf"


def test_front_page_offers_every_pdf_and_zip(page: Any, pdf_site: Server) -> None:
    open_page(page, pdf_site, "index.html")
    table = page.locator("table.tabbook-front-downloads")
    hrefs = [a.get_attribute("href") for a in table.locator("a").all()]
    assert hrefs == [f"_downloads/{kind}" for kind in (
        "pdf/browserbook-pytorch.pdf", "notebooks/browserbook-pytorch-notebooks.zip",
        "pdf/browserbook-jax.pdf", "notebooks/browserbook-jax-notebooks.zip",
        "pdf/browserbook-mxnet.pdf", "notebooks/browserbook-mxnet-notebooks.zip")]
    for href in hrefs:
        assert page.request.get(f"{pdf_site.url}/{href}").ok, href
    assert page.watch.foreign(pdf_site.url) == [] and page.watch.errors == []


def test_without_pdfs_the_page_says_so(page: Any, server: Server) -> None:
    open_page(page, server, "tabs.html")
    assert page.locator(".tabbook-downloads-pdf .tabbook-missing").inner_text() == "not in this build"
    assert page.locator(".tabbook-downloads-pdf a").count() == 0
    open_page(page, server, "index.html")
    assert page.locator("table.tabbook-front-downloads .tabbook-missing", has_text="not in this build").count() == 3


def test_picker_sets_the_tab_on_another_page(page: Any, server: Server) -> None:
    open_page(page, server, "index.html")
    picker = page.locator(".tabbook-picker")
    assert picker.is_visible()
    assert picker.locator("button[aria-pressed=true]").inner_text() == "PyTorch"
    picker.locator("button", has_text="MXNet").click()
    assert picker.locator("button[aria-pressed=true]").inner_text() == "MXNet"
    open_page(page, server, "other.html")
    selected = page.locator(".sd-tab-set [role=tab][aria-selected=true]")
    assert selected.count() == 1 and selected.inner_text() == "MXNet"
    assert page.get_by_text("other page, mxnet", exact=True).is_visible()  # its output
    # The slides link of a section follows the same choice.
    open_page(page, server, "tabs.html")
    assert follow(page, "slides").get_attribute("href") == "_slides/tabs-mxnet.html"
    # And the choice made on a page shows on the front page's picker.
    page.locator(".sd-tab-label[data-sync-id='jax']").first.click()
    open_page(page, server, "index.html")
    assert page.locator(".tabbook-picker button[aria-pressed=true]").inner_text() == "JAX"


def test_front_page_lists_sections_with_a_line_each(page: Any, server: Server) -> None:
    open_page(page, server, "index.html")
    items = page.locator("article li").filter(has=page.locator("a[href='tabs.html']"))
    assert items.count() == 1
    assert "Inline math" in items.inner_text()  # the first sentence, slide marks removed
    assert "pip install browserbook" not in page.content()  # the package is the library dir's name
    assert page.get_by_text("Where the outputs were computed").is_visible()
    assert page.locator("article").get_by_text("CPU only", exact=False).count() >= 1


def test_slides_open_and_advance_with_the_keyboard(page: Any, server: Server) -> None:
    open_page(page, server, "tabs.html")
    page.locator(".sd-tab-label[data-sync-id='jax']").first.click()
    follow(page, "slides").click()
    page.wait_for_load_state("networkidle")
    assert page.url.endswith("/_slides/tabs-jax.html")
    page.wait_for_function("typeof Reveal !== 'undefined' && Reveal.isReady()")
    assert page.evaluate("Reveal.getIndices().h") == 0
    assert page.locator(".reveal section.present h1").inner_text() == "Tabs, Code and Math"
    total = page.evaluate("Reveal.getTotalSlides()")
    assert total == 3
    page.keyboard.press("ArrowRight")
    page.wait_for_function("Reveal.getIndices().h === 1")
    current = page.locator(".reveal section.present")
    assert "Inline math" in current.inner_text()
    assert current.locator(".katex").count() == 1  # typeset at build time
    assert "hello from jax" in current.inner_text()  # the stored output of the JAX cell
    page.keyboard.press("ArrowRight")
    page.wait_for_function("Reveal.getIndices().h === 2")
    text = page.locator(".reveal section.present").inner_text()
    assert "The next cell exists for PyTorch and JAX only" in text and "total 45" in text
    assert "<script>alert(1)</script>" in text and page.watch.dialogs == []  # outputs stay text
    assert page.watch.foreign(server.url) == []
    assert page.watch.errors == []
    # Back to the section, in the framework of the deck.
    page.keyboard.press("Home")
    page.wait_for_function("Reveal.getIndices().h === 0")
    page.locator(".tabbook-deck-back a").click()
    page.wait_for_load_state("networkidle")
    assert page.url.endswith("/tabs.html?tab=jax")


def test_a_section_without_marks_has_no_slides(page: Any, server: Server, site: Path) -> None:
    open_page(page, server, "other.html")
    assert page.locator(".tabbook-downloads-slides").count() == 0
    assert not list((site / "_slides").glob("other-*.html"))
