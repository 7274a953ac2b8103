"""``tabbook check``: every problem of a broken fixture book is listed, with file:line."""

from __future__ import annotations

import shutil
from pathlib import Path

from tabbook.config import load_config
from tabbook.source.check import check_book

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
    msgs = [e.location_message() for e in check_book(load_config(book))]
    joined = "\n".join(msgs)
    assert "sec.md:4: :numref: to undefined label 'fig_nowhere'" in joined
    assert "sec.md:6: image file img/missing.svg does not exist" in joined
    assert "orphan.md:1: section is not listed in any ```toc block" in joined
    assert "orphan.md:2: duplicate label 'sec_fixture'" in joined or "sec.md:2: duplicate label" in joined
    assert "bad.md:4: unknown framework 'gamma'" in joined


def test_save_on_nested_statement_is_reported(tmp_path: Path) -> None:
    book = _book(tmp_path)
    sec = book / "sec.md"
    sec.write_text(sec.read_text().replace("    return 2 * x", "    y = 2 * x  #@save\n    return y"))
    msgs = [e.location_message() for e in check_book(load_config(book))]
    assert any("#@save marks a statement that is not top-level" in m and m.startswith("sec.md:") for m in msgs)
