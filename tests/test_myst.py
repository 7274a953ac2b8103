"""Dialect prose → MyST (what myst-nb parses): labels, figures, equations, roles, toc, slide marks, divs."""

from __future__ import annotations

from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from tabbook.render.myst import convert_roles, to_myst, toc_to_toctree, wrap_div
from tabbook.source.read import read_section

FIXTURES = Path(__file__).parent / "fixtures" / "dialect"
TABS = ("pytorch", "jax", "tensorflow", "mxnet")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # a label after a heading becomes a target above it
        ("# Title\n:label:`sec_t`\n\nText.", "(sec_t)=\n# Title\n\nText."),
        ("Intro.\n\n## Sub\n:label:`sec_sub`", "Intro.\n\n(sec_sub)=\n## Sub"),
        # ... after a paragraph, above the paragraph (with a blank line before the target)
        ("First.\n\nPara one\nline two\n:label:`p`", "First.\n\n(p)=\nPara one\nline two"),
        # inline roles
        (":numref:`fig_a`, :ref:`sec_a`, :eqref:`eq_a`", "{numref}`fig_a`, {ref}`sec_a`, {eq}`eq_a`"),
        (":numref:`Figure <fig_a>`", "{numref}`Figure <fig_a>`"),
        (":cite:`A.B.2019, C.D.2020`", "{cite:p}`A.B.2019,C.D.2020`"),
        (":citet:`A` and :citep:`B`", "{cite:t}`A` and {cite:p}`B`"),
        # figure with label and width (either order), caption roles converted
        (
            "Text.\n\n![A *cap* :cite:`X`](../img/a.svg)\n:label:`fig_a`\n:width:`400px`\n\nMore.",
            "Text.\n\n```{figure} ../img/a.svg\n:name: fig_a\n:width: 400px\n\nA *cap* {cite:p}`X`\n```\n\nMore.",
        ),
        (
            "![cap](../img/a.svg)\n:width:`300px`\n:label:`fig_b`",
            "```{figure} ../img/a.svg\n:name: fig_b\n:width: 300px\n\ncap\n```",
        ),
        ("![cap](../img/a.svg)\n:label:`fig_c`", "```{figure} ../img/a.svg\n:name: fig_c\n\ncap\n```"),
        ("![](../img/a.svg)\n:label:`fig_d`", "```{figure} ../img/a.svg\n:name: fig_d\n```"),
        # width without a label: a figure without a name
        ("![cap](../img/a.svg)\n:width:`200px`", "```{figure} ../img/a.svg\n:width: 200px\n\ncap\n```"),
        # an image with a title string
        ('![cap](../img/a.svg "t")\n:label:`fig_e`', "```{figure} ../img/a.svg\n:name: fig_e\n\ncap\n```"),
        # an image inside a paragraph stays an image; the label targets it
        ("See ![i](x.svg) here.", "See ![i](x.svg) here."),
        # labelled equations, one-line and multi-line
        ("$$y = Ax.$$\n:eqlabel:`eq_a`", "$$y = Ax.$$ (eq_a)"),
        ("$$\ny = Ax.\n$$\n:eqlabel:`eq_b`", "$$\ny = Ax.\n$$ (eq_b)"),
        ("$$\\sum_i x_i$$\n\n:eqlabel:`eq_c`", "$$\\sum_i x_i$$ (eq_c)"),
        # no roles converted inside math
        ("$$\na :ref:`x`\n$$", "$$\na :ref:`x`\n$$"),
        ("$$a :ref:`x`$$", "$$a :ref:`x`$$"),
        # literal fences are left alone
        ("```python\n:label:`no`\n:numref:`no`\n```", "```python\n:label:`no`\n:numref:`no`\n```"),
        ("~~~\n:ref:`x`\n~~~\n:ref:`y`", "~~~\n:ref:`x`\n~~~\n{ref}`y`"),
        # slide marks
        ("Keep (**this**) and [**that**]; drop (~~this~~)[~~that~~].", "Keep this and that; drop ."),
        # toc → toctree
        ("```toc\n:maxdepth: 2\n:numbered:\n\na\nb\n```", "```{toctree}\n:maxdepth: 2\n:numbered:\n\na\nb\n```"),
        ("Text.\n\n```toc\na\n```\n\nAfter.", "Text.\n\n```{toctree}\na\n```\n\nAfter."),
    ],
)
def test_to_myst(text: str, expected: str) -> None:
    assert to_myst(text) == expected


def test_convert_roles_leaves_other_roles() -> None:
    assert convert_roles("{math}`x` :py:func:`f` :unknown:`z`") == "{math}`x` :py:func:`f` :unknown:`z`"


def test_toc_to_toctree() -> None:
    assert toc_to_toctree("```toc\n:maxdepth: 1\n\nx\n```") == "```{toctree}\n:maxdepth: 1\n\nx\n```"


def parse_div(block: str) -> tuple[str, list[str], str]:
    """(fence, classes, body) of a MyST ``{div}`` block, classes given as argument or ``:class:``."""
    lines = block.split("\n")
    head = lines[0]
    fence = head[: head.index("{div}")]
    classes = head[head.index("{div}") + 5:].split()
    rest = lines[1:-1]
    if rest and rest[0].startswith(":class:"):
        classes += rest[0][len(":class:"):].split()
        rest = rest[1:]
    assert lines[-1] == fence
    if rest and rest[0] == "":
        rest = rest[1:]
    return fence, classes, "\n".join(rest)


@pytest.mark.parametrize(
    "text",
    ["Plain text.", "```python\nx\n```", "`````\n````\n```\n````\n`````", "Inline ```` `` ```` code."],
)
def test_wrap_div_fence_is_longer_than_any_inside(text: str) -> None:
    out = wrap_div(text, ["tabbook-tab", "tabbook-fw-jax"])
    fence, classes, body = parse_div(out)
    assert set(fence) == {"`"} and len(fence) >= 4
    assert classes == ["tabbook-tab", "tabbook-fw-jax"]
    assert body == text
    inner_runs = [len(r) for r in text.split("\n") if set(r) == {"`"}]
    assert all(len(fence) > n for n in inner_runs)
    # markdown-it sees one fence holding the text: nothing leaks out of the div
    tokens = [t for t in MarkdownIt("commonmark").parse(out) if t.type == "fence"]
    assert len(tokens) == 1 and tokens[0].info.startswith("{div}")
    assert tokens[0].content.endswith(f"\n{text}\n")


def test_full_fixture_prose_converts() -> None:
    text = (FIXTURES / "full.md").read_text(encoding="utf-8")
    section = read_section(text, "full.md", TABS, "pytorch")
    out = "\n\n".join(to_myst(c.source) for c in section.cells if c.kind == "markdown")
    assert out.startswith("(sec_full)=\n# Devices and Memory\n")
    assert "{numref}`fig_full`" in out and "{eq}`eq_full`" in out and "{cite:p}`Paszke" in out
    assert "```{figure} ../img/copy.svg\n:name: fig_full\n:width: 400px\n" in out
    assert "$$y = Ax.$$ (eq_full)" in out
    assert "Slide only" not in out and "(**" not in out and "~~" not in out
    assert ":label:`not_a_label`" in out  # literal fence untouched
    assert ":label:" not in out.replace(":label:`not_a_label`", "")


def test_output_parses_as_myst() -> None:
    """The converted prose means to MyST what the dialect meant: targets, labelled math, figures."""
    from markdown_it.renderer import RendererHTML
    from myst_parser.config.main import MdParserConfig
    from myst_parser.parsers.mdit import create_md_parser

    md = create_md_parser(MdParserConfig(enable_extensions={"dollarmath", "amsmath", "colon_fence"}), RendererHTML)
    text = (
        "# T\n:label:`sec`\n\n$$y = Ax$$\n:eqlabel:`e1`\n\n$$\nz\n$$\n:eqlabel:`e2`\n\n"
        "![Cap.](a.svg)\n:label:`fig`\n:width:`50%`\n\nSee :numref:`fig` and :eqref:`e1`."
    )
    tokens = [t for t in md.parse(to_myst(text)) if t.type not in ("heading_close", "paragraph_close")]
    summary = [(t.type, t.content if t.type in ("myst_target", "inline") else t.info) for t in tokens]
    assert summary == [
        ("myst_target", "sec"), ("heading_open", ""), ("inline", "T"),
        ("math_block_label", "e1"), ("math_block_label", "e2"),
        ("fence", "{figure} a.svg"),
        ("paragraph_open", ""), ("inline", "See {numref}`fig` and {eq}`e1`."),
    ]
    assert tokens[5].content == ":name: fig\n:width: 50%\n\nCap.\n"


def test_labelled_table_becomes_numbered_table_with_caption() -> None:
    from tabbook.render.myst import to_myst

    text = "Intro.\n\n: Peak figures.\n\n| a | b |\n| - | - |\n| 1 | 2 |\n:label:`tab_x`\n\nSee :numref:`tab_x`."
    assert to_myst(text) == (
        "Intro.\n\n```{table} Peak figures.\n:name: tab_x\n\n| a | b |\n| - | - |\n| 1 | 2 |\n```\n\n"
        "See {numref}`tab_x`."
    )


def _mapped(text: str) -> list[tuple[str, str]]:
    """Each line of ``text``'s MyST beside the source line its row map names."""
    from tabbook.render.myst import to_myst_rows

    out, rows = to_myst_rows(text)
    src = text.split("\n")
    lines = out.split("\n")
    assert len(rows) == len(lines)
    return [(line, src[r]) for line, r in zip(lines, rows, strict=True)]


def test_caption_without_a_label_becomes_a_captioned_table_without_a_name() -> None:
    """pandoc reads a ``:Caption`` paragraph above a table as its caption, label or not: a
    ``{table}`` with no ``:name:`` (pandoc's ``.. table:: Caption`` in d2lbook's reST)."""
    text = "Intro.\n\n: Peak figures, after :citet:`Doe.2020`\n\n| a | b |\n| - | - |\n| 1 | 2 |\n\nAfter."
    assert _mapped(text) == [
        ("Intro.", "Intro."), ("", ""),
        ("~~~{table} Peak figures, after {cite:t}`Doe.2020`", ": Peak figures, after :citet:`Doe.2020`"),
        ("", ": Peak figures, after :citet:`Doe.2020`"),
        ("| a | b |", "| a | b |"), ("| - | - |", "| - | - |"), ("| 1 | 2 |", "| 1 | 2 |"), ("~~~", "| 1 | 2 |"),
        ("", ""), ("After.", "After."),
    ]


def test_caption_of_two_lines_and_label_above_the_table_is_the_whole_caption() -> None:
    text = ":Sizes of things,\nin metres\n:label:`tab_sizes`\n\n| a | b |\n| - | - |\n| 1 | 2 |\n\nAfter."
    assert _mapped(text) == [
        ("```{table} Sizes of things, in metres", ":Sizes of things,"),
        (":name: tab_sizes", ":label:`tab_sizes`"), ("", ":label:`tab_sizes`"),
        ("| a | b |", "| a | b |"), ("| - | - |", "| - | - |"), ("| 1 | 2 |", "| 1 | 2 |"), ("```", "| 1 | 2 |"),
        ("", ""), ("After.", "After."),
    ]


def test_caption_of_three_lines_above_a_table_labelled_below_is_the_whole_caption() -> None:
    text = ("Before.\n\n:A long caption\n  over lines with $x_i$\nand :numref:`fig_a`.\n\n"
            "| a | b |\n| - | - |\n| 1 | 2 |\n:label:`tab_long`\n\nAfter.")
    assert _mapped(text) == [
        ("Before.", "Before."), ("", ""),
        ("~~~{table} A long caption over lines with $x_i$ and {numref}`fig_a`.", ":A long caption"),
        (":name: tab_long", ":label:`tab_long`"), ("", ":label:`tab_long`"),
        ("| a | b |", "| a | b |"), ("| - | - |", "| - | - |"), ("| 1 | 2 |", "| 1 | 2 |"), ("~~~", "| 1 | 2 |"),
        ("", ""), ("After.", "After."),
    ]


@pytest.mark.parametrize("label", ["", "\n:label:`tab_x`"])
def test_a_colon_line_inside_a_paragraph_is_no_caption(label: str) -> None:
    """pandoc's caption is a paragraph that starts with ``:``; a ``:`` line further down a
    paragraph is text of it (the table keeps its number when labelled, without a caption)."""
    text = f"Some text\n:not a caption\n\n| a | b |\n| - | - |\n| 1 | 2 |{label}"
    out = to_myst(text)
    assert out.startswith("Some text\n:not a caption\n\n")
    assert ("```{table}\n:name: tab_x\n\n| a | b |" in out) if label else ("{table}" not in out)


def test_captioned_tables_parse_as_table_directives() -> None:
    """What the emitter writes is one ``{table}`` directive per table for MyST's parser, the
    caption its argument."""
    md = MarkdownIt("commonmark").enable("table")
    text = ":One\n\n| a | b |\n| - | - |\n| 1 | 2 |\n\n:Two\nlines\n:label:`t2`\n\n| c | d |\n| - | - |\n| 3 | 4 |"
    fences = [t for t in md.parse(to_myst(text)) if t.type == "fence"]
    assert [(f.info, f.content.lstrip("\n").split("\n")[0]) for f in fences] == [
        ("{table} One", "| a | b |"), ("{table} Two lines", ":name: t2")]


def test_cells_render_from_the_blocks_reading_found(monkeypatch: pytest.MonkeyPatch) -> None:
    """Merge's path parses nothing again: the prose cells carry their blocks, and MyST from them
    is MyST from parsing the prose on its own."""
    from tabbook.render import myst

    text = (FIXTURES / "full.md").read_text(encoding="utf-8")
    section = read_section(text, "full.md", TABS, "pytorch")
    prose = [c for c in section.cells if c.kind == "markdown"]
    expected = [to_myst(c.source) for c in prose]

    def no_parse(text: str) -> None:
        raise AssertionError("parsed again")

    monkeypatch.setattr(myst, "parse_blocks", no_parse)
    assert all(c.blocks for c in prose)
    assert [myst.cell_to_myst(c) for c in prose] == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # slide marks inside lines keep the structure: the recorded blocks are used
        ("# T (**x**)\n:label:`s`\n\nSee [**:ref:`s`**].", "(s)=\n# T x\n\nSee {ref}`s`."),
        # a dropped slide-only line would change the blocks: the stripped text is parsed again
        ("Para\n[~~slide only~~]\n:label:`p`", "(p)=\nPara"),
        ("(~~a\nb~~)Text\n:label:`q`", "(q)=\nText"),
    ],
)
def test_cell_to_myst_with_slide_marks(text: str, expected: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Slide marks are stripped when the page is read; render emits from what reading recorded."""
    from tabbook.render import myst

    cell = next(c for c in read_section(text, "s.md", TABS, "pytorch").cells)
    assert cell.blocks
    alone = to_myst(text)

    def no_parse(text: str) -> None:
        raise AssertionError("parsed again")

    monkeypatch.setattr(myst, "parse_blocks", no_parse)
    assert myst.cell_to_myst(cell) == alone == expected.strip("\n")
