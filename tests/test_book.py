"""The Book is read once: every stage of a build shares its pages, toc, labels and library."""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path

import pytest

import tabbook.book
import tabbook.library.generate
from tabbook.book import read_book
from tabbook.build import Options, build
from tabbook.check import check_book
from tabbook.config import load_config
from tabbook.execute.outcome import Selection

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "book"


@pytest.fixture
def book(tmp_path: Path) -> Path:
    root = tmp_path / "book"
    shutil.copytree(FIXTURE, root)
    return root


def test_a_build_reads_each_page_once_and_generates_the_library_once(
        book: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    reads: Counter[str] = Counter()
    generated: list[int] = []
    real_read, real_generate = tabbook.book.read_section, tabbook.library.generate.generate_library

    def counting_read(text: str, path: str, *args: object, **kwargs: object):  # noqa: ANN202
        reads[path] += 1
        return real_read(text, path, *args, **kwargs)

    def counting_generate(*args: object, **kwargs: object) -> dict[str, str]:
        generated.append(1)
        return real_generate(*args, **kwargs)

    monkeypatch.setattr(tabbook.book, "read_section", counting_read)
    monkeypatch.setattr(tabbook.library.generate, "generate_library", counting_generate)
    # Select no framework: every unit is skipped, so the build reads, checks, generates the
    # library and writes Sphinx's sources without starting a kernel.
    result = build(load_config(book), Options(Selection(frameworks=()), builder=""), log=lambda _: None)
    assert reads == {"index.md": 1, "sec.md": 1}
    assert generated == [1]
    assert {u.status for u in result.units} == {"skipped"}
    assert (book / "build" / "src" / "sec.ipynb").is_file() and (book / "d2l" / "alpha.py").is_file()


def test_the_book_collects_every_reading_problem(book: Path) -> None:
    (book / "index.md").write_text((book / "index.md").read_text().replace("sec\n", "sec\nmissing\nsec\n"))
    (book / "bad.md").write_text("# Bad\n\n```{.python .input}\n%%tab gamma\nx = 1\n```\n\n```{.python .input}\n")
    (book / "odd.md").write_text("# Odd\n\n```{.python .input}\n%%tab gamma\nx = 1\n```\n")
    result = read_book(load_config(book))
    msgs = [p.location_message() for p in result.problems]
    assert any(m.startswith("bad.md:8: code fence is never closed") for m in msgs)
    assert any(m.startswith("index.md:") and "missing.md does not exist" in m for m in msgs)
    assert any(m.startswith("index.md:") and "sec.md is listed twice" in m for m in msgs)
    assert result.toc == ["index.md", "sec.md"]  # the walk goes on past each problem
    # A page with only problems of a kind is read (d2lbook's contract), each kept on it.
    assert [w.shown() for w in result.pages["odd.md"].warnings] == [
        "odd.md:4: unknown framework 'gamma' (config.ini tabs: alpha, beta): the cell is in no tab, left out "
        "[unknown-tab]"]
    with pytest.raises(Exception, match="code fence is never closed"):
        result.sections  # noqa: B018 - a build never starts on a book with a page it cannot read


def test_check_and_toc_agree_on_external_toc_entries(book: Path) -> None:
    """An external link in a toc block is navigation, not a page: neither check nor the walk wants a file."""
    index = book / "index.md"
    index.write_text(index.read_text().replace("sec\n", "sec\nhttps://example.org/more\n"))
    config = load_config(book)
    assert check_book(config) == []
    assert read_book(config).toc == ["index.md", "sec.md"]
    index.write_text(index.read_text().replace("https://example.org/more\n", "nowhere\n"))
    msgs = [p.location_message() for p in check_book(load_config(book))]
    assert len(msgs) == 1 and "toc entry 'nowhere': nowhere.md does not exist" in msgs[0]  # reported once


def test_nul_bytes_are_a_located_encoding_warning_and_read_as_u_fffd() -> None:
    """markdown-it turns U+0000 into U+FFFD (CommonMark), in code cells too, so a NUL pasted into a
    page changed a saved function's text without a word. Now it is an [encoding] warning at the
    first NUL's line and column, and the page's text holds U+FFFD everywhere, as markdown-it's does."""
    from tabbook.book import decode_page
    from tabbook.problems import Problem

    data = b"# Title\n\nSome\x00 prose.\n\n```{.python .input}\nx = 1  # a\x00b\n```\n"
    text, warnings = decode_page(data, "page.md")
    assert "\0" not in text and text.count("\ufffd") == 2
    assert [(w.shown(), w.column, w.kind) for w in warnings] == [
        ("page.md:3:5: 2 NUL bytes (U+0000) at column 5 and after: read as U+FFFD, as CommonMark says (in code "
         "too) [encoding]", 5, Problem.ENCODING)]
    assert [w.message for w in decode_page(b"# T\n\x00\n", "p.md")[1]] == [
        "a NUL byte (U+0000) at column 1: read as U+FFFD, as CommonMark says (in code too)"]
