"""The corpus: d2lbook books built unchanged by tabbook, and by d2lbook 1.0.3 beside it, in one run.

README promises that a d2lbook book builds unchanged; issue 44 found that none of fourteen public
ones did. This is the check, run by hand on the books (they are not ours, so not in CI)::

    make corpus BOOKS=/path/to/books [ONLY=d2l-pt,mlc-en] [D2LBOOK=0]

``BOOKS`` is a folder of books, one per subfolder: a subfolder with a ``config.ini`` is a book,
and so is its ``docs/`` when that has one (d2lbook's own manual). Each book is copied to a
scratch folder (the checkout is only read; a build writes ``build/`` and regenerates ``d2l/``),
then, one book after the other:

1. ``tabbook build html --no-execute`` in the copy, as the book's author would run it: its exit
   status, its time, the problems ``build/report.json`` lists by kind (:mod:`tabbook.problems`),
   any Python traceback in its output, and how many of the pages d2lbook selects
   (``[build] notebooks`` minus ``exclusions`` and ``non-notebooks``, read with d2lbook's own
   ``glob(recursive=True)``) have their HTML page;
2. ``tabbook build html --no-execute --strict`` (a no-op: the pages are current), which must
   exit 1 when there are warnings, listing them all;
3. d2lbook 1.0.3 on another copy (``bench/d2lbook_book.py``'s environment and config edits:
   execution off, no LaTeX download): ``d2lbook build eval`` per tab, ``rst``, ``html``, timed
   end to end; its exit status and where it stopped, its pages, its ``WARNING`` lines.

It prints one row per book as it goes, then the Markdown table (BENCHMARKS.md keeps it) and,
with ``--json FILE``, everything measured. Exit status 1 when a book fails the contract: tabbook
exits non-zero, leaves a selected page unrendered, prints a traceback, or a warning without a
``file:LINE``, or ``--strict`` exits 0 despite warnings.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from configparser import ConfigParser
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import d2lbook_book  # noqa: E402 - bench/ is not a package

ROOT = Path(__file__).resolve().parent.parent
TABBOOK = ROOT / ".venv" / "bin" / "tabbook"
TIMEOUT = 3600  # seconds one build may take
D2LBOOK_DEFAULTS = {"notebooks": "**/*.md", "exclusions": "", "non-notebooks": ""}


def find_books(folder: Path, only: set[str] | None) -> list[tuple[str, Path]]:
    """(name, root) of every book in ``folder``: a subfolder with config.ini, or its docs/."""
    found = []
    for sub in sorted(p for p in folder.iterdir() if p.is_dir()):
        for root in (sub, sub / "docs"):
            if (root / "config.ini").is_file():
                found.append((sub.name, root))
                break
    return [(n, r) for n, r in found if not only or n in only]


def _read_build_keys(book: Path) -> dict[str, str]:
    parser = ConfigParser()  # d2lbook's reading (interpolation included)
    parser.read(book / "config.ini", encoding="utf-8")
    return {k: parser.get("build", k, fallback=v) for k, v in D2LBOOK_DEFAULTS.items()}


def _find_files(patterns: str, root: Path) -> set[str]:
    """d2lbook's ``utils.find_files``: each pattern globbed recursively (a folder: all under it)."""
    out = set()
    for pattern in patterns.split():
        full = os.path.join(root, pattern)
        if os.path.isdir(full):
            full = os.path.join(full, "**")
        out.update(os.path.relpath(f, root) for f in glob.glob(full, recursive=True) if os.path.isfile(f))
    return out


def d2lbook_selected(book: Path) -> list[str]:
    """The Markdown pages d2lbook builds: ``notebooks`` less ``exclusions`` and ``non-notebooks``."""
    keys = _read_build_keys(book)
    pages = _find_files(keys["notebooks"], book)
    pages -= _find_files(keys["exclusions"] + " " + keys["non-notebooks"], book)
    return sorted(p for p in pages if p.endswith(".md") and not p.startswith(("build/", "_build/")))


def _rendered(html: Path, pages: list[str]) -> int:
    return sum((html / (p[:-3] + ".html")).is_file() for p in pages)


def _run(cmd: list[str], cwd: Path, env: dict[str, str] | None = None) -> tuple[int, float, str]:
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=TIMEOUT)
        code, out = proc.returncode, proc.stdout + proc.stderr
    except subprocess.TimeoutExpired as exc:
        code, out = 124, f"timed out after {TIMEOUT} s\n{exc.stdout or ''}"
    return code, time.perf_counter() - t0, out


_LOCATED = re.compile(r"^warning: (?:[^\s:]+:\d+(?::\d+)?: |Sphinx: |config\.ini: )")


def tabbook_side(copy: Path, pages: list[str], log: Path) -> dict:
    """``tabbook build html --no-execute`` in ``copy``, then the same with ``--strict``."""
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "TABBOOK_WARM", "TABBOOK_OVERLAY")}
    code, seconds, out = _run([str(TABBOOK), "build", "html", "--no-execute"], copy, env)
    report_path = copy / "build" / "report.json"
    try:
        problems = json.loads(report_path.read_text())["problems"]
    except (OSError, ValueError, KeyError):
        problems = []
    warnings = [line for line in out.splitlines() if line.startswith("warning: ")]
    strict_code, strict_seconds, strict_out = _run([str(TABBOOK), "build", "html", "--no-execute", "--strict"],
                                                   copy, env)
    listed = sum(1 for line in strict_out.splitlines() if re.match(r"^[^\s]+:\d+(:\d+)?: |^Sphinx: |^config\.ini", line))
    log.write_text(f"$ tabbook build html --no-execute\n{out}\n$ tabbook build html --no-execute --strict\n{strict_out}")
    return {
        "exit": code, "seconds": round(seconds, 1), "rendered": _rendered(copy / "build" / "html", pages),
        "problems": dict(Counter(p["kind"] or "error" for p in problems)),
        "warnings": len(warnings), "unlocated": [w for w in warnings if not _LOCATED.match(w)],
        "traceback": "Traceback (most recent call last)" in out,
        "strict_exit": strict_code, "strict_listed": listed, "strict_seconds": round(strict_seconds, 1),
    }


def d2lbook_side(copy: Path, pages: list[str], venv: Path, log: Path) -> dict:
    """d2lbook 1.0.3 in ``copy`` (execution off): every step timed, stopping at the first that fails."""
    tabs = d2lbook_book.edit_config(copy / "config.ini")
    d2lbook = str(venv / "bin" / "d2lbook")
    env = {**os.environ, "PATH": f"{venv / 'bin'}:{os.environ.get('PATH', '')}",
           "PYTHONPATH": str(copy), "PYTHONWARNINGS": "ignore"}
    env.pop("VIRTUAL_ENV", None)
    steps = [[d2lbook, "build", "eval", *(["--tab", t] if t else [])] for t in tabs or [None]]
    every = ["--tab", "all"] if len(tabs) > 1 else []
    steps += [[d2lbook, "build", "rst", *every], [d2lbook, "build", "html", *every]]
    total, outputs, code, stopped = 0.0, [], 0, ""
    for cmd in steps:
        if cmd[2] == "html":  # what d2l-en's script does between rst and html
            front = copy / "static" / "frontpage" / "frontpage.html"
            rst = copy / "_build" / ("rst_all" if every else "rst")
            if front.is_file() and rst.is_dir():
                shutil.copy2(front, rst / "frontpage.html")
        code, seconds, out = _run(cmd, copy, env)
        total += seconds
        outputs.append(f"$ {' '.join(cmd[1:])} (exit {code}, {seconds:.1f} s)\n{out}")
        if code != 0:
            stopped = " ".join(cmd[2:])
            break
    text = "\n".join(outputs)
    log.write_text(text)
    return {"exit": code, "seconds": round(total, 1), "stopped_at": stopped,
            "rendered": _rendered(copy / "_build" / "html", pages),
            "warnings": len(re.findall(r"\bWARNING:", text)), "traceback": "Traceback (most recent call last)" in text}


def failures(row: dict) -> list[str]:
    """What keeps a book from meeting the contract (issue 44's "done when")."""
    t = row["tabbook"]
    out = []
    if t["exit"] != 0:
        out.append(f"exit {t['exit']}")
    if t["rendered"] < row["selected"]:
        out.append(f"{row['selected'] - t['rendered']} selected pages not rendered")
    if t["traceback"]:
        out.append("a traceback")
    if t["unlocated"]:
        out.append(f"{len(t['unlocated'])} warnings without file:LINE")
    if t["warnings"] and t["strict_exit"] != 1:
        out.append(f"--strict exits {t['strict_exit']}")
    return out


def _kinds(problems: dict[str, int]) -> str:
    return ", ".join(f"{k} {n}" for k, n in sorted(problems.items(), key=lambda kv: (-kv[1], kv[0]))) or "none"


def table(rows: list[dict]) -> str:
    out = ["| book | tabbook exit | pages rendered / d2lbook selects | warnings by kind | `--strict` | "
           "tabbook s | d2lbook 1.0.3 | d2lbook s |",
           "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        t, d = r["tabbook"], r.get("d2lbook")
        strict = f"exit {t['strict_exit']}, {t['strict_listed']} listed" if t["warnings"] else f"exit {t['strict_exit']}"
        if d is None:
            theirs, their_s = "not run", ""
        else:
            theirs = (f"exit 0, {d['rendered']} pages, {d['warnings']} warnings" if d["exit"] == 0 else
                      f"exit {d['exit']} at `{d['stopped_at']}`{' (traceback)' if d['traceback'] else ''}")
            their_s = f"{d['seconds']:.0f}"
        out.append(f"| {r['book']} | {t['exit']} | {t['rendered']} / {r['selected']} | {_kinds(t['problems'])} | "
                   f"{strict} | {t['seconds']:.0f} | {theirs} | {their_s} |")
    return "\n".join(out) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("books", type=Path, help="a folder of d2lbook books, one per subfolder")
    ap.add_argument("--only", help="comma-separated names of the books to build")
    ap.add_argument("--no-d2lbook", action="store_true", help="tabbook only")
    ap.add_argument("--workdir", type=Path, help="scratch folder (default: a new temporary one, removed)")
    ap.add_argument("--json", type=Path, help="write everything measured here")
    args = ap.parse_args()
    books = find_books(args.books.resolve(), set(args.only.split(",")) if args.only else None)
    if not books:
        raise SystemExit(f"no book (a folder with config.ini) in {args.books}")
    venv = None if args.no_d2lbook else d2lbook_book.ensure_venv(d2lbook_book.BARE_VENV, autodoc=False)
    if venv is not None and not shutil.which("pandoc"):
        raise SystemExit("pandoc is not on the PATH (d2lbook needs it: apt-get install pandoc)")
    work = (args.workdir or Path(tempfile.mkdtemp(prefix="tabbook-corpus-"))).resolve()
    rows = []
    try:
        for name, book in books:
            pages = d2lbook_selected(book)
            row: dict = {"book": name, "selected": len(pages)}
            copy = work / "tabbook" / name
            shutil.rmtree(copy, ignore_errors=True)
            d2lbook_book.copy_book(book, copy)
            row["tabbook"] = tabbook_side(copy, pages, work / f"{name}.tabbook.log")
            if venv is not None:
                theirs = work / "d2lbook" / name
                shutil.rmtree(theirs, ignore_errors=True)
                d2lbook_book.copy_book(book, theirs)
                row["d2lbook"] = d2lbook_side(theirs, pages, venv, work / f"{name}.d2lbook.log")
            row["failures"] = failures(row)
            rows.append(row)
            print(f"[corpus] {name}: {json.dumps(row)}", file=sys.stderr, flush=True)
    finally:
        if args.json:
            args.json.write_text(json.dumps(rows, indent=1) + "\n")
        if args.workdir is None:
            shutil.rmtree(work, ignore_errors=True)
    print(table(rows))
    bad = [f"{r['book']}: {'; '.join(r['failures'])}" for r in rows if r["failures"]]
    for line in bad:
        print(f"[corpus] not yet: {line}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
