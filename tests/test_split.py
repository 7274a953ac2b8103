"""Stage 2, split: Section × framework → that framework's cells, ``tab.selected`` branches resolved."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from tabbook.errors import BookError
from tabbook.source.model import Section
from tabbook.source.read import read_section
from tabbook.source.split import resolve_tabs, split_section

TABS = ("pytorch", "jax", "tensorflow", "mxnet")
FIXTURES = Path(__file__).parent / "fixtures" / "dialect"
ERROR_FIXTURES = sorted((FIXTURES / "errors").glob("*.md"))
EXPECT = re.compile(r"^<!-- (error|errors|split-error) ([\d,]+): (.*) -->$")
WHERE = ("sec.md", 10)


def read(text: str, path: str = "sec.md") -> Section:
    return read_section(text, path, TABS, "pytorch")


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


def parses(source: str) -> bool:
    masked = "\n".join(
        (m.group(1) + "pass") if (m := re.match(r"^([ \t]*)(%|!(?!=))", line)) else line
        for line in source.split("\n")
    )
    try:
        ast.parse(masked)
    except SyntaxError:
        return False
    return True


# --- split_section ------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def full() -> Section:
    return read(fixture("full.md"))


@pytest.mark.parametrize(
    ("framework", "expected"),
    [
        ("pytorch", ["import torch", "x = 1", "cpu", "z = 3", "w = 4", "x + y", "1 / 0", "helper"]),
        ("jax", ["import jax", "cpu", "y = 2", "z = 3", "w = 4", "x + y", "1 / 0", "helper"]),
        ("tensorflow", ["import tensorflow as tf", "cpu", "z = 3", "w = 4", "x + y", "1 / 0", "helper"]),
        ("mxnet", ["from mxnet import np, npx", "cpu", "y = 2", "z = 3", "w = 4", "x + y", "1 / 0", "helper"]),
    ],
)
def test_split_selects_the_framework_cells(full: Section, framework: str, expected: list[str]) -> None:
    cells = split_section(full, framework)
    assert len(cells) == len(expected)
    for fc, needle in zip(cells, expected, strict=True):
        assert needle in fc.source
        assert framework in fc.cell.tabs
        assert full.cells[fc.index] is fc.cell  # index is the position in the section
        assert fc.where == fc.cell.where
    assert [fc.index for fc in cells] == sorted(fc.index for fc in cells)


@pytest.mark.parametrize(
    ("framework", "line"),
    [
        ("pytorch", "    return torch.device('cpu')"),
        ("jax", "    return jax.devices('cpu')[0]"),
        ("tensorflow", "    return tf.device('/CPU:0')"),
        ("mxnet", "    return npx.cpu()"),
    ],
)
def test_split_resolves_branches_in_saved_function(full: Section, framework: str, line: str) -> None:
    (cpu,) = [fc for fc in split_section(full, framework) if "def cpu" in fc.source]
    assert cpu.source == f'def cpu():  #@save\n    """The CPU device."""\n{line}'
    assert "tab.selected" not in cpu.source


def test_split_tags(full: Section) -> None:
    tags = {fc.source: fc.tags for fc in split_section(full, "jax")}
    assert tags["y = 2"] == ("remove-output",)
    assert tags["z = 3"] == ("remove-cell",)
    assert tags["w = 4"] == ("remove-input",)
    assert tags["x + y"] == ("raises-exception",)
    assert tags["1 / 0"] == ("raises-exception",)
    assert tags["import jax"] == ()


@pytest.mark.parametrize(
    ("framework", "first", "second", "third", "fourth"),
    [
        ("pytorch", "# pytorch comment\na = 'pytorch'", "return 'other'", "b = 1", None),
        ("jax", "a = 'jax or tensorflow'", "return 'jax'", "b = 2", None),
        ("tensorflow", "a = 'jax or tensorflow'", "return 'other'", "b = 2", None),
        ("mxnet", "a = 'mxnet'", "return 'other'", "b = 2", "print(i)"),
    ],
)
def test_branches_fixture(framework: str, first: str, second: str, third: str, fourth: str | None) -> None:
    cells = split_section(read(fixture("branches.md")), framework)
    assert cells[0].source == f"import numpy\n\n# choose a framework\n{first}\nprint(a)"
    assert second in cells[1].source and "tab.selected" not in cells[1].source
    assert cells[2].source == f"%matplotlib inline\n{third}"
    assert cells[3].source == ("for i in range(2):\n    " + (fourth or "pass"))
    assert all(parses(c.source) for c in cells)


def test_cells_without_branches_are_unchanged() -> None:
    src = "x = 1\n\n\n# comment\nif x:\n    y = 2"
    assert resolve_tabs(src, "jax", WHERE) == src


# --- resolve_tabs: branch forms -----------------------------------------------------------------

IF_ELIF_ELSE = (
    "if tab.selected('pytorch'):\n    a = 1\nelif tab.selected('jax', 'mxnet'):\n    a = 2\nelse:\n    a = 3"
)


@pytest.mark.parametrize(
    ("source", "framework", "expected"),
    [
        (IF_ELIF_ELSE, "pytorch", "a = 1"),
        (IF_ELIF_ELSE, "jax", "a = 2"),
        (IF_ELIF_ELSE, "mxnet", "a = 2"),
        (IF_ELIF_ELSE, "tensorflow", "a = 3"),
        # list and tuple arguments
        ("if tab.selected(['jax', 'mxnet']):\n    a = 1", "mxnet", "a = 1"),
        ("if tab.selected(('jax', 'mxnet')):\n    a = 1", "jax", "a = 1"),
        ("if tab.selected(['jax', 'mxnet']):\n    a = 1", "pytorch", ""),
        # a branch that does not apply disappears; the rest stays
        ("x = 0\nif tab.selected('jax'):\n    x = 1\nprint(x)", "pytorch", "x = 0\nprint(x)"),
        # nested blocks are dedented to the if's level
        ("if tab.selected('jax'):\n    for i in r:\n        if i:\n            f(i)", "jax",
         "for i in r:\n    if i:\n        f(i)"),
        # inside a function, a removed branch leaves a valid block
        ("def f():\n    if tab.selected('jax'):\n        return 1", "pytorch", "def f():\n    pass"),
        ("def f():\n    if tab.selected('jax'):\n        return 1", "jax", "def f():\n    return 1"),
        # nested tab.selected
        ("if tab.selected('jax', 'mxnet'):\n    if tab.selected('jax'):\n        a = 1\n    else:\n        a = 2",
         "mxnet", "a = 2"),
        # an else holding an if block (not an elif)
        ("if tab.selected('jax'):\n    a = 1\nelse:\n    if tab.selected('mxnet'):\n        a = 2", "mxnet", "a = 2"),
        ("if tab.selected('jax'):\n    a = 1\nelse:\n    if tab.selected('mxnet'):\n        a = 2", "pytorch", ""),
        # elif with an ordinary condition: becomes an if
        ("if tab.selected('jax'):\n    a = 1\nelif cond:\n    a = 2\nelse:\n    a = 3", "pytorch",
         "if cond:\n    a = 2\nelse:\n    a = 3"),
        # an elif tab.selected(...) of an ordinary if: becomes its else, or disappears
        ("if x:\n    a = 1\nelif tab.selected('jax'):\n    a = 2", "jax", "if x:\n    a = 1\nelse:\n    a = 2"),
        ("if x:\n    a = 1\nelif tab.selected('jax'):\n    a = 2", "mxnet", "if x:\n    a = 1"),
        ("if x:\n    a = 1\nelif tab.selected('jax'):\n    a = 2\nelse:\n    a = 3", "mxnet",
         "if x:\n    a = 1\nelse:\n    a = 3"),
        ("if x:\n    a = 1\nelif tab.selected('jax'):\n    a = 2\nelif y:\n    a = 3\nelse:\n    a = 4", "mxnet",
         "if x:\n    a = 1\nelif y:\n    a = 3\nelse:\n    a = 4"),
        ("if x:\n    a = 1\nelif tab.selected('jax'): a = 2", "jax", "if x:\n    a = 1\nelse:\n    a = 2"),
        ("def f():\n    if x:\n        a = 1\n    elif tab.selected('jax'):\n        if y:\n            a = 2\n    return a",
         "jax", "def f():\n    if x:\n        a = 1\n    else:\n        if y:\n            a = 2\n    return a"),
        # sibling branches that all disappear leave one pass
        ("for i in r:\n    if tab.selected('jax'):\n        a = 1\n    if tab.selected('mxnet'):\n        b = 2", "pytorch",
         "for i in r:\n    pass"),
        ("for i in r:\n\tif tab.selected('jax'):\n\t\ta = 1", "pytorch", "for i in r:\n\tpass"),
        ("try:\n    if tab.selected('jax'):\n        a = 1\nexcept E:\n    if tab.selected('jax'):\n        b = 1",
         "mxnet", "try:\n    pass\nexcept E:\n    pass"),
        # one-line bodies
        ("if tab.selected('jax'): a = 1\nelse: a = 2", "jax", "a = 1"),
        ("if tab.selected('jax'): a = 1\nelse: a = 2", "pytorch", "a = 2"),
        ("# note\nif tab.selected('jax'): a = 1; b = 2", "jax", "# note\na = 1; b = 2"),
        ("def f():\n    if tab.selected('jax'): return 1\n    return 2", "jax", "def f():\n    return 1\n    return 2"),
        # comments of the branch are kept, comments of other branches are not
        ("if tab.selected('jax'):\n    # why\n    a = 1\n    # after\nelse:\n    # other\n    a = 2", "jax",
         "# why\na = 1\n# after"),
        ("if tab.selected('jax'):\n    # why\n    a = 1\n    # after\nelse:\n    # other\n    a = 2", "mxnet",
         "# other\na = 2"),
        ("if tab.selected('jax'):\n    a = 1\n    # trailing jax note\nb = 2", "pytorch", "b = 2"),
        ("if tab.selected('jax'):\n    a = 1\n    # trailing jax note\n# shared note\nb = 2", "jax",
         "a = 1\n# trailing jax note\n# shared note\nb = 2"),
        # magics and shell lines inside and around branches
        ("%matplotlib inline\nif tab.selected('jax'):\n    !nvidia-smi\n    a = 1", "jax",
         "%matplotlib inline\n!nvidia-smi\na = 1"),
        ("if tab.selected('jax'):\n    %timeit f()", "jax", "%timeit f()"),
        ("if tab.selected('jax'):\n    %timeit f()", "pytorch", ""),
        ("x = (1\n     != 2)\nif tab.selected('jax'):\n    y = 1", "jax", "x = (1\n     != 2)\ny = 1"),
        # tab-indented code
        ("if tab.selected('jax'):\n\ta = 1\n\tif a:\n\t\tb = 2", "jax", "a = 1\nif a:\n\tb = 2"),
        # a multi-line string inside the branch keeps its content
        ("if tab.selected('jax'):\n    s = '''\nraw\n  text'''", "jax", "s = '''\nraw\n  text'''"),
        # two independent ifs
        ("if tab.selected('jax'):\n    a = 1\nif tab.selected('pytorch'):\n    a = 2\nprint(a)", "pytorch",
         "a = 2\nprint(a)"),
    ],
)
def test_resolve_tabs(source: str, framework: str, expected: str) -> None:
    out = resolve_tabs(source, framework, WHERE)
    assert out == expected
    assert parses(out)


@pytest.mark.parametrize("framework", TABS)
def test_resolve_tabs_terminates_on_deep_nesting(framework: str) -> None:
    depth = 30
    lines = []
    for d in range(depth):
        lines.append("    " * d + f"if tab.selected('{TABS[d % 4]}', '{TABS[(d + 1) % 4]}'):")
    lines.append("    " * depth + "x = 1")
    out = resolve_tabs("\n".join(lines), framework, WHERE)
    assert "tab.selected" not in out and parses(out)


def test_selected_with_non_literal_argument_is_left_alone() -> None:
    src = "if tab.selected(name):\n    a = 1"
    assert resolve_tabs(src, "jax", WHERE) == src


# --- errors -------------------------------------------------------------------------------------

def test_syntax_error_line_without_line_map() -> None:
    with pytest.raises(BookError) as err:
        resolve_tabs("if tab.selected('jax'):\n    x = = 1", "jax", WHERE)
    assert (err.value.path, err.value.line) == ("sec.md", 12)
    assert "syntax error" in err.value.message


def test_syntax_error_line_with_line_map() -> None:
    with pytest.raises(BookError) as err:
        resolve_tabs("if tab.selected('jax'):\n    x = = 1", "jax", WHERE, (20, 23))
    assert err.value.line == 23


@pytest.mark.parametrize(
    "path", [p for p in ERROR_FIXTURES if p.read_text().startswith("<!-- split-error")], ids=lambda p: p.stem
)
@pytest.mark.parametrize("framework", TABS)
def test_split_error_fixture(path: Path, framework: str) -> None:
    text = path.read_text(encoding="utf-8")
    _, line, fragment = EXPECT.match(text.split("\n", 1)[0]).groups()  # type: ignore[union-attr]
    section = read(text, f"chapter_x/{path.name}")
    if not any(framework in c.tabs for c in section.code_cells):
        assert split_section(section, framework) == []
        return
    with pytest.raises(BookError) as err:
        split_section(section, framework)
    assert err.value.path == f"chapter_x/{path.name}"
    assert err.value.line == int(line), str(err.value)
    assert fragment in err.value.message.lower()
    assert str(err.value).startswith(f"chapter_x/{path.name}:{line}: ")


def test_split_on_real_chapter() -> None:
    chapter = Path(__file__).resolve().parent.parent / "chapter_gpus"
    files = sorted(chapter.glob("*.md"))
    if not files:
        pytest.skip("no chapter_gpus/*.md in this checkout")
    for path in files:
        section = read(path.read_text(encoding="utf-8"), f"chapter_gpus/{path.name}")
        for fw in TABS:
            for fc in split_section(section, fw):
                assert "tab.selected" not in fc.source, (fc.where, fw)
                if parses(fc.cell.source):
                    assert parses(fc.source), (fc.where, fw)


def test_a_decorated_def_in_a_branch_keeps_its_decorators() -> None:
    """``ast`` puts a decorated def's line on ``def``: the branch used to start there and drop
    ``@d2l.add_to_class(Trainer)`` (the method became a plain module function) or ``@jax.jit``."""
    source = ("if tab.selected('mxnet'):\n"
              "    @d2l.add_to_class(Trainer)\n"
              "    @staticmethod\n"
              "    def clip(x):\n"
              "        return x\n"
              "elif tab.selected('jax'):\n"
              "    @jax.jit\n"
              "    def clip(x):\n"
              "        return x\n")
    section = read(f"# S\n\n```{{.python .input}}\n%%tab mxnet, jax\n{source}```\n")
    [mx] = split_section(section, "mxnet")
    [jx] = split_section(section, "jax")
    assert mx.source == "@d2l.add_to_class(Trainer)\n@staticmethod\ndef clip(x):\n    return x"
    assert jx.source == "@jax.jit\ndef clip(x):\n    return x"
