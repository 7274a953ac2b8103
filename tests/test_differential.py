"""The differential harness (``bench/differential.py``, issue 30 item 1) on small books: the
fixtures of ``tests/fixtures/differential`` (one page per construct) and random dialect pages
(Hypothesis). Both tools read each book; every difference must be one the harness explains.

d2lbook 1.0.3 runs in its own venv (``make d2lbook-venv``, which ``make test`` runs first);
without it these tests skip (fail under ``make test``). ``DIFFERENTIAL_EXAMPLES`` sets how many
random books Hypothesis makes (default 3; ``make differential`` runs more); they are the same
books every run unless ``DIFFERENTIAL_RANDOM=1`` (new ones each run)."""

from __future__ import annotations

import os
import re
import shutil
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from prerequisites import require

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "differential"
sys.path.insert(0, str(ROOT / "bench"))
import d2lbook_book  # noqa: E402
import differential  # noqa: E402

VENV = d2lbook_book.BARE_VENV


@pytest.fixture(scope="module")
def venv() -> Path:
    require((VENV / "bin" / "d2lbook").exists(), f"d2lbook 1.0.3's venv at {VENV} (make d2lbook-venv)")
    return VENV


def _book(tmp_path: Path, pages: dict[str, str]) -> Path:
    book = tmp_path / "book"
    book.mkdir()
    shutil.copy(FIXTURES / "config.ini", book / "config.ini")
    names = sorted(p[:-3] for p in pages)
    (book / "index.md").write_text("# Random book\n\n```toc\n:maxdepth: 2\n\n" + "\n".join(names) + "\n```\n")
    seen: set[str] = set()
    for name, text in pages.items():
        (book / name).write_text(_first_labels_only(text, seen))
    return book


def _first_labels_only(text: str, seen: set[str]) -> str:
    """A random page's text with every label a page before it (or it) defined already removed:
    a duplicate label is an error in both tools, not a difference."""
    out = []
    for line in text.split("\n"):
        m = re.search(r":(?:eq)?label:`([^`]+)`", line)
        if m and m.group(1) in seen:
            line = line.replace(m.group(0), "")
        elif m:
            seen.add(m.group(1))
        out.append(line)
    return "\n".join(out)


def test_fixtures_differ_only_where_explained(venv: Path) -> None:
    diffs, stats = differential.compare_book(FIXTURES, venv)
    assert stats["pages"] == 13 and stats["problems"] == []
    found = {(d.page, d.tab, d.feature, d.explained) for d in diffs}
    both = lambda page, feature, why: {(page, tab, feature, why) for tab in ("pytorch", "mxnet")}  # noqa: E731
    assert found == {
        ("indented.md", "*", "read", "d2lbook-unreadable"),
        ("crash.md", "*", "read", "bare-else-crash"),
        ("code_tabs.md", "pytorch", "code", "hide-output-mark-shown"),
        ("selected.md", "mxnet", "code", "blank-after-branch"),
        *both("selected.md", "code", "bare-else"),
        *both("isort.md", "code", "isort"),
        *both("aliases.md", "code", "astor-wrap"),
        *both("headings.md", "headings", "heading-without-blank-line"),
        *both("slides.md", "slides", "slide-marks-in-examples"),
    }
    # every explanation the harness knows is met by a fixture
    assert {d.explained for d in diffs} == {e.id for e in differential.EXPLAINED}


def test_fixture_features_are_what_both_tools_read(venv: Path, tmp_path: Path) -> None:
    """Where the tools agree, they agree on the right thing: tabbook's features of a few pages."""
    from tabbook.book import read_book
    from tabbook.config import load_config

    shutil.copytree(FIXTURES, tmp_path / "book")
    config = load_config(tmp_path / "book")
    book = read_book(config, extra_files=False)
    keys = {fw: config.frameworks[fw].library for fw in config.tabs}
    feats = {p: {fw: differential.tabbook_features(book.pages[p], fw, keys[fw]) for fw in config.tabs}
             for p in ("headings.md", "code_tabs.md", "aliases.md", "refs.md", "math.md", "slides.md", "figures.md")}
    assert feats["headings.md"]["pytorch"]["headings"] == [
        (1, "Headings"), (2, "A subsection"), (3, "Deeper"), (2, "Not a heading for pandoc")]
    assert feats["code_tabs.md"]["pytorch"]["code"] == ["x = 1", "z = 3", "a = 1\nb = 2", "", "quiet = 1"]
    assert feats["code_tabs.md"]["mxnet"]["code"] == ["y = 2", "z = 3", "w = 4", "a = 1\nb = 2"]
    assert feats["aliases.md"]["pytorch"]["code"] == [
        "X = torch.ones((2, 3))\ny = torch.matmul(X, X.reshape((3, 2)))\nclass Net(nn.Module):\n    pass",
        "attention_weights_of_every_head = decoder_attention_weights_filled.reshape("
        "(-1, 2, num_blks, num_heads, data.num_steps))"]
    assert feats["aliases.md"]["mxnet"]["code"][0].startswith("X = np.ones((2, 3))\ny = np.dot(X, X.reshape((3, 2)))")
    assert feats["refs.md"]["pytorch"]["refs"] == [
        ("numref", "sec_headings"), ("numref", "sec_headings_sub"), ("cite", "Doe.2020"), ("cite", "Roe.2021"),
        ("numref", "sec_headings"), ("numref", "sec_headings")]
    assert feats["math.md"]["mxnet"]["equations"] == ["a = b + c.", "d = e", "f = g?", "y = x,"]
    assert feats["figures.md"]["pytorch"]["tables"] == [
        ("", "", "| a | b |"), ("A labelled table, see Doe.2020", "tab_labelled", "| c | d |"),
        ("A table labelled below", "tab_below", "| e | f |"), ("A caption without a label", "", "| g | h |"),
        ("A caption that goes on over a second line", "tab_two_lines", "| i | j |"),
        ("A long caption above, see Doe.2020, with the label below the table", "tab_long_below", "| k | l |")]
    assert feats["figures.md"]["pytorch"]["figures"] == [
        ("A cat.", "../img/cat.svg"), ("one", "../img/a.svg"), ("two", "../img/b.svg")]
    assert feats["slides.md"]["pytorch"]["slides"] == [
        "A new slide starts here", "this continues it", "only on the slide", "a slide-only title"]


def test_a_difference_nobody_explains_is_reported(venv: Path, tmp_path: Path) -> None:
    """The harness has teeth: a tabbook reading changed by one character is an unexplained
    difference at that page, tab and feature."""
    shutil.copytree(FIXTURES, tmp_path / "book")
    d2l = differential.d2lbook_reading(tmp_path / "book", ["aliases.md"], venv)
    from tabbook.config import load_config
    from tabbook.source.read import read_section

    config = load_config(FIXTURES)
    text = (FIXTURES / "aliases.md").read_text().replace("(2, 3)", "(2, 4)")
    section = read_section(text, "aliases.md", config.tabs, config.tabs[0])
    keys = {fw: config.frameworks[fw].library for fw in config.tabs}
    diffs = differential.compare_page("aliases.md", list(config.tabs), d2l["pages"]["aliases.md"], section,
                                      keys, ({}, {}), {"text": text})
    for d in diffs:
        d.explained = differential.explain(d)
    assert [(d.tab, d.feature, d.explained) for d in diffs if d.explained != "astor-wrap"] == [
        ("pytorch", "code", None), ("mxnet", "code", None)]
    unchanged = read_section((FIXTURES / "aliases.md").read_text(), "aliases.md", config.tabs, config.tabs[0])
    same = differential.compare_page("aliases.md", list(config.tabs), d2l["pages"]["aliases.md"], unchanged,
                                     keys, ({}, {}), {"text": ""})
    assert [differential.explain(d) for d in same] == ["astor-wrap", "astor-wrap"]


# --- random pages -------------------------------------------------------------------------------

LABELS = ["sec_one", "fig_two", "eq_three", "tab_four"]
word = st.sampled_from(["alpha", "beta", "gamma", "the", "model", "loss", "data", "x"])
words = st.lists(word, min_size=1, max_size=6).map(" ".join)
role = st.tuples(st.sampled_from(["numref", "ref", "eqref", "cite"]), st.sampled_from(LABELS + ["Doe.2020"]))
inline = st.one_of(
    words,
    role.map(lambda r: f":{r[0]}:`{r[1]}`"),
    role.map(lambda r: f"`:{r[0]}:`"),
    words.map(lambda w: f"[**{w}**]"),
    words.map(lambda w: f"(~~{w}~~)"),
    words.map(lambda w: f"`{w}`"),
    words.map(lambda w: f"$${w}$$"),
)
paragraph = st.lists(inline, min_size=1, max_size=5).map(" ".join)
heading = st.tuples(st.integers(2, 3), words, st.sampled_from(LABELS + [None])).map(
    lambda h: "#" * h[0] + " " + h[1] + (f"\n:label:`{h[2]}`" if h[2] else ""))
equation = st.tuples(words, st.sampled_from(LABELS + [None])).map(
    lambda e: f"$$\n{e[0]}\n$$" + (f"\n:eqlabel:`{e[1]}`" if e[1] else ""))
figure = st.tuples(words, st.sampled_from(LABELS + [None])).map(
    lambda f: f"![{f[0]}](../img/{f[0].split()[0]}.svg)" + (f"\n:label:`{f[1]}`" if f[1] else ""))
table = words.map(lambda w: f"| {w} | b |\n|---|---|\n| 1 | 2 |")
prose_tab = st.tuples(st.sampled_from(["pytorch", "mxnet", "pytorch, mxnet"]), paragraph).map(
    lambda t: f":begin_tab:`{t[0]}`\n{t[1]}\n:end_tab:")
tab_line = st.sampled_from(["", "%%tab pytorch\n", "#@tab mxnet\n", "%%tab all\n", "%%tab pytorch, mxnet\n",
                            "# %%tab mxnet\n"])
statement = st.sampled_from([
    "x = 1", "y = d2l.matmul(x, x)", "z = d2l.reshape(x, (1, 2))", "w = d2l.ones(3)", "print(x)  # a comment",
    "def f(a):\n    return a + 1", "import os", "for i in range(2):\n    x += i",
    "if tab.selected('pytorch'):\n    v = 1\nelse:\n    v = 2",
    "if tab.selected('mxnet'):\n    u = 1\nif tab.selected('pytorch'):\n    u = 2",
])
flag = st.sampled_from(["", "", "#@hide\n", "#@hide_code\n", "#@hide_output\n"])
code = st.tuples(tab_line, flag, st.lists(statement, min_size=1, max_size=4)).map(
    lambda c: "```{.python .input}\n" + c[0] + c[1] + "\n".join(c[2]) + "\n```")
caption_table = st.tuples(words, st.sampled_from(LABELS + [None]), st.booleans()).map(
    lambda t: f":{t[0]}\n" + (f":label:`{t[1]}`\n" if t[1] and t[2] else "") + "\n| x | y |\n|---|---|\n| 1 | 2 |"
    + (f"\n:label:`{t[1]}`" if t[1] and not t[2] else ""))
text_then_heading = st.tuples(paragraph, heading).map(lambda t: f"{t[0]}\n{t[1]}")
comment = role.map(lambda r: f"<!-- :{r[0]}:`{r[1]}` -->")
nested_fence = words.map(lambda w: f"````md\n```toc\n{w.split()[0]}\n```\n:numref:`sec_one`\n````")
list_math = st.tuples(words, words).map(lambda t: f"1. {t[0]}\n$$\n{t[1]}\n$$\n1. {t[0]}")
wide_figure = st.tuples(figure, st.sampled_from(["300px", "50%"])).map(lambda f: f"{f[0]}\n:width:`{f[1]}`")
block = st.one_of(paragraph, heading, equation, figure, table, caption_table, prose_tab, code, text_then_heading,
                  comment, nested_fence, list_math, wide_figure)
page = st.tuples(words, st.lists(block, min_size=1, max_size=8)).map(
    lambda p: f"# {p[0]}\n\n" + "\n\n".join(p[1]) + "\n")
EXAMPLES = int(os.environ.get("DIFFERENTIAL_EXAMPLES", "3"))


@settings(max_examples=EXAMPLES, deadline=None, derandomize=not os.environ.get("DIFFERENTIAL_RANDOM"),
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(pages=st.lists(page, min_size=1, max_size=6))
def test_random_pages_differ_only_where_explained(venv: Path, tmp_path_factory: pytest.TempPathFactory,
                                                  pages: list[str]) -> None:
    book = _book(tmp_path_factory.mktemp("random"), {f"page{i}.md": text for i, text in enumerate(pages)})
    diffs, _stats = differential.compare_book(book, venv)
    unexplained = [d.line() for d in diffs if not d.explained]
    assert not unexplained, "\n".join(unexplained)
