"""Benchmark the edit → build loop; prints seconds and ratios to a forced cold build.

Runs on a scratch copy of the book (never on the working tree):

- cold: ``build --force`` (every section × framework executed, Sphinx from scratch)
- no-op: the same build again, nothing changed
- prose edit: one sentence appended to a paragraph → expect 0 units executed
- code edit: a comment added to one framework-specific cell (``%%tab <t>`` for the
  first tab in config.ini that is not the default one) → expect 1 unit executed
- fresh clone: a copy with the current freeze store, no build/ and an empty venv folder
  (TABBOOK_VENVS, so no framework environment exists) → expect 0 units executed

Usage: ``.venv/bin/python bench/build_times.py [--repeat N] [--book DIR]``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tabbook.config import load_config  # noqa: E402

COPY_IGNORE = shutil.ignore_patterns("build", ".venv", ".git", "__pycache__", ".pytest_cache", ".ruff_cache",
                                     ".hypothesis")


def run_build(book: Path, *args: str, env: dict[str, str] | None = None) -> tuple[float, dict]:
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "tabbook", "-C", str(book), "build", *args],
        cwd=ROOT, env={**os.environ, **(env or {}), "PYTHONPATH": str(ROOT)},
        capture_output=True, text=True,
    )
    seconds = time.perf_counter() - t0
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout[-3000:] + proc.stderr[-3000:])
        raise SystemExit(f"build {' '.join(args)} failed")
    report = json.loads((book / "build" / "report.json").read_text())
    return seconds, report


def run_pdf(book: Path) -> tuple[float, dict]:
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "tabbook", "-C", str(book), "pdf"], cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout[-3000:] + proc.stderr[-3000:])
        raise SystemExit("make pdf failed")
    return seconds, json.loads((book / "build" / "report.json").read_text())


# Targets from the benchmarks issue: ratio to the cold build (and units executed).
TARGETS = {
    "no-op rebuild": ("<= 0.05 of cold", lambda ratio, r: ratio <= 0.05),
    "prose edit": ("<= 0.10 of cold, 0 run", lambda ratio, r: ratio <= 0.10 and not any(r["executed"])),
    "one-framework code edit": ("1 unit run", lambda ratio, r: all(n == 1 for n in r["executed"])),
    "fresh clone, frozen store": ("<= 0.10 of cold, 0 run", lambda ratio, r: ratio <= 0.10 and not any(r["executed"])),
}


def executed(report: dict) -> int:
    return sum(1 for u in report["units"] if u["status"] == "executed")


def first_match(book: Path, pattern: str) -> tuple[Path, re.Match[str]]:
    for md in sorted((book / "chapter_gpus").glob("*.md")):
        m = re.search(pattern, md.read_text(), re.M)
        if m:
            return md, m
    raise SystemExit(f"no match for {pattern!r} in the book")


def prose_edit(book: Path, n: int) -> None:
    md, m = first_match(book, r"^[A-Z][^\n`$:]{40,}\.$")
    text = md.read_text()
    md.write_text(text[: m.end()] + f" An edit for the benchmark ({n})." + text[m.end():])


def edited_tab(book: Path) -> str:
    """The framework whose cell the code edit touches: the first tab that is not the default."""
    config = load_config(book)
    return next((t for t in config.tabs if t != config.default_tab), config.default_tab)


def code_edit(book: Path, n: int) -> None:
    md, m = first_match(book, rf"^%%tab {re.escape(edited_tab(book))}\n")
    text = md.read_text()
    md.write_text(text[: m.end()] + f"# benchmark edit {n}\n" + text[m.end():])


def timed(label: str, repeat: int, setup, action) -> dict:
    times, runs = [], []
    for i in range(repeat):
        setup(i)
        seconds, report = action()
        times.append(seconds)
        runs.append(executed(report))
    return {"label": label, "median": statistics.median(times), "min": min(times), "max": max(times),
            "executed": runs}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-pdf", action="store_true", help="skip the `make pdf` row")
    ap.add_argument("--book", type=Path, default=ROOT)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="tabbook-bench-") as tmp:
        book = Path(tmp) / "book"
        shutil.copytree(args.book, book, ignore=COPY_IGNORE, symlinks=True)
        def cold() -> tuple[float, dict]:
            seconds, report = run_build(book, "--force")
            (book / "build" / "cold-report.json").write_text(json.dumps(report))
            return seconds, report

        rows = [timed("cold build (--force)", args.repeat, lambda i: None, cold)]
        rows.append(timed("no-op rebuild", args.repeat, lambda i: None, lambda: run_build(book)))
        rows.append(timed("prose edit", args.repeat, lambda i: prose_edit(book, i), lambda: run_build(book)))
        rows.append(timed("one-framework code edit", args.repeat, lambda i: code_edit(book, i),
                          lambda: run_build(book)))
        fresh = Path(tmp) / "fresh"
        empty_cache = Path(tmp) / "empty-cache"

        def fresh_setup(i: int) -> None:
            shutil.rmtree(fresh, ignore_errors=True)
            shutil.copytree(book, fresh, ignore=COPY_IGNORE, symlinks=True)

        rows.append(timed("fresh clone, frozen store", args.repeat, fresh_setup,
                          lambda: run_build(fresh, env={"TABBOOK_VENVS": str(empty_cache)})))
        created_env = empty_cache.exists() and any(empty_cache.rglob("pyvenv.cfg"))
        if not args.no_pdf:
            rows.append(timed("make pdf, current store", args.repeat, lambda i: None, lambda: run_pdf(book)))
        cold_report = json.loads((book / "build" / "cold-report.json").read_text()) \
            if (book / "build" / "cold-report.json").is_file() else None
    cold = rows[0]["median"]
    print(f"{'build':30} {'median s':>9} {'min':>7} {'max':>7} {'/cold':>7}  {'target':24} executed units")
    for r in rows:
        target, ok = TARGETS.get(r["label"], ("", None))
        ratio = r["median"] / cold
        verdict = "" if ok is None else (" ok" if ok(ratio, r) else " MISSED")
        print(f"{r['label']:30} {r['median']:9.2f} {r['min']:7.2f} {r['max']:7.2f} {ratio:7.3f}  "
              f"{target + verdict:24} {r['executed']}")
    if created_env:
        print("WARNING: the fresh-clone build created a framework environment")
    if cold_report:
        units = cold_report["units"]
        total = sum(u["seconds"] for u in units)
        wall = cold_report.get("execute_seconds") or total
        print()
        print("execution of the cold build, per (section, framework), seconds:")
        fws = sorted({u["framework"] for u in units})
        print(f"  {'section':32}" + "".join(f"{fw:>12}" for fw in fws))
        for sec in dict.fromkeys(u["section"] for u in units):
            row = {u["framework"]: u["seconds"] for u in units if u["section"] == sec}
            print(f"  {sec:32}" + "".join(f"{row.get(fw, 0):12.1f}" for fw in fws))
        speedup = total / wall if wall else 0
        print(f"  parallel speed-up: {total:.1f} s of units in {wall:.1f} s wall = {speedup:.2f}x "
              f"(target >= 1.6 on 2 cores: {'ok' if speedup >= 1.6 else 'MISSED'})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
