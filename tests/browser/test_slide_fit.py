"""Slides at a presenter's screen (1280×720): everything on a slide inside its frame.

The `copying` JAX deck's first slide and the `devices` PyTorch deck's third cut their code off
below the frame, and the slide could not be scrolled. Each slide is now shrunk to fit
(``tabbook-slides.js``); one too long even at the smallest size scrolls inside its frame.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from prerequisites import skip_unless

from tabbook.render.slides import Code, Deck, Renderer, Slide, deck_html, publish_reveal

REAL_SITE = Path(__file__).resolve().parents[2] / "build" / "html"
REAL_DECKS = sorted(p.relative_to(REAL_SITE).as_posix() for p in (REAL_SITE / "_slides").rglob("*.html")
                    if p.parent.name != "reveal") if (REAL_SITE / "_slides").is_dir() else []
SCREEN = {"width": 1280, "height": 720}

# On the slide shown: every box drawn outside the deck's frame (the slide's own box, as reveal.js
# scales it into the window), and whether the slide can scroll to show what it hides.
OUTSIDE = """() => {
  const slide = Reveal.getCurrentSlide(), frame = slide.getBoundingClientRect();
  const out = [];
  for (const el of slide.querySelectorAll('*')) {
    const r = el.getBoundingClientRect();
    if (!r.width && !r.height) continue;
    if (r.top < frame.top - 1 || r.bottom > frame.bottom + 1 || r.left < frame.left - 1 || r.right > frame.right + 1)
      out.push(`${el.tagName.toLowerCase()}.${el.className} [${Math.round(r.top)}, ${Math.round(r.bottom)}]`);
  }
  const style = getComputedStyle(slide);
  return {outside: out.slice(0, 5), frame: [frame.top, frame.bottom], scrolls: style.overflowY === 'auto'
          && slide.scrollHeight > slide.clientHeight, tabindex: slide.getAttribute('tabindex'),
          font: parseFloat(style.fontSize) / parseFloat(getComputedStyle(slide.parentElement).fontSize)};
}"""


def slides_of(page: Any, url: str) -> list[dict[str, Any]]:
    """Every slide of the deck at ``url`` as :data:`OUTSIDE` sees it, shown one after another."""
    page.goto(url, wait_until="networkidle")
    page.wait_for_function("typeof Reveal !== 'undefined' && Reveal.isReady()")
    seen = []
    for i in range(page.evaluate("Reveal.getTotalSlides()")):
        page.evaluate(f"Reveal.slide({i})")
        page.evaluate("document.fonts.ready")
        seen.append(page.evaluate(OUTSIDE))
    return seen


@pytest.fixture
def screen(browser: Any) -> Any:
    ctx = browser.new_context(viewport=SCREEN)
    yield ctx.new_page()
    ctx.close()


@skip_unless(REAL_DECKS, "no built book in build/html (`make test` builds it before the tests; or `make html`)")
@pytest.mark.parametrize("deck", REAL_DECKS or ["-"])
def test_every_slide_of_the_books_decks_fits_its_frame(screen: Any, real_server: Any, deck: str) -> None:
    for i, slide in enumerate(slides_of(screen, f"{real_server.url}/{deck}")):
        assert slide["outside"] == [], f"{deck} slide {i + 1}: drawn outside the frame {slide['frame']}"
        assert not slide["scrolls"], f"{deck} slide {i + 1}: fits only by scrolling"


def _deck(tmp_path: Path, lines: int) -> Path:
    """A deck whose second slide holds one code cell of ``lines`` lines, with reveal.js beside it."""
    code = "\n".join(f"value_{k} = compute(step={k}, scale=0.5)  # line {k}" for k in range(lines))
    deck = Deck("chapter/long", "pytorch", "PyTorch", "A Long Cell",
                [Slide(items=["Short intro."]), Slide("Everything at once", ["All of it:", Code(code)])])
    html = tmp_path / "html"
    publish_reveal(html)
    (html / "_slides" / "chapter").mkdir(parents=True)
    (html / "_slides" / "chapter" / "long-pytorch.html").write_text(deck_html(deck, Renderer()), encoding="utf-8")
    return html


@pytest.fixture
def deck_site(tmp_path: Path, serve_dir: Any) -> Any:
    servers = []

    def make(lines: int) -> str:
        srv = serve_dir(_deck(tmp_path / str(lines), lines))
        servers.append(srv)
        return f"{srv.url}/_slides/chapter/long-pytorch.html"

    yield make
    for srv in servers:
        srv.httpd.shutdown()
        srv.httpd.server_close()


def test_a_long_code_cell_is_shrunk_into_the_frame(screen: Any, deck_site: Any) -> None:
    first, long = slides_of(screen, deck_site(40))
    assert first["outside"] == [] and first["font"] == pytest.approx(1)  # what fits keeps its size
    assert long["outside"] == [] and not long["scrolls"]
    assert 0.5 <= long["font"] < 0.9, long


def test_a_cell_too_long_to_shrink_scrolls_inside_its_frame(screen: Any, deck_site: Any) -> None:
    _, long = slides_of(screen, deck_site(200))
    assert long["scrolls"] and long["tabindex"] == "0", long  # the wheel and the keyboard reach the rest
    assert long["font"] == pytest.approx(0.5, abs=0.01)
    last = screen.locator("section.present pre.highlight")
    screen.locator("section.present").evaluate("s => { s.scrollTop = s.scrollHeight; }")
    box, frame = last.bounding_box(), screen.locator("section.present").bounding_box()
    assert box["y"] + box["height"] <= frame["y"] + frame["height"] + 1  # its end can be brought in view
