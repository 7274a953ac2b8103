"""d2lbook constructs read and rendered as d2lbook means them (issue 12: items 2, 6, 9, 10).

Every fixture is written here, small: ``tab.selected`` tests combined with ``and``/``or``/``not``
(item 2), statements kept in their blocks however deep the tests nest, d2lbook's reading of a
test nested beside a ``def`` included (item 9), display math in list items, ``:eqlabel:`` on the
math's own line, ```` ```eval_rst ```` and ``:bibliography:`` (item 6), tables labelled in d2l's
order (item 10); figures whose alt text spans lines or whose label follows a blank line, table
captions that cite, references in double backticks, ``$$`` inside a paragraph and prose tabs
that render nothing (what a scan of the whole d2l build found, ``bench/scan_site.py``). The
rendering items are also checked through a real Sphinx build of a small prose-only book.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from bs4 import BeautifulSoup
from markdown_it.renderer import RendererHTML
from myst_parser.config.main import MdParserConfig
from myst_parser.parsers.mdit import create_md_parser
from runtime_tab import RuntimeTab

from tabbook.check import check_book
from tabbook.config import load_config
from tabbook.errors import BookError
from tabbook.render.myst import to_myst
from tabbook.source.read import read_section
from tabbook.source.split import resolve_tabs, split_section

ROOT = Path(__file__).resolve().parent.parent
TABS = ("pytorch", "jax", "tensorflow", "mxnet")
WHERE = ("sec.md", 10)


def resolve(source: str, framework: str) -> str:
    return resolve_tabs(textwrap.dedent(source).strip("\n"), framework, WHERE)




def run(source: str, tab: RuntimeTab | None = None) -> list:
    out: list = []
    env = {"out": out, "flag": True}
    if tab is not None:
        env["tab"] = tab
    exec(compile(source, "<cell>", "exec"), env)
    return out


# --- item 2: boolean combinations of tab.selected, resolved statically --------------------------

COMBINED = [
    "if tab.selected('pytorch') or tab.selected('mxnet'):\n    out.append(1)",
    "if tab.selected('pytorch', 'mxnet') and not tab.selected('mxnet'):\n    out.append(1)\nelse:\n    out.append(2)",
    "if not tab.selected('jax'):\n    out.append(1)",
    "if (tab.selected('jax') or tab.selected('tensorflow')) and not (tab.selected('tensorflow')):\n"
    "    out.append(1)\nelif tab.selected('mxnet') or tab.selected(['tensorflow']):\n    out.append(2)\n"
    "else:\n    out.append(3)",
    "x = 0\nif flag:\n    out.append(0)\nelif tab.selected('pytorch') or tab.selected('jax'):\n    out.append(1)\n"
    "elif not tab.selected('mxnet'):\n    out.append(2)",
    "for i in range(2):\n    if tab.selected('jax') or (tab.selected('mxnet') and True):\n        out.append(i)",
    "if tab.selected('pytorch', 'jax', 'tensorflow'):\n    out.append(1)\nelif tab.selected(('mxnet',)):\n"
    "    out.append(2)",
]


@pytest.mark.parametrize("source", COMBINED)
@pytest.mark.parametrize("framework", TABS)
def test_combined_tests_resolve_to_what_the_framework_runs(source: str, framework: str) -> None:
    resolved = resolve_tabs(source, framework, WHERE)
    assert "tab" not in resolved
    assert run(resolved) == run(source, RuntimeTab(framework))


@pytest.mark.parametrize(
    ("framework", "expected"),
    [("pytorch", "a = 1\nb = 2"), ("mxnet", "a = 1\nb = 2"), ("jax", "b = 3"), ("tensorflow", "b = 3")],
)
def test_or_keeps_the_branch_for_each_name(framework: str, expected: str) -> None:
    source = """
        if tab.selected('pytorch') or tab.selected('mxnet'):
            a = 1
            b = 2
        else:
            b = 3
    """
    assert resolve(source, framework) == expected


def test_elif_with_a_combined_test_in_an_ordinary_if() -> None:
    source = """
        if flag:
            a = 0
        elif tab.selected('jax') or tab.selected('mxnet'):
            a = 1
    """
    assert resolve(source, "jax") == "if flag:\n    a = 0\nelse:\n    a = 1"
    assert resolve(source, "pytorch") == "if flag:\n    a = 0"


def test_a_call_in_a_test_that_is_not_only_calls_becomes_a_constant() -> None:
    source = "if tab.selected('jax') and flag:\n    out.append(1)\nuse_jit = tab.selected('jax', 'mxnet')"
    assert resolve_tabs(source, "jax", WHERE) == "if True and flag:\n    out.append(1)\nuse_jit = True"
    assert resolve_tabs(source, "pytorch", WHERE) == "if False and flag:\n    out.append(1)\nuse_jit = False"


def test_split_section_resolves_combined_tests() -> None:
    text = (
        "# T\n\n```{.python .input}\n%%tab pytorch, jax, tensorflow, mxnet\n"
        "if tab.selected('pytorch') or tab.selected('jax'):\n    x = 1\nelse:\n    x = 2\n```\n"
    )
    section = read_section(text, "sec.md", TABS, "pytorch")
    for fw, value in (("pytorch", 1), ("jax", 1), ("tensorflow", 2), ("mxnet", 2)):
        (cell,) = split_section(section, fw)
        assert cell.source == f"x = {value}"


@pytest.mark.parametrize(
    ("code", "line", "name"),
    [
        ("if tab.selected('pytorch') or tab.selected('pytroch'):\n    x = 1", 5, "pytroch"),
        ("x = 0\nif tab.selected('jax'):\n    x = 1\nelif tab.selected('mxnet', 'tensorfow'):\n    x = 2", 8, "tensorfow"),
        ("def f():\n    if not tab.selected(['jx']):\n        return 1", 6, "jx"),
        ("%matplotlib inline\nif (tab.selected('jax') and\n        tab.selected('torch')):\n    pass", 7, "torch"),
    ],
)
def test_a_misspelt_framework_in_a_test_is_a_located_error(code: str, line: int, name: str) -> None:
    text = f"# T\n\n```{{.python .input}}\n%%tab all\n{code}\n```\n"
    with pytest.raises(BookError) as exc:
        read_section(text, "sec.md", TABS, "pytorch")
    assert exc.value.location_message().startswith(f"sec.md:{line}: ")
    assert repr(name) in str(exc.value) and "pytorch, jax, tensorflow, mxnet" in str(exc.value)


CONFIG = """\
[project]
name = fx
title = Fixture Book
author = Tests
version = 0.0.1

[build]
index = index.md
tabs = alpha, beta
default_tab = alpha

[framework:alpha]
label = Alpha
module = alpha
import = json
python = current

[framework:beta]
label = Beta
module = beta
import = json
python = current
"""


def write_book(root: Path, pages: dict[str, str]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "config.ini").write_text(CONFIG)
    (root / "conf.py").write_text(
        "from pathlib import Path\n\nfrom tabbook.render.sphinx_conf import sphinx_settings\n\n"
        "globals().update(sphinx_settings(Path(__file__).resolve().parent))\n"
    )
    for name, text in pages.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(textwrap.dedent(text).lstrip("\n"))
    return root


SAVED = '''
    # Saved

    ```{.python .input}
    %%tab alpha, beta
    class Model:  #@save
        """A model."""
        if tab.selected('alpha') or tab.selected('beta'):
            def __init__(self, size=2):
                self.size = size
            if tab.selected('beta'):
                self.frozen = True
        if not tab.selected('alpha'):
            def freeze(self):
                self.frozen = True
    ```
'''


def test_check_and_library_accept_combined_and_nested_tests(tmp_path: Path) -> None:
    book = write_book(tmp_path / "book", {"index.md": "# Book\n\n```toc\nsaved\n```\n", "saved.md": SAVED})
    config = load_config(book)
    assert check_book(config) == []
    from tabbook.book import read_book
    from tabbook.library.cache import book_library

    library = book_library(read_book(config))
    for fw, frozen in (("alpha", False), ("beta", True)):
        text = library[f"d2l/{fw}.py"]
        assert "tab.selected" not in text
        tree = ast.parse(text)
        model = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Model")
        init = next(n for n in model.body if isinstance(n, ast.FunctionDef) and n.name == "__init__")
        assert ("self.frozen = True" in ast.unparse(init)) is frozen  # inside __init__, not the class
        assert any(isinstance(n, ast.FunctionDef) and n.name == "freeze" for n in model.body) is frozen


def test_check_reports_a_misspelt_framework_with_its_line(tmp_path: Path) -> None:
    page = "# Page\n\n```{.python .input}\n%%tab all\nif tab.selected('alpha') or tab.selected('betta'):\n    x = 1\n```\n"
    book = write_book(tmp_path / "book", {"index.md": "# Book\n\n```toc\npage\n```\n", "page.md": page})
    msgs = [e.location_message() for e in check_book(load_config(book))]
    assert msgs == ["page.md:5: tab.selected names unknown framework 'betta' (config.ini tabs: alpha, beta)"]


# --- item 9: every statement stays in its block, at any depth ------------------------------------

def _parents(tree: ast.AST) -> dict[ast.AST, ast.AST]:
    return {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}


def owner_of(source: str, statement: str) -> str:
    """The innermost ``def``/``class``/loop/``with``/``try`` (else ``module``) holding ``statement``."""
    tree = ast.parse(source)
    parents = _parents(tree)
    node = next(n for n in ast.walk(tree) if isinstance(n, ast.stmt) and ast.unparse(n) == statement)
    while node in parents:
        node = parents[node]
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            return node.name
        if isinstance(node, (ast.For, ast.While, ast.With, ast.Try, ast.match_case)):
            return type(node).__name__.lower()
    return "module"


NESTED = [
    # (source, framework, the statement, where it must be)
    ("""
     class A:
         def __init__(self):
             self.x = 1
             if tab.selected('tensorflow'):
                 self.y = 2
         def f(self):
             return 1
     """, "tensorflow", "self.y = 2", "__init__"),
    ("""
     class A:
         def f(self):
             for i in range(3):
                 if tab.selected('jax') or tab.selected('mxnet'):
                     self.y = i
                 # a comment inside the loop
             return 1
     """, "mxnet", "self.y = i", "for"),
    ("""
     def g():
         while True:
             try:
                 if tab.selected('jax'):
                     y = 1
                 else:
                     y = 2
             except ValueError:
                 if not tab.selected('pytorch'):
                     z = 3
             finally:
                 if tab.selected('jax'):
                     w = 4
             break
     """, "jax", "z = 3", "try"),
    ("""
     def g():
         with open('f') as f:
             if tab.selected('pytorch'):
                 data = f.read()
         return data
     """, "pytorch", "data = f.read()", "with"),
    ("""
     def g(x):
         match x:
             case 1:
                 if tab.selected('jax'):
                     y = 1
         return y
     """, "jax", "y = 1", "match_case"),
    ("""
     if tab.selected('jax', 'mxnet'):
         class B:
             def f(self):
                 if tab.selected('mxnet'):
                     return 1
                 return 2
     """, "mxnet", "return 1", "f"),
]


@pytest.mark.parametrize(("source", "framework", "statement", "where"), NESTED)
def test_resolved_statement_stays_in_its_block(source: str, framework: str, statement: str, where: str) -> None:
    resolved = resolve(source, framework)
    compile(resolved, "<cell>", "exec")
    assert "tab.selected" not in resolved
    assert owner_of(resolved, statement) == where


MODULE = """
    class Module(Base):  #@save
        \"\"\"A base class.\"\"\"
        if tab.selected('mxnet', 'tensorflow'):
            def __init__(self, plot_every=2):
                super().__init__()
                self.plot_every = plot_every
            if tab.selected('tensorflow'):
                self.training = None

        if tab.selected('jax'):
            plot_every: int = 2

        def loss(self, y_hat, y):
            raise NotImplementedError
"""


def test_a_test_written_beside_a_def_continues_the_def_as_in_d2lbook() -> None:
    """d2lbook dedents a selected line once, however deep its tests nest: a nested test written
    beside ``def __init__`` in an outer test's branch goes into ``__init__`` (d2l's Module)."""
    resolved = resolve(MODULE, "tensorflow")
    compile(resolved, "<cell>", "exec")
    assert owner_of(resolved, "self.training = None") == "__init__"
    env: dict = {"Base": object}
    exec(compile(resolved, "<cell>", "exec"), env)
    assert env["Module"]().training is None and env["Module"]().plot_every == 2
    mxnet = resolve(MODULE, "mxnet")
    assert "training" not in mxnet and owner_of(mxnet, "self.plot_every = plot_every") == "__init__"
    jax = resolve(MODULE, "jax")
    assert "__init__" not in jax and owner_of(jax, "plot_every: int = 2") == "Module"


def test_the_same_reading_after_a_loop_and_python_s_where_d2lbook_has_none() -> None:
    source = """
        if tab.selected('jax'):
            for i in range(2):
                out.append(i)
            if tab.selected('jax'):
                out.append(9)
        if tab.selected('jax', 'mxnet'):
            if tab.selected('jax'):
                out.append(7)
            out.append(8)
    """
    resolved = resolve(source, "jax")
    assert run(resolved) == [0, 9, 1, 9, 7, 8]  # the nested test continues the loop's block
    assert run(resolve(source, "mxnet")) == [8]


def test_a_nested_test_after_a_simple_statement_keeps_python_s_meaning() -> None:
    source = """
        class C:
            if tab.selected('jax'):
                x = 1
                if tab.selected('jax'):
                    y = 2
    """
    resolved = resolve(source, "jax")
    assert resolved == "class C:\n    x = 1\n    y = 2"


# --- item 6: display math in lists, :eqlabel: on the math's line, eval_rst, :bibliography: -------

MYST = create_md_parser(MdParserConfig(enable_extensions={"dollarmath", "amsmath", "colon_fence"}), RendererHTML)


def myst_blocks(text: str) -> list[tuple[str, str]]:
    return [(t.type, t.info if t.type == "math_block_label" else t.content.strip())
            for t in MYST.parse(text) if t.type.startswith(("math_block", "list_item_open", "fence"))]


LIST_MATH = """\
Norms:

1. Scaling a vector
   scales its norm:
   $$\\|a x\\| = |a| \\|x\\|.$$
2. The triangle inequality:
   $$\\|x + y\\| \\leq \\|x\\| + \\|y\\|.$$
   :eqlabel:`eq_tri`

- A bullet item
  $$
  z = 1
  $$

> A quote
> $$q = 2$$
"""


def test_display_math_continuing_a_list_item_is_display_math_in_the_item() -> None:
    out = to_myst(LIST_MATH)
    assert "scales its norm:\n\n   $$\\|a x\\|" in out
    assert "inequality:\n\n   $$\\|x + y\\| \\leq \\|x\\| + \\|y\\|.$$ (eq_tri)" in out
    assert "A bullet item\n\n  $$\n  z = 1\n  $$" in out
    assert "> A quote\n>\n> $$q = 2$$" in out
    tokens = [t for t in MYST.parse(out)]
    maths = [t for t in tokens if t.type.startswith("math_block")]
    assert [m.content.strip() for m in maths] == [
        "\\|a x\\| = |a| \\|x\\|.", "\\|x + y\\| \\leq \\|x\\| + \\|y\\|.", "z = 1", "q = 2"]
    assert [m.level for m in maths] == [2, 2, 2, 1]  # in list items (list > item > block), in the quote
    assert maths[1].info == "eq_tri"
    assert not any(t.type == "inline" and "$" in t.content for t in tokens)


@pytest.mark.parametrize(
    ("text", "label"),
    [
        ("$$a=b.$$ :eqlabel:`eq_x`\n\nSee :eqref:`eq_x`.", "eq_x"),
        ("$$\na=b\n$$:eqlabel:`eq_y`\n\nSee :eqref:`eq_y`.", "eq_y"),
        ("Text before\n$$\na=b\n$$ :eqlabel:`eq_z`\nText after, :eqref:`eq_z`.", "eq_z"),
    ],
)
def test_eqlabel_on_the_math_line_labels_the_equation(text: str, label: str) -> None:
    out = to_myst(text)
    assert f"$$ ({label})" in out and ":eqlabel:" not in out and f"{{eq}}`{label}`" in out
    assert ("math_block_label", label) in myst_blocks(out)
    section = read_section(f"# T\n\n{text}\n", "sec.md", TABS, "pytorch")
    assert label in section.labels


def test_eval_rst_fence_becomes_an_eval_rst_directive() -> None:
    text = "Before.\n\n```eval_rst \n.. note:: Some *rst*.\n\n   :numref:`x` stays rst.\n```\n\nAfter."
    out = to_myst(text)
    assert out == "Before.\n\n```{eval-rst}\n.. note:: Some *rst*.\n\n   :numref:`x` stays rst.\n```\n\nAfter."
    section = read_section("# T\n\n" + text + "\n", "sec.md", TABS, "pytorch")
    assert not section.code_cells and not section.refs  # prose, and its rst is not the dialect's


def test_bibliography_line_becomes_the_bibliography_directive() -> None:
    assert to_myst("# References\n\n:bibliography:`../refs.bib`\n") == "# References\n\n```{bibliography}\n```"
    assert ("fence", "") in myst_blocks(to_myst(":bibliography:`x.bib`"))


# --- item 10: tables labelled in d2l's order --------------------------------------------------------

@pytest.mark.parametrize("caption_line", [":Sizes of things", ": Sizes of things"])
def test_caption_label_table_order_becomes_a_numbered_table(caption_line: str) -> None:
    text = (
        f"As :numref:`tab_sizes` shows.\n\n{caption_line}\n:label:`tab_sizes`\n\n"
        "| Thing | Size |\n|:--|:-|\n| ant | 1 |\n\nAfter."
    )
    assert to_myst(text) == (
        "As {numref}`tab_sizes` shows.\n\n```{table} Sizes of things\n:name: tab_sizes\n\n"
        "| Thing | Size |\n|:--|:-|\n| ant | 1 |\n```\n\nAfter."
    )


def test_caption_table_label_order_still_works_without_a_space_after_the_colon() -> None:
    text = ":Latency (see :citet:`Doe.2020`)\n\n| a | b |\n| - | - |\n| 1 | 2 |\n:label:`tab_lat`\n"
    assert to_myst(text) == (
        "~~~{table} Latency (see {cite:t}`Doe.2020`)\n:name: tab_lat\n\n| a | b |\n| - | - |\n| 1 | 2 |\n~~~"
    )


def test_a_role_line_is_not_a_caption() -> None:
    text = ":numref:`fig_a` is a figure.\n:label:`not_a_table`\n\nText."
    out = to_myst(text)
    assert "{table}" not in out and "(not_a_table)=" in out


def test_caption_with_a_role_in_d2l_order_gets_a_fence_its_info_string_may_hold() -> None:
    """CommonMark ends a backtick fence's info string at a backtick: a caption citing a paper
    in a ```` ``` ```` fence is no directive at all (the table loses its number and target)."""
    text = (
        ":Counts of pairs (adapted from :citet:`Doe.2020`)\n:label:`tab_counts`\n\n"
        "|$w$|a|\n|:--|:-|\n|$p_1$|0.5|\n\nSee :numref:`tab_counts`."
    )
    out = to_myst(text)
    assert out == (
        "~~~{table} Counts of pairs (adapted from {cite:t}`Doe.2020`)\n:name: tab_counts\n\n"
        "|$w$|a|\n|:--|:-|\n|$p_1$|0.5|\n~~~\n\nSee {numref}`tab_counts`."
    )
    fences = [t for t in MYST.parse(out) if t.type == "fence"]
    assert [(f.info, f.markup) for f in fences] == [("{table} Counts of pairs (adapted from {cite:t}`Doe.2020`)", "~~~")]


# --- figures: alt text over several lines, a blank line before the label ---------------------------

def test_image_whose_alt_text_spans_lines_becomes_a_labelled_figure() -> None:
    text = (
        "As :numref:`fig_flow` shows.\n\n"
        "![Values $\\mathbf{v}_i$ are pooled,\nwhere weights follow :citet:`Doe.2020`.](../img/flow.svg)\n"
        ":label:`fig_flow`\n\nAfter."
    )
    assert to_myst(text) == (
        "As {numref}`fig_flow` shows.\n\n```{figure} ../img/flow.svg\n:name: fig_flow\n\n"
        "Values $\\mathbf{v}_i$ are pooled,\nwhere weights follow {cite:t}`Doe.2020`.\n```\n\nAfter."
    )
    section = read_section(f"# T\n\n{text}\n", "sec.md", TABS, "pytorch")
    assert "fig_flow" in section.labels


@pytest.mark.parametrize(
    "attrs",
    [
        "\n:label:`fig_gate`",
        "\n\n:label:`fig_gate`\n:width:`300px`",
        ":width:`300px`\n\n:label:`fig_gate`",
    ],
)
def test_blank_lines_between_an_image_and_its_attribute_lines_as_in_d2lbook(attrs: str) -> None:
    text = f"See :numref:`fig_gate`.\n\n![The gate.](../img/gate.svg)\n{attrs}\n\n\n## Next"
    out = to_myst(text)
    width = ":width: 300px\n" if "width" in attrs else ""
    assert out == (
        f"See {{numref}}`fig_gate`.\n\n```{{figure}} ../img/gate.svg\n:name: fig_gate\n{width}\nThe gate.\n```"
        "\n\n\n## Next"
    )


def test_a_figure_in_a_list_item_keeps_the_item_s_indent() -> None:
    text = "1. First\n\n   ![A long\n   caption.](a.svg)\n\n   :label:`fig_item`\n\n   More.\n2. Second"
    out = to_myst(text)
    assert out == (
        "1. First\n\n   ```{figure} a.svg\n   :name: fig_item\n\n   A long\n   caption.\n   ```\n\n"
        "   More.\n2. Second"
    )
    items = [t for t in MYST.parse(out) if t.type in ("list_item_open", "fence")]
    assert [t.type for t in items] == ["list_item_open", "fence", "list_item_open"]


def test_a_paragraph_with_two_images_or_text_is_not_a_figure() -> None:
    for text in ("![a](x.svg)\n![b\nc](y.svg)\n:label:`fig_two`", "![a](x.svg) and text\n:label:`fig_two`"):
        out = to_myst(text)
        assert "{figure}" not in out and "(fig_two)=" in out


# --- what the whole-book scan found: a reference in double backticks, $$ inside a paragraph -------

def test_a_reference_in_double_backticks_is_a_reference() -> None:
    text = "The data we made in :numref:``sec_data`` and :cite:`A.2020`."
    assert to_myst(text) == "The data we made in {numref}`sec_data` and {cite:p}`A.2020`."
    section = read_section(f"# T\n:label:`sec_data`\n\n{text}\n", "sec.md", TABS, "pytorch")
    assert section.refs == (("numref", "sec_data", 4),)


# --- a real Sphinx build of a small prose-only book ---------------------------------------------

PAGE = """
    # Page
    :label:`sec_page`

    Norms have properties:

    1. Scaling a vector
       scales its norm:
       $$\\|\\alpha x\\| = |\\alpha| \\|x\\|.$$
    2. The triangle inequality holds.

    The model is

    $$f(x) = w x + b,$$ :eqlabel:`eq_model`

    and its loss

    $$
    l = (f(x) - y)^2
    $$:eqlabel:`eq_loss`

    See :eqref:`eq_model`, :eqref:`eq_loss` and :numref:`tab_sizes`{cite}.

    :Sizes of things
    :label:`tab_sizes`

    | Thing | Size |
    |:--|:-|
    | ant | 1 |
    | cat | 30 |

    The counts of :numref:`tab_counts`{tabcite} are drawn in :numref:`fig_flow`;
    :numref:`fig_gate` shows the gate.

    :Counts of pairs{tabcite}
    :label:`tab_counts`

    | Pair | Count |
    |:--|:-|
    | ab | 2 |

    ![Values $\\mathbf{v}_i$ are pooled,
    where the weights come from the pairs.](img/flow.svg)
    :label:`fig_flow`

    ![The gate.](img/gate.svg)

    :label:`fig_gate`
    :width:`120px`

    If $X$ is discrete, $$H(X) = - \\sum_i p_i \\log p_i.$$

    1. What are the eigenvalues of
    $$
    A = \\begin{bmatrix} 2 & 1 \\\\ 1 & 2 \\end{bmatrix}?
    $$
    2. And the eigenvectors?

    :begin_tab:`alpha`

    ```eval_rst
    .. currentmodule:: json
    ```

    :end_tab:

    :begin_tab:`beta`

    ```eval_rst
    .. currentmodule:: json
    ```

    :end_tab:

    :A caption that runs
    over two lines
    :label:`tab_two`

    | Key | Value |
    |:--|:-|
    | k | 1 |

    :A caption no label names

    | Name | Age |
    |:--|:-|
    | ann | 3 |

    Done.
"""

SVG = '<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><rect width="10" height="10"/></svg>\n'

INDEX = """
    # Fixture Book

    ```eval_rst
    .. note:: Written in *reStructuredText*.
    ```

    ```toc
    :numbered:

    page
    refs
    ```
"""

BIB = """\
@article{Doe.2020,
  author = {Doe, Jane},
  title = {A Study of Things},
  journal = {Journal of Things},
  year = {2020}
}
"""


def build(book: Path) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [sys.executable, "-m", "tabbook", "-C", str(book), "build"], cwd=ROOT, capture_output=True, text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT), "TABBOOK_CACHE": str(book / ".cache")},
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


def html(book: Path, page: str) -> BeautifulSoup:
    return BeautifulSoup((book / "build" / "html" / page).read_text(encoding="utf-8"), "html.parser")


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    book = write_book(tmp_path_factory.mktemp("d2lbook") / "book", {
        "index.md": INDEX,
        "page.md": PAGE.replace("{cite}", ", as :citet:`Doe.2020` did").replace(
            "{tabcite}", " (after :citet:`Doe.2020`)"),
        "img/flow.svg": SVG, "img/gate.svg": SVG,
        "refs.md": "# References\n\n:bibliography:`../d2l.bib`\n",
        "references.bib": BIB,
    })
    build(book)
    return book


def test_built_list_math_is_display_math_inside_the_item(built: Path) -> None:
    item = html(built, "page.html").select("ol > li")[0]
    assert item.select_one("div.math") is not None  # display math, in the <li>
    assert "$" not in item.get_text()


def test_built_equations_labelled_on_their_line_are_numbered_and_referenced(built: Path) -> None:
    soup = html(built, "page.html")
    for label, number in (("eq-model", "(1.1)"), ("eq-loss", "(1.2)")):
        assert soup.select_one(f"div.math#equation-{label} .eqno").get_text().startswith(number)
        link = soup.select_one(f'a[href="#equation-{label}"]:not(.headerlink)')
        assert link.get_text() == number
    assert ":eqlabel:" not in soup.get_text()


def test_built_table_in_d2l_order_is_numbered_captioned_and_referenced(built: Path) -> None:
    soup = html(built, "page.html")
    table = soup.select_one("table#tab-sizes")
    caption = table.select_one("caption")
    assert caption.select_one(".caption-number").get_text().strip() == "Table 1.1"
    assert caption.select_one(".caption-text").get_text() == "Sizes of things"
    assert soup.select_one('a[href="#tab-sizes"] .std-numref').get_text() == "Table 1.1"
    assert [td.get_text() for td in table.select("tbody td")] == ["ant", "1", "cat", "30"]


def test_built_tables_show_a_caption_of_two_lines_and_one_no_label_names(built: Path) -> None:
    """pandoc's table captions on the page: all of a caption paragraph of two lines, and a
    caption no label names, numbered too (Sphinx numbers every table with a caption, as on
    d2l.ai, where pandoc's ``.. table:: Caption`` reaches the same Sphinx), with no target."""
    soup = html(built, "page.html")
    caption = soup.select_one("table#tab-two caption")
    assert caption.select_one(".caption-number").get_text().strip() == "Table 1.3"
    assert caption.select_one(".caption-text").get_text() == "A caption that runs over two lines"
    unlabelled = [t for t in soup.select("table") if t.select_one("caption .caption-text") is not None
                  and t.select_one("caption .caption-text").get_text() == "A caption no label names"]
    assert len(unlabelled) == 1
    assert unlabelled[0].select_one(".caption-number").get_text().strip() == "Table 1.4"
    assert [td.get_text() for td in unlabelled[0].select("tbody td")] == ["ann", "3"]
    assert ":A caption" not in soup.get_text()


def test_built_table_whose_caption_cites_is_numbered_and_the_citation_rendered(built: Path) -> None:
    soup = html(built, "page.html")
    caption = soup.select_one("table#tab-counts caption")
    assert caption.select_one(".caption-number").get_text().strip() == "Table 1.2"
    text = caption.select_one(".caption-text")
    assert text.get_text().startswith("Counts of pairs (after ") and "`" not in text.get_text()
    assert text.select_one(".bibtex-citation a")["href"].startswith("refs.html#")
    assert soup.select_one('a[href="#tab-counts"] .std-numref').get_text() == "Table 1.2"
    assert "{table}" not in soup.get_text()


def test_built_figures_with_wrapped_alt_text_or_a_blank_line_are_numbered(built: Path) -> None:
    soup = html(built, "page.html")
    flow = soup.select_one("figure#fig-flow")
    assert flow.select_one(".caption-number").get_text().strip() == "Figure 1.1"
    caption = flow.select_one(".caption-text")
    assert caption.get_text().startswith("Values ") and caption.get_text().endswith("come from the pairs.")
    assert caption.select_one(".math") is not None and "$" not in caption.get_text()
    assert flow.select_one("img")["src"].endswith("flow.svg")
    gate = soup.select_one("figure#fig-gate")
    assert gate.select_one(".caption-number").get_text().strip() == "Figure 1.2"
    assert "width: 120px" in gate.select_one("img")["style"]
    for label, number in (("fig-flow", "Figure 1.1"), ("fig-gate", "Figure 1.2")):
        assert soup.select_one(f'a[href="#{label}"] .std-numref').get_text() == number
    assert ":label:" not in soup.get_text() and ":width:" not in soup.get_text()


def test_built_double_dollars_inside_a_paragraph_are_display_math(built: Path) -> None:
    soup = html(built, "page.html")
    para = next(p for p in soup.select("p") if p.get_text().startswith("If "))
    assert para.select_one("div.math") is not None and "$" not in para.get_text()
    item = next(li for li in soup.select("ol > li") if "eigenvalues" in li.get_text())
    assert item.select_one("div.math") is not None and "$" not in item.get_text()


def test_built_prose_tabs_that_render_nothing_make_no_empty_tab_set(built: Path) -> None:
    soup = html(built, "page.html")
    assert not soup.select(".sd-tab-set")  # both tabs hold only a currentmodule
    assert "eval_rst" not in soup.get_text() and "currentmodule" not in soup.get_text()


def test_built_eval_rst_is_rendered_as_restructuredtext(built: Path) -> None:
    note = html(built, "index.html").select_one("div.admonition.note")
    assert "Written in reStructuredText." in note.get_text() and note.select_one("em").get_text() == "reStructuredText"
    assert "eval_rst" not in html(built, "index.html").get_text()


def test_built_bibliography_lists_the_cited_entry_where_the_line_was(built: Path) -> None:
    refs = html(built, "refs.html")
    entry = refs.select_one('[role="doc-biblioentry"]')
    assert "A study of things" in entry.get_text()
    assert ":bibliography:" not in refs.get_text()
    cite = html(built, "page.html").select_one(".bibtex-citation a")
    assert cite["href"].startswith("refs.html#")


def test_bibliography_line_without_bib_files_renders_nothing(tmp_path: Path) -> None:
    book = write_book(tmp_path / "book", {
        "index.md": INDEX, "page.md": PAGE.replace("{cite}", "").replace("{tabcite}", ""),
        "img/flow.svg": SVG, "img/gate.svg": SVG,
        "refs.md": "# References\n\n:bibliography:`../d2l.bib`\n\nThe end.\n",
    })
    proc = build(book)
    assert "bibliography" not in proc.stderr  # no "unknown directive" warning
    refs = html(book, "refs.html")
    assert refs.select_one("section h1") is not None and "The end." in refs.get_text()
    assert ":bibliography:" not in refs.get_text() and not refs.select('[role="doc-biblioentry"]')


# --- a section exists for the tabs its cells name (d2lbook's get_tab_notebook) -----------------

ONLY_ALL_AND_TWO = """\
# Hybrid

```{.python .input}
#@tab all
#@save
def shared():
    return 1
```

```{.python .input}
%%tab mxnet
print('mx', shared())
```

:begin_tab:`tensorflow`
TensorFlow prose names the tab too.
:end_tab:
"""


def test_an_all_cell_belongs_to_the_tabs_the_section_names_and_the_default() -> None:
    section = read_section(ONLY_ALL_AND_TWO, "sec.md", TABS, "pytorch")
    shared = section.code_cells[0]
    # pytorch: the default tab; mxnet: a code cell; tensorflow: a prose tab. Not jax.
    assert shared.tabs == ("pytorch", "tensorflow", "mxnet") and shared.every_tab
    assert split_section(section, "jax") == []  # no JAX unit, nothing saved into d2l/jax.py
    assert [c.source.splitlines()[-1] for c in split_section(section, "mxnet")] == [
        "    return 1", "print('mx', shared())"]


def test_a_section_with_only_all_cells_exists_for_the_default_tab_only() -> None:
    text = "# Only all\n\n```{.python .input}\n%%tab all\nx = 1\n```\n"
    assert read_section(text, "sec.md", TABS, "jax").code_cells[0].tabs == ("jax",)
    # one explicit cell naming every tab keeps them all (what chapter_gpus/utilities.md does)
    text += "\n```{.python .input}\n%%tab pytorch, jax, tensorflow, mxnet\ny = 2\n```\n"
    assert read_section(text, "sec.md", TABS, "jax").code_cells[0].tabs == TABS


def test_a_section_without_code_keeps_its_all_prose_for_every_tab() -> None:
    text = "# Prose\n\n:begin_tab:`all`\nFor everyone.\n:end_tab:\n"
    assert read_section(text, "sec.md", TABS, "pytorch").cells[-1].tabs == TABS


# --- the tab-selection cell with d2l-en's ``#required_libs`` comment ------------------------------

SETUP_WITH_LIBS = """\
```{.python .input}
%load_ext d2lbook.tab
tab.interact_select(["pytorch"])
#required_libs("somepkg==1.0")
```

# A PyTorch-only section

```{.python .input}
%%tab pytorch
import math
print(math.pi)
```
"""


def test_a_setup_cell_naming_required_libs_is_not_executed() -> None:
    # d2lbook drops every cell with ``%load_ext d2lbook.tab``; kept, it would fail in a kernel
    # without d2lbook ("No module named 'd2lbook'")
    section = read_section(SETUP_WITH_LIBS, "sec.md", TABS, "pytorch")
    cells = split_section(section, "pytorch")
    assert [c.source for c in cells] == ["import math\nprint(math.pi)"]
    assert not any("d2lbook" in c.source or "required_libs" in c.source for c in section.cells)
