"""What a reader met on the site, each in a real browser: an equation's number drawn over the
equation on a phone, the "Skip to content" link printed over the text, search snippets whose words
ran together, images whose alt text was a file path or hash, and plots without a size (the page
jumped as they loaded)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from prerequisites import skip_unless

Server = Any  # conftest.Server: the test book on 127.0.0.1

REAL_SITE = Path(__file__).resolve().parents[2] / "build" / "html"
BUILT = (REAL_SITE / "index.html").is_file()
needs_book = skip_unless(BUILT, "no built book in build/html (`make test` builds it before the tests; or `make html`)")

# For each numbered equation: its number's box, and the box the equation is drawn in (what
# scrolls when it is wider than the column), scrolled to its start and to its end.
EQUATIONS = """() => [...document.querySelectorAll('div.math')].filter(m => m.querySelector('.eqno')).map(m => {
  const no = m.querySelector('.eqno'), eq = m.querySelector('.katex-display');
  const boxes = [];
  for (const end of [false, true]) {
    for (const s of [m, m.parentElement, eq]) s.scrollLeft = end ? s.scrollWidth : 0;
    const a = no.getBoundingClientRect(), b = eq.getBoundingClientRect();
    const katex = eq.querySelector('.katex-html').getBoundingClientRect();
    const visible = {left: Math.max(b.left, katex.left), right: Math.min(b.right, katex.right)};
    boxes.push({no: [a.left, a.right, a.top, a.bottom], eq: [visible.left, visible.right, b.top, b.bottom]});
  }
  return {id: m.id, boxes};
})"""


def _overlap(a: list[float], b: list[float]) -> bool:
    return a[0] < b[1] - 0.5 and b[0] < a[1] - 0.5 and a[2] < b[3] - 0.5 and b[2] < a[3] - 0.5


def _equations_clear_of_their_numbers(page: Any) -> list[dict[str, Any]]:
    found = page.evaluate(EQUATIONS)
    assert found, "no numbered equation on the page"
    for eq in found:
        for box in eq["boxes"]:
            assert not _overlap(box["no"], box["eq"]), f"equation {eq['id']}: its number covers it: {box}"
    return found


@needs_book
@pytest.mark.parametrize("width", [390, 1280])
def test_an_equations_number_never_covers_it(browser: Any, real_server: Any, width: int) -> None:
    ctx = browser.new_context(viewport={"width": width, "height": 844}, is_mobile=width < 500)
    try:
        page = ctx.new_page()
        page.goto(f"{real_server.url}/chapter_gpus/why.html", wait_until="networkidle")
        _equations_clear_of_their_numbers(page)
        assert page.evaluate("document.documentElement.scrollWidth") <= width  # it scrolls in its box
    finally:
        ctx.close()


def test_printing_leaves_out_the_skip_link_and_the_controls(page: Any, server: Server) -> None:
    page.goto(f"{server.url}/tabs.html", wait_until="networkidle")
    skip = page.locator("a.skip-to-content")
    assert skip.count() == 1
    page.emulate_media(media="print")
    shown = page.evaluate("""() => [...document.querySelectorAll('.skip-to-content, .tabbook-copy')]
        .filter(e => getComputedStyle(e).display !== 'none').map(e => e.className)""")
    assert shown == []
    assert page.locator("article").inner_text().strip()  # the text itself is printed
    page.emulate_media(media="screen")
    assert page.evaluate("getComputedStyle(document.querySelector('a.skip-to-content')).display") != "none"


def test_search_snippets_read_as_text(page: Any, server: Server) -> None:
    page.goto(f"{server.url}/search.html?q=framework", wait_until="networkidle")
    page.wait_for_selector("#search-results li p.context", timeout=10_000)
    snippets = page.locator("#search-results li p.context").all_inner_texts()
    assert snippets
    labels = "|".join(("PyTorch", "JAX", "MXNet", "Notebooks", "PDF"))
    for text in snippets:
        # No two words glued where two elements met ("NotebooksPyTorchJAX", "PDFnot in this build").
        assert not re.search(f"({labels})({labels}|[a-z])", text), text
        assert "Notebooks PyTorch" not in text and "outputs computed on" not in text, text  # a page's chrome
    assert any("framework" in text.lower() for text in snippets)


def _images(page: Any) -> list[dict[str, Any]]:
    return page.evaluate("""() => [...document.querySelectorAll('article img')].map(i => ({
        src: i.getAttribute('src'), alt: i.getAttribute('alt'), w: i.getAttribute('width'),
        h: i.getAttribute('height'), box: [i.getBoundingClientRect().width, i.getBoundingClientRect().height],
        figure: i.closest('figure') ? i.closest('figure').querySelector('figcaption').innerText : null,
        output: !!i.closest('.cell_output')}))""")


@needs_book
@pytest.mark.parametrize("path", ["chapter_gpus/copying.html", "chapter_gpus/training.html"])
def test_images_have_words_and_a_size_before_they_load(browser: Any, real_server: Any, path: str) -> None:
    ctx = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        page = ctx.new_page()
        page.route("**/_images/**", lambda route: route.abort())  # as if none had arrived yet
        page.goto(f"{real_server.url}/{path}", wait_until="domcontentloaded")
        page.evaluate("document.querySelectorAll('.sd-tab-content').forEach(p => p.style.display = 'block')")
        images = _images(page)
    finally:
        ctx.close()
    assert images
    for img in images:
        alt = img["alt"] or ""
        assert alt and "/" not in alt and not re.search(r"\.(svg|png|jpe?g|gif)\b|[0-9a-f]{16}", alt), img
        if img["figure"] is not None:
            assert alt.split()[0] in img["figure"], img  # what the figure is, in its own words
        if img["output"]:
            assert alt.startswith("Figure drawn by the code above"), img
        assert img["w"] and img["h"], f"no size: {img}"
        width, height = img["box"]
        assert height > 50 and abs(height - width * int(img["h"]) / int(img["w"])) < 2, img  # box kept


# Every underlined piece of code on the page that is not a link: which token, which text.
UNDERLINED_CODE = """() => [...document.querySelectorAll('article .highlight pre *')]
  .filter(el => !el.closest('a') && getComputedStyle(el).textDecorationLine.includes('underline'))
  .map(el => `${el.className}: ${el.textContent}`)"""


@needs_book
@pytest.mark.parametrize("how", ["toggle", "system"])
def test_dark_mode_does_not_underline_code_like_links(browser: Any, real_server: Any, how: str) -> None:
    """Furo's dark code style underlined module names (`from d2l import torch`): they read as
    links. Dark by the theme toggle, or by the system's setting with the theme on auto."""
    ctx = browser.new_context(viewport={"width": 1280, "height": 900},
                              color_scheme="dark" if how == "system" else "light")
    try:
        page = ctx.new_page()
        page.goto(f"{real_server.url}/chapter_gpus/devices.html", wait_until="networkidle")
        page.evaluate(f"document.body.dataset.theme = '{'dark' if how == 'toggle' else 'auto'}'")
        assert page.evaluate("getComputedStyle(document.body).backgroundColor") != "rgb(255, 255, 255)"
        modules = page.locator("article .highlight pre .nn")
        assert modules.count() > 0 and "d2l" in modules.all_inner_texts()
        assert page.evaluate(UNDERLINED_CODE) == []
        assert modules.first.evaluate("el => getComputedStyle(el).color") != \
            page.evaluate("getComputedStyle(document.querySelector('article .highlight pre')).color")  # still coloured
    finally:
        ctx.close()


# For each code block with a copy button: where its first line's text is drawn under the button,
# with the block scrolled to its start and to its end (text scrolled out of the box is not drawn).
FIRST_LINE_UNDER_BUTTON = """() => {
  const hits = [];
  const blocks = [...document.querySelectorAll("div.highlight")]
    .filter(b => b.querySelector(":scope > .tabbook-copy") && b.checkVisibility());
  for (const block of blocks) {
    const button = block.querySelector(":scope > .tabbook-copy").getBoundingClientRect();
    const pre = block.querySelector("pre");
    const walker = document.createTreeWalker(pre, NodeFilter.SHOW_TEXT);
    const line = document.createRange();
    let started = false, node;
    while ((node = walker.nextNode())) {
      const nl = node.data.indexOf("\\n");
      if (!started) { line.setStart(node, 0); started = true; }
      if (nl >= 0) { line.setEnd(node, nl); break; }
      line.setEnd(node, node.data.length);
    }
    if (!started) continue;
    for (const end of [false, true]) {
      pre.scrollLeft = end ? pre.scrollWidth : 0;
      const box = pre.getBoundingClientRect();
      for (const r of line.getClientRects()) {
        const left = Math.max(r.left, box.left), right = Math.min(r.right, box.right);
        if (right > left && left < button.right && button.left < right && r.top < button.bottom && button.top < r.bottom)
          hits.push(`${pre.textContent.split("\\n")[0].slice(0, 50)} (${end ? "scrolled to its end" : "at its start"})`);
      }
    }
    pre.scrollLeft = 0;
  }
  return {blocks: blocks.length, hits: [...new Set(hits)]};
}"""


@needs_book
@pytest.mark.parametrize("path", ["chapter_gpus/devices.html", "chapter_gpus/copying.html", "index.html"])
def test_on_a_phone_the_copy_button_covers_no_first_line(browser: Any, real_server: Any, path: str) -> None:
    """At 390 px on a touch screen the copy button, always shown there, sat over the end of a code
    block's first line (where it reached the edge, or at the end of the block's scroll)."""
    ctx = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    try:
        page = ctx.new_page()
        page.goto(f"{real_server.url}/{path}", wait_until="networkidle")
        assert page.evaluate("matchMedia('(hover: none)').matches")
        found = page.evaluate(FIRST_LINE_UNDER_BUTTON)
    finally:
        ctx.close()
    assert found["blocks"] > 0
    assert found["hits"] == [], found["hits"]
