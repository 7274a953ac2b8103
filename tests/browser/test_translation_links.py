"""``[site] languages`` in a browser: two fixture books (tests/language_books.py) built and served
side by side (``/en/``, ``/fr/``); a reader follows the translation link from a page to the same
page in the other language and back, and axe-core finds nothing serious on a page with the line,
at a desktop's width and a phone's."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from typing import Any

import pytest
from axe_core import axe_script
from language_books import make_books
from prerequisites import require
from test_accessibility import NAMED, RUN


@pytest.fixture(scope="module")
def sites(tmp_path_factory: pytest.TempPathFactory, build_book: Any, serve_dir: Any) -> Iterator[Any]:
    tmp = tmp_path_factory.mktemp("languages")
    en, fr = make_books(tmp / "books")
    for book in (en, fr):
        shutil.copytree(build_book(book), tmp / "site" / book.name)
    server = serve_dir(tmp / "site")
    yield server
    server.httpd.shutdown()


def test_a_reader_goes_to_the_same_page_in_the_other_language_and_back(page: Any, sites: Any) -> None:
    page.goto(f"{sites.url}/en/basics/autograd.html")
    nav = page.get_by_role("navigation", name="Translations")
    nav.get_by_role("link", name="Français").click()
    page.wait_for_url(f"{sites.url}/fr/basics/gradients.html")
    assert page.locator("h1").first.inner_text().startswith("Différentiation automatique")
    page.get_by_role("navigation", name="Traductions").get_by_role("link", name="English").click()
    page.wait_for_url(f"{sites.url}/en/basics/autograd.html")
    page.goto(f"{sites.url}/en/extra.html")  # no French page: no line
    assert page.get_by_role("navigation", name="Translations").count() == 0


@pytest.mark.parametrize("width", [1280, 390])
@pytest.mark.parametrize("path", ["en/basics/tensors.html", "fr/basics/tensors.html"])
def test_the_translations_line_is_accessible(browser: Any, sites: Any, path: str, width: int) -> None:
    script = axe_script()
    require(script.is_file(), f"axe-core is not installed at {script} (make axe)")
    ctx = browser.new_context(viewport={"width": width, "height": 900})
    try:
        page = ctx.new_page()
        page.goto(f"{sites.url}/{path}", wait_until="networkidle")
        assert page.get_by_role("navigation", name=("Traductions" if path.startswith("fr") else "Translations")).count() == 1
        page.add_script_tag(content=script.read_text(encoding="utf-8"))
        violations = page.evaluate(RUN)
    finally:
        ctx.close()
    bad = [v for v in violations if v["impact"] in ("serious", "critical") or v["id"] in NAMED]
    assert bad == [], bad
