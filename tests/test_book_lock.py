"""One build of a book at a time (issue 33, item 1): the book's build lock, the lock around
creating a shared framework environment, and the sweep of a killed build's temporary files.

The book is ``test_d2lbook_build.make_book``'s fixture with execution off, so a build is cheap:
the rounds of two concurrent builds mostly write ``build/src`` only (``--builder ''``, about a
second each), and a few run Sphinx too, where two unlocked builds were seen to fail (one
deleted the other's warnings file).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_d2lbook_build import ROOT, make_book, tabbook

from tabbook.files import LOCK_NAME, SWEPT_NAME, TEMP_NAME, exclusive

FIRST = "chapter_a/first.md"
#: Rounds of two concurrent builds; TABBOOK_LOCK_ROUNDS raises (or lowers) the cheap ones.
ROUNDS = int(os.environ.get("TABBOOK_LOCK_ROUNDS", "50"))
SPHINX_ROUNDS = 3


def _start(book: Path, overlay: Path, *args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TABBOOK_CACHE": str(book.parent / ".cache"), "TABBOOK_WARM": "0"}
    return subprocess.Popen([sys.executable, "-m", "tabbook", "-C", str(book), "--overlay", str(overlay), *args],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def _temporaries(book: Path) -> list[Path]:
    return [p for p in book.rglob("*") if TEMP_NAME.match(p.name)]


def _two_at_once(book: Path, overlay: Path, rounds: int, *args: str) -> None:
    waited = 0
    for n in range(rounds):
        page = book / FIRST
        page.write_text(page.read_text() + f"\nA sentence added in round {n}.\n")
        first = _start(book, overlay, "build", *args)
        # Started together: the part of a build that holds the lock is short beside
        # the interpreter's start, so any delay would let them run one after the other anyway.
        second = _start(book, overlay, "build", *args)
        for proc in (first, second):
            out, err = proc.communicate(timeout=300)
            assert proc.returncode == 0, f"round {n}: {out}\n{err}"
            waited += "[lock] waiting for another build of this book" in err
        src = (book / "build" / "src" / FIRST).with_suffix(".ipynb").read_text()
        assert f"A sentence added in round {n}." in src, f"round {n}: build/src is not the last edit"
        assert not _temporaries(book), f"round {n}: {_temporaries(book)}"
    # The builds did run at the same time, and one waited for the other (without the lock they
    # would have interleaved: since the restructure's unique temporary names, mostly unnoticed).
    assert waited >= 1, f"in none of {rounds} rounds did a build wait for the other"


def test_two_builds_at_once_both_succeed_round_after_round(tmp_path: Path) -> None:
    book, overlay = make_book(tmp_path)
    assert tabbook(book, overlay, "build", "--builder", "").returncode == 0
    _two_at_once(book, overlay, ROUNDS, "--builder", "")


def test_two_builds_at_once_with_sphinx_both_succeed(tmp_path: Path) -> None:
    book, overlay = make_book(tmp_path)
    assert tabbook(book, overlay, "build").returncode == 0
    _two_at_once(book, overlay, SPHINX_ROUNDS)
    assert (book / "build" / "html" / "chapter_a" / "first.html").is_file()


HOLD = """
import sys, time
from pathlib import Path
from tabbook.files import book_lock
with book_lock(Path(sys.argv[1])):
    print("held", flush=True)
    time.sleep(float(sys.argv[2]))
    Path(sys.argv[3]).write_text("released")
"""


def test_a_second_build_waits_for_the_first_says_for_whom_and_then_succeeds(tmp_path: Path) -> None:
    book, overlay = make_book(tmp_path)
    released = tmp_path / "released"
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(book / "build"), "3", str(released)],
                              stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert holder.stdout is not None and holder.stdout.readline() == "held\n"
    result = tabbook(book, overlay, "build", "--builder", "")
    holder.wait(timeout=60)
    assert result.returncode == 0, result.stderr
    assert f"[lock] waiting for another build of this book (pid {holder.pid})" in result.stderr
    # It did its work after the holder let go, not beside it.
    assert (book / "build" / "report.json").stat().st_mtime >= released.stat().st_mtime


def result_pid(book: Path) -> int:
    """The pid the lock file names: the last holder's (it is written on taking the lock)."""
    return int((book / "build" / LOCK_NAME).read_text())


def test_the_lock_file_names_the_holder_and_clean_keeps_builds_apart(tmp_path: Path) -> None:
    book, overlay = make_book(tmp_path)
    assert tabbook(book, overlay, "build", "--builder", "").returncode == 0
    assert result_pid(book) > 0
    cleaned = _start(book, overlay, "clean")
    built = _start(book, overlay, "build", "--builder", "")
    for proc in (cleaned, built):
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, out + err


def test_a_killed_builds_old_temporary_files_are_swept_and_fresh_ones_kept(tmp_path: Path) -> None:
    book, overlay = make_book(tmp_path)
    assert tabbook(book, overlay, "build", "--builder", "").returncode == 0
    old = [book / "build" / "src" / "chapter_a" / ".first.md.k2j4h6g8.tmp", book / "_freeze" / ".x.ipynb.abcd1234.tmp",
           book / "build" / ".report.json.zz_99xyz.tmp"]
    fresh = book / "build" / "src" / ".index.md.qwer5678.tmp"
    kept = book / "build" / "src" / "notes.tmp"  # not a name tabbook gives its temporaries
    for path in [*old, fresh, kept]:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("half")
    an_hour_ago = time.time() - 3600
    for path in [*old, kept]:
        os.utime(path, (an_hour_ago, an_hour_ago))
    (book / "build" / SWEPT_NAME).unlink()  # the last sweep was long ago
    assert tabbook(book, overlay, "build", "--builder", "").returncode == 0
    assert [p for p in old if p.exists()] == []
    assert fresh.exists() and kept.exists()


def test_creating_a_shared_environment_waits_for_the_process_creating_it(tmp_path: Path) -> None:
    lock = tmp_path / ".pytorch-abc.lock"
    released = tmp_path / "released"
    code = ("import sys, time; from pathlib import Path; from tabbook.files import exclusive\n"
            "with exclusive(Path(sys.argv[1]), 'x'):\n    print('held', flush=True); time.sleep(1.5)\n"
            "    Path(sys.argv[2]).write_text('released')\n")
    holder = subprocess.Popen([sys.executable, "-c", code, str(lock), str(released)], stdout=subprocess.PIPE,
                              text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert holder.stdout is not None and holder.stdout.readline() == "held\n"
    said: list[str] = []
    with exclusive(lock, "another process creating the pytorch environment", log=said.append):
        assert released.exists()  # the holder had finished before this got the lock
    holder.wait()
    assert said == [f"[lock] waiting for another process creating the pytorch environment (pid {holder.pid}) "
                    f"to finish; lock: {lock.resolve()}"]


@pytest.mark.parametrize("nested", [1, 3])
def test_the_book_lock_is_reentrant_in_one_process(tmp_path: Path, nested: int) -> None:
    from contextlib import ExitStack

    from tabbook.files import book_lock

    with ExitStack() as stack:
        for _ in range(nested):
            stack.enter_context(book_lock(tmp_path / "build", log=pytest.fail))
    with book_lock(tmp_path / "build", log=pytest.fail):  # released: taken again without waiting
        assert result_pid(tmp_path) == os.getpid()
