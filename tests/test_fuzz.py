"""Property tests: any text → ``read_section`` gives a Section or a BookError at a line of that text.

Inputs come from a grammar of the dialect's constructs (well- and ill-formed)
and from mutations (deletions, duplications, swaps, garbage) of the real
chapter files, or of the dialect fixtures when the chapter is absent. Every
parsed section is then split for every framework, with the same contract.
"""

from __future__ import annotations

import ast
import re
import shutil
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from runtime_tab import RuntimeTab

from tabbook.errors import BookError, BookErrors
from tabbook.render.merge import merge_section
from tabbook.render.myst import cell_to_myst, to_myst
from tabbook.source.model import Section
from tabbook.source.read import LABEL_LINE, read_section
from tabbook.source.split import resolve_tabs, split_section

TABS = ("pytorch", "jax", "tensorflow", "mxnet")
ROOT = Path(__file__).resolve().parent.parent
SEEDS = sorted((ROOT / "chapter_gpus").glob("*.md")) or sorted((ROOT / "tests" / "fixtures" / "dialect").rglob("*.md"))
SEED_TEXTS = [p.read_text(encoding="utf-8") for p in SEEDS]
SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# --- the grammar --------------------------------------------------------------------------------

names = st.sampled_from([*TABS, "all", "torch", "", "jax,", "jax, mxnet", "pytorch tensorflow", "JAX"])
ident = st.sampled_from(["sec_a", "fig_b", "eq_c", "sec_a", "x y", ""])
words = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=30)

prose_line = st.one_of(
    words,
    st.sampled_from([
        "", "# Title (**slides**)", "## Sub", "Text with :numref:`sec_a` and :cite:`A.B`.",
        "[~~slide only~~] (**kept**)", "$$y = Ax$$", "$$", "![cap](../img/a.svg)", ":width:`300px`",
        "- item", "> quote", "    indented code", "<div>", "</div>", "   ", "\t", "\r", "\r\n",
        "```", "~~~", "````", ":begin_tab:", ":end_tab:`x`",
    ]),
    ident.map(lambda n: f":label:`{n}`"),
    ident.map(lambda n: f":eqlabel:`{n}`"),
    ident.map(lambda n: f":ref:`{n}`"),
)

code_line = st.one_of(
    st.sampled_from([
        "x = 1", "", "    y = 2", "def f():", "    return 1", "print(x)", "#@save", "x = 1  #@save",
        "#@hide", "#@hide_code", "#@hide_output", "#@raises", "#@raises ValueError", "#@raises 1x",
        "%matplotlib inline", "!nvidia-smi", "%%time", "x = (", ")", "else:", "elif x:", "    pass",
        "if tab.selected('jax'):", "if tab.selected('pytorch', 'mxnet'):", "elif tab.selected(['tensorflow']):",
        "    if tab.selected('mxnet'):", "        z = 3", "if tab.selected('jax'): a = 1", "else: a = 2",
        "s = '''", "'''", "\tx = 1", "# a comment", "%load_ext d2lbook.tab", "tab.interact_select('jax')",
        "```", "~~~", "    ```", ":begin_tab:`jax`", "tab.selected('jax')",
    ]),
    words,
)

fence_info = st.sampled_from(["{.python .input}", "{.python .input  n=1}", "python", "", "toc", "{.python}"])
fence_mark = st.sampled_from(["```", "````", "~~~", "``"])


@st.composite
def code_block(draw: st.DrawFn) -> list[str]:
    mark = draw(fence_mark)
    first = draw(st.one_of(
        st.just([]),
        names.map(lambda n: [f"%%tab {n}"]),
        names.map(lambda n: [f"#@tab {n}"]),
    ))
    body = draw(st.lists(code_line, max_size=8))
    close = draw(st.sampled_from([[mark], [mark], [mark], [], ["```"], [mark + "`"]]))
    return [mark + draw(fence_info), *first, *body, *close]


@st.composite
def toc_block(draw: st.DrawFn) -> list[str]:
    opts = draw(st.lists(st.sampled_from([":maxdepth: 2", ":maxdepth: x", ":numbered:", ":hidden:", ""]), max_size=3))
    entries = draw(st.lists(st.sampled_from(["a", "chapter/b", "", "  c  "]), max_size=3))
    close = draw(st.sampled_from([["```"], ["```"], []]))
    return ["```toc", *opts, *entries, *close]


@st.composite
def prose_tab(draw: st.DrawFn) -> list[str]:
    inner = draw(st.lists(st.one_of(prose_line.map(lambda x: [x]), code_block()), max_size=3))
    end = draw(st.sampled_from([[":end_tab:"], [":end_tab:"], [":end_tab:"], [], [":end_tab:", ":end_tab:"]]))
    return [f":begin_tab:`{draw(names)}`", *[x for block in inner for x in block], *end]


block = st.one_of(
    prose_line.map(lambda x: [x]),
    code_block(),
    toc_block(),
    prose_tab(),
    st.sampled_from([[":begin_tab:`jax`"], [":end_tab:"], ["![c](x.svg)", ":label:`fig_b`", ":width:`1px`"]]),
)


@st.composite
def dialect_text(draw: st.DrawFn) -> str:
    blocks = draw(st.lists(block, max_size=12))
    sep = draw(st.sampled_from(["\n", "\n", "\r\n", "\n\n"]))
    return sep.join(line for b in blocks for line in b) + draw(st.sampled_from(["", "\n", "\n\n"]))


@st.composite
def mutated_chapter(draw: st.DrawFn) -> str:
    lines = draw(st.sampled_from(SEED_TEXTS)).split("\n")
    for _ in range(draw(st.integers(1, 6))):
        if not lines:
            lines = [""]
        i = draw(st.integers(0, len(lines) - 1))
        op = draw(st.sampled_from(["delete", "delete_range", "duplicate", "swap", "insert", "garbage", "truncate"]))
        if op == "delete":
            del lines[i]
        elif op == "delete_range":
            del lines[i:i + draw(st.integers(1, 20))]
        elif op == "duplicate":
            j = min(len(lines), i + draw(st.integers(1, 10)))
            lines[j:j] = lines[i:j]
        elif op == "swap":
            j = draw(st.integers(0, len(lines) - 1))
            lines[i], lines[j] = lines[j], lines[i]
        elif op == "insert":
            lines[i:i] = draw(st.one_of(block, code_line.map(lambda x: [x])))
        elif op == "garbage":
            lines[i] = draw(words)
        else:
            lines = lines[:i]
    return "\n".join(lines)


# --- the contract -------------------------------------------------------------------------------

def line_count(text: str) -> int:
    return len(text.replace("\r\n", "\n").replace("\r", "\n").split("\n"))


def check_error(err: BookError, path: str, n: int) -> None:
    if isinstance(err, BookErrors):
        assert err.errors, "BookErrors without errors"
        for e in err.errors:
            check_error(e, path, n)
        return
    assert err.path == path
    # read_section documents line None only for a default tab missing from the tabs (not fuzzed here).
    assert isinstance(err.line, int), f"no line: {err}"
    assert 1 <= err.line <= n, f"line {err.line} outside 1..{n}: {err}"
    assert str(err).startswith(f"{path}:{err.line}: ")


def parses(source: str) -> bool:
    masked = "\n".join(
        (m.group(1) + "pass") if (m := re.match(r"^([ \t]*)(%|!(?!=))", line)) else line
        for line in source.split("\n")
    )
    try:
        ast.parse(masked)
    except (SyntaxError, ValueError):
        return False
    return True


def check_section(section: Section, text: str, path: str) -> None:
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    n = len(lines)
    for cell in section.cells:
        assert 1 <= cell.line <= n
        assert cell.path == path
        if cell.kind == "markdown":
            # a prose cell starts exactly at its line
            assert lines[cell.line - 1] == cell.source.split("\n")[0], (cell.line, cell.source[:80])
            assert cell.source.strip()
        else:
            assert cell.tabs and set(cell.tabs) <= set(TABS)
            if cell.source:
                rows = cell.source.split("\n")
                assert len(cell.source_lines) == len(rows)
                assert list(cell.source_lines) == sorted(set(cell.source_lines))
                for row, line in zip(rows, cell.source_lines, strict=True):
                    assert cell.line < line <= n
                    # (markdown-it reads NUL as U+FFFD)
                    assert row.strip() in lines[line - 1].replace("\0", "\ufffd"), (row, line, lines[line - 1])
    for name, line in section.labels.items():
        m = LABEL_LINE.match(lines[line - 1])
        assert m and m.group(2).strip() == name, (name, line, lines[line - 1])
    for _, _, line in section.refs:
        assert 1 <= line <= n
    for toc in section.toc:
        assert lines[toc.line - 1].strip() == "```toc"
    # render's input never crashes either, and MyST from the blocks reading recorded is MyST
    # from parsing the prose again
    for cell in section.cells:
        if cell.kind == "markdown":
            assert isinstance(to_myst(cell.source), str)
            rows = cell.source.count("\n") + 1
            assert all(0 <= b.start < b.end <= rows for b in cell.blocks), cell.blocks
            assert cell_to_myst(cell) == to_myst(cell.source), cell.source
    merge_section(section, {}, TABS, {})
    for fw in TABS:
        try:
            cells = split_section(section, fw)
        except BookError as err:
            check_error(err, path, n)
            continue
        assert [fc.cell for fc in cells] == [c for c in section.code_cells if fw in c.tabs]
        for fc in cells:
            if "tab.selected" in fc.cell.source and parses(fc.cell.source):
                # resolving branches keeps valid code valid and leaves no branch behind
                assert parses(fc.source), (fw, fc.cell.source, fc.source)


def check(text: str, path: str = "chapter_x/fuzz.md") -> None:
    try:
        section = read_section(text, path, TABS, "pytorch")
    except BookError as err:
        check_error(err, path, line_count(text))
        return
    check_section(section, text, path)


@SETTINGS
@given(dialect_text())
def test_grammar_text(text: str) -> None:
    check(text)


@SETTINGS
@given(mutated_chapter())
def test_mutated_chapter(text: str) -> None:
    check(text)


@SETTINGS
@given(st.text(st.sampled_from(list("`~{}.%@#:!()[]*$\n\r\t -_abjpxtyn")), max_size=200))
def test_symbol_soup(text: str) -> None:
    check(text)


def test_seeds_parse_and_split() -> None:
    """The unmutated seeds (the real chapter when present) satisfy the invariants themselves."""
    assert SEED_TEXTS
    for path, text in zip(SEEDS, SEED_TEXTS, strict=True):
        check(text, f"chapter_x/{path.name}")


# --- split semantics: resolving branches never changes what a framework runs --------------------



_counter = st.integers(0, 999)
_selection = st.lists(st.sampled_from(TABS), min_size=1, max_size=3, unique=True).map(
    lambda ns: ", ".join(repr(n) for n in ns) if len(ns) > 1 or ns[0] != "jax" else "['jax']"
)

#: A static test: ``tab.selected`` calls joined by ``and``/``or``/``not`` (resolved per framework too).
_test = st.recursive(
    _selection.map(lambda s: f"tab.selected({s})"),
    lambda inner: st.one_of(
        st.tuples(inner, st.sampled_from([" and ", " or "]), inner).map(lambda t: f"({''.join(t)})"),
        inner.map(lambda x: f"not {x}"),
    ),
    max_leaves=3,
)


@st.composite
def _stmts(draw: st.DrawFn, depth: int, pad: str, in_sel: bool = False) -> list[str]:
    """Statements whose meaning is Python's. In a ``tab.selected`` branch (``in_sel``) no
    ``tab.selected`` test follows a compound statement: d2lbook reads such a test as
    continuing that statement's block (see ``tests/test_d2lbook_source.py``)."""
    out: list[str] = []
    prev = ""
    for _ in range(draw(st.integers(1, 3))):
        kinds = (["op", "op", "comment", "sel", "sel", "plain", "loop", "oneline"]
                 if depth < 3 else ["op", "comment"])
        if in_sel and prev in ("loop", "plain"):
            kinds = [k for k in kinds if k != "sel"]
        kind = prev = draw(st.sampled_from(kinds))
        n = draw(_counter)
        if kind == "op":
            out.append(f"{pad}out.append({n})")
        elif kind == "comment":
            out += [f"{pad}# note {n}", f"{pad}out.append({n})"]
        elif kind == "oneline":
            out.append(f"{pad}if tab.selected({draw(_selection)}): out.append({n}); out.append({n + 1})")
            if draw(st.booleans()):
                out.append(f"{pad}else: out.append({-n})")
        elif kind == "loop":
            out += [f"{pad}for _ in range(2):", *draw(_stmts(depth + 1, pad + "    ", in_sel))]
        else:
            sel = kind == "sel"
            head = f"if {draw(_test)}:" if sel else f"if {draw(st.booleans())}:"
            out += [pad + head, *draw(_stmts(depth + 1, pad + "    ", in_sel or sel))]
            for _ in range(draw(st.integers(0, 2))):
                cond = draw(st.one_of(_test, st.booleans().map(str)))
                sel = sel or "tab." in cond
                out += [f"{pad}elif {cond}:", *draw(_stmts(depth + 1, pad + "    ", in_sel or sel))]
            if draw(st.booleans()):
                out += [f"{pad}else:", *draw(_stmts(depth + 1, pad + "    ", in_sel or sel))]
    return out


def _run(source: str, framework: str | None) -> list[int]:
    out: list[int] = []
    exec(compile(source, "<cell>", "exec"), {"out": out, "tab": RuntimeTab(framework or "")})
    return out


@SETTINGS
@given(_stmts(0, ""), st.sampled_from(["", "    "]))
def test_split_keeps_semantics(lines: list[str], wrap: str) -> None:
    source = "\n".join(lines)
    if wrap:  # the same inside a function body
        source = "def f():\n" + "\n".join(wrap + x for x in lines) + "\nf()"
    for fw in TABS:
        resolved = resolve_tabs(source, fw, ("s.md", 1))
        assert "tab.selected" not in resolved
        assert _run(resolved, None) == _run(source, fw), (fw, source, resolved)


# --- the whole check + library path, from bytes (issue 13) ----------------------------------------

BOOK_CONFIG = """\
[project]
name = fuzz
title = Fuzz

[build]
tabs = pytorch, jax, tensorflow, mxnet

[library]
save = cell
"""
BOOK_INDEX = "# Fuzz book\n\n```toc\n:maxdepth: 2\n\nchapter_x/fuzz\n```\n"


@st.composite
def page_bytes(draw: st.DrawFn) -> bytes:
    """A page as bytes: grammar text or a mutated chapter, encoded, then maybe damaged."""
    text = draw(st.one_of(dialect_text(), mutated_chapter()))
    data = bytearray(text.encode("utf-8"))
    for _ in range(draw(st.integers(0, 3))):
        op = draw(st.sampled_from(["byte", "bom", "crlf", "truncate"]))
        at = draw(st.integers(0, len(data)))
        if op == "byte":
            data[at:at] = bytes([draw(st.integers(0x80, 0xFF))])
        elif op == "bom":
            data[:0] = b"\xef\xbb\xbf"
        elif op == "crlf":
            data = bytearray(bytes(data).replace(b"\n", b"\r\n"))
        else:
            del data[at:]
    return bytes(data)


def _fuzz_book(root: Path) -> Path:
    (root / "chapter_x").mkdir(parents=True, exist_ok=True)
    (root / "config.ini").write_text(BOOK_CONFIG)
    (root / "index.md").write_text(BOOK_INDEX)
    return root / "chapter_x" / "fuzz.md"


def check_book_error(err: BookError, lines: int) -> None:
    """A problem of the fuzzed book: at a line of the page (or the page, or the index), or config."""
    for e in err.errors if isinstance(err, BookErrors) else [err]:
        assert e.path in ("chapter_x/fuzz.md", "index.md", "config.ini"), str(e)
        if e.path == "chapter_x/fuzz.md" and e.line is not None:
            assert 1 <= e.line <= lines, str(e)


@SETTINGS
@given(page_bytes())
def test_check_and_library_take_any_bytes(tmp_path_factory, data: bytes) -> None:  # noqa: ANN001 - pytest fixture
    """``check`` and the library stage: a random page passes or fails with located errors only."""
    from tabbook.book import read_book
    from tabbook.check import check_book
    from tabbook.config import load_config
    from tabbook.library.cache import book_library

    root = tmp_path_factory.getbasetemp() / "fuzz-book"
    page = _fuzz_book(root)
    page.write_bytes(data)
    shutil.rmtree(root / "build", ignore_errors=True)  # no library cache from the last example
    lines = data.count(b"\n") + data.count(b"\r") + 1
    config = load_config(root)
    for problem in check_book(config):
        check_book_error(problem, lines)
    book = read_book(config, extra_files=False)
    try:
        library = book_library(book)
    except BookError as err:
        check_book_error(err, lines)
        return
    for rel, text in library.items():
        assert rel.startswith("d2l/") and rel.endswith(".py")
        compile(text, rel, "exec")  # what is generated is Python
