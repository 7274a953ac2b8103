"""``make bench``: every benchmark in one run, machine information first.

Prints the machine (CPU model, cores, GPU if any, framework versions from the
freeze store's provenance), then the build benchmark (bench/build_times.py),
the import cost of the d2l package (bench/import_cost.py), the page weight
of the site (bench/page_weight.py), and the side-by-side figures: tabbook beside
Sphinx + myst-nb's execution cache on a generated book (bench/peer_mystnb.py) and
beside d2lbook on this book's chapter (bench/d2lbook_chapter.py), edit → page updated with
the warm builder beside sphinx-autobuild (bench/terminal_edit.py), and how the
builder's cost grows with the book (bench/scale.py), and how many units one edit of a
saved block makes stale under each invalidation rule (bench/library_keys.py), what
fsync before each rename costs (bench/fsync.py), and how long a framework environment
takes to create with uv and with pip (bench/env_create.py), and, with $TABBOOK_BOOKS set, the
real books d2l-en and d2l-zh beside Sphinx + myst-nb (bench/realbook.py). Each
prints its targets beside its figures.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tabbook.execute.store import FreezeStore, provenance  # noqa: E402


def machine() -> None:
    cpu = platform.processor()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    print(f"machine: {cpu}, {os.cpu_count()} cores, Python {platform.python_version()}, {platform.platform()}")
    gpu = "none"
    if shutil.which("nvidia-smi"):
        out = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
                             capture_output=True, text=True)
        gpu = ", ".join(out.stdout.split("\n")).strip(", ") or "none"
    print(f"GPU: {gpu}")
    versions = {}
    store = FreezeStore(ROOT / "_freeze")
    for nb in store.entries():
        prov = provenance(json.loads(nb.read_text()))
        versions[prov["framework"]] = prov["framework_version"]
    print("frameworks: " + ", ".join(f"{k} {v}" for k, v in versions.items()))
    print()


def main() -> int:
    # Every figure times a command as a script runs it: no warm builder (tabbook.warm), even when
    # `make bench` runs at a terminal. bench/d2lbook_chapter.py times the warm builder itself
    # (TABBOOK_WARM=1) beside rows without it.
    os.environ["TABBOOK_WARM"] = "0"
    machine()
    rc = 0
    # env_create.py creates each framework's environment twice (pip, then uv) in a throw-away
    # folder: minutes, and the disk of two environments at a time.
    scripts = ["build_times.py", "import_cost.py", "page_weight.py", "peer_mystnb.py", "serve_latency.py",
               "terminal_edit.py", "scale.py", "library_keys.py", "fsync.py", "env_create.py"]
    # Beside d2lbook on our own chapter: needs Debian's pandoc (d2lbook converts with it) and
    # makes d2lbook's bench venv on first use.
    if shutil.which("pandoc"):
        scripts.append("d2lbook_chapter.py")
    else:
        print("== bench/d2lbook_chapter.py skipped: pandoc is not on the PATH (apt-get install pandoc)")
    # The real books (issue 50): d2l-en and d2l-zh, never in this repository; where they are
    # comes from $TABBOOK_BOOKS (bench/realbook.py says how to fetch them). About an hour at
    # N = 5 on two cores; $TABBOOK_BOOKS_RUNS sets N.
    if os.environ.get("TABBOOK_BOOKS"):
        scripts.append("realbook.py")
    else:
        print("== bench/realbook.py skipped: set TABBOOK_BOOKS to the folder holding d2l-en and d2l-zh "
              "(bench/realbook.py --help says how to fetch them)")
    for script in scripts:
        print(f"== bench/{script}", flush=True)
        extra = ["--runs", os.environ["TABBOOK_BOOKS_RUNS"]] if script == "realbook.py" and os.environ.get("TABBOOK_BOOKS_RUNS") else []
        rc |= subprocess.run([sys.executable, str(ROOT / "bench" / script), *extra],
                             cwd=ROOT).returncode
        print(flush=True)
    return rc


if __name__ == "__main__":
    raise SystemExit(main())
