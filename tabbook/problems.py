"""The problems a book can have that a build goes on past: one declaration each.

d2lbook's contract (its ``[build] warning_is_error`` defaults to False) is that a book builds
past what it reports: a duplicate label, a reference to a label no page defines, a toc entry
for a page that does not exist, a missing image, any Sphinx warning. tabbook keeps that
contract, and says more: each such problem is a *kind* declared here, with what a build does
by default, what a strict build (``--strict`` or ``[build] warning_is_error = True``) does,
and what d2lbook 1.0.3 does with the same text. A problem raised with a kind
(``BookError(..., kind=Problem.X)``) is judged by that declaration (:func:`judge`); a problem
without one is an error that stops the build, for the few where no output can be made (the
configuration cannot be read, a page is not text, code that fails to run).

README's table of them is written from here (:func:`contract_table`; a test says when it is
stale). To add a kind: one member below, then raise ``BookError(message, path, line,
kind=Problem.NEW)`` where the problem is found, reading on past it.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum, StrEnum


class Severity(StrEnum):
    WARNING = "warning"  # shown (``warning: file:LINE: …``); the build goes on and exits 0
    ERROR = "error"  # the build goes on to find the others, then fails listing them all


@dataclass(frozen=True)
class Rule:
    """One kind of problem: what its message says, and what becomes of it."""

    message: str  # what the message says (README's first column)
    tabbook: str  # what a build does past it, with the default severity
    d2lbook: str  # what d2lbook 1.0.3 does with the same text
    default: Severity = Severity.WARNING
    strict: Severity = Severity.ERROR


_W, _E = Severity.WARNING, Severity.ERROR


class Problem(Enum):
    """Every kind of problem a build goes on past. Its value is its :class:`Rule`."""

    # -- the dialect ----------------------------------------------------------------------------
    STRAY_END_TAB = Rule(
        "`:end_tab: without a matching :begin_tab:`", "the line is dropped",
        "drops the line (it ends the prose cell)")
    UNCLOSED_TAB = Rule(
        "`:begin_tab: is never closed by :end_tab:` (`…; it ends at line N, where the next :begin_tab: opens`)",
        "the prose tab ends where the next one opens, or at the page's end",
        "the same")
    UNKNOWN_TAB = Rule(
        "`unknown framework 'x'` (a `%%tab`, `#@tab` or `:begin_tab:` naming no tab of `[build] tabs`)",
        "the cell is in no tab: not shown, not run, not saved",
        "the same (the cell matches no tab's notebook)")
    CODE_IN_PROSE_TAB = Rule(
        "`code cell inside the prose tab opened at line N`", "the prose tab ends before the code cell",
        "the same")
    TAB_NOT_FIRST = Rule(
        "`%%tab must be the first line of its code cell`", "the line is read as the cell's tab line",
        "the same (it looks for the mark anywhere in the cell)")
    TAB_MARKER = Rule(
        "`:begin_tab: with a space before its backtick` / `with text after it on its line`",
        "read as the marker for the frameworks it names; text after it is the tab's first line",
        "reads a marker too, but of no framework (the prose shown to every one) / drops the text after it")
    BROKEN_FENCE = Rule(
        "`a code cell's opening fence is missing` / `the fence opened here is not closed before the code "
        "cell at line N`",
        "a `{.python .input}` line before the stray fence is read as the cell's opening; otherwise the stray "
        "fence line is dropped and what it held is read as prose; the rest of the page and book build",
        "builds the page garbled (prose as code, or code as prose) and every other page")
    TOC_OPTION = Rule(
        "`unknown toc option :x:` / `:maxdepth: needs an integer`", "the option is left out, the toc kept",
        "Sphinx's toctree fails on it: the toc is lost")
    SLIDE_MARK = Rule(
        "`slide mark [** is never closed by **]`", "the slides leave its text out until it is closed",
        "the same")
    # -- pages, labels, references, the toc ----------------------------------------------------
    EMPTY_PAGE = Rule(
        "`the file is empty: built as an empty page titled 'x'`",
        "built as a page with only a title, made from its file's name",
        "builds an empty page; Sphinx warns it has no title")
    ENCODING = Rule(
        "`the file starts with a byte-order mark` / `CRLF (Windows) line ends` / `a NUL byte (U+0000)`",
        "read through (a NUL as U+FFFD, code included)", "the same, without a word on NUL bytes")
    DUPLICATE_LABEL = Rule(
        "`duplicate label 'x' (also at page.md:LINE): references to it go to page.md, the page in the toc`",
        "said at each duplicate; references go to the page in the toc (the first in its order; else the first "
        "page read), the other pages' copies renamed",
        "Sphinx warns; references go to the label read last (a copy no toc lists: unnumbered, `()`)")
    UNDEFINED_REFERENCE = Rule(
        "`:numref: to undefined label 'x'` (also `:eqref:`, `:ref:`)", "shown as the label's text",
        "Sphinx warns and shows the label's text")
    UNNUMBERED_REFERENCE = Rule(
        "`:numref: to 'x', which has no number …`",
        "a section: a link with its title; anything else: the label's text",
        "Sphinx warns (`Any number is not assigned`) and shows the label's text")
    TOC_ENTRY = Rule(
        "`toc entry 'x': x.md does not exist` (or is a directory, or is listed twice)",
        "the entry is left out of the toc", "Sphinx warns and leaves it out")
    ORPHAN_PAGE = Rule(
        "`section is not listed in any ```toc block: built as an orphan page`",
        "built as an orphan, reached by links only", "the same")
    MISSING_IMAGE = Rule(
        "`image file X does not exist`", "the figure keeps its caption; the image is missing",
        "Sphinx warns; the image is missing")
    MISSING_INCLUDE = Rule(
        "`raw:: html :file: X does not exist beside the page`", "the block is left out (the book's file is used when it has it)",
        "docutils' severe error, logged; the block is left out")
    LINK_TARGET = Rule(
        "`link to x.pdf, which the book does not have`", "linked as written (a broken link)",
        "linked as written, no warning")
    MISSING_CITATION = Rule(
        "`citation 'x' is in no bib file the book names ([pdf] bibfile, or a :bibliography: line naming one)` "
        "(`… (other.bib has it …)` when an unnamed bib file of the book has it); `citation 'x': the book has no "
        "bib file`", "shown as `[x]`, with a bib file or without",
        "Sphinx warns; shown as an empty `[]` (without a bib file: as the key)")
    BIB_DATA = Rule(
        "`refs.bib:LINE: missing FIELD in KEY` (also `duplicate_label`, `bibfile_data_error`)",
        "the entry renders without it", "Sphinx warns")
    # -- the configuration ---------------------------------------------------------------------
    CONFIG_MISSING_FILE = Rule(
        "`config.ini:N: [html] favicon names X, which does not exist` (any key naming a book file)",
        "the key is left unset", "goes on without it (`[pdf] post_latex`: crashes typesetting)")
    CONFIG_VALUE = Rule(
        "`config.ini:N: [build] x has a % that is not %% nor %(name)s`", "the value is read as written",
        "stops (configparser's interpolation error)")
    CONFIG_EXTENSION = Rule(
        "`config.ini:N: [build] sphinx_extensions names x, which cannot be imported`",
        "the extension is left out", "Sphinx cannot start: no output")
    CONFIG_UNKNOWN_KEY = Rule(
        "`config.ini:N: [build] cell_timout is not a key of [build] (did you mean cell_timeout?)`",
        "the key is ignored (its setting keeps its default)", "ignores it without a word")
    CONFIG_UNUSED = Rule(
        "`config.ini:N: [deploy] google_analytics_tracking_id is not emitted`",
        "no tracker: pages load nothing from other sites", "adds Google's tracker")
    # -- the library, execution, the store -----------------------------------------------------
    LIBRARY_UNSAVED_NAME = Rule(
        "`saved code uses d2l.X, but no section saves X` (a build that executes nothing)",
        "the library is written as it is", "the same (nothing checks it)")
    OUTDATED_OUTPUTS = Rule(
        "`[fw] outputs kept from an earlier version of the code: …`",
        "the page shows them, marked as earlier", "re-runs it (or fails without the GPUs)")
    FREEZE_CODE = Rule(
        "`[fw] freeze entry … shows code other than the book's here`", "the page shows the book's code",
        "no store")
    PARTIAL_LIBRARY = Rule(
        "`the library of this partial build is the whole book's, in an order inferred …`",
        "the order is inferred from what the chapters use", "no partial builds")
    # -- rendering ------------------------------------------------------------------------------
    MATH = Rule(
        "`KaTeX parse error: …: typeset as an aligned block` (or `with what it cannot read marked`)",
        "typeset at build time all the same (an `aligned` block, or the part KaTeX cannot read "
        "shown as TeX in red); nothing loaded from other sites", "MathJax, loaded from a CDN, shows its error")
    HIGHLIGHTING = Rule(
        "`code block is not valid x; shown without highlighting` (Pygments cannot lex it)",
        "shown without colours; one line at the block, never the block's text",
        "not reported (its `conf.py` suppresses it)", strict=_W)
    SPHINX = Rule(
        "any other Sphinx, docutils or MyST warning (`Unknown directive type`, `unknown document`, …)",
        "what Sphinx renders past it", "Sphinx warns; the same")

    @property
    def rule(self) -> Rule:
        return self.value

    @property
    def slug(self) -> str:
        """``duplicate-label``: how the kind is named in a message and in ``build/report.json``."""
        return self.name.lower().replace("_", "-")

    def severity(self, strict: bool) -> Severity:
        return self.rule.strict if strict else self.rule.default


def contract_table() -> str:
    """README's table of the problems a build goes on past, written from :class:`Problem`."""
    out = ["| problem | tabbook (default) | `--strict` | d2lbook 1.0.3 |", "| --- | --- | --- | --- |"]
    for kind in Problem:
        rule = kind.rule
        out.append(f"| {rule.message} `[{kind.slug}]` | {rule.default.value}: {rule.tabbook} | "
                   f"{rule.strict.value} | {rule.d2lbook} |")
    return "\n".join(out) + "\n"
