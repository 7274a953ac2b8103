"""A/B of two tabbook checkouts: no-op and one-sentence prose-edit rebuilds, measured in one run.

Before/after figures for a change to the builder (e.g. ``git worktree add /tmp/before HEAD~3``):
each checkout builds a scratch copy of its own book with its own ``.venv`` (so each one's freeze
store is current for its own code), then the two are timed alternately, round by round, so
machine noise falls on both alike. A build that executes any unit is reported (it would not
be a no-op).

Usage: ``python bench/ab_rebuild.py BEFORE AFTER [--rounds 5]``; prints medians and AFTER/BEFORE.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

IGNORE = shutil.ignore_patterns("build", ".venv", ".git", "__pycache__", ".pytest_cache", ".ruff_cache",
                                ".hypothesis")
PAGE = "chapter_gpus/devices.md"
SENTENCE = "One sentence added for the benchmark."


def scratch_copy(repo: Path, into: Path) -> Path:
    book = into / repo.name
    shutil.copytree(repo, book, ignore=IGNORE, symlinks=True)
    return book


def timed_build(repo: Path, book: Path) -> float:
    t0 = time.perf_counter()
    proc = subprocess.run([str(repo / ".venv" / "bin" / "python"), "-m", "tabbook", "-C", str(book), "build"],
                          env={**os.environ, "PYTHONPATH": str(repo)}, cwd=repo, capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    if proc.returncode:
        raise SystemExit(f"{repo}: build failed\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    summary = proc.stdout.rsplit("[done]", 1)[-1]
    if "executed" in summary:
        print(f"note: {repo} executed units: {summary.strip()}")
    return seconds


def toggle_sentence(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    marked = f"\n\n{SENTENCE}\n\n"
    page.write_text(text.replace(marked, "\n\n", 1) if marked in text else text.replace("\n\n", marked, 1),
                    encoding="utf-8")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("before", type=Path)
    p.add_argument("after", type=Path)
    p.add_argument("--rounds", type=int, default=5)
    args = p.parse_args()
    repos = [args.before.resolve(), args.after.resolve()]
    with tempfile.TemporaryDirectory(prefix="tabbook-ab-") as tmp:
        books = [scratch_copy(r, Path(tmp) / str(i)) for i, r in enumerate(repos)]
        for repo, book in zip(repos, books, strict=True):
            timed_build(repo, book)  # cold: site built, nothing to execute when the store is current
        times: dict[tuple[int, str], list[float]] = {}
        for _ in range(args.rounds):
            for i, (repo, book) in enumerate(zip(repos, books, strict=True)):
                times.setdefault((i, "no-op"), []).append(timed_build(repo, book))
                toggle_sentence(book / PAGE)
                times.setdefault((i, "prose edit"), []).append(timed_build(repo, book))
    for kind in ("no-op", "prose edit"):
        before, after = (statistics.median(times[(i, kind)]) for i in (0, 1))
        print(f"{kind:<11} before {before:5.2f} s  after {after:5.2f} s  after/before {after / before:.3f}"
              f"  (median of {args.rounds})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
