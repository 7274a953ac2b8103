"""Exercise solutions (issue 39): ``<!-- solution TEXT -->`` … ``<!-- end solution -->``.

What the mark means at every stage, on small fixtures of our own: reading (the cells between
the markers carry the solution's number; misplaced or unbalanced markers are errors at their
line; the same comment inside a fence, a list or an indented block is text), merging (the
cells bracketed by the two marker ``{div}`` cells), and a real build of a two-framework book:
the solution's prose and the code of both frameworks, executed and stored like any cell, sit
inside a closed ``<details>`` element whose summary names it, and nothing else does. That the
PDFs leave solutions out is checked where PDFs are typeset (``tests/test_pdf.py``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from bs4 import BeautifulSoup

from tabbook.errors import BookError
from tabbook.render.merge import merge_section, solution_summary
from tabbook.render.names import SOLUTION_END_CLASS, SOLUTION_START_CLASS
from tabbook.render.slides import build_deck
from tabbook.source.read import read_section

ROOT = Path(__file__).resolve().parent.parent
TABS = ("alpha", "beta")

PAGE = """\
# Squares
:label:`sec_squares`

[**Squares grow fast.**]

```{.python .input}
%%tab all
print('in the section')
```

## Exercises

1. Compute the square of 7.
1. Say why squares grow fast.

<!-- solution 1 -->
The square of 7 is computed in each framework:

```{.python .input}
%%tab alpha
print('alpha says', 7 * 7)
```

```{.python .input}
%%tab beta
print('beta says', 7 ** 2)
```

:begin_tab:`beta`
Prose for beta only, in the solution.
:end_tab:
<!-- end solution -->

<!-- solution to exercise 2 -->
Because $(n+1)^2 - n^2 = 2n + 1$ grows with $n$.
<!-- end solution -->

After the solutions.
"""


def read(text: str, path: str = "sq.md"):  # noqa: ANN201 - Section
    return read_section(textwrap.dedent(text), path, TABS, "alpha")


# --- reading -------------------------------------------------------------------------------------

def test_cells_between_the_markers_carry_their_solution() -> None:
    section = read(PAGE)
    assert section.solutions == {1: ("1", 16), 2: ("to exercise 2", 34)}
    by_number: dict[int, list[str]] = {}
    for cell in section.cells:
        by_number.setdefault(cell.solution, []).append(cell.kind)
    assert by_number[1] == ["markdown", "code", "code", "markdown"]
    assert by_number[2] == ["markdown"]
    first = [c for c in section.cells if c.solution == 1]
    assert first[1].tabs == ("alpha",) and first[2].tabs == ("beta",) and first[3].tabs == ("beta",)
    outside = [c.source for c in section.cells if not c.solution]
    assert any("After the solutions." in s for s in outside)
    assert not any("<!--" in c.source for c in section.cells)  # the markers are not prose
    assert solution_summary("to exercise 2") == "Solution to exercise 2"
    assert solution_summary("") == "Solution"


@pytest.mark.parametrize(("text", "line", "message"), [
    ("# T\n\n<!-- solution -->\ntext\n", 3, "<!-- solution --> is never closed by <!-- end solution -->"),
    ("# T\n\n<!-- end solution -->\n", 3, "<!-- end solution --> without a matching <!-- solution -->"),
    ("# T\n\n<!-- solution 1 -->\na\n<!-- solution 2 -->\nb\n<!-- end solution -->\n", 5,
     "the solution opened at line 3 is not closed by <!-- end solution --> before this one opens"),
    ("# T\n\n:begin_tab:`beta`\n<!-- solution -->\n:end_tab:\n", 4,
     "<!-- solution --> inside the prose tab opened at line 3: close the tab first"),
    ("# T\n\n<!-- solution -->\n## Inside\n<!-- end solution -->\n", 4,
     "a heading inside the solution opened at line 3: a solution holds prose and code, not sections"),
])
def test_misplaced_markers_are_errors_at_their_line(text: str, line: int, message: str) -> None:
    with pytest.raises(BookError) as err:
        read(text)
    assert err.value.location_message() == f"sq.md:{line}: {message}"


def test_the_comment_is_text_where_it_cannot_enclose_cells() -> None:
    text = ("# T\n\n```text\n<!-- solution -->\n```\n\n- item\n\n  <!-- solution -->\n\n"
            "    <!-- solution -->\n\n<!-- solutions -->\n<!-- end of solution -->\n")
    section = read(text)
    assert section.solutions == {} and all(c.solution == 0 for c in section.cells)
    assert "<!-- solutions -->" in section.cells[0].source  # an HTML comment, kept as written


# --- merging and slides --------------------------------------------------------------------------

def test_merge_brackets_each_solution_with_its_summary() -> None:
    section = read(PAGE)
    cells = merge_section(section, {}, TABS, {"alpha": "Alpha", "beta": "Beta"})["cells"]
    sources = [c["source"] for c in cells if c["cell_type"] == "markdown"]
    starts = [i for i, s in enumerate(sources) if SOLUTION_START_CLASS in s]
    ends = [i for i, s in enumerate(sources) if SOLUTION_END_CLASS in s]
    assert len(starts) == len(ends) == 2
    assert "Solution 1" in sources[starts[0]] and "Solution to exercise 2" in sources[starts[1]]
    assert starts[0] < ends[0] < starts[1] < ends[1]
    first = "\n".join(sources[starts[0]:ends[0]])
    assert "computed in each framework" in first and "Prose for beta only, in the solution." in first
    assert "After the solutions." in sources[ends[1] + 1]


def test_a_deck_leaves_solutions_out() -> None:
    section = read(PAGE)
    executed = {"cells": [{"cell_type": "code", "source": src, "outputs": [
        {"output_type": "stream", "name": "stdout", "text": out}]}
        for src, out in (("print('in the section')", "in the section\n"),
                         ("print('alpha says', 7 * 7)", "alpha says 49\n"))]}
    deck = build_deck(section, "alpha", "Alpha", executed)
    shown = json.dumps([[getattr(i, "source", i) for i in s.items] for s in deck.slides])
    assert "in the section" in shown and "alpha says" not in shown


# --- a real build ----------------------------------------------------------------------------------

CONFIG = """\
[project]
name = sol
title = Solutions Book
author = Tests
version = 0.0.1

[build]
index = index.md
tabs = alpha, beta
default_tab = alpha

[framework:alpha]
label = Alpha
import = json
python = current

[framework:beta]
label = Beta
import = json
python = current
"""


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    book = tmp_path_factory.mktemp("solutions") / "book"
    book.mkdir()
    (book / "config.ini").write_text(CONFIG)
    (book / "index.md").write_text("# Book\n\n```toc\nsq\n```\n")
    (book / "sq.md").write_text(PAGE)
    proc = subprocess.run(
        [sys.executable, "-m", "tabbook", "-C", str(book), "build", "--strict"], cwd=ROOT,
        capture_output=True, text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT), "TABBOOK_CACHE": str(book / ".cache")})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return book


def test_built_solutions_are_closed_details_holding_executed_code(built: Path) -> None:
    soup = BeautifulSoup((built / "build" / "html" / "sq.html").read_text(encoding="utf-8"), "html.parser")
    solutions = soup.select("details.tabbook-solution")
    assert [d.summary.get_text() for d in solutions] == ["Solution 1", "Solution to exercise 2"]
    assert all(not d.has_attr("open") for d in solutions)  # hidden until a reader opens one
    first = solutions[0]
    assert first.select_one(".sd-tab-set") is not None  # both frameworks, as tabs
    text = first.get_text()
    assert "alpha says 49" in text and "beta says 49" in text  # executed outputs
    assert "Prose for beta only, in the solution." in text
    assert "grows with" in solutions[1].get_text()
    outside = soup.get_text()
    for d in solutions:
        outside = outside.replace(d.get_text(), "")
    assert "in the section" in outside and "After the solutions." in outside
    assert "Compute the square of 7." in outside  # the exercise itself is not hidden
    assert "alpha says" not in outside and "<!--" not in outside


def test_built_solutions_are_kept_in_the_store(built: Path) -> None:
    entry = json.loads((built / "_freeze" / "sq" / "beta.ipynb").read_text())
    outputs = [o.get("text", "") for c in entry["cells"] for o in c.get("outputs", [])]
    assert any("beta says 49" in "".join(t) for t in outputs)
