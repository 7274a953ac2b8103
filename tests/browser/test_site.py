"""The reader's site in a real browser: tabs, keyboard, memory, no-JS, dark mode, copy, isolation."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from prerequisites import skip_unless

Server = Any  # conftest.Server: the test site on 127.0.0.1

# Per tab set on a page: the sync id of every visible panel's tab, and of the tab marked selected.
SHOWN = """() => [...document.querySelectorAll('.sd-tab-set')].map(set => {
  const panels = [...set.querySelectorAll(':scope > .sd-tab-content')].filter(p => p.checkVisibility());
  const sel = set.querySelector('[role=tab][aria-selected=true]');
  return {
    shown: panels.map(p => document.getElementById(p.getAttribute('aria-labelledby')).dataset.syncId),
    selected: sel ? sel.dataset.syncId : null,
    ids: [...set.querySelectorAll('.sd-tab-label')].map(l => l.dataset.syncId),
  };
})"""


def shown(page: Any) -> list[dict[str, Any]]:
    sets = page.evaluate(SHOWN)
    assert sets, "no tab sets on the page"
    for s in sets:
        assert len(s["shown"]) == 1, f"exactly one panel per tab set must show: {s}"
        assert s["shown"][0] == s["selected"], f"the visible panel must be the selected tab's: {s}"
    return sets


def expect_choice(page: Any, fw: str, fallback: str = "pytorch") -> None:
    for s in shown(page):
        want = fw if fw in s["ids"] else fallback
        assert s["selected"] == want, f"tab set {s['ids']} shows {s['selected']}, expected {want}"


def open_page(page: Any, server: Server, path: str) -> None:
    page.goto(f"{server.url}/{path}", wait_until="networkidle")


def click_tab(page: Any, fw: str, nth: int = 0) -> None:
    page.locator(f".sd-tab-label[data-sync-id='{fw}']").nth(nth).click()


def test_default_tab_and_aria_roles(page: Any, server: Server) -> None:
    open_page(page, server, "tabs.html")
    expect_choice(page, "pytorch")
    roles = page.evaluate("""() => [...document.querySelectorAll('.sd-tab-set')].map(set => {
      const list = set.querySelector(':scope > [role=tablist]');
      const tabs = list ? [...list.children] : [];
      return {
        list: !!list && !!list.getAttribute('aria-label'),
        tabsOk: tabs.length > 0 && tabs.every(t => t.getAttribute('role') === 'tab'),
        panelsOk: tabs.every(t => {
          const p = document.getElementById(t.getAttribute('aria-controls'));
          return p && p.getAttribute('role') === 'tabpanel' && p.getAttribute('aria-labelledby') === t.id;
        }),
        roving: tabs.filter(t => t.tabIndex === 0).length === 1 &&
                tabs.find(t => t.tabIndex === 0).getAttribute('aria-selected') === 'true',
        radiosHidden: [...set.querySelectorAll(':scope > input')].every(i => i.hidden && i.tabIndex === -1),
      };
    })""")
    for r in roles:
        assert all(r.values()), r


def test_click_switches_every_tab_set(page: Any, server: Server) -> None:
    open_page(page, server, "tabs.html")
    click_tab(page, "jax")
    expect_choice(page, "jax")
    assert page.locator(".sd-tab-content:visible pre", has_text="greet('jax')").count() == 1
    assert page.get_by_text("JAX-only prose.").is_visible()
    click_tab(page, "mxnet", nth=1)  # the prose tab set this time
    expect_choice(page, "mxnet", fallback="jax")  # where MXNet is missing: the previous choice


def test_choice_survives_reload_and_other_pages(page: Any, server: Server) -> None:
    open_page(page, server, "tabs.html")
    click_tab(page, "mxnet")
    page.reload(wait_until="networkidle")
    expect_choice(page, "mxnet")
    open_page(page, server, "other.html")
    expect_choice(page, "mxnet")
    assert page.locator(".cell_output", has_text="other page, mxnet").is_visible()


def test_query_parameter_selects_and_is_remembered(page: Any, server: Server) -> None:
    open_page(page, server, "tabs.html?tab=mxnet")
    expect_choice(page, "mxnet")
    open_page(page, server, "other.html")
    expect_choice(page, "mxnet")


def test_tab_set_lacking_the_choice_shows_a_sensible_tab(page: Any, server: Server) -> None:
    open_page(page, server, "tabs.html?tab=mxnet")
    lacking = [s for s in shown(page) if "mxnet" not in s["ids"]]
    assert lacking, "the test book must have a tab set without MXNet"
    assert all(s["selected"] == "pytorch" for s in lacking)  # the book's default framework
    # A reader who last chose JAX, then MXNet, sees JAX where MXNet is missing.
    click_tab(page, "jax")
    click_tab(page, "mxnet")
    lacking = [s for s in shown(page) if "mxnet" not in s["ids"]]
    assert all(s["selected"] == "jax" for s in lacking)
    page.reload(wait_until="networkidle")
    assert all(s["selected"] == "jax" for s in shown(page) if "mxnet" not in s["ids"])


def test_keyboard_switches_syncs_and_remembers(page: Any, server: Server) -> None:
    open_page(page, server, "tabs.html")
    first = page.locator("[role=tab][data-sync-id='pytorch']").first
    first.focus()
    page.keyboard.press("ArrowRight")
    expect_choice(page, "jax")
    assert page.evaluate("document.activeElement.dataset.syncId") == "jax"
    page.keyboard.press("End")
    expect_choice(page, "mxnet", fallback="jax")
    page.keyboard.press("ArrowRight")  # wraps around
    expect_choice(page, "pytorch")
    page.keyboard.press("ArrowLeft")
    expect_choice(page, "mxnet", fallback="pytorch")
    page.keyboard.press("Home")
    page.keyboard.press("ArrowRight")
    expect_choice(page, "jax")
    # Tab from the tab list goes into the panel, not to the other tabs.
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.getAttribute('role')") == "tabpanel"
    page.reload(wait_until="networkidle")
    expect_choice(page, "jax")


def test_without_javascript_all_code_is_reachable(browser: Any, server: Server) -> None:
    ctx = browser.new_context(java_script_enabled=False, viewport={"width": 1280, "height": 900})
    try:
        page = ctx.new_page()
        open_page(page, server, "tabs.html")
        total = page.locator(".cell_input pre").count()
        assert total > 0
        # The default framework shows first, without any script.
        assert page.locator(".sd-tab-content:visible pre", has_text="greet('pytorch')").count() == 1
        seen: set[str] = set()
        # Cells every framework shows identically sit outside any tab set, always visible.
        shared = page.locator(".cell_input pre:not(.sd-tab-content .cell_input pre)")
        for k in range(shared.count()):
            assert shared.nth(k).is_visible()
            seen.add(f"shared/{k}")
        sets = page.locator(".sd-tab-set")
        for i in range(sets.count()):
            labels = sets.nth(i).locator(":scope > label")
            for j in range(labels.count()):
                labels.nth(j).click()
                panel_id = labels.nth(j).get_attribute("aria-controls")
                panel = page.locator(f"#{panel_id}")
                assert panel.is_visible()
                for k in range(panel.locator(".cell_input pre").count()):
                    pre = panel.locator(".cell_input pre").nth(k)
                    assert pre.is_visible()
                    seen.add(f"{panel_id}/{k}")
        assert len(seen) == total, "every code cell must be one click away"
    finally:
        ctx.close()


def test_dark_mode_toggles(page: Any, server: Server) -> None:
    page.emulate_media(color_scheme="light")
    open_page(page, server, "tabs.html")

    def background() -> float:
        rgb = page.evaluate("getComputedStyle(document.body).backgroundColor")
        r, g, b = (int(x) for x in rgb[rgb.index("(") + 1: rgb.index(")")].split(",")[:3])
        return 0.2126 * r + 0.7152 * g + 0.0722 * b

    assert background() > 128
    toggle = page.locator("button.theme-toggle:visible").first
    themes, shades = [], []
    for _ in range(3):
        toggle.click()
        themes.append(page.evaluate("document.body.dataset.theme"))
        shades.append(background())
    assert "dark" in themes and "light" in themes
    assert shades[themes.index("dark")] < 64
    assert shades[themes.index("light")] > 128
    # The choice is remembered like the framework.
    page.reload(wait_until="networkidle")
    assert page.evaluate("document.body.dataset.theme") == themes[-1]


def _cell_sources(book_dir: Path, stem: str, fw: str) -> list[str]:
    nb = json.loads((book_dir / "build" / "src" / f"{stem}.ipynb").read_text(encoding="utf-8"))
    out = []
    for cell in nb["cells"]:
        mark = cell.get("metadata", {}).get("tabbook", {})
        if cell["cell_type"] == "code" and mark.get("framework") == fw:
            src = cell["source"]
            out.append("".join(src) if isinstance(src, list) else src)
    return out


def test_copy_button_copies_the_code_only(context: Any, server: Server, book_dir: Path) -> None:
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=server.url)
    page = context.new_page()
    open_page(page, server, "tabs.html")
    sources = _cell_sources(book_dir, "tabs", "pytorch")
    cells = page.locator(".sd-tab-content:visible .cell")
    assert cells.count() >= 2
    for i in range(cells.count()):
        cell = cells.nth(i)
        cell.locator(".cell_input").hover()
        button = cell.locator(".cell_input button.tabbook-copy")
        assert button.is_visible()
        button.click()
        copied = page.evaluate("navigator.clipboard.readText()")
        assert copied in sources, f"copied {copied!r}, not a code cell of the page"
        assert "hello from pytorch" not in copied and "total 45" not in copied  # never the output
        assert cell.locator(".cell_output button.tabbook-copy").count() == 0
    assert page.locator(".cell_output .tabbook-copy, .output .tabbook-copy").count() == 0
    # A console block: the prompt is not copied.
    block = page.locator("div.highlight-console .highlight")
    block.hover()
    block.locator("button.tabbook-copy").click()
    assert page.evaluate("navigator.clipboard.readText()") == "pip install d2l"


@pytest.mark.parametrize("path", ["index.html", "tabs.html", "other.html", "search.html?q=greet", "genindex.html"])
def test_no_foreign_requests_and_no_console_errors(page: Any, server: Server, path: str) -> None:
    open_page(page, server, path)
    if path.startswith("search"):
        page.wait_for_selector("#search-results li", timeout=10_000)  # search works offline
    assert page.watch.foreign(server.url) == []
    assert page.watch.errors == []
    assert page.watch.dialogs == []


def test_search_terms_are_highlighted_without_linking_the_highlighter_everywhere(page: Any, server: Server) -> None:
    """Sphinx's highlighter is fetched only by a reader who comes from a search: a plain visit
    does not download it; following a search result (and ?highlight=) marks the terms."""
    open_page(page, server, "other.html")
    assert not [u for u in page.watch.requests if "sphinx_highlight" in u]
    assert page.locator("span.highlighted").count() == 0

    open_page(page, server, "search.html?q=framework")
    page.wait_for_selector("#search-results li a", timeout=10_000)
    with page.expect_navigation():
        page.locator("#search-results li a", has_text="Another Page").first.click()
    page.wait_for_selector("span.highlighted", timeout=10_000)
    assert page.locator("span.highlighted").first.inner_text().lower() == "framework"

    open_page(page, server, "other.html?highlight=second")
    page.wait_for_selector("span.highlighted", timeout=10_000)
    assert page.locator("span.highlighted").first.inner_text().lower() == "second"
    assert page.watch.errors == []


def _highlighted(page: Any) -> int:
    page.wait_for_timeout(300)  # the highlighter marks the terms 10 ms after it runs
    return page.locator("span.highlighted").count()


def test_search_terms_are_highlighted_only_on_the_page_a_result_opened(page: Any, server: Server) -> None:
    """Sphinx kept the terms for whichever page loaded next: after a search, a page reached from
    the sidebar, or every page in the first window when results opened in new tabs, showed them
    highlighted. The terms travel with each result's link instead."""
    open_page(page, server, "search.html?q=framework")
    page.wait_for_selector("#search-results li a", timeout=10_000)
    open_page(page, server, "other.html")  # a search, then a page from the sidebar: no terms
    assert _highlighted(page) == 0

    open_page(page, server, "search.html?q=framework")
    page.wait_for_selector("#search-results li a", timeout=10_000)
    result = page.locator("#search-results li a", has_text="Another Page").first
    href = result.get_attribute("href")
    assert "highlight=framework" in href, href

    # A result opened in another tab is highlighted there; this window's next page is not.
    other = page.context.new_page()
    other.goto(result.evaluate("a => a.href"), wait_until="networkidle")
    assert _highlighted(other) > 0
    other.close()
    open_page(page, server, "tabs.html")  # as from the sidebar, after the search
    assert _highlighted(page) == 0

    # After following a result, the pages read next are not highlighted.
    open_page(page, server, "search.html?q=framework")
    page.wait_for_selector("#search-results li a", timeout=10_000)
    with page.expect_navigation():
        page.locator("#search-results li a", has_text="Another Page").first.click()
    assert _highlighted(page) > 0
    assert "highlight=" not in page.url  # Sphinx takes the terms off the address: a reload shows none
    page.locator("a[href='tabs.html']").first.click()
    page.wait_for_load_state("networkidle")
    assert _highlighted(page) == 0
    page.reload(wait_until="networkidle")
    assert _highlighted(page) == 0
    assert page.watch.errors == []


def test_search_snippets_are_prose_not_code_or_outputs(page: Any, server: Server) -> None:
    """A snippet showed the code a term was found in, or its output; now the page's prose."""
    for query, code in (("greet", ("def greet", "hello from", "return f")), ("total", ("sum(range", "total 45"))):
        open_page(page, server, f"search.html?q={query}")
        page.wait_for_selector("#search-results li p.context", timeout=10_000)
        snippets = page.locator("#search-results li p.context").all_inner_texts()
        assert snippets, query
        for text in snippets:
            assert not any(c in text for c in code), f"{query}: {text}"
            assert text.strip(), query
    assert page.watch.errors == []


def test_script_in_output_is_shown_as_text(page: Any, server: Server) -> None:
    open_page(page, server, "tabs.html")
    out = page.locator(".cell_output:visible", has_text="<script>alert(1)</script>")
    assert out.count() == 1 and out.is_visible()
    assert page.watch.dialogs == []
    assert page.evaluate("[...document.scripts].some(s => s.textContent.includes('alert(1)'))") is False


def test_math_is_typeset_at_build_time(page: Any, server: Server) -> None:
    open_page(page, server, "tabs.html")
    assert page.locator(".katex").count() >= 2
    assert page.locator(".katex-display math").count() >= 1  # MathML kept for screen readers
    assert page.locator(".eqno", has_text="(1.1)").is_visible()
    assert page.locator(".tabbook-math-source").count() == 0
    assert "\\sigma" not in page.locator("article").inner_text()  # no raw TeX left
    assert page.evaluate("document.fonts.check('16px KaTeX_Main')")


def test_provenance_and_downloads(page: Any, server: Server) -> None:
    open_page(page, server, "tabs.html")
    prov = page.locator(".tabbook-provenance")
    assert prov.is_visible()
    for label in ("PyTorch", "JAX", "MXNet"):
        assert f"{label} outputs computed on" in prov.inner_text()
    links = page.locator(".tabbook-downloads-notebook a")
    assert [links.nth(i).inner_text() for i in range(links.count())] == ["PyTorch", "JAX", "MXNet"]
    for i in range(links.count()):
        href = links.nth(i).get_attribute("href")
        resp = page.request.get(f"{server.url}/{href}")
        assert resp.ok
        nb = json.loads(resp.body())
        assert nb["metadata"]["kernelspec"]["name"] == "python3"
        assert any(c["cell_type"] == "code" and c.get("outputs") for c in nb["cells"])
    assert page.locator(".tabbook-downloads-colab").count() == 0  # no repository configured
    # No PDF built: the page says so rather than leaving the PDF out silently.
    assert page.locator(".tabbook-downloads-pdf a").count() == 0
    assert page.locator(".tabbook-downloads-pdf .tabbook-missing").inner_text() == "not in this build"


def test_phone_width_has_no_horizontal_scroll(browser: Any, server: Server) -> None:
    ctx = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    try:
        page = ctx.new_page()
        open_page(page, server, "tabs.html")
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
        tabs = page.locator("[role=tablist]").first.locator("[role=tab]")
        tops = {round(tabs.nth(i).bounding_box()["y"]) for i in range(tabs.count())}
        assert len(tops) == 1, "three framework tabs fit on one line at phone width"
        tabs.nth(1).tap()
        expect_choice(page, "jax")
    finally:
        ctx.close()


def test_pdf_and_colab_links_appear_when_available(book_dir: Path, site: Path, tmp_path: Path,
                                                   build_book: Any) -> None:
    book = tmp_path / "book"
    shutil.copytree(book_dir, book, symlinks=True)
    pdf = book / "build" / "pdf" / "browserbook-jax.pdf"
    pdf.parent.mkdir(parents=True)
    pdf.write_bytes(b"%PDF-1.5 test")
    html = build_book(book)
    text = (html / "tabs.html").read_text(encoding="utf-8")
    assert 'href="_downloads/pdf/browserbook-jax.pdf"' in text  # the page was re-written for it
    assert (html / "_downloads" / "pdf" / "browserbook-jax.pdf").read_bytes() == pdf.read_bytes()
    assert "colab.research.google.com" not in text
    config = book / "config.ini"
    config.write_text(config.read_text().replace("repository =", "repository = https://github.com/o/r"))
    text = (build_book(book) / "tabs.html").read_text(encoding="utf-8")
    for fw in ("pytorch", "jax", "mxnet"):  # one per section and framework
        assert f'href="https://colab.research.google.com/github/o/r/blob/main/_freeze/tabs/{fw}.ipynb"' in text
    assert 'href="https://github.com/o/r/blob/main/tabs.md"' in text


REAL_SITE = Path(__file__).resolve().parents[2] / "build" / "html"
REAL_PAGES = sorted(p.relative_to(REAL_SITE).as_posix() for p in REAL_SITE.glob("chapter*/*.html")) \
    if (REAL_SITE / "index.html").is_file() else []


@skip_unless(REAL_PAGES, "no built book in build/html (`make test` builds it before the tests; or `make html`)")
@pytest.mark.parametrize("path", REAL_PAGES or ["-"])
def test_real_book_pages_are_clean(page: Any, real_server: Any, path: str) -> None:
    """The book as built by `make html`: same origin only, no console errors, tabs enhanced."""
    open_page(page, real_server, path)
    assert page.watch.foreign(real_server.url) == []
    assert page.watch.errors == []
    assert page.locator(".sd-tab-set").count() == page.locator(".sd-tab-set.tabbook-enhanced").count()
    assert page.locator(".tabbook-math-source").count() == 0
