"""The dialect's one set of definitions: the stages agree on what each construct is."""

from __future__ import annotations

import pytest

from tabbook.source import constructs, dialect
from tabbook.source.pycode import mask_magics
from tabbook.source.split import resolve_tabs


@pytest.mark.parametrize(
    ("line", "magic"),
    [
        ("%matplotlib inline", True), ("%%time", True), ("!nvidia-smi", True), ("    !ls", True),
        ("\t%time f()", True), ("x = 1", False), ("# %time", False), ("    != 3", False), ("!= 3", False),
        ("x != 3", False), ("", False),
    ],
)
def test_one_magic_line(line: str, magic: bool) -> None:
    assert dialect.is_magic(line) is magic
    # the library stage masks exactly the lines the split stage masks
    assert (mask_magics(line)[1] == {1}) is magic


def test_split_masks_magics_inside_branches() -> None:
    src = "if tab.selected('jax'):\n    !nvidia-smi\nelse:\n    x = (1\n    != 2)"
    assert resolve_tabs(src, "jax", ("p.md", 1)) == "!nvidia-smi"
    assert resolve_tabs(src, "mxnet", ("p.md", 1)) == "x = (1\n!= 2)"


@pytest.mark.parametrize(
    ("line", "kind", "value"),
    [(":label:`sec_a`", "label", "sec_a"), ("  :eqlabel:`eq`  ", "eqlabel", "eq"), (":width:`40%`", "width", "40%")],
)
def test_attribute_lines(line: str, kind: str, value: str) -> None:
    m = dialect.ATTR_LINE.match(line)
    assert m and (m.group(1), m.group(2)) == (kind, value)


def test_toc_opener_is_exact() -> None:
    assert dialect.is_toc_opener("```toc") and dialect.is_toc_opener("```toc  ")
    assert not dialect.is_toc_opener("```{toc}") and not dialect.is_toc_opener("````toc")


def _tokens(text: str) -> list[tuple[str, list[int] | None, str]]:
    md = constructs.dialect_parser()
    return [(t.type, t.map, t.info) for t in md.parse(text) if t.type.startswith("dialect_") or t.type == "fence"]


def test_plugin_attribute_and_marker_lines_end_the_block_above() -> None:
    text = "# T\n:label:`sec`\n\nPara\nline\n:label:`p`\n:begin_tab:`jax`\nJAX.\n:end_tab:\n"
    assert _tokens(text) == [
        ("dialect_attr", [1, 2], "label"), ("dialect_attr", [5, 6], "label"),
        ("dialect_begin_tab", [6, 7], "jax"), ("dialect_end_tab", [8, 9], ""),
    ]


def test_plugin_nothing_in_a_fence_or_indented_code_is_dialect() -> None:
    text = "````md\n:label:`no`\n:begin_tab:`jax`\n````\n\n    :label:`no`\n"
    assert _tokens(text) == [("fence", [0, 4], "md")]


def test_plugin_display_math() -> None:
    md = constructs.dialect_parser()
    math = [t.map for t in md.parse("$$x$$\n:eqlabel:`a`\n\nText\n$$\ny\n$$\n\n$$ not closed\n") if t.type == "dialect_math"]
    assert math == [[0, 1], [4, 7]]


def test_plugin_classifies_fences() -> None:
    text = "```{.python .input}\nx\n```\n```toc\na\n```\n```{toc}\na\n```\n```python\nx\n```\n"
    md = constructs.dialect_parser()
    assert [t.meta["kind"] for t in md.parse(text) if t.type == "fence"] == [
        constructs.Kind.CODE, constructs.Kind.TOC, constructs.Kind.LITERAL, constructs.Kind.LITERAL]
