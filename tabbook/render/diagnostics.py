"""Sphinx's warnings, mapped back to the Markdown line an author wrote, each of its kind.

Sphinx reads what the sources step generated (``build/src/<page>.ipynb`` or ``.md``), so its
warnings name those files, and myst-nb numbers a notebook's lines from ``(cell + 1) * 10000``.
The sources step keeps, beside each generated page, a line map
(``build/linemaps/<page>.json``: for every cell of the notebook, or every line of the page,
the line of the Markdown file it came from); :mod:`tabbook.render.ext.diagnostics` records each
warning of the Sphinx run. Here the two meet: every warning becomes a
:class:`~tabbook.errors.BookError` at ``chapter/page.md:LINE``, all of them at once, as
``--keep-going`` would report them but at the source, each with its kind (:func:`kind_of`).

d2lbook runs Sphinx without ``-W``: every warning is reported and built past, so each is a
problem of a kind (:mod:`tabbook.problems`): a warning, an error only in a strict build
(``--strict`` or ``[build] warning_is_error``, as d2lbook's key and Sphinx's ``-W``). Those about
the *data* of a bib entry, which the author wrote in the bib file, not on a page
(:data:`DATA_WARNINGS`), are located at ``refs.bib:LINE`` of the entry.

Warnings about a page are found only when Sphinx reads the page; on the next incremental run
it would not read it again and the problem would go unreported. So a run with warnings marks
the generated pages it names as changed (their modification time), and a warning Sphinx gave
no page for makes the next run read everything: the next build reports them again until they
are fixed.
"""

from __future__ import annotations

import functools
import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypedDict, cast

from tabbook.book import book_markdown_files, named_bibfiles
from tabbook.config import Config
from tabbook.errors import BookError, judge
from tabbook.files import BuildDir
from tabbook.problems import Problem
from tabbook.render.sources import source_dir
from tabbook.render.warning import SphinxWarning

_LOCATION = re.compile(r"^(?P<path>.*?)(?::(?P<line>\d+))?$")
#: The "line" of a warning about what the builder wrote into a page (the front page's lines):
#: the front page copies each section's first sentence, whose problems are reported at the
#: section's own line; such a warning is not reported again (:func:`collect`).
GENERATED = 0
#: The (first) line of myst-nb's numbering for cell ``i`` is ``(i + 1) * CELL_BASE + 1``.
CELL_BASE = 10000
#: (type, subtype) of the warnings about a bib entry's data: its text renders (maybe with a
#: field less, or a label shared with another entry), so the build goes on unless strict.
DATA_WARNINGS = frozenset({
    ("bibtex", "missing_field"),  # "missing publisher in KEY": pybtex's style needs the field
    ("bibtex", "duplicate_label"),  # two entries format to the same label
    ("bibtex", "bibfile_data_error"),  # pybtex: a repeated entry, a bad name, …
})
#: (type, subtype) → kind, for the warnings Sphinx gives a type.
_TYPED = {("bibtex", "key_not_found"): Problem.MISSING_CITATION, ("misc", "highlighting_failure"): Problem.HIGHLIGHTING,
          ("image", "not_readable"): Problem.MISSING_IMAGE, ("toc", "not_readable"): Problem.TOC_ENTRY}
#: Message openings → kind, for the untyped ones.
_WORDED = (("duplicate label", Problem.DUPLICATE_LABEL), ("undefined label", Problem.UNDEFINED_REFERENCE),
           # docutils' words for a label given twice on one page (a heading's or figure's, an
           # equation's): the check's duplicate label again, said once (build._not_said)
           ("Duplicate explicit target name", Problem.DUPLICATE_LABEL),
           ('Duplicate ID: "equation-', Problem.DUPLICATE_LABEL),
           ("Failed to create a cross reference. Any number is not assigned", Problem.UNNUMBERED_REFERENCE),
           ("image file not readable", Problem.MISSING_IMAGE),
           ("toctree contains reference to nonexisting document", Problem.TOC_ENTRY),
           ('Problems with "raw" directive path', Problem.MISSING_INCLUDE),
           ("raw:: ", Problem.MISSING_INCLUDE),  # tabbook.render.ext.paths.BookRaw
           ("Could not lex literal_block", Problem.HIGHLIGHTING))
_SLUGS = {kind.slug: kind for kind in Problem}
#: The subtype of a warning of tabbook's own extensions that is an error in every build (an
#: image outside the book: the site would publish a file of the machine).
STOPS = "error"
#: Where a bib warning names its entry's key.
_BIB_KEY = (re.compile(r"^missing \S+ in (?P<key>\S+)"),
            re.compile(r'for keys "[^"]*" and "(?P<key>[^"]*)"'),
            re.compile(r"entry:? (?P<key>\S+)$"))


@dataclass
class Diagnostics:
    """A Sphinx run's warnings, judged: ``errors`` fail the build, ``warnings`` are shown."""

    errors: list[BookError] = field(default_factory=list)
    warnings: list[BookError] = field(default_factory=list)


class LineMap(TypedDict, total=False):
    """A generated page's rows mapped back to its Markdown (``build/linemaps/``, written by
    :mod:`tabbook.render.sources`): its page, and each row's line (a notebook's per cell)."""

    source: str
    cells: list[list[int | None]]
    lines: list[int | None]


def _load(path: Path) -> object:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def source_line(config: Config, generated: Path, line: int | None) -> tuple[str, int | None] | None:
    """``(page.md, line)`` for a line of a generated page; None when the page has no map."""
    try:
        rel = generated.resolve().relative_to(source_dir(config).resolve())
    except ValueError:
        return None
    stem = rel.with_suffix("").as_posix()
    data = cast("LineMap | None", _load(BuildDir(config.build_dir).line_map(stem)))  # the builder's own file
    if data is None:
        return None
    page = data["source"]
    if line is None:
        return page, None
    if "cells" in data:
        cell, row = divmod(line - 1, CELL_BASE)
        cells = data["cells"]
        if not 1 <= cell <= len(cells):
            return page, None
        rows = cells[cell - 1]
        if not rows:
            return page, None
        found = rows[min(max(row - 1, 0), len(rows) - 1)]
    else:
        rows = data["lines"]
        if not rows:
            return page, None
        if line > len(rows):  # what the builder appended (the front page): no line of the author's
            return page, GENERATED
        found = rows[max(line - 1, 0)]
    return page, (found or None)


def bib_entry_line(bibfile: Path, key: str) -> int | None:
    """The line of ``@type{key,`` in ``bibfile``: where the author wrote the entry."""
    try:
        text = bibfile.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    m = re.search(r"^[ \t]*@[A-Za-z]+[ \t]*[{(][ \t]*" + re.escape(key) + r"[ \t]*,", text, re.M)
    return text.count("\n", 0, m.start()) + 1 if m else None


def _bib_location(config: Config, record: SphinxWarning, bibs: list[Path]) -> tuple[str, int | None] | None:
    """``(refs.bib, line of the entry)`` for a bibtex warning that names an entry, else None.

    sphinxcontrib-bibtex places these at the ``{bibliography}`` directive, often on a page the
    builder generated (``references.md``); the problem is in the bib file's entry."""
    if record.type != "bibtex" or not bibs:
        return None
    for pattern in _BIB_KEY:
        m = pattern.search(record.message)
        for bib in bibs if m else ():
            line = bib_entry_line(bib, m.group("key"))  # type: ignore[union-attr]
            if line is not None:
                return config.rel(bib), line
    if record.subtype == "bibfile_data_error":
        return config.rel(bibs[0]), None
    return None


def kind_of(record: SphinxWarning) -> Problem | None:
    """The kind of a recorded warning: tabbook's own extensions name theirs (``type="tabbook"``,
    ``subtype`` a kind's slug, or :data:`STOPS` for one that fails every build), Sphinx's typed
    ones and a few worded ones have their own; any other is :attr:`Problem.SPHINX`."""
    if record.kind is not None:  # a record :func:`short_message` reworded
        return record.kind
    typed = record.typed
    if typed == ("tabbook", STOPS):
        return None
    if typed[0] == "tabbook" and typed[1] in _SLUGS:
        return _SLUGS[str(typed[1])]
    if typed in DATA_WARNINGS:
        return Problem.BIB_DATA
    if typed in _TYPED:
        return _TYPED[typed]
    return next((kind for opening, kind in _WORDED if record.message.startswith(opening)), Problem.SPHINX)


#: The language in Sphinx's (and older Sphinx's) words for a code block Pygments cannot lex.
_LEXED_AS = re.compile(r'^(?:Lexing|Could not lex) literal_block .* as "(?P<lang>[^"]*)"', re.S)


_MISSING_KEY = re.compile(r'^could not find bibtex key "(?P<key>[^"]*)"')
_NO_BIB_KEY = re.compile(r"^citation '(?P<key>[^']*)': the book has no bib file")


def unnamed_bibfiles(config: Config, named: list[Path]) -> list[Path]:
    """The bib files of the book (beside the root or a page) that neither ``[pdf] bibfile`` nor a
    ``:bibliography:`` line names: where an author may have put an entry no citation finds."""
    folders = {config.root} | {p.parent for p in book_markdown_files(config)}
    known = {n.resolve() for n in named}
    return [bib for folder in sorted(folders) for bib in sorted(folder.glob("*.bib")) if bib.resolve() not in known]


def missing_citation(config: Config, record: SphinxWarning, named: list[Path],
                     unnamed: Callable[[], list[Path]] | None = None) -> SphinxWarning:
    """A key no bib file the book names has, said as a book without bib files says it (the
    key is shown, :mod:`tabbook.render.ext.bib`), with the unnamed bib file that has it."""
    typed = record.typed
    m = _MISSING_KEY.match(record.message)
    if typed == ("tabbook", Problem.MISSING_CITATION.slug):  # a book with no bib file (render/ext/bib.py)
        m, message = _NO_BIB_KEY.match(record.message), record.message
    elif typed == ("bibtex", "key_not_found") and m is not None:
        message = (f"citation {m.group('key')!r} is in no bib file the book names ([pdf] bibfile, or a "
                   ":bibliography: line naming one): shown as its key")
    else:
        return record
    if m is None:
        return record
    key = m.group("key")
    others = unnamed() if unnamed is not None else unnamed_bibfiles(config, named)
    other = next((bib for bib in others if bib_entry_line(bib, key) is not None), None)
    if other is not None:
        message += f" ({config.rel(other)} has it: name it on a :bibliography: line or in [pdf] bibfile)"
    return record.reworded(message, Problem.MISSING_CITATION)


def short_message(record: SphinxWarning) -> SphinxWarning:
    """A record whose message is one short line where Sphinx's is long: a code block Pygments
    cannot lex is quoted whole by Sphinx (its ``repr``, ``\\n`` escapes and all), seven times
    on d2lbook's own manual; it is said as ``code block is not valid LANG; shown without
    highlighting``, at the block's line."""
    if record.typed != ("misc", "highlighting_failure"):
        return record
    m = _LEXED_AS.match(record.message)
    lang = m.group("lang") if m else "its language"
    return record.reworded(f"code block is not valid {lang}; shown without highlighting", Problem.HIGHLIGHTING)


def to_error(config: Config, record: SphinxWarning, bibs: list[Path] | None = None,
             unnamed: Callable[[], list[Path]] | None = None) -> BookError:
    """One recorded warning as an error at the Markdown source (or the bib entry, or where
    Sphinx put it). ``unnamed``: the book's bib files no key names, when first asked
    (:func:`unnamed_bibfiles`; a run's warnings share one answer)."""
    bibs = named_bibfiles(config) if bibs is None else bibs
    record = missing_citation(config, short_message(record), bibs, unnamed)
    first, *rest = record.message.split("\n")
    message = (first.strip() or "(no message)") + "".join(f"\n    {x}" for x in rest if x.strip())
    kind = (f" [{record.type}.{record.subtype}]" if record.type not in (None, "tabbook")
            and record.subtype else "")
    level = record.level.lower()
    text = f"{message}{kind}" if level == "warning" else f"{level}: {message}{kind}"
    problem = kind_of(record)
    bib = _bib_location(config, record, bibs)
    if bib is not None:
        return BookError(text, *bib, kind=problem)
    if not record.location:
        return BookError(f"Sphinx: {text}", kind=problem)
    m = _LOCATION.match(record.location)
    assert m is not None  # the pattern matches any string
    path, line = Path(m.group("path")), int(m.group("line")) if m.group("line") else None
    mapped = source_line(config, path, line)
    if mapped is not None:
        return BookError(text, *mapped, kind=problem)
    try:
        shown = config.rel(path)
    except ValueError:
        shown = str(path)
    return BookError(text, shown, line, kind=problem)


def collect(config: Config, records_file: Path, strict: bool = False, mark: bool = True) -> Diagnostics:
    """The run's warnings judged by their kinds (:func:`tabbook.errors.judge`; sorted,
    duplicates dropped). With ``mark``, the pages they name are marked for re-reading (a no-op
    build shows the last run's record again, unmarked)."""
    loaded = _load(records_file) or []
    records = [SphinxWarning.from_dict(r) for r in loaded] if isinstance(loaded, list) else []
    found = Diagnostics()
    touched: set[Path] = set()
    everything = False
    problems = []
    bibs = named_bibfiles(config) if records else []
    unnamed = functools.cache(lambda: unnamed_bibfiles(config, bibs))
    for record in records:
        problem = to_error(config, record, bibs, unnamed)
        if not (problem.line == GENERATED and problem.kind is not None):
            problems.append(problem)
        if not mark:
            continue
        m = _LOCATION.match(record.location) if record.location else None
        generated = Path(m.group("path")) if m else None
        if generated is not None and generated.is_file() and source_dir(config).resolve() in generated.resolve().parents:
            touched.add(generated)
        else:
            everything = True
    found.errors, found.warnings = judge(problems, strict)
    for path in touched:
        os.utime(path)  # newer than Sphinx's record of reading it: read again next time
    if everything:
        for pickle in BuildDir(config.build_dir).doctrees("").glob("*/environment.pickle"):
            pickle.unlink()
    for listed in (found.errors, found.warnings):
        listed.sort(key=lambda e: (e.path or "", e.line or 0))
    return found
