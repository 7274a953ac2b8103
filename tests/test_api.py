"""``tabbook.api.build_book``: the Python entry builds a book as the command line does (issue 29)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tabbook.api import build_book

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "book"


@pytest.fixture
def book(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TABBOOK_WARM", "0")  # no warm builder left running by the test
    monkeypatch.setenv("TABBOOK_CACHE", str(tmp_path / "cache"))
    root = tmp_path / "book"
    shutil.copytree(FIXTURE, root)
    return root


def test_build_book_runs_the_targets_and_returns_the_status(book: Path, capsys: pytest.CaptureFixture) -> None:
    assert build_book(book, ["eval"], tab="alpha") == 0
    out = capsys.readouterr().out
    assert "1 executed" in out
    assert (book / "_freeze" / "sec" / "alpha.ipynb").is_file()
    assert not (book / "_freeze" / "sec" / "beta.ipynb").exists()  # --tab alpha: that tab's code only
    assert not (book / "build" / "html").exists()  # eval renders nothing
    assert build_book(book, ["rst"], execute=False) == 0
    assert (book / "build" / "src" / "sec.ipynb").is_file()  # Sphinx's sources: a page with code is a notebook


def test_build_book_reports_errors_as_the_command_does(book: Path, capsys: pytest.CaptureFixture) -> None:
    assert build_book(book, ["html"], tab="rust") == 1
    assert "--tab: unknown tab 'rust' (tabs: alpha, beta, or all)" in capsys.readouterr().err
    cfg = book / "config.ini"
    cfg.write_text(cfg.read_text().replace("cell_timeout = 60", "cell_timeout = soon"))
    assert build_book(book, ["eval"], options=["--jobs", "1"]) == 1
    err = capsys.readouterr().err
    assert "config.ini:" in err and "cell_timeout" in err
