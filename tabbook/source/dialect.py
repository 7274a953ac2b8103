"""The d2lbook Markdown dialect, defined once: every marker, role, label and magic.

Every stage that needs to recognise a piece of the dialect imports it from
here (read, check, split, render's MyST emission, the library's Python
surgery) instead of spelling its own regex; the block constructs built from these patterns
(their kinds, reader rules and what each stage does with them) are the construct table,
:mod:`tabbook.source.constructs`. The constructs:

Code cells
    A fence whose info string is ``{.python .input}`` (:data:`CODE_INFO`) is
    executable; its first line may be ``%%tab NAMES`` (:data:`TAB_MAGIC`, or
    d2lbook's older ``#@tab NAMES``, :data:`LEGACY_TAB`). Marker comments on
    their own line: ``#@hide``, ``#@hide_code``, ``#@hide_output``, ``#@save``
    (:data:`FLAG_LINE`) and ``#@raises [Exception]`` (:data:`RAISES_LINE`);
    ``#@save`` may also end a statement's line (:data:`SAVE_MARK`).
    IPython magics and shell escapes are :data:`MAGIC_LINE`.

Prose
    ``:begin_tab:`NAMES``` / ``:end_tab:`` lines delimit framework-specific
    prose (:data:`BEGIN_TAB`, :data:`END_TAB`); a ``:begin_tab:`` naming no framework
    (``:begin_tab:toc``, :data:`BEGIN_SHARED_TAB`) opens prose every framework sees, as in
    d2lbook. Attribute lines follow the block they describe: ``:label:`name``` (a heading, paragraph, image or
    table), ``:eqlabel:`name``` (display math), ``:width:`400px``` (an image):
    :data:`ATTR_LINE`; ``:eqlabel:`` may also end the math's closing line
    (:data:`MATH_EQLABEL`). A table's caption is a paragraph above it that
    starts ``:Caption`` (all its lines, as pandoc reads it), the ``:label:``
    line, if any, ending that paragraph or below the table (:data:`TABLE_CAPTION`).
    ``:bibliography:`refs.bib``` alone on a line places the bibliography (:data:`BIBLIOGRAPHY`); a fence opened with ```` ```eval_rst ````
    holds reStructuredText. Inline roles ``:numref:``, ``:ref:``, ``:eqref:``,
    ``:cite:``, ``:citet:``, ``:citep:`` (:data:`ROLE`). Slide marks keep
    ``(**…**)``/``[**…**]`` text and drop ``(~~…~~)``/``[~~…~~]`` text
    (:func:`strip_slide_marks`). A fence opened by exactly ```` ```toc ````
    is a table of contents (:func:`is_toc_opener`).

Solutions
    ``<!-- solution TEXT -->`` and ``<!-- end solution -->``, each alone on a line outside any
    container, enclose the solution of an exercise: prose and code cells, executed like any,
    shown on the site behind a "Solution TEXT" summary that a reader opens, and left out of
    the PDFs (:data:`BEGIN_SOLUTION`, :data:`END_SOLUTION`). They are HTML comments so that
    d2lbook, which knows nothing of them, renders the solution as ordinary content.

Where d2lbook reads as CommonMark does, so does the dialect: a role inside an inline code
span, an HTML comment, a fence or an indented code block is text (:func:`find_roles`);
and fences nest by length, as in d2lbook: a fence ends only at a bare run of exactly its
own length, so a ```` ````toc ```` example sits inside a ```` ``` ```` block and a
```` ```toc ```` example inside a ```` ```` ```` one.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator

# --- code cells -------------------------------------------------------------------------------

#: The executable fence's info string: ```` ```{.python .input} ```` (extra classes allowed).
#: notedown, which d2lbook reads pages with, takes ```` ```{.python .output} ```` for one too (a
#: cell's input unless its output is JSON, ``.json .output``).
CODE_INFO = re.compile(r"^\{\s*\.python\s+\.(?:input|output)\b")
#: ``%%tab jax, mxnet`` (or ``%%tab all``): the frameworks a code cell belongs to; group 1: the names.
TAB_MAGIC = re.compile(r"^\s*%%tab\b(.*)$")
#: d2lbook's older spelling of :data:`TAB_MAGIC`, ``#@tab NAMES``, or the magic commented out,
#: ``# %%tab NAMES`` (d2lbook's patterns find both anywhere in a cell: d2l-en's ``resnet.md`` has
#: a JAX cell opened so). As a cell's first code line it names the cell's tabs; later in the cell
#: d2lbook removes it from the code it shows, and so does the reader.
LEGACY_TAB = re.compile(r"^\s*#\s*(?:@|%%)tab\b(.*)$")
#: A marker comment alone on its line; group 1: ``hide``, ``hide_code``, ``hide_output`` or ``save``.
FLAG_LINE = re.compile(r"^\s*#\s*@(hide_code|hide_output|hide|save)\s*$")
#: ``#@save`` at the end of a line (alone, or after a statement): search, do not match.
SAVE_MARK = re.compile(r"#\s*@save\s*$")
#: A whole comment token that is a ``#@save`` marker (as ``tokenize`` reports comments).
SAVE_COMMENT = re.compile(r"^#\s*@save\s*$")
#: ``#@raises`` or ``#@raises ValueError``: the cell must raise; group 1: the class name, if any.
RAISES_LINE = re.compile(r"^\s*#\s*@raises\b\s*([A-Za-z_][\w.]*)?\s*$")
#: Lines of d2lbook's tab-selection cell, meaningless outside Jupyter: a cell of only these,
#: blank lines and comments is dropped (:func:`tabbook.source.read.is_setup_cell`).
SETUP_LINES = re.compile(r"^\s*(%load_ext\s+d2lbook\.tab|tab\.interact_select\(.*\))\s*$")
#: An IPython magic (``%time``, ``%%writefile``) or shell escape (``!nvidia-smi``) line.
#: ``!=`` is not a shell escape: at a line's start it can only continue an expression.
#: Group 1: the indentation; group 2: the magic, from its ``%``/``!``.
MAGIC_LINE = re.compile(r"^([ \t]*)((?:%|!(?!=)).*)$")
#: What separates framework names in ``%%tab``/``:begin_tab:`` lines.
TAB_NAME_SEP = re.compile(r"[,\s]+")


def is_code_info(info: str) -> bool:
    """True for the dialect's executable fence: ```` ```{.python .input} ````."""
    return bool(CODE_INFO.match(info))


def is_magic(line: str) -> bool:
    """True when ``line`` is an IPython magic or shell escape (:data:`MAGIC_LINE`)."""
    return MAGIC_LINE.match(line) is not None


# --- prose ------------------------------------------------------------------------------------

#: ``:begin_tab:`jax, mxnet```: framework-specific prose starts; group 1: the names, group 2 any
#: text after the marker on its line. d2lbook's pattern (a ``:name:`` mark at the line's start)
#: also takes ``:begin_tab: `jax``` (a space before the backtick) and a marker followed by prose,
#: so the dialect reads those as markers too (:func:`begin_tab_oddity` says what is unusual).
BEGIN_TAB = re.compile(r"^\s*:begin_tab:[ \t]*`([^`]*)`[ \t]*(.*?)\s*$")
#: The marker as d2lbook's documentation writes it: no space before the backtick, nothing after.
_PLAIN_BEGIN_TAB = re.compile(r"^\s*:begin_tab:`[^`]*`\s*$")


def begin_tab_oddity(line: str) -> str | None:
    """What is unusual about a ``:begin_tab:`` line that :data:`BEGIN_TAB` matches (a space
    before the backtick, prose after the marker), or None for the plain spelling."""
    if _PLAIN_BEGIN_TAB.match(line):
        return None
    m = BEGIN_TAB.match(line)
    if m is None:
        return None
    odd = []
    if not line.lstrip().startswith(":begin_tab:`"):
        odd.append("a space before its backtick")
    if m.group(2):
        odd.append("text after it on its line (kept as the tab's first line)")
    return " and ".join(odd) or None
#: ``:end_tab:``: the prose tab ends.
END_TAB = re.compile(r"^\s*:end_tab:\s*$")
#: ``:begin_tab:`` naming no framework (no backticks after it: ``:begin_tab:``, ``:begin_tab:toc``):
#: d2lbook's pattern reads a marker of no tab there, and the prose up to ``:end_tab:`` is shared
#: (the marker lines left out); group 1: what follows the marker.
BEGIN_SHARED_TAB = re.compile(r"^\s*:begin_tab:(?![ \t]*`)[ \t]*(.*?)\s*$")
#: ``<!-- solution 3 -->`` alone on a line: a solution starts; group 1: what follows "solution"
#: (its summary on the site is "Solution" and this text). ``<!-- solutions -->`` is no marker.
BEGIN_SOLUTION = re.compile(r"^<!--[ \t]*solution(?![\w-])[ \t]*(.*?)[ \t]*-->[ \t]*$")
#: ``<!-- end solution -->`` alone on a line: the solution ends.
END_SOLUTION = re.compile(r"^<!--[ \t]*end[ \t]+solution[ \t]*-->[ \t]*$")
#: Any attribute line: group 1 ``label``/``eqlabel``/``width``, group 2 its value.
ATTR_LINE = re.compile(r"^\s*:(label|eqlabel|width):`([^`]+)`\s*$")
#: A line that defines a cross-reference target: group 1 ``label``/``eqlabel``, group 2 the name.
LABEL_LINE = re.compile(r"^\s*:(label|eqlabel):`([^`]+)`\s*$")
#: ``:label:`name``` alone: a heading, paragraph, figure or table target.
LABEL = re.compile(r"^\s*:label:`([^`]+)`\s*$")
#: ``:eqlabel:`name``` alone: labels the display math above it.
EQLABEL = re.compile(r"^\s*:eqlabel:`([^`]+)`\s*$")
#: ``:width:`400px``` alone: the width of the image above it.
WIDTH = re.compile(r"^\s*:width:`([^`]+)`\s*$")
#: ``$$`` closing display math with its ``:eqlabel:`name``` on the same line; group 1 the name.
MATH_EQLABEL = re.compile(r"\$\$[ \t]*:eqlabel:`([^`]+)`[ \t]*$")
#: A table caption's first line, ``:Caption text`` or ``: Caption text`` (not a ``:role:``); group 1 the text.
TABLE_CAPTION = re.compile(r"^\s*:(?![\w-]+:)[ \t]*(\S.*?)\s*$")
#: ``:bibliography:`refs.bib``` alone: the book's bibliography goes here; group 1 the file named.
BIBLIOGRAPHY = re.compile(r"^\s*:bibliography:`([^`]*)`\s*$")
#: The info string of a fence whose content is reStructuredText (d2lbook's ```` ```eval_rst ````).
EVAL_RST_INFO = "eval_rst"
#: The inline roles that refer to labels; groups ``role`` and ``target``. The target may also be
#: in double backticks (``:numref:``sec_x``, which d2l writes once): a reference all the same.
REF_ROLE = re.compile(r":(?P<role>numref|ref|eqref):`(?P<tick>`?)(?P<target>[^`]+)(?P=tick)`")
#: Every inline role of the dialect (references and citations); groups ``role`` and ``target``.
ROLE = re.compile(r":(?P<role>numref|ref|eqref|cite|citet|citep):`(?P<tick>`?)(?P<target>[^`]+)(?P=tick)`")
_INLINE_SKIP = re.compile(r"(?P<ticks>`+)|<!--")


def find_roles(line: str, pattern: re.Pattern[str] = ROLE) -> Iterator[re.Match[str]]:
    """The roles of one line of prose, read left to right as an inline parser does: a role's
    own backticks are its target; any other backtick run opens a code span that ends at the
    next run of the same length (no such run: the backticks are text), and ``<!--`` a comment
    that ends at ``-->``. Roles inside those are text (``change `:num:` to `:numref:` ``)."""
    pos = 0
    while pos < len(line):
        role = pattern.search(line, pos)
        skip = _INLINE_SKIP.search(line, pos)
        if role is None:
            return
        if skip is None or role.start() <= skip.start():
            yield role
            pos = role.end()
            continue
        if skip.group("ticks"):
            run = skip.group("ticks")
            close = re.compile(rf"(?<!`){run}(?!`)").search(line, skip.end())
            pos = close.end() if close else skip.end()
        else:
            end = line.find("-->", skip.end())
            pos = len(line) if end < 0 else end + 3


def sub_roles(line: str, replace: Callable[[re.Match[str]], str], pattern: re.Pattern[str] = ROLE) -> str:
    """``pattern.sub(replace, line)`` for the roles :func:`find_roles` finds (code spans and
    comments kept as written)."""
    out, pos = [], 0
    for m in find_roles(line, pattern):
        out += [line[pos:m.start()], replace(m)]
        pos = m.end()
    return "".join(out) + line[pos:]


#: Dialect role → the MyST/Sphinx role it becomes.
ROLE_MAP = {
    "numref": "numref",
    "ref": "ref",
    "eqref": "eq",
    "cite": "cite:p",
    "citet": "cite:t",
    "citep": "cite:p",
}
#: An image anywhere in a line; group 1 its source.
IMAGE = re.compile(r"!\[[^\]]*\]\(([^)\s]+)")
#: A line that is only an image (optionally with a title): a figure when an attribute line follows.
IMAGE_LINE = re.compile(r"^\s*!\[(?P<cap>.*)\]\((?P<src>[^)\s]+)(?:\s+\"[^\"]*\")?\)\s*$")
#: A paragraph that is only an image, its alt text over one line or several (d2l wraps long
#: captions): a figure when an attribute line follows. Match the paragraph's rows joined by ``\n``.
#: The alt text holds no ``](`` (a second image or a link would end it).
IMAGE_PARAGRAPH = re.compile(
    r"^\s*!\[(?P<cap>(?:[^\]]|\](?!\())*)\]\((?P<src>[^)\s]+)(?:\s+\"[^\"]*\")?\)\s*$", re.S)
#: The table of contents fence's opening line, exactly (other spellings stay literal).
TOC_OPENER = "```toc"
#: The options of a ```` ```toc ```` block: Sphinx's toctree's, which d2lbook passes on (a flag
#: takes no value; ``maxdepth`` an integer). Any other is read past, with a warning.
TOC_OPTIONS = {"maxdepth": int, "numbered": None, "hidden": None, "caption": str, "name": str, "titlesonly": None,
               "glob": None, "reversed": None, "includehidden": None, "class": str}

_SLIDE_OPENER = re.compile(r"[\[(](\*\*|~~)")
_FENCED = re.compile(r"^[ \t]*(```|~~~).*?^[ \t]*\1[ \t]*$", re.S | re.M)
_TICKS = re.compile(r"`+")


def _slide_spans(text: str, markers: tuple[str, ...], linked: bool) -> Iterator[tuple[int, int, str]]:
    """The slide marks of ``text``, left to right, not overlapping: (start, end, marker) of each
    ``[MtextM]`` / ``(MtextM)`` for a marker M of ``markers`` (``**``, ``~~``), ``text`` at least
    one character, lines included; with ``linked`` false a ``[…]`` mark followed by ``(`` (a
    link's text) closes only at a later closer. What the regular expression
    ``\\[(M)(.+?)\1\\]`` found, in linear time: its lazy match scanned to the end of the text
    from every opener that has no closer (20,000 ``[**`` took a minute). Each closer's next
    occurrence is remembered, and openers only move right, so each is looked for once."""
    nexts: dict[str, int] = {}  # closer -> its next occurrence at or after the last start asked
    pos = 0
    while (m := _SLIDE_OPENER.search(text, pos)) is not None:
        start, marker = m.start(), m.group(1)
        if marker not in markers:
            pos = start + 1
            continue
        closer = marker + ("]" if text[start] == "[" else ")")
        at = start + 4  # past the opener and the one character the text needs at least
        found = nexts.get(closer, -2)
        if found != -1 and found < at:
            found = text.find(closer, at)
            while found >= 0 and not linked and closer[-1] == "]" and text.startswith("(", found + 3):
                found = text.find(closer, found + 1)
            nexts[closer] = found
        if found < 0:
            pos = start + 1
            continue
        yield start, found + 3, marker
        pos = found + 3


def _code_spans(text: str) -> Iterator[tuple[int, int]]:
    """Code spans (``` `` ```, any length, lines included): each run of backticks opens one that
    the next run of the same length closes; a run with none after it is text. Linear: the next
    run of each length is found from the end once (a regular expression tried every run from
    every position: a line of 80,000 backticks took a minute)."""
    runs = [(m.start(), m.end()) for m in _TICKS.finditer(text)]
    after: list[int] = [-1] * len(runs)
    last: dict[int, int] = {}
    for i in range(len(runs) - 1, -1, -1):
        length = runs[i][1] - runs[i][0]
        after[i] = last.get(length, -1)
        last[length] = i
    i = 0
    while i < len(runs):
        j = after[i]
        if j < 0:
            i += 1
            continue
        yield runs[i][0], runs[j][1]
        i = j + 1


def _blank(text: str, spans: Iterable[tuple[int, int]]) -> str:
    """``text`` with each span's characters but line breaks made spaces (rows stay where they are)."""
    out, pos = [], 0
    for start, end in spans:
        out += [text[pos:start], re.sub(r"[^\n]", " ", text[start:end])]
        pos = end
    return "".join(out) + text[pos:]


def unclosed_slide_marks(text: str) -> list[tuple[int, str]]:
    """Slide marks opened and never closed in a piece of prose: (0-based row, the opener), so
    the author learns why text is missing from the slides. Code (fenced or in backticks) is not
    prose; ``[**text**](url)``, a link with bold text, counts as closed."""
    text = _FENCED.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)
    text = _blank(text, _code_spans(text))
    text = _blank(text, ((s, e) for s, e, _ in _slide_spans(text, ("**", "~~"), linked=True)))
    rows, row, pos = [], 0, 0
    for m in _SLIDE_OPENER.finditer(text):
        row += text.count("\n", pos, m.start())
        pos = m.start()
        rows.append((row, m.group(0)))
    return rows


def is_toc_opener(line: str) -> bool:
    """True for the opening line of a table of contents block, ```` ```toc ```` exactly."""
    return line.strip() == TOC_OPENER


def strip_slide_marks(text: str) -> str:
    """Drop slide-only text ``(~~…~~)``/``[~~…~~]``; unwrap ``(**…**)``/``[**…**]`` (a ``[…]``
    mark followed by ``(`` is a link's text, not a mark). Slide-only text goes first, so a
    kept mark that encloses one loses it."""
    out, pos = [], 0
    for start, end, _ in _slide_spans(text, ("~~",), linked=False):
        out += [text[pos:start]]
        pos = end
    text = "".join(out) + text[pos:]
    out, pos = [], 0
    for start, end, _ in _slide_spans(text, ("**",), linked=False):
        out += [text[pos:start], text[start + 3:end - 3]]
        pos = end
    return "".join(out) + text[pos:]


# How deep blocks may nest (a quote in a quote counts one level, a list two: the list and its
# item). markdown-it's CommonMark preset stops at 20 and drops the rest of the page without a
# word (MyST included: a list ten deep and everything after it vanished from the HTML). Past
# this the page is an error at the block's line (read.py); below it every parser of the book's
# prose (ours, MyST's through render/ext/nesting.py) is given room (``max_nesting``), well
# inside what Python's recursion limit allows markdown-it and docutils.
MAX_NESTING = 100


def max_nesting(margin: int = 2) -> int:
    """The ``maxNesting`` option a parser of the book's prose gets: past :data:`MAX_NESTING`, so
    that a page at the limit parses whole and one past it is seen to be (and refused)."""
    return MAX_NESTING + margin
