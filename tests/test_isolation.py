"""Builds that stay in their book and units that stay in their unit (issue 33, items 4 and 5):
a toc entry that leaves the book writes nothing there; a cell's daemonized child is gone when
its unit ends; a flood of output is capped while the cell runs; a memory cap fails the cell
that exceeds it, at its line."""

from __future__ import annotations

from pathlib import Path

from test_d2lbook_build import make_book, tabbook


def _files(folder: Path) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*"))


def test_a_toc_entry_to_an_existing_page_outside_the_book_writes_nothing_there(tmp_path: Path) -> None:
    book, overlay = make_book(tmp_path, eval_notebook=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "page.md").write_text("# Outside\n\n```{.python .input}\n%%tab all\nprint('out')\n```\n")
    chapter = book / "chapter_a" / "index.md"
    chapter.write_text(chapter.read_text().replace("second\n", "second\n../../outside/page\n", 1))
    proc = tabbook(book, overlay, "build")
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    line = chapter.read_text().splitlines().index("../../outside/page") + 1
    assert f"chapter_a/index.md:{line}: toc entry '../../outside/page': ../outside/page.md leaves the " \
           "book's folder" in out, out
    assert _files(outside) == ["page.md"]  # no store entry, no page, no notebook beside it
    assert not (tmp_path / "_freeze").exists() and not (book / "build" / "outside").exists()
    assert not (book / "_freeze").exists()  # the build stopped before executing anything
    check = tabbook(book, overlay, "check")
    assert check.returncode != 0 and f"chapter_a/index.md:{line}:" in check.stdout + check.stderr
