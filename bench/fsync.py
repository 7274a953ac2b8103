"""What durability costs: writes with and without ``fsync`` (issue 33, durability).

``tabbook.files`` syncs each file's data before its rename and the folder after it
(:data:`tabbook.files.FSYNC`). Two measurements, each with the sync on and off, alternated
so that both see the same disk and cache state:

* **the store**: every entry of this book's ``_freeze/`` written again through
  :func:`tabbook.files.write_atomic` into a scratch folder (what a build that re-stamps or
  re-executes everything writes into the store);
* **a build**: ``tabbook build --no-execute`` of a scratch copy of this book, from nothing
  (``build/src``, the library, the site's downloads: every writer that goes through
  ``tabbook.files``; Sphinx's own HTML files are written by Sphinx), with
  ``$TABBOOK_NO_FSYNC=1`` for the row without.

and, where ``strace`` is installed, the same build once under ``strace -f -w -c -e fsync``: how
many syncs a build makes and the wall time spent in them, a figure the machine's noise does not
drown (the difference of two build times on a shared machine can).

Usage: ``python bench/fsync.py [--rounds N] [--no-build]``. Prints the median of N rounds.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tabbook import files  # noqa: E402


def write_store(entries: list[tuple[str, bytes]], into: Path, sync: bool) -> float:
    files.FSYNC = sync
    try:
        t0 = time.perf_counter()
        for rel, data in entries:
            files.write_atomic(into / rel, data)
        return time.perf_counter() - t0
    finally:
        files.FSYNC = True


def build(book: Path, sync: bool) -> float:
    shutil.rmtree(book / "build", ignore_errors=True)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TABBOOK_WARM": "0"}
    env.pop("TABBOOK_NO_FSYNC", None)
    if not sync:
        env["TABBOOK_NO_FSYNC"] = "1"
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "tabbook", "-C", str(book), "build", "--no-execute"],
                          env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"build failed:\n{proc.stdout}{proc.stderr}")
    return seconds


def traced_build(book: Path) -> tuple[int, float] | None:
    """(fsync calls, wall seconds in them) of one build from nothing, counted by strace."""
    if not shutil.which("strace"):
        return None
    shutil.rmtree(book / "build", ignore_errors=True)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TABBOOK_WARM": "0"}
    env.pop("TABBOOK_NO_FSYNC", None)
    with tempfile.NamedTemporaryFile("r", suffix=".strace") as summary:
        proc = subprocess.run(["strace", "-f", "-w", "-c", "-e", "trace=fsync", "-o", summary.name,
                               sys.executable, "-m", "tabbook", "-C", str(book), "build", "--no-execute"],
                              env=env, capture_output=True, text=True)
        if proc.returncode != 0:
            return None  # strace not allowed here (no ptrace), or the build failed: no figure
        for line in summary.read().splitlines():
            fields = line.split()
            if fields and fields[-1] == "fsync":
                return int(fields[3]), float(fields[1])
    return 0, 0.0


def scratch_book(into: Path) -> Path:
    book = into / "book"
    ignore = shutil.ignore_patterns("build", ".venv", ".git", "node_modules", "__pycache__", "books", "bench")
    shutil.copytree(ROOT, book, ignore=ignore, symlinks=True)
    return book


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--no-build", action="store_true", help="only the store")
    args = parser.parse_args()
    store = ROOT / "_freeze"
    entries = [(p.relative_to(store).as_posix(), p.read_bytes()) for p in sorted(store.rglob("*.ipynb"))]
    size = sum(len(d) for _, d in entries)
    with tempfile.TemporaryDirectory(prefix="tabbook-bench-fsync-", dir=ROOT / "build"
                                     if (ROOT / "build").is_dir() else None) as tmp:
        times: dict[bool, list[float]] = {True: [], False: []}
        for i in range(args.rounds):
            for sync in (True, False):
                into = Path(tmp) / f"store-{i}-{sync}"
                times[sync].append(write_store(entries, into, sync))
        on, off = statistics.median(times[True]), statistics.median(times[False])
        print(f"the store ({len(entries)} entries, {size / 1e6:.1f} MB), median of {args.rounds}: "
              f"fsync {on * 1000:.0f} ms, without {off * 1000:.0f} ms "
              f"(+{(on - off) * 1000 / len(entries):.1f} ms an entry)")
        if args.no_build:
            return 0
        book = scratch_book(Path(tmp))
        build(book, True)  # the first build makes the parse caches' folders and warms the disk cache
        btimes: dict[bool, list[float]] = {True: [], False: []}
        for _ in range(args.rounds):
            for sync in (True, False):
                btimes[sync].append(build(book, sync))
        on, off = statistics.median(btimes[True]), statistics.median(btimes[False])
        print(f"build --no-execute of this book from nothing, median of {args.rounds}: fsync {on:.2f} s, "
              f"without {off:.2f} s ({(on - off) / off * 100:+.1f} %; target: under +10 %)")
        traced = traced_build(book)
        if traced is not None:
            calls, seconds = traced
            print(f"the same build under strace: {calls} fsync calls, {seconds:.2f} s in them "
                  f"({seconds / on * 100:.1f} % of the build; target: under 10 %)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
