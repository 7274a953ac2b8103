"""The command line's one error edge (issue 41, item 3): every exception reaches the user as a
located message or one tabbook line and exit status 1; ``--debug`` keeps the traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from tabbook import cli


def _boom(config: object, args: object) -> int:
    raise RuntimeError("something tabbook did not expect\nover two lines")


def test_an_unexpected_error_is_one_line_and_exit_1(book: Path, monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(cli.WITH_BOOK, "check", _boom)
    assert cli.main(["-C", str(book), "check"]) == 1
    err = capsys.readouterr().err
    assert err.splitlines() == ["tabbook: internal error: RuntimeError: something tabbook did not expect over two "
                                "lines (a bug in tabbook, not in your book; run again with --debug for the traceback)"]


def test_debug_keeps_the_traceback(book: Path, monkeypatch: pytest.MonkeyPatch,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(cli.WITH_BOOK, "check", _boom)
    assert cli.main(["--debug", "-C", str(book), "check"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("Traceback (most recent call last):") and "in _boom" in err
    assert err.rstrip().endswith("(a bug in tabbook, not in your book; the traceback is above)")


@pytest.mark.parametrize("exc", [RecursionError("maximum recursion depth exceeded"), MemoryError(),
                                 UnicodeDecodeError("utf-8", b"\xe9", 0, 1, "invalid continuation byte")])
def test_errors_python_raises_from_deep_inside_are_caught_too(book: Path, monkeypatch: pytest.MonkeyPatch,
                                                              capsys: pytest.CaptureFixture[str],
                                                              exc: Exception) -> None:
    def raise_it(config: object, args: object) -> int:
        raise exc
    monkeypatch.setitem(cli.WITH_BOOK, "check", raise_it)
    assert cli.main(["-C", str(book), "check"]) == 1
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and err.startswith(f"tabbook: internal error: {type(exc).__name__}")
