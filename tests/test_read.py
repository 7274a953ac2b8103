"""Stage 1, read: the d2lbook dialect → Section, and every malformed input → BookError at file:LINE."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tabbook.errors import BookError, BookErrors
from tabbook.source.constructs import Kind
from tabbook.source.model import Cell, Section
from tabbook.source.read import parse_tab_names, read_section, strip_slide_marks

TABS = ("pytorch", "jax", "tensorflow", "mxnet")
FIXTURES = Path(__file__).parent / "fixtures" / "dialect"
#: Malformed input: ``errors/`` stops reading; ``problems/`` is read past, as d2lbook reads it
#: (d2lbook's contract, tabbook.problems), each problem reported at its line with its kind.
ERROR_FIXTURES = sorted([*(FIXTURES / "errors").glob("*.md"), *(FIXTURES / "problems").glob("*.md")])
EXPECT = re.compile(r"^<!-- (error|errors|split-error|warning|warnings) ([\d,]+): (.*) -->$")


def read(text: str, path: str = "sec.md", tabs: tuple[str, ...] = TABS, default: str = "pytorch") -> Section:
    return read_section(text, path, tabs, default)


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


def line_of(text: str, needle: str, nth: int = 1) -> int:
    hits = [i + 1 for i, raw in enumerate(text.split("\n")) if needle in raw]
    assert len(hits) >= nth, f"{needle!r} occurs {len(hits)} times"
    return hits[nth - 1]


def code(section: Section) -> list[Cell]:
    return list(section.code_cells)


def prose(section: Section) -> list[Cell]:
    return [c for c in section.cells if c.kind == "markdown"]


def cell_with(section: Section, needle: str) -> Cell:
    found = [c for c in section.cells if needle in c.source]
    assert len(found) == 1, [c.source for c in found]
    return found[0]


# --- the full fixture: every construct in one realistic section -----------------------------------

@pytest.fixture(scope="module")
def full() -> tuple[str, Section]:
    text = fixture("full.md")
    return text, read(text, "chapter_x/full.md")


def test_full_title_keeps_slide_text(full: tuple[str, Section]) -> None:
    _, sec = full
    assert sec.title == "Devices and Memory"
    assert sec.path == "chapter_x/full.md"


def test_full_setup_cell_is_dropped(full: tuple[str, Section]) -> None:
    _, sec = full
    assert not any("interact_select" in c.source or "load_ext" in c.source for c in sec.cells)


@pytest.mark.parametrize(
    ("needle", "tabs"),
    [
        ("import torch", ("pytorch",)),
        ("import jax", ("jax",)),
        ("import tensorflow as tf", ("tensorflow",)),  # fence info with extra attributes (n=3)
        ("from mxnet import np, npx", ("mxnet",)),  # legacy #@tab
        ("x = 1", ("pytorch",)),  # untagged: the default tab
        ("def cpu()", TABS),  # %%tab all, in config order
        ("y = 2", ("jax", "mxnet")),  # "jax, mxnet" sorted into config order
    ],
)
def test_full_code_cell_tabs(full: tuple[str, Section], needle: str, tabs: tuple[str, ...]) -> None:
    text, sec = full
    cell = [c for c in code(sec) if needle in c.source][0]
    assert cell.tabs == tabs
    assert "%%tab" not in cell.source and "#@tab" not in cell.source
    # ``line`` is the opening fence; the first source line is recorded exactly.
    assert text.split("\n")[cell.line - 1].startswith("```{.python .input")
    assert cell.source_lines[0] == line_of(text, needle)
    assert cell.where == f"chapter_x/full.md:{cell.line}"


@pytest.mark.parametrize(
    ("needle", "flags", "raises"),
    [
        ("y = 2", {"hide_output"}, None),
        ("z = 3", {"hide"}, None),
        ("w = 4", {"hide_code"}, None),
        ("x + y", set(), "RuntimeError"),
        ("1 / 0", set(), ""),  # #@raises without a name: any exception
        ("def helper", {"save"}, None),  # whole-line #@save
        ("def cpu", {"save"}, None),  # trailing  #@save
        ("import torch", set(), None),
    ],
)
def test_full_flags(full: tuple[str, Section], needle: str, flags: set[str], raises: str | None) -> None:
    _, sec = full
    cell = [c for c in code(sec) if needle in c.source][0]
    assert cell.flags == frozenset(flags)
    assert cell.raises == raises
    # Marker lines other than #@save disappear from the source; #@save stays for the library.
    assert not re.search(r"#\s*@(hide|raises|tab)", cell.source)


def test_full_save_marker_kept_in_source(full: tuple[str, Section]) -> None:
    _, sec = full
    assert cell_with(sec, "def helper").source.startswith("#@save\ndef helper")
    assert "def cpu():  #@save" in cell_with(sec, "def cpu").source


def test_full_prose_tabs(full: tuple[str, Section]) -> None:
    text, sec = full
    py = cell_with(sec, "PyTorch prose.")
    jt = cell_with(sec, "JAX and TensorFlow prose.")
    assert (py.tabs, py.source, py.line) == (("pytorch",), "PyTorch prose.", line_of(text, "PyTorch prose."))
    assert jt.tabs == ("jax", "tensorflow")
    assert jt.line == line_of(text, "JAX and TensorFlow prose.")
    assert not any(":begin_tab:" in c.source or ":end_tab:" in c.source for c in sec.cells)


def test_full_cell_order(full: tuple[str, Section]) -> None:
    _, sec = full
    kinds = [(c.kind, c.tabs) for c in sec.cells[:7]]
    assert kinds == [
        ("markdown", ()), ("markdown", ("pytorch",)), ("markdown", ("jax", "tensorflow")),
        ("code", ("pytorch",)), ("code", ("jax",)), ("code", ("tensorflow",)), ("code", ("mxnet",)),
    ]
    assert len(code(sec)) == 12


def test_full_every_prose_cell_starts_at_its_line(full: tuple[str, Section]) -> None:
    text, sec = full
    lines = text.split("\n")
    for cell in prose(sec):
        assert lines[cell.line - 1] == cell.source.split("\n")[0], cell
    for cell in code(sec):
        assert len(cell.source_lines) == len(cell.source.split("\n"))
        for row, n in zip(cell.source.split("\n"), cell.source_lines, strict=True):
            assert lines[n - 1] == row


def test_full_labels_and_refs(full: tuple[str, Section]) -> None:
    text, sec = full
    assert sec.labels == {
        "sec_full": line_of(text, ":label:`sec_full`"),
        "fig_full": line_of(text, ":label:`fig_full`"),
        "eq_full": line_of(text, ":eqlabel:`eq_full`"),
    }
    intro = line_of(text, "Intro prose")
    assert sec.refs == (("numref", "fig_full", intro), ("ref", "sec_full", intro), ("eqref", "eq_full", intro))
    assert "not_a_label" not in sec.labels  # inside a literal fence


def test_full_literal_fence_is_prose(full: tuple[str, Section]) -> None:
    _, sec = full
    lit = cell_with(sec, 'print("hello")')
    assert lit.kind == "markdown" and '```python\n# A literal fence' in lit.source


def test_full_slide_marks_kept_in_prose_source(full: tuple[str, Section]) -> None:
    # read keeps the text; myst (render) strips the marks.
    _, sec = full
    assert "(**this**)" in cell_with(sec, "Keep (**this**)").source


# --- small constructs ---------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("first_line", "tabs"),
    [
        ("%%tab pytorch", ("pytorch",)),
        ("%%tab jax, tensorflow", ("jax", "tensorflow")),
        ("%%tab tensorflow,jax", ("jax", "tensorflow")),
        ("%%tab jax tensorflow", ("jax", "tensorflow")),
        # `all` alone: the section names no tab, so it exists for the default tab only (as in
        # d2lbook; test_d2lbook_source.py has `all` beside cells that name tabs)
        ("%%tab all", ("pytorch",)),
        ("#@tab mxnet", ("mxnet",)),
        ("#@tab all", ("pytorch",)),
        ("# @tab jax", ("jax",)),
        ("  %%tab jax", ("jax",)),
    ],
)
def test_tab_lines(first_line: str, tabs: tuple[str, ...]) -> None:
    sec = read(f"```{{.python .input}}\n{first_line}\nx = 1\n```\n")
    (cell,) = code(sec)
    assert cell.tabs == tabs and cell.source == "x = 1" and cell.source_lines == (3,)


def test_blank_lines_before_tab_line_are_allowed() -> None:
    (cell,) = code(read("```{.python .input}\n\n%%tab jax\nx = 1\n```\n"))
    assert cell.tabs == ("jax",) and cell.source_lines == (4,)


def test_legacy_tab_later_in_cell_is_a_mark_as_in_d2lbook() -> None:
    # d2lbook finds ``#@tab`` anywhere in a cell: the first one names the cell's tabs, and every
    # such line is dropped from the code it shows (d2l-en's utils.md repeats it mid-cell).
    (cell,) = code(read("```{.python .input}\nx = 1\n#@tab jax\n```\n"))
    assert cell.tabs == ("jax",) and cell.source == "x = 1"
    (cell,) = code(read("```{.python .input}\n#@tab jax\nx = 1\n#@tab pytorch, jax\ny = 2\n```\n"))
    assert cell.tabs == ("jax",) and cell.source == "x = 1\ny = 2" and cell.source_lines == (3, 5)


def test_commented_tab_magic_names_the_tabs() -> None:
    # ``# %%tab jax`` (d2l-en's resnet.md): d2lbook's pattern finds the magic in the comment.
    (cell,) = code(read("```{.python .input}\n# %%tab jax\nx = 1\n```\n"))
    assert cell.tabs == ("jax",) and cell.source == "x = 1"


def test_display_math_followed_by_text_is_a_paragraph() -> None:
    sec = read("Data from\n\n$$y = x,$$ with $x$ small.\n\nNext.\n")
    kinds = [b.kind for c in sec.cells for b in c.blocks]
    assert Kind.MATH not in kinds
    sec = read("$$a$$ and $$b$$\n\nNext.\n")
    assert Kind.MATH not in [b.kind for c in sec.cells for b in c.blocks]
    sec = read("$$y = x.$$\n\nNext.\n")
    assert [b.kind for c in sec.cells for b in c.blocks][0] == Kind.MATH


def test_default_tab_is_configurable() -> None:
    (cell,) = code(read("```{.python .input}\nx = 1\n```\n", default="jax"))
    assert cell.tabs == ("jax",)


@pytest.mark.parametrize("info", ["python", "{.python}", "", "bash", "{.json .output}", "{.md}"])
def test_other_fences_are_literal_prose(info: str) -> None:
    sec = read(f"Text.\n\n```{info}\nx = 1\n```\n")
    assert code(sec) == [] and len(prose(sec)) == 1


# notedown (d2lbook's reader, match="strict") makes a cell of a fence whose classes name input
# or output, the input unless the output is JSON: {.python .output} is code (mlc-en's are).
@pytest.mark.parametrize("info", ["{.python .input}", "{.python .input  n=12}", "{ .python .input }",
                                  "{.python .output}"])
def test_executable_fence_info(info: str) -> None:
    assert len(code(read(f"```{info}\nx = 1\n```\n"))) == 1


def test_tilde_fence_is_executable_too() -> None:
    (cell,) = code(read("~~~{.python .input}\nx = 1\n~~~\n"))
    assert cell.source == "x = 1"


def test_longer_fence_may_quote_the_dialect() -> None:
    text = "Write cells like this:\n\n````md\n```{.python .input}\n%%tab jax\nx = 1\n```\n:begin_tab:`jax`\n````\n"
    sec = read(text)
    assert code(sec) == []
    assert [c.source for c in sec.cells] == [
        "Write cells like this:\n\n````md\n```{.python .input}\n%%tab jax\nx = 1\n```\n:begin_tab:`jax`\n````"
    ]


@pytest.mark.parametrize(
    "text",
    [
        "> ```{.python .input}\n> x = 1\n> ```\n",
        "- item\n\n  ```{.python .input}\n  x = 1\n  ```\n",
        "1. ```{.python .input}\n   x = 1\n   ```\n",
    ],
)
def test_fences_in_containers(text: str) -> None:
    (cell,) = code(read(text))
    assert cell.source == "x = 1"
    assert "x = 1" in text.split("\n")[cell.source_lines[0] - 1]


@pytest.mark.parametrize(
    "text",
    [
        "<div>\n```{.python .input}\nx = 1\n```\n</div>\n",  # HTML block: Markdown shows it verbatim
        "Para.\n\n    ```{.python .input}\n    x = 1\n",  # indented code block
    ],
)
def test_fence_lookalikes_are_prose(text: str) -> None:
    sec = read(text)
    assert code(sec) == [] and sec.cells


def test_cell_lines_and_source_lines_skip_markers() -> None:
    text = "# T\n\n```{.python .input}\n%%tab jax\n\n#@hide\na = 1\n#@raises\nb = 2\n\n```\n"
    (cell,) = code(read(text))
    assert cell.line == 3
    assert cell.source == "a = 1\nb = 2"
    assert cell.source_lines == (7, 9)


def test_empty_code_cell() -> None:
    (cell,) = code(read("```{.python .input}\n```\n"))
    assert cell.source == "" and cell.source_lines == ()


def test_setup_cell_only_dropped_when_nothing_else() -> None:
    sec = read("```{.python .input}\n%load_ext d2lbook.tab\ntab.interact_select('jax')\nx = 1\n```\n")
    assert len(code(sec)) == 1


def test_setup_cell_with_comment_lines_is_dropped() -> None:
    # d2l-en writes the extra packages a section needs as a comment in its setup cell
    sec = read("```{.python .input}\n%load_ext d2lbook.tab\ntab.interact_select([\"pytorch\"])\n"
               "#required_libs(\"somepkg==1.0\", \"other\")\n\n# another note\n```\n\n"
               "# Title\n\n```{.python .input}\nx = 1\n```\n")
    assert [c.source for c in code(sec)] == ["x = 1"]


def test_a_cell_of_comments_alone_is_not_a_setup_cell() -> None:
    sec = read("```{.python .input}\n#required_libs(\"somepkg\")\n# just a note\n```\n")
    assert len(code(sec)) == 1


def test_prose_between_cells_lines() -> None:
    text = "```{.python .input}\nx = 1\n```\n\n\nAfter.\n\nMore.\n```{.python .input}\ny = 2\n```\n"
    sec = read(text)
    after = cell_with(sec, "After.")
    assert after.line == 6 and after.source == "After.\n\nMore."


@pytest.mark.parametrize(
    ("marker", "tabs"),
    [
        ("jax", ("jax",)),
        ("jax, tensorflow", ("jax", "tensorflow")),
        ("mxnet,pytorch", ("pytorch", "mxnet")),
        ("all", TABS),
    ],
)
def test_prose_tab_names(marker: str, tabs: tuple[str, ...]) -> None:
    sec = read(f"Shared.\n\n:begin_tab:`{marker}`\nTabbed.\n:end_tab:\n\nShared again.\n")
    assert [(c.source, c.tabs) for c in sec.cells] == [("Shared.", ()), ("Tabbed.", tabs), ("Shared again.", ())]
    assert [c.line for c in sec.cells] == [1, 4, 7]


def test_prose_tab_markers_inside_literal_fence_are_text() -> None:
    text = "```md\n:begin_tab:`jax`\n```\n\nShared.\n"
    sec = read(text)
    assert [c.tabs for c in sec.cells] == [()]


def test_empty_prose_tab_gives_no_cell() -> None:
    sec = read(":begin_tab:`jax`\n\n:end_tab:\n")
    assert sec.cells == ()


def test_prose_tab_around_toc_line_numbers() -> None:
    text = "\n\n:begin_tab:`jax`\n\n\nJAX.\n:end_tab:\n"
    (cell,) = read(text).cells
    assert (cell.line, cell.source, cell.tabs) == (6, "JAX.", ("jax",))


def test_toc_blocks() -> None:
    text = fixture("index.md")
    sec = read(text, "index.md")
    assert sec.title == "Dive into GPUs"  # a setext heading counts
    first, second = sec.toc
    assert first.entries == ("chapter_gpus/index", "chapter_gpus/devices")
    assert (first.maxdepth, first.numbered, first.line) == (2, True, line_of(text, "```toc"))
    assert (second.entries, second.maxdepth, second.numbered) == (("references",), 1, False)
    assert second.line == line_of(text, "```toc", 2)
    tocs = [c for c in sec.cells if c.source.startswith("```toc")]
    assert len(tocs) == 2 and all(c.kind == "markdown" and c.tabs == () for c in tocs)


def test_title_ignores_code_comments_and_later_h1() -> None:
    assert read("```{.python .input}\n# not a title\n```\n").title == ""
    # The first heading at any level, as Sphinx titles a page d2lbook wrote as reST (pandoc keeps
    # the levels in their order: ## Sub is the title, # Real a section under it).
    assert read("Intro.\n\n## Sub\n\n# Real\n\n# Second\n").title == "Sub"
    assert read("Setext\n======\n\nText.\n").title == "Setext"
    assert read("# A (~~slides~~)title [**x**]\n").title == "A title x"


def test_labels_and_refs_lines() -> None:
    text = "# T\n:label:`sec_t`\n\nSee :numref:`sec_t` and\n:ref:`a`, :eqref:`e`.\n\n$$x$$\n:eqlabel:`e`\n"
    sec = read(text)
    assert sec.labels == {"sec_t": 2, "e": 8}
    assert sec.refs == (("numref", "sec_t", 4), ("ref", "a", 5), ("eqref", "e", 5))


def test_labels_in_prose_tabs_are_labels() -> None:
    sec = read("Shared.\n\n:begin_tab:`jax`\n\n:label:`in_tab`\n:end_tab:\n")
    assert sec.labels == {"in_tab": 5}


def test_labels_in_code_are_not_labels() -> None:
    sec = read("```{.python .input}\n# :label:`x`\n```\n\n:label:`x`\n")
    assert sec.labels == {"x": 5}


@pytest.mark.parametrize("newline", ["\r\n", "\r"])
def test_other_newlines(newline: str) -> None:
    text = "# T\n\nProse.\n```{.python .input}\n%%tab jax\nx = 1\n```\n:label:`a`\n".replace("\n", newline)
    sec = read(text)
    (cell,) = code(sec)
    assert (cell.line, cell.source, cell.source_lines, cell.tabs) == (4, "x = 1", (6,), ("jax",))
    assert sec.labels == {"a": 8}


def test_empty_text() -> None:
    sec = read("")
    assert (sec.title, sec.cells, sec.toc, sec.labels, sec.refs) == ("", (), (), {}, ())


# --- slide marks --------------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a (**kept**) b", "a kept b"),
        ("a [**kept**] b", "a kept b"),
        ("a (~~gone~~) b", "a  b"),
        ("a [~~gone~~] b", "a  b"),
        ("(**multi\nline**)", "multi\nline"),
        ("(~~multi\nline~~)x", "x"),
        ("[**link**](http://x)", "[**link**](http://x)"),  # a bold link is not a slide mark
        ("**bold** and ~~strike~~", "**bold** and ~~strike~~"),
        ("(**a**) (**b**)", "a b"),
    ],
)
def test_strip_slide_marks(text: str, expected: str) -> None:
    assert strip_slide_marks(text) == expected


# --- parse_tab_names ----------------------------------------------------------------------------

def test_parse_tab_names() -> None:
    assert parse_tab_names("mxnet, jax", TABS, ("f.md", 3)) == ("jax", "mxnet")
    assert parse_tab_names(" all ", TABS, ("f.md", 3)) == TABS
    with pytest.raises(BookError) as err:
        parse_tab_names("jax, nope, zilch", TABS, ("f.md", 3))
    assert (err.value.path, err.value.line) == ("f.md", 3)
    assert "'nope', 'zilch'" in str(err.value)
    with pytest.raises(BookError, match="names no framework"):
        parse_tab_names(" , ", TABS, ("f.md", 4))


# --- malformed input: every fixture under errors/ declares its error on line 1 ------------------

@pytest.mark.parametrize("path", ERROR_FIXTURES, ids=lambda p: p.stem)
def test_error_fixture(path: Path) -> None:
    kind, lines, fragment = EXPECT.match(path.read_text(encoding="utf-8").split("\n", 1)[0]).groups()  # type: ignore[union-attr]
    text = path.read_text(encoding="utf-8")
    rel = f"chapter_x/{path.name}"
    if kind == "split-error":
        read(text, rel)  # reading succeeds; test_split checks the split error
        return
    if kind in ("warning", "warnings"):
        # d2lbook's contract: read past, each problem reported at its line with its kind
        # (tabbook.problems); under --strict the build fails on them (test_d2lbook_contract.py).
        # "warnings 7,10: FRAGMENT [kind-a, kind-b]": FRAGMENT is in the first one's message.
        fragment, slugs = re.fullmatch(r"(.*) \[([a-z, -]+)\]", fragment).groups()  # type: ignore[union-attr]
        section = read(text, rel)
        kinds = [k.strip() for k in slugs.split(",")]
        numbers = [int(x) for x in lines.split(",")]
        assert [(w.line, w.kind.slug if w.kind else None) for w in section.warnings] == list(
            zip(numbers, kinds * len(numbers) if len(kinds) == 1 else kinds, strict=True)), [
            w.shown() for w in section.warnings]
        assert all(w.path == rel for w in section.warnings) and fragment in section.warnings[0].message
        return
    with pytest.raises(BookError) as err:
        read(text, rel)
    exc = err.value
    if kind == "errors":
        assert isinstance(exc, BookErrors)
        assert [e.line for e in exc.errors] == [int(x) for x in lines.split(",")]
        assert all(e.path == rel and fragment in e.message for e in exc.errors)
        assert str(exc).splitlines()[0].startswith(f"{rel}:{exc.errors[0].line}: ")
        return
    assert not isinstance(exc, BookErrors)
    assert exc.path == rel
    assert exc.line == int(lines), str(exc)
    assert fragment in exc.message
    assert str(exc) == f"{rel}:{lines}: {exc.message}"


def test_default_tab_not_among_tabs_has_no_line() -> None:
    with pytest.raises(BookError) as err:
        read("x", default="caffe")
    assert err.value.line is None and str(err.value).startswith("sec.md: ")


def test_error_fixtures_present() -> None:
    names = {p.stem for p in ERROR_FIXTURES}
    assert {
        "unclosed_fence", "end_tab_without_begin", "nested_begin_tab", "unclosed_begin_tab",
        "unknown_tab_magic", "unknown_begin_tab", "tab_not_first", "duplicate_label", "syntax_selected",
    } <= names
