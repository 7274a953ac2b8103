"""The dialect's constructs, declared once: one :class:`Construct` per :class:`Kind`.

Why a table: the reader, the MyST renderer, the front page and the slides each used to spell
the constructs as strings of their own (markdown-it token types ``"dialect_*"``, a block kind
``str``, fence ``meta["dialect"]`` values) and bridge them with if-chains and skip lists that
had to agree by hand; a fence kind missing from one tuple fell silently into the code-cell
branch. Here each construct says, once:

- how the parse finds it (:attr:`Construct.rule`: a whole-line pattern, a fence's info string,
  a block rule of its own, or a token CommonMark already makes);
- what it is to a page (:attr:`Construct.shape`: part of a prose cell, a code cell, a table of
  contents, or a marker line that opens or closes a run of cells, :attr:`Construct.marker`);
- what the front page's one-line summary and the slides do with it (:attr:`Construct.front`,
  :attr:`Construct.slides`);
- which of the MyST renderer's emitters writes it (:attr:`Construct.emit`; the renderer,
  ``tabbook.render.myst``, keeps one implementation per :class:`Emit` and refuses to load
  without every one).

The markdown-it plugin (:func:`dialect_plugin`) registers the rules in table order and marks
every block token it leaves with its kind (``token.meta["kind"]``), so every stage reads the
same :class:`Kind` from one parse. A construct that reuses an emitter and a marker action is
one entry here and a snapshot (CONTRIBUTING.md, "Add a construct").
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING

from tabbook.source.dialect import (
    ATTR_LINE,
    BEGIN_SHARED_TAB,
    BEGIN_SOLUTION,
    BEGIN_TAB,
    BIBLIOGRAPHY,
    END_SOLUTION,
    END_TAB,
    EVAL_RST_INFO,
    IMAGE_PARAGRAPH,
    MATH_EQLABEL,
    is_code_info,
    is_toc_opener,
    max_nesting,
)

if TYPE_CHECKING:  # markdown-it is imported where a page is parsed: a no-op build parses none
    from markdown_it import MarkdownIt
    from markdown_it.rules_block import StateBlock
    from markdown_it.rules_core import StateCore
    from markdown_it.token import Token


class Kind(Enum):
    """What a block of a page is, as the dialect's parse found it (``Block.kind``)."""

    TEXT = "text"  # paragraph, heading, list, quote, rule…: prose
    IMAGE = "image"  # a paragraph that is one image (its alt text on one line or several)
    TABLE = "table"  # a pipe table
    MATH = "math"  # display math, ``$$…$$``
    ATTR = "attr"  # ``:label:`` / ``:eqlabel:`` / ``:width:`` line
    LITERAL = "literal"  # a fence shown as code
    CODE = "code"  # an executable fence, ```{.python .input}
    TOC = "toc"  # ```toc
    RST = "rst"  # ```eval_rst
    BEGIN_TAB = "begin_tab"  # :begin_tab:`NAMES`
    BEGIN_SHARED_TAB = "begin_shared_tab"  # :begin_tab: naming no framework (:begin_tab:toc)
    END_TAB = "end_tab"  # :end_tab:
    BEGIN_SOLUTION = "begin_solution"  # <!-- solution TEXT -->
    END_SOLUTION = "end_solution"  # <!-- end solution -->
    BEGIN_SOLUTION_MARK = "begin_solution_mark"  # :begin_solution:`TEXT`
    END_SOLUTION_MARK = "end_solution_mark"  # :end_solution:
    BIBLIOGRAPHY = "bibliography"  # :bibliography:`FILE`
    INDENTED = "indented"  # an indented code block
    HTML = "html"  # an HTML block or comment


class Shape(Enum):
    """What a construct is to the page's cells (:mod:`tabbook.source.read`)."""

    PROSE = "prose"  # part of the prose cell it is in
    CODE = "code"  # a code cell of its own: executed in each framework it names
    TOC = "toc"  # a prose cell of its own, and the section's table of contents
    CONTAINER = "container"  # a marker line: opens or closes a run of cells, text of none


class Marker(Enum):
    """What a :attr:`Shape.CONTAINER` line does to the cells after it."""

    OPEN_TAB = "open tab"  # prose for the frameworks named, up to the closing line
    OPEN_SHARED = "open shared"  # prose of every framework up to a tab's closing line (d2lbook's tab of none)
    CLOSE_TAB = "close tab"
    OPEN_SOLUTION = "open solution"  # an exercise's solution: prose and code cells
    CLOSE_SOLUTION = "close solution"


class Front(Enum):
    """What the front page's one-line summary of a section (``render/front.py``) does with a
    line of the construct."""

    SUMMARY = "summary"  # may be the summary (its paragraph's first sentence)
    SKIPPED = "skipped"  # passed over before the summary's paragraph
    ENDS = "ends"  # passed over before the paragraph, ends it after


class Slides(Enum):
    """What a deck (``render/slides.py``) does with the construct."""

    MARKS = "marks"  # its slide marks are the deck's text
    FRAMEWORK = "framework"  # the cells it encloses are on the decks of their frameworks only
    LEFT_OUT = "left out"  # the cells it encloses stay out of every deck


class Emit(Enum):
    """The MyST renderer's emitters (``tabbook.render.myst``): how a block's rows are written.
    Declared here so that an entry can name its emitter without the source layer importing
    the renderer; the renderer maps each to its implementation."""

    LINES = "lines"  # each row as it is, its roles converted
    COPIED = "copied"  # each row as it is (code, HTML)
    LITERAL = "literal"  # each row as it is, the fence made longer when it holds a longer one
    MATH = "math"  # dollar math, its label after the closing $$, a blank row before it in a paragraph
    ATTRIBUTE = "attribute"  # applied to the block before it: a target, a figure, a numbered table
    TABLE = "table"  # a {table} when a caption paragraph is above it
    TOCTREE = "toctree"  # a {toctree}
    EVAL_RST = "eval-rst"  # an {eval-rst} fence
    BIBLIOGRAPHY = "bibliography"  # a {bibliography} directive


@dataclass(frozen=True)
class LineRule:
    """A construct that is one whole line matching ``pattern``; ``before``: the markdown-it
    block rule it goes before; ``top_level``: only outside every container, unindented (what
    a marker that encloses cells must be); ``info`` / ``content``: the pattern's group that
    becomes the token's ``info`` / ``content`` (0: none)."""

    pattern: re.Pattern[str]
    before: str = "paragraph"
    top_level: bool = False
    info: int = 0
    content: int = 0
    opens: str = ":"  # the line's first character (after its container's indent): a quick test first


@dataclass(frozen=True)
class FenceRule:
    """A fence whose info string (and opening line) ``matches``; the fences' rules are asked in
    table order, the first that matches gives the kind."""

    matches: Callable[[str, str], bool]  # (info string stripped, opening line) -> bool


@dataclass(frozen=True)
class BlockRule:
    """A construct with a block rule of its own (``rule``, markdown-it's signature), before ``before``."""

    rule: Callable[[StateBlock, int, int, bool], bool]
    before: str


@dataclass(frozen=True)
class TokenRule:
    """A block CommonMark's parse already makes: its token type (None: any block token no other
    rule claims) and, where the type is not enough, a test of its rows (joined by ``\\n``)."""

    token: str | None
    rows: Callable[[str], bool] | None = None


Rule = LineRule | FenceRule | BlockRule | TokenRule


@dataclass(frozen=True)
class Construct:
    """One construct of the dialect (see the module's docstring)."""

    kind: Kind
    spelling: str  # how an author writes it (messages, docs)
    rule: Rule
    shape: Shape
    emit: Emit
    front: Front = Front.SUMMARY
    slides: Slides = Slides.MARKS
    marker: Marker | None = None  # what a CONTAINER line does

    @property
    def token_type(self) -> str:
        """The markdown-it token type the construct's own rule makes (line and block rules)."""
        return f"dialect_{self.kind.value}"


# --- the rules the plugin registers -----------------------------------------------------------

_FENCE_RUN = re.compile(r"^(`{3,}|~{3,})")
_TERMINATES = ["paragraph", "reference", "blockquote"]  # "blockquote" also ends a table's rows


def _line(state: StateBlock, line: int) -> str:
    """The text of ``line`` inside the current container (after its quote marks and indent)."""
    return state.src[state.bMarks[line] + state.tShift[line]:state.eMarks[line]]


def _line_rules(entries: list[Construct]) -> Callable[[StateBlock, int, int, bool], bool]:
    """One markdown-it block rule for the :class:`LineRule` constructs registered at one place
    (``before``), tried in table order: one call per line instead of one per construct, and a
    line whose first character none of them opens with is passed at once (every line of a
    page is offered to these rules, and again at each line of a paragraph, as terminators)."""
    rules = [(c.kind, c.token_type, c.rule) for c in entries if isinstance(c.rule, LineRule)]
    opens = "".join(sorted({r.opens for _, _, r in rules}))

    def run(state: StateBlock, start: int, end: int, silent: bool) -> bool:
        line = _line(state, start)
        if line[:1] not in opens or not line or state.is_code_block(start):
            return False
        top = state.level == 0 and state.sCount[start] == 0 and state.blkIndent == 0
        for kind, token_type, rule in rules:
            if rule.top_level and not top:
                continue
            m = rule.pattern.match(line)
            if m is None:
                continue
            if not silent:
                token = state.push(token_type, "", 0)
                if rule.info:
                    token.info = m.group(rule.info) or ""
                if rule.content:
                    token.content = (m.group(rule.content) or "").strip()
                token.meta["kind"] = kind
                token.map = [start, start + 1]
                token.markup = line
                state.line = start + 1
            return True
        return False

    return run


def _without_eqlabel(s: str) -> str:
    """A math line with the ``:eqlabel:`` after its closing ``$$`` cut off (``…$$``)."""
    m = MATH_EQLABEL.search(s)
    return s[:m.start()] + "$$" if m else s


def _math_end(state: StateBlock, start: int, end: int) -> int | None:
    """Exclusive end row of display math opened at ``start``, or None when it is not closed.

    ``$$…$$`` on the opening line closes it there; otherwise the first later line
    that is a lone ``$$`` (possibly with text after) or ends with ``$$`` closes it.
    A fence or another dialect line before the close means the ``$$`` was text.
    """
    first = _without_eqlabel(_line(state, start).strip())
    if first.count("$$") >= 2:
        # ``$$…$$ with text after`` is a paragraph that starts with display math (pandoc and
        # MyST read the math inside it), not a block of math with the text in its TeX
        # (so is ``$$a$$ and $$b$$``: two pieces of math in one paragraph)
        return start + 1 if first.count("$$") == 2 and first.endswith("$$") else None
    for row in range(start + 1, end):
        if state.sCount[row] < state.blkIndent and not state.isEmpty(row):
            return None  # the container ended first
        s = _without_eqlabel(_line(state, row).strip())
        if s.startswith("$$"):
            if s.count("$$") == 1:
                return row + 1
            continue
        if s.endswith("$$"):
            return row + 1
        if _FENCE_RUN.match(s) or ATTR_LINE.match(s) or BEGIN_TAB.match(s) or END_TAB.match(s):
            return None
    return None


def _math_rule(state: StateBlock, start: int, end: int, silent: bool) -> bool:
    if state.is_code_block(start) or not _line(state, start).startswith("$$"):
        return False
    stop = _math_end(state, start, end)
    if stop is None:
        return False
    if not silent:
        token = state.push(CONSTRUCTS[Kind.MATH].token_type, "math", 0)
        token.block = True
        token.map = [start, stop]
        token.content = state.getLines(start, stop, state.blkIndent, False)
        token.meta["kind"] = Kind.MATH
        label = MATH_EQLABEL.search(_line(state, stop - 1))
        if label:
            token.meta["eqlabel"] = label.group(1).strip()
        state.line = stop
    return True


def _toc_fence(info: str, opener: str) -> bool:
    return info == "toc" and is_toc_opener(opener)


def _image_paragraph(rows: str) -> bool:
    return IMAGE_PARAGRAPH.match(rows) is not None


#: The dialect, one entry per kind. Order matters twice: line and block rules are registered
#: in it (each before its ``before`` rule, so ahead of those registered after it), and the
#: fence rules are asked in it (the last, literal, takes every fence).
TABLE: tuple[Construct, ...] = (
    Construct(Kind.ATTR, ":label:`name`, :eqlabel:`name`, :width:`400px`",
              LineRule(ATTR_LINE, info=1, content=2), Shape.PROSE, Emit.ATTRIBUTE, front=Front.ENDS),
    Construct(Kind.BEGIN_TAB, ":begin_tab:`NAMES`", LineRule(BEGIN_TAB, info=1), Shape.CONTAINER, Emit.LINES,
              front=Front.SKIPPED, slides=Slides.FRAMEWORK, marker=Marker.OPEN_TAB),
    Construct(Kind.BEGIN_SHARED_TAB, ":begin_tab: (no framework named, e.g. :begin_tab:toc)",
              LineRule(BEGIN_SHARED_TAB, info=1), Shape.CONTAINER, Emit.LINES, front=Front.SKIPPED,
              marker=Marker.OPEN_SHARED),
    Construct(Kind.END_TAB, ":end_tab:", LineRule(END_TAB), Shape.CONTAINER, Emit.LINES,
              front=Front.SKIPPED, slides=Slides.FRAMEWORK, marker=Marker.CLOSE_TAB),
    # Before CommonMark's HTML blocks, which would otherwise take the comment lines.
    Construct(Kind.BEGIN_SOLUTION, "<!-- solution -->",
              LineRule(BEGIN_SOLUTION, before="html_block", top_level=True, info=1, opens="<"), Shape.CONTAINER,
              Emit.LINES, front=Front.SKIPPED, slides=Slides.LEFT_OUT, marker=Marker.OPEN_SOLUTION),
    Construct(Kind.END_SOLUTION, "<!-- end solution -->",
              LineRule(END_SOLUTION, before="html_block", top_level=True, opens="<"), Shape.CONTAINER, Emit.LINES,
              front=Front.SKIPPED, slides=Slides.LEFT_OUT, marker=Marker.CLOSE_SOLUTION),
    # The solution markers in the spelling of d2lbook's own marks (:begin_tab:), for authors who
    # would rather not write HTML comments; d2lbook shows these lines as text.
    Construct(Kind.BEGIN_SOLUTION_MARK, ":begin_solution:`TEXT`",
              LineRule(re.compile(r"^:begin_solution:(?:`([^`]*)`)?[ \t]*$"), top_level=True, info=1),
              Shape.CONTAINER, Emit.LINES, front=Front.SKIPPED, slides=Slides.LEFT_OUT, marker=Marker.OPEN_SOLUTION),
    Construct(Kind.END_SOLUTION_MARK, ":end_solution:",
              LineRule(re.compile(r"^:end_solution:[ \t]*$"), top_level=True), Shape.CONTAINER, Emit.LINES,
              front=Front.SKIPPED, slides=Slides.LEFT_OUT, marker=Marker.CLOSE_SOLUTION),
    Construct(Kind.BIBLIOGRAPHY, ":bibliography:`FILE`", LineRule(BIBLIOGRAPHY, content=1), Shape.PROSE,
              Emit.BIBLIOGRAPHY, front=Front.SKIPPED),
    # Before the setext heading rule, which would read ``$$`` and the TeX after it as a heading
    # title underlined by a ``=`` line of the math (nlp-notes': ``… \n= \n…``).
    Construct(Kind.MATH, "$$…$$", BlockRule(_math_rule, before="lheading"), Shape.PROSE, Emit.MATH,
              front=Front.SKIPPED),
    Construct(Kind.CODE, "```{.python .input}", FenceRule(lambda info, _: is_code_info(info)), Shape.CODE,
              Emit.COPIED),
    Construct(Kind.RST, "```eval_rst", FenceRule(lambda info, _: info == EVAL_RST_INFO), Shape.PROSE,
              Emit.EVAL_RST, front=Front.SKIPPED),
    Construct(Kind.TOC, "```toc", FenceRule(_toc_fence), Shape.TOC, Emit.TOCTREE, front=Front.SKIPPED),
    Construct(Kind.LITERAL, "```LANGUAGE", FenceRule(lambda info, _: True), Shape.PROSE, Emit.LITERAL,
              front=Front.SKIPPED),
    Construct(Kind.INDENTED, "an indented code block", TokenRule("code_block"), Shape.PROSE, Emit.COPIED),
    Construct(Kind.HTML, "an HTML block", TokenRule("html_block"), Shape.PROSE, Emit.COPIED,
              front=Front.SKIPPED),
    Construct(Kind.TABLE, "| a | pipe | table |", TokenRule("table_open"), Shape.PROSE, Emit.TABLE,
              front=Front.SKIPPED),
    Construct(Kind.IMAGE, "![caption](file)", TokenRule("paragraph_open", _image_paragraph), Shape.PROSE,
              Emit.LINES, front=Front.SKIPPED),
    Construct(Kind.TEXT, "a paragraph, heading, list or quote", TokenRule(None), Shape.PROSE, Emit.LINES),
)

#: Each kind's entry.
CONSTRUCTS: dict[Kind, Construct] = {c.kind: c for c in TABLE}


def check_table(table: tuple[Construct, ...] = TABLE) -> list[str]:
    """What is wrong with a table (empty: nothing): a kind with no entry or two, a container
    without its marker action, a fence rule after the one that takes every fence. Run at
    import (a broken table is a programming error) and by the tests."""
    problems: list[str] = []
    kinds = [c.kind for c in table]
    problems += [f"{k.name}: no entry" for k in Kind if k not in kinds]
    problems += [f"{k.name}: {kinds.count(k)} entries" for k in Kind if kinds.count(k) > 1]
    for c in table:
        if (c.shape is Shape.CONTAINER) != (c.marker is not None):
            problems.append(f"{c.kind.name}: a container line needs its marker action (and only it has one)")
        if c.shape is Shape.CONTAINER and not isinstance(c.rule, LineRule):
            problems.append(f"{c.kind.name}: a container marker is a line")
        if isinstance(c.rule, FenceRule) and c.shape is Shape.CONTAINER:
            problems.append(f"{c.kind.name}: a fence is prose, code or a toc")
    for action in Marker:
        if len({c.slides for c in table if c.marker is action}) > 1:
            problems.append(f"{action.name}: its markers disagree on what the slides do")
    fences = [c.rule for c in table if isinstance(c.rule, FenceRule)]
    if not fences or not fences[-1].matches("", "```"):
        problems.append("the last fence rule must take every fence (a fence of no kind would be lost)")
    catch_all = [c for c in table if isinstance(c.rule, TokenRule) and c.rule.token is None]
    if len(catch_all) != 1 or table[-1] is not catch_all[0]:
        problems.append("one token rule, the last entry, takes every block no other rule claims")
    return problems


if _problems := check_table():  # pragma: no cover - a broken table stops the builder at import
    raise RuntimeError("the construct table: " + "; ".join(_problems))

_FENCES = tuple((c.kind, c.rule) for c in TABLE if isinstance(c.rule, FenceRule))
#: CommonMark's token type -> the token rules that may claim it, in table order; ``None``: the
#: rules for any type (the catch-all). Asked once per block token: a dict, not the whole table.
_TOKENS: dict[str | None, list[tuple[Kind, TokenRule]]] = {}
for _c in TABLE:
    if isinstance(_c.rule, TokenRule):
        _TOKENS.setdefault(_c.rule.token, []).append((_c.kind, _c.rule))
#: Lines the front page's summary passes over (or stops at): the line constructs that are not text.
FRONT_LINES = tuple((c.rule.pattern, c.front) for c in TABLE
                    if isinstance(c.rule, LineRule) and c.front is not Front.SUMMARY)
_TABLE_PARTS = ("thead_", "tbody_", "tr_", "th_", "td_")


def deck_use(action: Marker) -> Slides:
    """What a deck does with the cells that the containers opened by ``action`` enclose."""
    return next((c.slides for c in TABLE if c.marker is action), Slides.MARKS)


def fence_kind(info: str, opener: str) -> Kind:
    """The kind of a fence: its info string (stripped) and its opening line decide."""
    return next(kind for kind, rule in _FENCES if rule.matches(info, opener))


def is_block(token: Token) -> bool:
    """A token that starts a block (what ``Block`` records): not a closing one, not inline,
    not a table's inner parts."""
    return not (token.nesting == -1 or token.map is None or token.type == "inline"
                or token.type.startswith(_TABLE_PARTS))


def _mark_kinds(state: StateCore) -> None:
    """Give every block token its kind in ``meta["kind"]``: the dialect's own rules did already;
    fences by their info string; CommonMark's by the table's token rules."""
    rows: list[str] | None = None
    for token in state.tokens:
        if not is_block(token) or "kind" in token.meta:
            continue
        assert token.map is not None
        if token.type == "fence":
            rows = rows if rows is not None else state.src.split("\n")
            token.meta["kind"] = fence_kind(token.info.strip(), rows[token.map[0]])
            continue
        for kind, rule in (*_TOKENS.get(token.type, ()), *_TOKENS[None]):
            if rule.rows is not None:
                rows = rows if rows is not None else state.src.split("\n")
                if not rule.rows("\n".join(rows[token.map[0]:token.map[1]])):
                    continue
            token.meta["kind"] = kind
            break


def token_kind(token: Token) -> Kind | None:
    """The kind the dialect's parse gave a token (None for a token that starts no block)."""
    kind = token.meta.get("kind")
    return kind if isinstance(kind, Kind) else None


def dialect_plugin(md: MarkdownIt) -> None:
    """Teach ``md`` the dialect's constructs (:data:`TABLE`)."""
    from markdown_it.rules_block.fence import make_fence_rule

    lines: dict[str, list[Construct]] = {}
    for c in TABLE:
        if isinstance(c.rule, LineRule):
            lines.setdefault(c.rule.before, []).append(c)
    for before, entries in lines.items():
        md.block.ruler.before(before, f"dialect_lines_{before}", _line_rules(entries), {"alt": _TERMINATES})
    for c in TABLE:
        if isinstance(c.rule, BlockRule):
            md.block.ruler.before(c.rule.before, c.token_type, c.rule.rule, {"alt": _TERMINATES})
    # d2lbook's fences: closed by a bare run of exactly the opener's length (CommonMark: at
    # least), so an example of the dialect's own fences can be shown inside a shorter one.
    md.block.ruler.at("fence", make_fence_rule(exact_match=True),
                      {"alt": ["paragraph", "reference", "blockquote", "list"]})
    md.core.ruler.push("dialect_kinds", _mark_kinds)


def dialect_parser() -> MarkdownIt:
    """CommonMark with pipe tables and the dialect's constructs: the one parser of the book's prose.

    Block structure only (inline parsing is not needed by any stage and is skipped).
    """
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"maxNesting": max_nesting()}).enable("table").use(dialect_plugin)
    md.disable("inline")
    return md
