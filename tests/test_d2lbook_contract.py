"""d2lbook's contract (issue 44): what d2lbook reports and builds past, tabbook reports at
``file:LINE`` and builds past, rendering what d2lbook renders (or better), and exits 0; a
strict build (``--strict``, ``[build] warning_is_error = True``) fails, listing every one in one run.

One small book written here holds a problem of each kind the corpus of public d2lbook books
showed (tabbook/problems.py declares them), and the readings d2lbook gets from notedown and
pandoc; one plain build and one strict build of it are checked line by line and page by page.
The fault catalog (test_fault_catalog.py) injects the dialect's own faults one at a time.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tabbook.config import OVERLAY_ENV

ROOT = Path(__file__).resolve().parent.parent

CONFIG = """\
[project]
name = corpus-kinds
author = Test Author
copyright = 100%% ours

[build]
notebooks = **/*.md
exclusions = README.md
tabs =
[html]
favicon = static/no-such-icon.png
"""

INDEX = """\
Kinds of trouble
================

```eval_rst
.. raw:: html
   :file: banner.html
```

```toc
:maxdepth: 2
:numbered:
:caption: Parts

part/index
```

```toc
:hidden:
:colour: blue

part/missing
extras
```
"""

PART = """\
# Part
:label:`sec_part`

```toc
:maxdepth: 1

one
two
```
"""

ONE = """\
## One, starting at level two
:label:`sec_one`

See :numref:`sec_nowhere`, then :numref:`sec_two` and :numref:`sec_extras`, then :eqref:`eq_twice`.

The course site is [here](/course) and the slides are [there](slides/week1.pdf).
As :cite:`Ada.1843` wrote.

![A plot that is not there](../img/absent.svg)

:end_tab:

$$x = 1$$
:eqlabel:`eq_twice`

```{.python .output}
y = 2
```

:bibliography:`../refs.bib`
"""

TWO = """\
Two, a setext title
-------------------
:label:`sec_two`

$$x = 2$$
:eqlabel:`eq_twice`

:begin_tab:`pytorch`
Words for a tab this book does not have.
:end_tab:
"""

EXTRAS = """\
# Extras
:label:`sec_extras`

Not numbered: the toc that lists this page is not.
"""

BIB = """\
@article{Ada.1843,
  title = {Notes on the Analytical Engine},
  author = {Lovelace, Ada},
  journal = {Scientific Memoirs},
  year = {1843}
}
"""


def make(root: Path) -> Path:
    book = root / "book"
    for rel, text in {"config.ini": CONFIG, "index.md": INDEX, "part/index.md": PART, "part/one.md": ONE,
                      "part/two.md": TWO, "extras.md": EXTRAS, "refs.bib": BIB, "banner.html": "<p>BANNER</p>\n",
                      "README.md": "# Not a page\n\n:numref:`nowhere`\n"}.items():
        (book / rel).parent.mkdir(parents=True, exist_ok=True)
        (book / rel).write_text(text)
    return book


def tabbook(book: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TABBOOK_CACHE": str(book.parent / ".cache")}
    env.pop(OVERLAY_ENV, None)
    return subprocess.run([sys.executable, "-m", "tabbook", "-C", str(book), *args], cwd=ROOT,
                          capture_output=True, text=True, env=env, timeout=600)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess[str]]:
    book = make(tmp_path_factory.mktemp("contract"))
    return book, tabbook(book, "build", "html", "--no-execute")


#: Every warning the plain build gives: at its line, with its kind.
WANT = [
    "config.ini:11: [html] favicon names static/no-such-icon.png, which does not exist: left unset "
    "[config-missing-file]",
    "index.md:19: unknown toc option :colour: (Sphinx's toctree has ",
    "index.md:21: toc entry 'part/missing': part/missing.md does not exist [toc-entry]",
    "part/one.md:4: :numref: to undefined label 'sec_nowhere' [undefined-reference]",
    "part/one.md:9: image file ../img/absent.svg does not exist [missing-image]",
    "part/one.md:11: :end_tab: without a matching :begin_tab: [stray-end-tab]",
    "part/two.md:6: duplicate label 'eq_twice' (also at part/one.md:14): references to it go to part/one.md, "
    "the first in the toc's order [duplicate-label]",
    "part/two.md:8: unknown framework 'pytorch' (config.ini tabs: python): shown in the book's one tab "
    "[unknown-tab]",
    "index.md:5: raw:: html :file: banner.html",  # present: no warning (checked below)
    "part/one.md:4: :numref: to 'sec_extras', which has no number (its page's toc is not :numbered:): shown as "
    "a link with the section's title [unnumbered-reference]",
    "part/one.md:6: link to slides/week1.pdf, which the book does not have: linked as it is [link-target]",
]


def _warnings(out: str) -> list[str]:
    return [line.removeprefix("warning: ") for line in out.splitlines() if line.startswith("warning: ")]


def test_a_plain_build_reports_every_problem_at_its_line_and_exits_0(built) -> None:  # noqa: ANN001
    book, proc = built
    assert proc.returncode == 0, proc.stdout + proc.stderr
    warnings = _warnings(proc.stdout)
    for want in WANT:
        if "banner.html" in want:
            assert not any("banner.html" in w for w in warnings), warnings
            continue
        assert any(w.startswith(want) for w in warnings), f"{want}\n" + "\n".join(warnings)
    # Each once (the check's and Sphinx's report of one problem are one), and nothing unlocated.
    assert len(warnings) == len(set(warnings)) == len(WANT) - 1, "\n".join(warnings)
    assert all(re.match(r"^[^\s:]+:\d+: .* \[[a-z-]+\]$", w.split("\n")[0]) for w in warnings), warnings
    assert "Traceback" not in proc.stdout + proc.stderr
    report = json.loads((book / "build" / "report.json").read_text())
    assert {p["kind"] for p in report["problems"]} >= {"toc-entry", "duplicate-label", "stray-end-tab"}
    assert all(p["severity"] == "warning" for p in report["problems"])


def test_the_pages_render_what_d2lbook_renders_or_better(built) -> None:  # noqa: ANN001
    book, _ = built
    html = book / "build" / "html"
    pages = {p.relative_to(html).as_posix() for p in html.rglob("*.html")}
    assert {"index.html", "part/index.html", "part/one.html", "part/two.html", "extras.html"} <= pages
    assert "README.html" not in pages  # [build] exclusions
    index = (html / "index.html").read_text()
    assert "<p>BANNER</p>" in index  # the book's own raw :file:, found beside the page
    assert 'class="caption-text">Parts<' in index  # :caption: kept
    one = (html / "part" / "one.html").read_text()
    assert "<title>1.1. One, starting at level two - Kinds of trouble</title>" in one  # a ## page's title
    assert 'class="tabbook-unresolved">sec_nowhere<' in one  # d2lbook shows the label's text
    assert re.search(r'href="two.html#sec-two">.{0,80}Section 1\.2', one, re.S)  # numbered: its number
    assert re.search(r'href="../extras.html[^"]*">.{0,80}Extras<', one, re.S)  # unnumbered: its title
    assert 'href="/course"' in one and 'href="slides/week1.pdf"' in one  # links d2lbook keeps as URLs
    text = re.sub(r"<[^>]+>", "", one)
    # the citation resolves against the bib file the page's :bibliography: line names (d2lbook: its key)
    assert "Lovelace" in text and "Ada.1843" not in text
    assert "y = 2" in text and "highlight-ipython3" in one  # {.python .output}: a code cell, as notedown reads it
    two = (html / "part" / "two.html").read_text()
    assert "<title>1.2. Two, a setext title - Kinds of trouble</title>" in two
    assert "Words for a tab this book does not have." in two  # a book of one tab shows every prose tab
    assert ":end_tab:" not in one and ":begin_tab:" not in two


def test_a_strict_build_fails_listing_every_problem_in_one_run(built) -> None:  # noqa: ANN001
    book, _ = built
    proc = tabbook(book, "build", "html", "--no-execute", "--strict")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    listed = [line for line in proc.stderr.splitlines() if re.match(r"^[^\s:]+:\d+: ", line)]
    for want in WANT:
        if "banner.html" not in want:
            assert any(line.startswith(want) for line in listed), f"{want}\n{proc.stderr}"
    # the book's own key says the same
    config = book / "config.ini"
    config.write_text(config.read_text().replace("[build]\n", "[build]\nwarning_is_error = True\n"))
    try:
        proc = tabbook(book, "build", "html", "--no-execute")
        assert proc.returncode == 1 and "part/one.md:11: :end_tab: without" in proc.stderr
    finally:
        config.write_text(config.read_text().replace("warning_is_error = True\n", ""))


def test_one_problem_hides_no_other(tmp_path: Path) -> None:
    """Issue 38: a reference problem and a cell that does not parse, in one run: both are
    printed at their file.md:LINE (the failed cell's used to appear only in build/report.json)."""
    book = tmp_path / "starter"
    assert tabbook(tmp_path, "new", str(book)).returncode == 0
    page = book / "averages.md"
    text = page.read_text() + "\nSee :numref:`sec_medians`.\n\n```{.python .input}\n%%tab plain\nprint(mean([1, 2]) +)\n```\n"
    page.write_text(text)
    ref_line = text.splitlines().index("See :numref:`sec_medians`.") + 1
    bad_line = text.splitlines().index("print(mean([1, 2]) +)") + 1
    proc = tabbook(book, "build")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    assert f"warning: averages.md:{ref_line}: :numref: to undefined label 'sec_medians'" in out
    assert re.search(rf"^averages\.md:{bad_line}: \[plain\] unexpected error:.*SyntaxError", out, re.M | re.S), out
    proc = tabbook(book, "build", "--strict")
    out = proc.stderr
    assert proc.returncode == 1
    assert re.search(rf"^averages\.md:{ref_line}: :numref: to undefined label 'sec_medians'", out, re.M), out
    assert re.search(rf"^averages\.md:{bad_line}: \[plain\] unexpected error:.*SyntaxError", out, re.M | re.S), out


def test_a_numref_to_a_section_of_an_unnumbered_toc_falls_back_to_its_title(tmp_path: Path) -> None:
    """Issue 38: the starter book numbers its sections; a book whose toc does not gets a link
    with the section's title and a warning, where Sphinx failed ("Any number is not assigned")."""
    book = tmp_path / "starter"
    assert tabbook(tmp_path, "new", str(book)).returncode == 0
    proc = tabbook(book, "build", "--strict")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    page = (book / "build" / "html" / "averages.html").read_text()
    assert re.search(r'href="#sec-averages">.{0,80}Section 1<', page, re.S)
    other = tmp_path / "unnumbered"  # a book of its own: Sphinx keeps a page's old numbers otherwise
    assert tabbook(tmp_path, "new", str(other)).returncode == 0
    book = other
    index = book / "index.md"
    index.write_text(index.read_text().replace(":numbered:\n", ""))
    proc = tabbook(book, "build")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # Sphinx places a reference at its paragraph's first line
    line = next(i for i, x in enumerate((book / "averages.md").read_text().splitlines(), 1) if "The same call" in x)
    assert (f"warning: averages.md:{line}: :numref: to 'sec_averages', which has no number (its page's toc is "
            "not :numbered:): shown as a link with the section's title [unnumbered-reference]") in proc.stdout
    page = (book / "build" / "html" / "averages.html").read_text()
    assert re.search(r'href="#sec-averages">.{0,80}Averages<', page, re.S)
