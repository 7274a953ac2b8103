"""axe-core over the built book: the front page and every section page, at a desktop's width and a
phone's, with no serious or critical violation.

axe-core is the installed copy ``make axe`` puts in the cache (tests/browser/axe_core.py), injected
into each page: nothing is fetched from a CDN. The rules the reader journey found broken are
named too, whatever their impact: scroll boxes a keyboard cannot reach (tracebacks and wide
outputs, ``scrollable-region-focusable``), two unnamed ``<aside>`` landmarks (``landmark-unique``),
an empty corner header cell (``empty-table-header``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from axe_core import axe_script
from prerequisites import require, skip_unless

SITE = Path(__file__).resolve().parents[2] / "build" / "html"
PAGES = (["index.html"] + sorted(p.relative_to(SITE).as_posix() for p in SITE.glob("chapter*/*.html"))
         if (SITE / "index.html").is_file() else [])
NAMED = ("scrollable-region-focusable", "landmark-unique", "empty-table-header")

RUN = """async () => {
  await new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)));
  const result = await axe.run(document, {resultTypes: ["violations"]});
  return result.violations.map((v) => ({id: v.id, impact: v.impact,
    nodes: v.nodes.slice(0, 3).map((n) => n.target.join(" "))}));
}"""


@pytest.fixture(scope="module")
def axe_source() -> str:
    script = axe_script()
    require(script.is_file(), f"axe-core is not installed at {script} (make axe)")
    return script.read_text(encoding="utf-8")


@skip_unless(PAGES, "no built book in build/html (`make test` builds it before the tests; or `make html`)")
@pytest.mark.parametrize("width", [1280, 390])
@pytest.mark.parametrize("path", PAGES or ["-"])
def test_no_serious_accessibility_violation(browser: Any, real_server: Any, axe_source: str, path: str,
                                            width: int) -> None:
    ctx = browser.new_context(viewport={"width": width, "height": 900})
    try:
        page = ctx.new_page()
        page.goto(f"{real_server.url}/{path}", wait_until="networkidle")
        page.add_script_tag(content=axe_source)
        violations = page.evaluate(RUN)
    finally:
        ctx.close()
    bad = [v for v in violations if v["impact"] in ("serious", "critical") or v["id"] in NAMED]
    assert bad == [], bad
