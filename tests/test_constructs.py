"""The construct table (tabbook/source/constructs.py) is whole: every kind has one entry with a
reader rule, every emitter it names exists in the MyST renderer, and a table missing either is
refused, not read past (a fence of no kind used to fall silently into the code-cell branch)."""

from __future__ import annotations

import re

from tabbook.render import myst
from tabbook.source import constructs
from tabbook.source.constructs import CONSTRUCTS, TABLE, Emit, FenceRule, Kind, Shape, check_table


def test_every_kind_has_an_entry_a_reader_rule_and_an_emitter() -> None:
    assert check_table() == []
    for kind in Kind:
        entry = CONSTRUCTS[kind]
        assert entry.rule is not None
        assert entry.emit in myst.EMITTERS, kind
    assert set(myst.EMITTERS) == set(Emit)


def test_a_kind_without_an_entry_is_refused() -> None:
    without_rst = tuple(c for c in TABLE if c.kind is not Kind.RST)
    assert check_table(without_rst) == ["RST: no entry"]
    twice = (*TABLE[:1], *TABLE)
    assert check_table(twice) == [f"{TABLE[0].kind.name}: 2 entries"]


def test_a_fence_kind_missing_is_an_error_not_a_code_cell() -> None:
    """Without the catch-all literal fence a fence would have no kind: the table is refused."""
    without_literal = tuple(c for c in TABLE if c.kind is not Kind.LITERAL)
    problems = check_table(without_literal)
    assert "LITERAL: no entry" in problems
    assert "the last fence rule must take every fence (a fence of no kind would be lost)" in problems
    # and the fences are asked in table order: the code fence before the literal one
    assert constructs.fence_kind("{.python .input}", "```{.python .input}") is Kind.CODE
    assert constructs.fence_kind("toc", "```toc") is Kind.TOC
    assert constructs.fence_kind("toc", "``` toc") is Kind.LITERAL
    assert constructs.fence_kind("python", "```python") is Kind.LITERAL


def test_a_container_needs_its_marker_action() -> None:
    begin_tab = CONSTRUCTS[Kind.BEGIN_TAB]
    broken = tuple(c if c is not begin_tab else constructs.Construct(
        c.kind, c.spelling, c.rule, c.shape, c.emit, c.front, c.slides, marker=None) for c in TABLE)
    assert check_table(broken) == ["BEGIN_TAB: a container line needs its marker action (and only it has one)"]
    fence_container = tuple(c if c.kind is not Kind.RST else constructs.Construct(
        c.kind, c.spelling, c.rule, Shape.CONTAINER, c.emit, marker=constructs.Marker.OPEN_TAB) for c in TABLE)
    assert "RST: a container marker is a line" in check_table(fence_container)


def test_missing_emitter_is_named() -> None:
    partial = {e: f for e, f in myst.EMITTERS.items() if e is not Emit.TOCTREE}
    assert myst.missing_emitters(partial) == ["TOCTREE"]
    assert myst.missing_emitters() == []


def test_tokens_carry_their_kind() -> None:
    md = constructs.dialect_parser()
    tokens = md.parse(":label:`x`\n\n:begin_tab:`a`\n\n```toc\nx\n```\n\n    code\n")
    kinds = [t.meta.get("kind") for t in tokens if constructs.is_block(t)]
    assert kinds == [Kind.ATTR, Kind.BEGIN_TAB, Kind.TOC, Kind.INDENTED]
    assert all(isinstance(c.rule, FenceRule) for c in TABLE if c.kind in (Kind.CODE, Kind.TOC, Kind.RST))
    assert re.fullmatch(r"dialect_\w+", CONSTRUCTS[Kind.MATH].token_type)
