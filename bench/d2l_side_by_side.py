"""Time tabbook and d2lbook 1.0.3 in ONE run on the same copy of a d2lbook book, execution off.

Both tools build the same scratch copy of the book (``--book``; never modified), all of its
tabs, execution off:

- **tabbook**: ``<python> -m tabbook --overlay books/d2l-en/tabbook.ini -C COPY build
  --no-execute``, run from this repository (``--overlay`` picks another overlay);
- **d2lbook**: what ``bench/d2lbook_book.py`` runs (``build eval`` per tab, ``build rst --tab
  all``, ``build html --tab all``) in its venv, on the copy whose ``config.ini`` it edited
  (``eval_notebook = False``, no LaTeX style download). The edit is made once, before any
  build; tabbook builds the same edited copy (with execution off the edit changes nothing
  for it).

Each of ``--repeat N`` rounds (default 3) runs four builds, the tools interleaved so that the
machine's load falls on both alike, and the order swapped every round::

    cold A, cold B, no-op A, no-op B        A = tabbook in odd rounds, d2lbook in even ones

*Cold* removes that tool's build output and caches first: for tabbook ``COPY/build`` (the
site, the sources step's output, ``library-cache.json``) and its freeze store
(``COPY/_freeze``); for d2lbook ``COPY/_build``. tabbook's framework venvs
(``~/.cache/tabbook/venvs``) are shared caches, not part of cold, and are not needed with
execution off. *No-op* is the same command again with nothing changed in between (the other
tool's build in between writes only its own output folder; tabbook regenerates ``COPY/d2l/``
in place, as ``d2lbook build lib`` would, only when its content changes, i.e. on its first
build: from then on d2lbook's API page autodocs tabbook's ``d2l/torch.py``).

It prints one JSON object: every run's seconds (with the 1-minute load average before it),
the medians per tool and figure, and the ratios tabbook / d2lbook of the medians. d2lbook's
and tabbook's output goes to ``--log`` (default ``<workdir>/side-by-side.log``).

Usage (the whole d2l-en book: about 7 min a round on 2 cores; run it under nohup)::

    nohup .venv/bin/python bench/d2l_side_by_side.py --book /path/to/d2l-en \\
        [--repeat 3] [--workdir DIR] [--keep] [--tabs pytorch,mxnet] [--overlay FILE] \\
        > side-by-side.json 2> side-by-side.err &

or ``make d2l-side-by-side BOOK=/path/to/d2l-en [REPEAT=3]``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import IO

sys.path.insert(0, str(Path(__file__).resolve().parent))
import d2lbook_book  # noqa: E402  (bench/ is not a package)

REPO = Path(__file__).resolve().parent.parent
DEFAULT_OVERLAY = REPO / "books" / "d2l-en" / "tabbook.ini"


def log(msg: str) -> None:
    print(f"[side-by-side] {msg}", file=sys.stderr, flush=True)


def tabbook_build(copy: Path, overlay: Path, python: str, logf: IO[str]) -> float:
    """One tabbook build of ``copy`` with execution off; its seconds."""
    cmd = [python, "-m", "tabbook", "--overlay", str(overlay), "-C", str(copy), "build", "--no-execute"]
    logf.write(f"\n===== tabbook: {' '.join(cmd)}\n")
    logf.flush()
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=REPO, stdout=logf, stderr=subprocess.STDOUT)
    seconds = time.perf_counter() - t0
    logf.write(f"===== tabbook: exit {proc.returncode} in {seconds:.1f} s\n")
    logf.flush()
    if proc.returncode != 0:
        raise SystemExit(f"tabbook build failed (exit {proc.returncode}); see {logf.name}")
    return seconds


def d2lbook_build(copy: Path, venv: Path, tabs: list[str], logf: IO[str]) -> tuple[float, dict[str, float]]:
    result = d2lbook_book.build(copy, venv, tabs, logf)
    return result["total_s"], result["steps_s"]


def make_cold(tool: str, copy: Path) -> None:
    dirs = [copy / "build", copy / "_freeze"] if tool == "tabbook" else [copy / "_build"]
    for d in dirs:
        shutil.rmtree(d, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--book", type=Path, required=True, help="the book's checkout (read only)")
    ap.add_argument("--repeat", type=int, default=3, help="rounds (medians over them; default 3)")
    ap.add_argument("--workdir", type=Path, help="scratch folder (default: a new temporary one)")
    ap.add_argument("--keep", action="store_true", help="keep the scratch folder")
    ap.add_argument("--tabs", help="comma-separated tabs for d2lbook (default: all of config.ini's)")
    ap.add_argument("--overlay", type=Path, default=DEFAULT_OVERLAY, help="tabbook's overlay")
    ap.add_argument("--python", default=str(REPO / ".venv" / "bin" / "python"),
                    help="the Python that runs tabbook (default: this repository's .venv)")
    ap.add_argument("--venv", type=Path, default=d2lbook_book.DEFAULT_VENV, help="d2lbook's venv")
    ap.add_argument("--log", type=Path, help="both tools' output (default <workdir>/side-by-side.log)")
    args = ap.parse_args()
    if args.repeat < 1:
        raise SystemExit("--repeat must be at least 1")

    book = args.book.resolve()
    if not (book / "config.ini").is_file() or not (book / "index.md").is_file():
        raise SystemExit(f"{book} has no config.ini and index.md: not a d2lbook book")
    if not shutil.which("pandoc"):
        raise SystemExit("pandoc is not on the PATH (Debian: apt-get install pandoc)")
    venv = d2lbook_book.ensure_venv(args.venv.expanduser().resolve(), autodoc=True)

    workdir = (args.workdir or Path(tempfile.mkdtemp(prefix="d2l-side-by-side-"))).resolve()
    copy = workdir / book.name
    if copy.exists():
        shutil.rmtree(copy)
    workdir.mkdir(parents=True, exist_ok=True)
    log(f"copying {book} to {copy}")
    d2lbook_book.copy_book(book, copy)
    tabs = d2lbook_book.edit_config(copy / "config.ini")
    if args.tabs:
        tabs = [t.strip().lower() for t in args.tabs.split(",") if t.strip()]
    logpath = args.log or workdir / "side-by-side.log"

    runs: list[dict] = []
    result: dict = {
        "book": str(book), "copy": str(copy), "tabs": tabs, "repeat": args.repeat,
        "tabbook": f"{args.python} -m tabbook --overlay {args.overlay} -C COPY build --no-execute",
        "d2lbook": d2lbook_book.PINS[0], "cores": os.cpu_count(), "log": str(logpath),
        "started": time.strftime("%Y-%m-%d %H:%M:%S"), "runs": runs,
    }
    try:
        with open(logpath, "a") as logf:
            for rnd in range(args.repeat):
                order = ["tabbook", "d2lbook"] if rnd % 2 == 0 else ["d2lbook", "tabbook"]
                for kind in ("cold", "noop"):
                    for tool in order:
                        if kind == "cold":
                            make_cold(tool, copy)
                        load = round(os.getloadavg()[0], 2)
                        steps: dict[str, float] = {}
                        if tool == "tabbook":
                            seconds = tabbook_build(copy, args.overlay.resolve(), args.python, logf)
                        else:
                            seconds, steps = d2lbook_build(copy, venv, tabs, logf)
                        run = {"round": rnd + 1, "tool": tool, "kind": kind, "seconds": round(seconds, 2),
                               "load1_before": load}
                        if steps:
                            run["steps_s"] = steps
                        runs.append(run)
                        log(f"round {rnd + 1} {tool} {kind}: {seconds:.1f} s (load {load})")
            medians: dict[str, dict[str, float]] = {}
            for tool in ("tabbook", "d2lbook"):
                medians[tool] = {kind: round(statistics.median(
                    r["seconds"] for r in runs if r["tool"] == tool and r["kind"] == kind), 2)
                    for kind in ("cold", "noop")}
            result["median_s"] = medians
            result["ratio_tabbook_to_d2lbook"] = {
                kind: round(medians["tabbook"][kind] / medians["d2lbook"][kind], 3) for kind in ("cold", "noop")}
            result["output"] = {"d2lbook": d2lbook_book.html_summary(copy, tabs),
                                "tabbook_html_pages": sum(1 for _ in (copy / "build" / "html").rglob("*.html"))}
            result["finished"] = time.strftime("%Y-%m-%d %H:%M:%S")
    finally:
        if not args.keep and args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)
            result["copy"] = "(removed)"
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
