"""Crash consistency (issue 41, item 6): a small build killed at random points, round after round.

Each round edits the book (a code cell, so a unit runs, and prose, so Sphinx renders), starts a
build and ends it after a random delay with a random signal: SIGKILL mostly (no clean-up at
all), SIGTERM or SIGINT otherwise. The next round starts from whatever that left. After every
kill the book must be consistent: every freeze entry a whole, valid notebook, every generated
``d2l/*.py`` whole Python, every page of ``build/src`` whole, and no process of the build still
running. After the last round a build must pass, and so must ``--frozen --strict``, showing
the last edit's output.

Bounded to a few rounds of seconds each in ``make test``; ``TABBOOK_CRASH_ROUNDS=50`` runs more,
``TABBOOK_CRASH_SEED`` repeats a run (the seed is printed when a round fails).
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from procs import gone, left_by
from test_d2lbook_build import ROOT, make_book, tabbook

from tabbook.execute.entrycheck import read_entry

ROUNDS = int(os.environ.get("TABBOOK_CRASH_ROUNDS", "5"))
SEED = int(os.environ.get("TABBOOK_CRASH_SEED", str(random.randrange(2**32))))
SIGNALS = (signal.SIGKILL, signal.SIGKILL, signal.SIGKILL, signal.SIGTERM, signal.SIGINT)


def _edit(book: Path, n: int) -> None:
    second = book / "chapter_a" / "second.md"
    text = second.read_text()
    old = text[text.index("print('second says', "):].split("\n", 1)[0]
    second.write_text(text.replace(old, f"print('second says', {n})", 1))
    first = book / "chapter_a" / "first.md"
    first.write_text(first.read_text() + f"\nRound {n}.\n")


def _consistent(book: Path, build: int, where: str) -> None:
    """Whatever a killed build left is whole, and nothing of it still runs."""
    for entry in (book / "_freeze").rglob("*.ipynb"):
        read_entry(entry)  # a BookError (damaged entry) fails the round
    for module in (book / "d2l").glob("*.py"):
        compile(module.read_text(encoding="utf-8"), str(module), "exec")
    src = book / "build" / "src"
    for page in src.rglob("*.ipynb") if src.is_dir() else ():
        json.loads(page.read_text(encoding="utf-8"))
    assert gone(lambda: left_by(book, build), 30) == [], f"{where}: the killed build left processes running"


def test_builds_killed_at_random_points_leave_a_whole_book_and_the_next_build_recovers(tmp_path: Path) -> None:
    rng = random.Random(SEED)
    book, overlay = make_book(tmp_path, eval_notebook=True)
    first = tabbook(book, overlay, "build")
    assert first.returncode == 0, first.stdout + first.stderr
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TABBOOK_CACHE": str(tmp_path / ".cache")}
    for n in range(1, ROUNDS + 1):
        _edit(book, 100 + n)
        delay, sig = rng.uniform(0.05, 6.0), rng.choice(SIGNALS)
        where = f"round {n} (seed {SEED}: {sig.name} after {delay:.2f}s)"
        proc = subprocess.Popen([sys.executable, "-m", "tabbook", "-C", str(book), "--overlay", str(overlay), "build"],
                                cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(delay)
        proc.send_signal(sig)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:  # pragma: no cover - the assertion says it
            proc.kill()
            raise AssertionError(f"{where}: the build did not stop") from None
        _consistent(book, proc.pid, where)
    done = tabbook(book, overlay, "build")
    assert done.returncode == 0, f"seed {SEED}: " + done.stdout + done.stderr
    frozen = tabbook(book, overlay, "build", "--frozen", "--strict")
    assert frozen.returncode == 0, f"seed {SEED}: " + frozen.stdout + frozen.stderr
    entry = read_entry(book / "_freeze" / "chapter_a" / "second" / "pytorch.ipynb")
    assert "".join(entry["cells"][0]["outputs"][0]["text"]) == f"second says {100 + ROUNDS}\n"
    print(f"[crash harness] {ROUNDS} rounds, seed {SEED}")
