"""Malformed books (issue 52): d2lbook warns and builds every page; so does tabbook, better.

Each test reads a small page or book written here and checks what is built past the problem
(the cells, their tabs and lines, the pages) and that the problem is said once, at its line,
with its kind (``tabbook.problems``).
"""

from __future__ import annotations

from pathlib import Path

from tabbook.book import book_markdown_files, read_book
from tabbook.config import load_config
from tabbook.problems import Problem
from tabbook.source.constructs import Kind
from tabbook.source.model import Section
from tabbook.source.read import read_section

TABS = ("pytorch", "mxnet")


def read(text: str) -> Section:
    return read_section(text, "sec.md", TABS, "pytorch")


def cells(section: Section) -> list[tuple[str, int, tuple[str, ...], str]]:
    return [(c.kind, c.line, c.tabs, c.source) for c in section.cells]


def said(section: Section) -> list[tuple[int | None, Problem | None]]:
    return [(w.line, w.kind) for w in section.warnings]


# --- a code cell that lost its opening fence -----------------------------------------------------

LOST_OPENER = """# Lost

{.python .input}
x = 1
```

More prose.

```{.python .input}
y = 2
```
"""


def test_a_cell_whose_fence_was_lost_is_read_as_a_cell_and_the_page_goes_on() -> None:
    section = read(LOST_OPENER)
    assert cells(section) == [
        ("markdown", 1, (), "# Lost"),
        ("code", 3, ("pytorch",), "x = 1"),
        ("markdown", 7, (), "More prose."),
        ("code", 9, ("pytorch",), "y = 2"),
    ]
    assert said(section) == [(3, Problem.BROKEN_FENCE)]
    assert [c.source_lines for c in section.code_cells] == [(4,), (10,)]


def test_a_literal_fence_left_open_before_a_cell_is_read_as_prose() -> None:
    section = read("# Open\n\n```\nleft open\n\n```{.python .input}\ny = 2\n```\n\nAfter.\n")
    assert cells(section) == [
        ("markdown", 1, (), "# Open\n\n\nleft open"),
        ("code", 6, ("pytorch",), "y = 2"),
        ("markdown", 10, (), "After."),
    ]
    assert said(section) == [(3, Problem.BROKEN_FENCE)]
    assert "not closed before the code cell at line 6" in section.warnings[0].message


def test_every_broken_fence_of_a_page_is_mended_and_said() -> None:
    broken = "{.python .input}\nx = 1\n```\n\nProse.\n\n```{.python .input}\ny = 2\n```\n\n"
    section = read("# Many\n\n" + broken * 3)
    assert [c.source for c in section.code_cells] == ["x = 1", "y = 2"] * 3
    assert said(section) == [(3, Problem.BROKEN_FENCE), (13, Problem.BROKEN_FENCE), (23, Problem.BROKEN_FENCE)]


def test_a_page_of_more_broken_fences_than_are_mended_still_reads() -> None:
    broken = "```\nleft open\n\n```{.python .input}\ny = 2\n```\n\n"
    section = read("# Very many\n\n" + broken * 12)
    assert len(section.warnings) >= 12 and {w.kind for w in section.warnings} == {Problem.BROKEN_FENCE}


# --- prose tab markers d2lbook's pattern reads --------------------------------------------------

def test_a_begin_tab_with_a_space_before_its_backtick_is_a_marker() -> None:
    section = read("# T\n\n:begin_tab: `mxnet`\nMXNet only.\n:end_tab:\n\nEveryone.\n")
    assert cells(section) == [("markdown", 1, (), "# T"), ("markdown", 4, ("mxnet",), "MXNet only."),
                              ("markdown", 7, (), "Everyone.")]
    assert said(section) == [(3, Problem.TAB_MARKER)]


def test_text_after_a_begin_tab_marker_is_the_tab_s_first_line() -> None:
    # d2lbook drops the text; tabbook keeps it in the tab, at the marker's line.
    section = read("# T\n\n:begin_tab:`mxnet` First *words*,\nthen more.\n:end_tab:\n")
    tab = section.cells[1]
    assert (tab.kind, tab.line, tab.tabs, tab.source) == ("markdown", 3, ("mxnet",), "First *words*,\nthen more.")
    assert [(b.kind, b.start, b.end) for b in tab.blocks] == [(Kind.TEXT, 0, 2)]  # one paragraph
    assert said(section) == [(3, Problem.TAB_MARKER)]


def test_the_plain_marker_says_nothing() -> None:
    assert read("# T\n\n:begin_tab:`mxnet`\nM.\n:end_tab:\n").warnings == ()


# --- pages --------------------------------------------------------------------------------------

def _book(root: Path, config: str = "", pages: dict[str, str] | None = None) -> Path:
    root.mkdir()
    (root / "config.ini").write_text(f"[project]\nname = b\n\n[build]\ntabs = pytorch\n{config}")
    for rel, text in {"index.md": "# Book\n\n```toc\nfirst\nempty\n```\n", "first.md": "# First\n\nHi.\n",
                      **(pages or {})}.items():
        (root / rel).write_text(text)
    return root


def test_an_empty_page_in_the_toc_is_built_with_its_file_name_as_title(tmp_path: Path) -> None:
    root = _book(tmp_path / "b", pages={"empty.md": "\n\n"})
    book = read_book(load_config(root))
    assert book.toc == ["index.md", "first.md", "empty.md"]
    assert book.pages["empty.md"].title == "empty"
    assert not book.problems
    assert [(p.location_message(), p.kind) for p in book.pages["empty.md"].warnings] == [
        ("empty.md:1: the file is empty: built as an empty page titled 'empty' (give it a # title)",
         Problem.EMPTY_PAGE)]
    assert [s.path for s in book.sections] == ["index.md", "first.md", "empty.md"]  # a build starts


def test_a_root_readme_is_a_page_under_d2lbook_s_default_notebooks(tmp_path: Path) -> None:
    root = _book(tmp_path / "b", pages={"README.md": "# Read me\n", "empty.md": "# E\n"})
    assert "README.md" in [p.name for p in book_markdown_files(load_config(root))]
    excluded = _book(tmp_path / "c", "exclusions = README.md\n", {"README.md": "# Read me\n", "empty.md": "# E\n"})
    assert "README.md" not in [p.name for p in book_markdown_files(load_config(excluded))]


# --- what Sphinx says of a code block Pygments cannot lex ---------------------------------------

def test_a_code_block_pygments_cannot_lex_is_one_short_line_at_the_block(tmp_path: Path) -> None:
    from tabbook.render.diagnostics import to_error
    from tabbook.render.warning import SphinxWarning

    config = load_config(_book(tmp_path / "b", pages={"empty.md": "# E\n"}))
    source = '{"a": 1,\n  oops: [1, 2]}\n' * 20
    record = {"type": "misc", "subtype": "highlighting_failure", "level": "WARNING", "location": "first.md:8",
              "message": f"Lexing literal_block {source!r} as \"json\" resulted in an error at token: "
                         "'o'. Retrying in relaxed mode."}
    error = to_error(config, SphinxWarning.from_dict(record), [])
    assert error.shown() == "first.md:8: code block is not valid json; shown without highlighting [highlighting]"
    assert error.kind is Problem.HIGHLIGHTING


# --- labels another page redefines --------------------------------------------------------------

ORIGINAL = "# Intro\n:label:`sec_intro`\n\n$$x = 1$$\n:eqlabel:`eq_one`\n\n$$y = 2 $$ :eqlabel:`eq_two`\n\nSee :eqref:`eq_one`.\n"


def test_labels_a_copy_no_toc_lists_redefines_stay_the_toc_page_s(tmp_path: Path) -> None:
    from tabbook.render.myst import cell_to_myst

    # "a_copy" is read before "intro" (and Sphinx would read it last or first: either way one wins)
    root = _book(tmp_path / "b", pages={"index.md": "# Book\n\n```toc\n:numbered:\n\nintro\n```\n",
                                        "intro.md": ORIGINAL, "a_copy.md": ORIGINAL})
    book = read_book(load_config(root))
    assert book.labels == {"sec_intro": ("intro.md", 2), "eq_one": ("intro.md", 5), "eq_two": ("intro.md", 7)}
    said_ = [(w.location_message(), w.kind) for w in book.problems]
    assert said_ == [(f"a_copy.md:{line}: duplicate label {name!r} (also at intro.md:{line}): references to it go to "
                      "intro.md, the page in the toc", Problem.DUPLICATE_LABEL)
                     for name, line in (("sec_intro", 2), ("eq_one", 5), ("eq_two", 7))]
    rendered = {s.path: s for s in book.rendered_sources}
    copy = "\n".join(cell_to_myst(c) for c in rendered["a_copy.md"].cells if c.kind == "markdown")
    assert "(sec_intro--a_copy)=" in copy and "(eq_one--a_copy)" in copy and "(eq_two--a_copy)" in copy
    assert "sec_intro)" not in copy.replace("sec_intro--a_copy)", "")
    original = "\n".join(cell_to_myst(c) for c in rendered["intro.md"].cells if c.kind == "markdown")
    assert "(sec_intro)=" in original and "(eq_one)" in original and "--" not in original


# --- a citation whose key no bib file the book names has ---------------------------------------

ENTRY = "@article{{{key},\n title={{A title}},\n author={{Smith, Ann}},\n journal={{J}},\n year={{2020}}\n}}\n"


def _build(root: Path) -> str:
    import os
    import subprocess
    import sys

    repo = Path(__file__).resolve().parent.parent
    proc = subprocess.run([sys.executable, "-m", "tabbook", "-C", str(root), "build", "html"], cwd=repo,
                          capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONPATH": str(repo), "TABBOOK_CACHE": str(root / ".cache")})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout + proc.stderr


def test_a_key_no_named_bib_file_has_shows_as_the_key_where_a_book_without_bib_files_shows_it(tmp_path: Path) -> None:
    """sphinxcontrib-bibtex rendered such a key as an empty ``[]`` (and dropped it from a
    citation of several); a book with no bib file at all shows the key: now both show it, said
    at the citation's line, naming the unnamed bib file that has it."""
    root = _book(tmp_path / "b", pages={
        "index.md": "# Book\n\nAs :cite:`Smith.2020` and :cite:`Jones.2019,Smith.2020` say.\n\n```toc\nempty\n```\n",
        "empty.md": "# Refs\n\n:bibliography:`references.bib`\n",
        "references.bib": ENTRY.format(key="Jones.2019"), "other.bib": ENTRY.format(key="Smith.2020")})
    out = _build(root)
    page = (root / "build" / "html" / "index.html").read_text(encoding="utf-8")
    assert '<span class="tabbook-unresolved" id="id1">[Smith.2020]</span>' in page
    assert '<span class="tabbook-unresolved">[Smith.2020]</span>' in page  # beside the resolved Jones.2019
    assert "[]" not in page
    said_ = [line for line in out.splitlines() if "Smith.2020" in line]
    assert said_ == ["warning: index.md:3: citation 'Smith.2020' is in no bib file the book names ([pdf] bibfile, "
                     "or a :bibliography: line naming one): shown as its key (other.bib has it: name it on a "
                     ":bibliography: line or in [pdf] bibfile) [missing-citation]"]  # two on one line: said once
