"""The dialect's one set of definitions: the stages agree on what each construct is."""

from __future__ import annotations

import pytest

from tabbook.library.pysource import mask_magics
from tabbook.source import dialect
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
