"""Deeply nested blocks render whole, or are an error at their line: never silently dropped.

markdown-it's CommonMark preset stops at 20 levels and drops the rest of the page; a list ten
deep (two levels each) and everything after it vanished from the HTML with exit 0."""

from __future__ import annotations

import pytest

from tabbook.errors import BookError
from tabbook.source.dialect import MAX_NESTING
from tabbook.source.read import read_section


def _page(lists: int, quotes: int) -> str:
    items = "".join("  " * i + f"- item{i}\n" for i in range(lists))
    quoted = "".join(">" * (i + 1) + f" quote{i}\n" + ">" * (i + 1) + "\n" for i in range(quotes))
    return f"# Deep\n\n{items}\nafter-the-list\n\n{quoted}\nafter-the-quote\n"


def test_lists_and_quotes_nested_deep_render_whole_through_myst() -> None:
    """What Sphinx's MyST parser makes of a page 40 lists and 90 quotes deep: every item, every
    quote and the paragraphs after them (the ``nesting`` extension's parser, not the preset's)."""
    import myst_nb.sphinx_
    from markdown_it.renderer import RendererHTML
    from myst_parser.config.main import MdParserConfig

    from tabbook.render.ext import nesting

    nesting.setup(None)  # type: ignore[arg-type]  # it reads nothing of the app
    text = _page(40, 90)
    html = myst_nb.sphinx_.create_md_parser(MdParserConfig(), RendererHTML).render(text)
    for word in ("item39", "after-the-list", "quote89", "after-the-quote"):
        assert word in html
    read_section(text, "deep.md", ("a",), "a")  # the reader takes it too


@pytest.mark.parametrize(("lists", "quotes", "line"), [(MAX_NESTING // 2 + 1, 0, 3 + MAX_NESTING // 2),
                                                       (0, MAX_NESTING + 1, 6 + 2 * MAX_NESTING)])
def test_blocks_nested_past_the_limit_are_an_error_at_their_line(lists: int, quotes: int, line: int) -> None:
    with pytest.raises(BookError) as err:
        read_section(_page(lists, quotes), "deep.md", ("a",), "a")
    assert err.value.location_message() == (
        f"deep.md:{line}: blocks nested more than {MAX_NESTING} deep (a quote counts one level, a list two): "
        "no Markdown parser keeps what is deeper; flatten it")
