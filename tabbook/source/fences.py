"""A page parsed once with the dialect's markdown-it parser, and its broken fences mended.

:func:`parse_blocks` is the one parse (tokens and the construct table's blocks); reading
(:mod:`tabbook.source.read`) and rendering (:mod:`tabbook.render.myst`) both go through it.
:func:`mend_fences` is d2lbook's forgiveness made explicit: a code cell whose opening fence was
lost leaves a stray fence that swallows the next cell; each such fence is mended in place (every
row kept where it was, so every ``file:LINE`` stays true), said as a
:attr:`~tabbook.problems.Problem.BROKEN_FENCE` warning, and the page parsed again.
"""

from __future__ import annotations

import bisect
import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tabbook.errors import BookError
from tabbook.problems import Problem
from tabbook.source.constructs import CONSTRUCTS, Kind, Shape, dialect_parser, is_block, token_kind
from tabbook.source.dialect import is_code_info
from tabbook.source.model import Block

if TYPE_CHECKING:  # parsed pages only: a no-op build parses none
    from markdown_it import MarkdownIt
    from markdown_it.token import Token


@dataclass(frozen=True)
class Fence:
    start: int  # 0-based line of the opening fence
    end: int  # 0-based line after the fence (after the closing line when closed)
    info: str
    content: str
    markup: str  # the opening run, e.g. "```"
    kind: Kind  # the construct table's: a fence kind

    @property
    def closed(self) -> bool:
        # markdown-it's map spans the closing line only when there is one; the
        # content holds one "\n"-terminated line per line in between.
        return self.end - self.start == self.content.count("\n") + 2



def parse_blocks(text: str) -> tuple[list[Token], tuple[Block, ...]]:
    """Parse ``text`` once with the dialect's markdown-it parser: its tokens and its blocks.

    ``text`` must already have ``\n`` line ends. Blocks are in document order,
    their rows 0-based lines of ``text``.
    """
    tokens = _parser().parse(text)
    return tokens, _blocks(tokens, text)



@functools.cache
def _parser() -> MarkdownIt:
    """The one dialect parser, made at the first page parsed (a no-op build parses none)."""
    return dialect_parser()



def _blocks(tokens: list[Token], text: str) -> tuple[Block, ...]:
    """A block for every token that starts one, of the kind the parse gave it."""
    blocks: list[Block] = []
    for tok in tokens:
        if not is_block(tok):
            continue
        assert tok.map is not None
        kind = token_kind(tok)
        if kind is None:  # every block token has one (constructs._mark_kinds): a parser made otherwise
            raise ValueError(f"a {tok.type} token without its kind: parse with the dialect's parser")
        attr = tok.meta.get("eqlabel", "") if kind is Kind.MATH else tok.info if kind is Kind.ATTR else ""
        blocks.append(Block(kind, tok.map[0], tok.map[1], tok.level, attr))
    return tuple(blocks)



def cell_blocks(blocks: tuple[Block, ...], first: int, stop: int) -> tuple[Block, ...]:
    """The blocks that start in rows ``first`` … ``stop - 1``, rows made relative to ``first``."""
    lo = bisect.bisect_left(blocks, first, key=lambda b: b.start)
    hi = bisect.bisect_left(blocks, stop, lo, key=lambda b: b.start)
    return tuple(Block(b.kind, b.start - first, min(b.end, stop) - first, b.level, b.attr) for b in blocks[lo:hi])



def _swallowed_cell(fence: Fence) -> int | None:
    """0-based line of an executable fence opener inside a literal fence that it must have ended.

    Inside a ```` ``` ```` fence a line ```` ```{.python .input} ```` cannot be
    meant literally (the next bare ```` ``` ```` closes the outer fence): the
    outer fence was left open. Longer outer fences may quote the dialect.
    """
    char = fence.markup[0]
    for i, raw in enumerate(fence.content.split("\n")):
        s = raw.strip()
        run = len(s) - len(s.lstrip(char))
        if run >= len(fence.markup) and is_code_info(s[run:].strip()):
            return fence.start + 1 + i
    return None



#: How many times a page with broken fences is mended and parsed again (each time mends every
#: broken fence the last parse found); past it, what is left is read as the parse found it.
MEND_ROUNDS = 8



def _fences(tokens: list[Token]) -> list[Fence]:
    return [Fence(t.map[0], t.map[1], t.info.strip(), t.content, t.markup, kind)
            for t in tokens if t.type == "fence" and t.map and (kind := token_kind(t)) is not None]



def mend_fences(lines: list[str], path: str, errors: list[BookError]
                 ) -> tuple[list[str], list[Token], tuple[Block, ...], list[Fence]]:
    """Parse the page, mending the fences a code cell's lost opening left (d2lbook builds such a
    page, garbled, and the rest of the book): the parse, and the rows it was made from.

    A cell whose ```` ``` ```` was lost leaves its closing ```` ``` ```` to open a literal fence
    that runs over the next cell's opening (:func:`_swallowed_cell`). Where the lost cell's
    ``{.python .input}`` line is still there, in the prose before that stray fence, it is read as
    the cell's opening; otherwise the stray fence line is dropped, so what it held is prose. Both
    keep every row where it was, so every later ``file:LINE`` stays true; each is a warning of
    kind :attr:`~tabbook.problems.Problem.BROKEN_FENCE`, and the page is parsed again.
    """
    lines = list(lines)
    tokens, blocks = parse_blocks("\n".join(lines))
    fences = _fences(tokens)
    for round_ in range(MEND_ROUNDS + 1):
        broken = [(i, swallowed) for i, fence in enumerate(fences) if CONSTRUCTS[fence.kind].shape is Shape.PROSE
                  and (swallowed := _swallowed_cell(fence)) is not None]
        if not broken:
            break
        if round_ == MEND_ROUNDS:  # a page of many: the rest as parsed, each still said
            errors.extend(BookError(f"the fence opened here is not closed before the code cell at line {s + 1}",
                                    path, fences[i].start + 1, kind=Problem.BROKEN_FENCE) for i, s in broken)
            break
        # Only the first: mending it changes how everything after it parses.
        i, swallowed = broken[0]
        fence = fences[i]
        opener = _lost_opener(lines, fences[i - 1].end if i else 0, fence) if not fence.info else None
        if opener is not None:
            info = lines[opener].strip()
            lines[opener] = fence.markup + info
            errors.append(BookError(
                f"a code cell's opening fence is missing: {info} is read as {lines[opener]}, "
                f"closed at line {fence.start + 1}", path, opener + 1, kind=Problem.BROKEN_FENCE))
        else:
            errors.append(BookError(
                f"the fence opened here is not closed before the code cell at line {swallowed + 1}: "
                "the fence line is left out and what it held read as prose", path, fence.start + 1,
                kind=Problem.BROKEN_FENCE))
            lines[fence.start] = ""
        tokens, blocks = parse_blocks("\n".join(lines))
        fences = _fences(tokens)
    return lines, tokens, blocks, fences



def _lost_opener(lines: list[str], after: int, fence: Fence) -> int | None:
    """The row, between ``after`` and the stray ``fence``, of a bare ``{.python .input}`` line
    (a code cell's info string whose fence was lost), the last one; None when there is none."""
    for row in range(fence.start - 1, after - 1, -1):
        s = lines[row]
        if s.strip() and s == s.lstrip() and is_code_info(s.strip()) and s.rstrip().endswith("}"):
            return row
    return None
