"""The edition selector in a browser (issue 53, item 1): a reader follows it from the current
edition to the first and back, lands on the same page, or on the nearest parent with the note
that said so; it works with JavaScript off, leaves nothing stored, and axe finds nothing serious.

The site is the two-edition fixture repository of tests/editions_book.py, built by ``tabbook
site --no-pdfs`` (one build for the module).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from axe_core import axe_script
from editions_book import make_repo, tabbook
from prerequisites import require
from test_accessibility import NAMED, RUN


@pytest.fixture(scope="module")
def editions_url(tmp_path_factory: pytest.TempPathFactory, serve_dir: Any) -> Iterator[str]:
    repo = make_repo(tmp_path_factory.mktemp("editions-browser") / "book")
    tabbook(repo, "site", "--no-pdfs")
    srv = serve_dir(repo / "build" / "html")
    yield srv.url
    srv.httpd.shutdown()
    srv.httpd.server_close()


def _choose(page: Any, edition: str) -> None:
    selector = page.locator("nav.tabbook-editions")
    if selector.locator("details[open]").count() == 0:
        selector.locator("summary").click()
    selector.get_by_role("link", name=edition).click()
    page.wait_for_load_state()


@pytest.mark.parametrize("javascript", [True, False])
def test_the_selector_goes_to_the_same_page_both_ways(browser: Any, editions_url: str, javascript: bool) -> None:
    ctx = browser.new_context(viewport={"width": 1280, "height": 900}, java_script_enabled=javascript)
    try:
        page = ctx.new_page()
        page.goto(f"{editions_url}/part/kept.html")
        assert "output of the current edition" in page.content()
        _choose(page, "First edition")
        assert page.url == f"{editions_url}/v1/part/kept.html"
        assert "output of the first edition" in page.content()
        nav = page.locator("nav.tabbook-editions")
        assert nav.locator("summary").inner_text() == "Edition: First edition"
        _choose(page, "Current edition")
        assert page.url == f"{editions_url}/part/kept.html"
        # nothing remembered: no cookie, nothing in the page's storage
        assert ctx.cookies() == []
        if javascript:
            assert page.evaluate("() => localStorage.length + sessionStorage.length") == 0
    finally:
        ctx.close()


def test_a_page_missing_there_goes_to_its_parent_and_says_so(browser: Any, editions_url: str,
                                                             tmp_path: Path) -> None:
    ctx = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        page = ctx.new_page()
        page.goto(f"{editions_url}/part/new.html")
        nav = page.locator("nav.tabbook-editions")
        nav.locator("summary").click()
        note = nav.locator(".tabbook-edition-note")
        assert note.is_visible()
        assert note.inner_text() == ("this page is not in the First edition: the link goes to its nearest "
                                     "parent there, Part")
        page.screenshot(path=str(tmp_path / "editions.png"))  # to look at: the open selector and its note
        _choose(page, "First edition")
        assert page.url == f"{editions_url}/v1/part/index.html"
        # and back from a page only the first edition has
        page.goto(f"{editions_url}/v1/part/old.html")
        _choose(page, "Current edition")
        assert page.url == f"{editions_url}/part/index.html"
        # the intro moved under the part: its first-edition page has no parent in common but the root
        page.goto(f"{editions_url}/v1/intro.html")
        page.locator("nav.tabbook-editions summary").click()
        assert page.locator(".tabbook-edition-note").inner_text().endswith("the link goes to its front page")
        _choose(page, "Current edition")
        assert page.url == f"{editions_url}/index.html"
    finally:
        ctx.close()


@pytest.mark.parametrize("width", [1280, 390])
@pytest.mark.parametrize("path", ["part/new.html", "v1/part/old.html"])
def test_the_selector_passes_axe(browser: Any, editions_url: str, width: int, path: str) -> None:
    script = axe_script()
    require(script.is_file(), f"axe-core is not installed at {script} (make axe)")
    ctx = browser.new_context(viewport={"width": width, "height": 900})
    try:
        page = ctx.new_page()
        page.goto(f"{editions_url}/{path}", wait_until="networkidle")
        page.locator("nav.tabbook-editions summary").click()  # the open selector, its note shown
        page.add_script_tag(content=script.read_text(encoding="utf-8"))
        violations = page.evaluate(RUN)
    finally:
        ctx.close()
    bad = [v for v in violations if v["impact"] in ("serious", "critical") or v["id"] in NAMED]
    assert bad == [], bad
