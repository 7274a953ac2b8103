"""A forged freeze entry's script does not run in Chromium (issue 33, item 3).

The entry (``tests/trust_book.py``) passes ``build --frozen``; on the built page, and when its
SVG is opened from ``_images/`` by its URL, none of its scripts runs (no global set, no dialog)
while the pandas table is shown. With ``[site] trusted_outputs = true`` the same scripts run:
proof that the test can see one run.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from trust_book import forged_book

FORGED_GLOBALS = ("forgedHtml", "forgedImg", "forgedJs", "forgedMd", "forgedSvg")


def _ran(page: Any) -> list[str]:
    return [name for name in FORGED_GLOBALS if page.evaluate(f"typeof window.{name} !== 'undefined'")]


@pytest.fixture(scope="module")
def sites(tmp_path_factory: pytest.TempPathFactory, serve_dir: Any) -> Iterator[dict[str, Any]]:
    servers = {}
    for trusted in (False, True):
        book = forged_book(tmp_path_factory.mktemp("trusted" if trusted else "untrusted"), trusted=trusted)
        servers[trusted] = serve_dir(book / "build" / "html")
    yield servers
    for srv in servers.values():
        srv.httpd.shutdown()
        srv.httpd.server_close()


def _open(page: Any, url: str) -> None:
    page.goto(url)
    page.wait_for_load_state("load")
    page.wait_for_timeout(300)  # an onerror of a missing image fires after load


def test_a_forged_entry_runs_no_script_on_the_page(page: Any, sites: dict[bool, Any]) -> None:
    srv = sites[False]
    _open(page, f"{srv.url}/sec.html")
    assert _ran(page) == []
    assert page.watch.dialogs == []
    table = page.locator("table.dataframe")
    assert table.count() == 1 and table.is_visible() and "0.125" in table.inner_text()
    assert page.locator("#forged-html").count() == 1  # the forged HTML is shown, inert
    for svg in sorted((Path(srv.root) / "_images").glob("*.svg")):
        _open(page, f"{srv.url}/_images/{svg.name}")  # opened by its URL, an SVG runs its script
        assert _ran(page) == [], svg.name
        assert page.watch.dialogs == []


def test_trusted_outputs_run_as_they_are(page: Any, sites: dict[bool, Any]) -> None:
    srv = sites[True]
    _open(page, f"{srv.url}/sec.html")
    ran = _ran(page)
    assert "forgedHtml" in ran and "forgedJs" in ran, ran
    assert page.watch.dialogs  # alert("html") / alert("js") opened
    svg_ran = []
    for svg in sorted((Path(srv.root) / "_images").glob("*.svg")):
        _open(page, f"{srv.url}/_images/{svg.name}")
        svg_ran += _ran(page)
    assert "forgedSvg" in svg_ran  # the SVG's script runs when it is published as it is
