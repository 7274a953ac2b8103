"""``tabbook check``: every problem of a broken fixture book is listed, with file:line."""

from __future__ import annotations

import shutil
from pathlib import Path

from tabbook.check import check_book
from tabbook.config import load_config

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "book"


def _book(tmp_path: Path) -> Path:
    book = tmp_path / "book"
    shutil.copytree(FIXTURE, book)
    return book


def test_clean_fixture_has_no_problems(tmp_path: Path) -> None:
    assert check_book(load_config(_book(tmp_path))) == []


def test_all_problems_listed_in_one_run(tmp_path: Path) -> None:
    book = _book(tmp_path)
    sec = book / "sec.md"
    text = sec.read_text()
    text = text.replace(":numref:`fig_box`", ":numref:`fig_nowhere`")
    text = text.replace("img/box.svg", "img/missing.svg")
    sec.write_text(text)
    (book / "orphan.md").write_text("# Orphan\n:label:`sec_fixture`\n")
    (book / "bad.md").write_text("# Bad\n\n```{.python .input}\n%%tab gamma\nx = 1\n```\n")
    problems = check_book(load_config(book))
    msgs = [e.location_message() for e in problems]
    joined = "\n".join(msgs)
    assert "sec.md:4: :numref: to undefined label 'fig_nowhere'" in joined
    assert "sec.md:6: image file img/missing.svg does not exist" in joined
    # A page no toc lists builds as an orphan, as in d2lbook: a problem of a kind, a warning.
    assert "orphan.md:1: section is not listed in any ```toc block: built as an orphan page (no toc lists it) " \
        "[orphan-page]" in [w.shown() for w in problems]
    # Every one of them is read past (d2lbook's contract): a warning unless the build is strict.
    assert all(p.kind is not None for p in problems), [p.shown() for p in problems if p.kind is None]
    assert "orphan.md:2: duplicate label 'sec_fixture'" in joined or "sec.md:2: duplicate label" in joined
    assert "bad.md:4: unknown framework 'gamma'" in joined


def test_save_on_nested_statement_is_reported(tmp_path: Path) -> None:
    book = _book(tmp_path)
    sec = book / "sec.md"
    sec.write_text(sec.read_text().replace("    return 2 * x", "    y = 2 * x  #@save\n    return y"))
    msgs = [e.location_message() for e in check_book(load_config(book))]
    assert any("#@save marks a statement that is not top-level" in m and m.startswith("sec.md:") for m in msgs)


def test_every_problem_of_one_file_in_one_run(tmp_path: Path) -> None:
    """A file with several independent mistakes gets one message for each, not the first only."""
    book = _book(tmp_path)
    (book / "index.md").write_text((book / "index.md").read_text().replace("sec\n", "sec\nmany\n"))
    (book / "many.md").write_text(
        "# Many\n\n"                                                     # 1-2
        "```{.python .input}\n%%tab gamma\nx = 1\n```\n\n"               # 3-7: unknown framework (4)
        ":end_tab:\n\n"                                                  # 8: no matching :begin_tab:
        "```{.python .input}\n%%tab alpha\nif tab.selected('alhpa'):\n    y = 1\n```\n\n"  # 12: misspelt
        "```{.python .input}\n%%tab beta\nif True:\n    a = 1\n\tb = 2\n```\n\n"  # 20: tabs and spaces
        "```toc\n:maxdepth: deep\n```\n")                                # 24
    msgs = [e.location_message() for e in check_book(load_config(book))]
    assert [m for m in msgs if m.startswith("many.md:")] == [
        "many.md:4: unknown framework 'gamma' (config.ini tabs: alpha, beta): the cell is in no tab, left out",
        "many.md:8: :end_tab: without a matching :begin_tab:",
        "many.md:12: tab.selected names unknown framework 'alhpa' (config.ini tabs: alpha, beta)",
        "many.md:20: the code cell indents with both tabs and spaces; Python reads that ambiguously: "
        "use spaces only",
        "many.md:24: :maxdepth: needs an integer: left out",
    ]


def test_a_page_that_does_not_parse_causes_no_errors_elsewhere(tmp_path: Path) -> None:
    """One cause, one message: its labels and its toc entries are not reported missing again."""
    book = _book(tmp_path)
    (book / "index.md").write_text((book / "index.md").read_text().replace("sec\n", "sec\nparent\n"))
    (book / "parent.md").write_text("# Parent\n:label:`sec_parent`\n\n```toc\nchild\n```\n\n"
                                    "```{.python .input}\nx = 1\n")  # line 8: never closed
    (book / "child.md").write_text("# Child\n\nBack to :numref:`sec_parent`.\n")
    msgs = [e.location_message() for e in check_book(load_config(book))]
    assert msgs == ["parent.md:8: code fence is never closed"]


def test_a_check_with_warnings_says_so_and_does_not_say_no_problems(tmp_path: Path, capsys) -> None:  # noqa: ANN001
    """The summary line of ``tabbook check`` must not contradict the warnings printed above it."""
    from tabbook.cli import main

    book = _book(tmp_path)
    sec = book / "sec.md"
    sec.write_bytes(b"\xef\xbb\xbf" + sec.read_bytes())  # a byte-order mark: an [encoding] warning
    assert main(["-C", str(book), "check"]) == 0
    out, err = capsys.readouterr()
    assert "warning: sec.md" in err and "[encoding]" in err
    assert "no problems found" not in out
    assert "no errors; 1 warning (--strict makes warnings errors)" in out
    assert main(["-C", str(book), "check", "--strict"]) == 1
