"""How the builder's own cost grows with the book: generated books of 10, 50 and 200 sections.

Every figure in the other benchmarks is for our seven pages; a whole textbook has hundreds. This
one generates books of N sections (chapters of ten) in four tabs — small cells, a saved function
per tab, prose with a formula, a figure-free cross-reference to the previous section — and fills
their freeze stores through :class:`tabbook.execute.store.FreezeStore` with entries under the
keys the builder computes (outputs made up, no kernel), so only the builder's own work is timed:

- ``check``: ``tabbook check`` (read, lint every page);
- full render: ``build --frozen`` after removing ``build/`` (read, library, plan, sources, Sphinx);
- no-op rebuild: the same build again, nothing changed;
- prose edit: one sentence of one section changed, then the build.

It prints each figure per size, in wall-clock and in CPU seconds (the builder and the processes
it waits for, Sphinx included), and its growth factor from the smallest to the largest size. The
targets are judged on CPU seconds: this machine is shared, and other work stretches the wall
clock of a one-second build by more than the builder itself changes.
Targets (issue 14): no-op and prose edit at 200 sections at most 2× those at 10 (only what
changed is re-rendered); check and full render at most linear (growth ≤ 200/10 = 20).

The four tabs run in the builder's own Python (``python = current``): nothing is imported for them.

Usage: ``.venv/bin/python bench/scale.py [--sizes 10,50,200] [--repeat 3] [--keep DIR]``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

TABS = ("north", "east", "south", "west")  # four tabs of this generated book; any names do
PER_CHAPTER = 10

CONFIG = """\
[project]
name = scale
title = Scale Book
author = Bench
version = 0.0.1

[build]
index = index.md
notebooks = *.md chapter_*/*.md
tabs = {tabs}
default_tab = {default}
cell_timeout = 60
{frameworks}"""

FRAMEWORK = """
[framework:{tab}]
label = {label}
module = {tab}
import = json
python = current
"""


def section_text(chapter: int, number: int, tabs: tuple[str, ...]) -> str:
    """One section: prose in paragraphs, a formula, a reference back, one cell per tab and a shared one."""
    label = f"sec_c{chapter}_s{number}"
    back = f"See :numref:`sec_c{chapter}_s{number - 1}` for the previous step." if number else ""
    cells = []
    for tab in tabs:
        cells.append(f"""```{{.python .input}}
%%tab {tab}
def step_{chapter}_{number}_{tab}(x):  #@save
    \"\"\"Section {chapter}.{number}'s step in {tab}.\"\"\"
    return [v * {number + 1} for v in x]

print(step_{chapter}_{number}_{tab}([1, 2, 3]))
```
""")
    return f"""# Step {chapter}.{number}
:label:`{label}`

This section explains step {number} of chapter {chapter}. The rate $\\eta_{{{number}}}$ scales the
update $w \\leftarrow w - \\eta \\nabla L(w)$ as before. {back}

A second paragraph with **bold**, `code` and a [link](https://example.org) keeps the page
realistic: readers skim prose between the code cells.

{chr(10).join(cells)}
```{{.python .input}}
%%tab all
print('shared cell of {label}')
```

## Exercises

1. Change the rate of step {number} and rerun.
2. What does step {number} return for an empty list?
"""


def make_book(root: Path, sections: int, tabs: tuple[str, ...] = TABS) -> Path:
    """The generated book: ``chapter_k/`` folders of ten sections, an index per chapter."""
    book = root / f"book{sections}"
    book.mkdir(parents=True)
    frameworks = "".join(FRAMEWORK.format(tab=t, label=t.title()) for t in tabs)
    (book / "config.ini").write_text(CONFIG.format(tabs=", ".join(tabs), default=tabs[0], frameworks=frameworks))
    chapters = []
    for c in range((sections + PER_CHAPTER - 1) // PER_CHAPTER):
        folder = book / f"chapter_{c}"
        folder.mkdir()
        names = []
        for s in range(min(PER_CHAPTER, sections - c * PER_CHAPTER)):
            (folder / f"step_{s}.md").write_text(section_text(c, s, tabs))
            names.append(f"step_{s}")
        (folder / "index.md").write_text(f"# Chapter {c}\n:label:`chap_{c}`\n\nChapter {c} in {len(names)} steps.\n\n"
                                         "```toc\n:maxdepth: 2\n\n" + "\n".join(names) + "\n```\n")
        chapters.append(f"chapter_{c}/index")
    (book / "index.md").write_text("# Scale Book\n\n```toc\n:maxdepth: 2\n:numbered:\n\n"
                                   + "\n".join(chapters) + "\n```\n")
    return book


def freeze(book: Path) -> int:
    """Fill the book's store with an entry per unit under the builder's own keys; no kernel runs.

    The entry is what the worker would have returned (the unit's cells with a stdout output
    each), stored by :class:`FreezeStore` exactly as a build stores it.
    """
    from tabbook.book import read_book
    from tabbook.config import load_config
    from tabbook.execute import plan as planner
    from tabbook.execute.job import Provenance
    from tabbook.execute.runner import build_notebook
    from tabbook.execute.store import FreezeStore
    from tabbook.library.cache import book_library
    from tabbook.library.generate import write_library

    config = load_config(book)
    the_book = read_book(config)
    the_book.raise_problems()
    write_library(config, book_library(the_book))
    store = FreezeStore(config.freeze_dir)
    the_plan = planner.plan(config, the_book.sections, book_library(the_book), store, planner.Selection())
    the_plan.keys_for_todo(config)  # the keys of units with no entry are completed only for those that run
    todo = the_plan.todo
    for unit, parts in todo:
        nb = build_notebook(unit)
        for n, cell in enumerate(nb["cells"], 1):
            cell["metadata"].pop("tabbook", None)
            cell["execution_count"] = n
            cell["outputs"] = [{"output_type": "stream", "name": "stdout", "text": f"output {n} of {unit.name}\n"}]
        provenance = {"framework": unit.framework, "framework_version": "0", "python": "3.11", "cpu": "bench",
                      "gpus": [], "device": "CPU only", "date": "2026-01-01", "host_platform": "bench"}
        store.store(unit.section, unit.framework, nb, parts, Provenance.from_dict(provenance), 0.1)
    return len(todo)


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def tabbook(book: Path, *args: str) -> tuple[float, float]:
    """Run the builder; (wall seconds, CPU seconds of it and every process it waited for: Sphinx)."""
    t0, c0 = time.perf_counter(), _children_cpu()
    proc = subprocess.run([sys.executable, "-m", "tabbook", "-C", str(book), *args], cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT), "TF_CPP_MIN_LOG_LEVEL": "2"},
                          capture_output=True, text=True)
    seconds, cpu = time.perf_counter() - t0, _children_cpu() - c0
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout[-3000:] + proc.stderr[-3000:])
        raise SystemExit(f"tabbook {' '.join(args)} failed on {book}")
    return seconds, cpu


def prose_edit(book: Path, n: int) -> None:
    """One sentence of the middle section changed (a different word each time)."""
    pages = sorted(book.glob("chapter_*/step_*.md"))
    page = pages[len(pages) // 2]
    text = page.read_text()
    old = "keeps the page\nrealistic" if n == 0 else f"keeps the page (edit {n - 1})\nrealistic"
    assert old in text, page
    page.write_text(text.replace(old, f"keeps the page (edit {n})\nrealistic"))


Runs = dict[str, list[tuple[float, float]]]


def measure(book: Path, repeat: int) -> Runs:
    """(wall, CPU) seconds of each figure, ``repeat`` times (the full render from an empty build/ each time)."""
    figures: Runs = {"check": [], "full render": [], "no-op rebuild": [], "prose edit": []}
    for i in range(repeat):
        figures["check"].append(tabbook(book, "check"))
        shutil.rmtree(book / "build", ignore_errors=True)
        figures["full render"].append(tabbook(book, "build", "--frozen"))
        figures["no-op rebuild"].append(tabbook(book, "build", "--frozen"))
        prose_edit(book, i)
        figures["prose edit"].append(tabbook(book, "build", "--frozen"))
    return figures


TARGETS = {  # figure -> (what, the largest growth that meets it, given the sizes' ratio)
    "check": ("at most linear", lambda ratio: ratio),
    "full render": ("at most linear", lambda ratio: ratio),
    "no-op rebuild": ("<= 2x", lambda ratio: 2.0),
    "prose edit": ("<= 2x", lambda ratio: 2.0),
}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="10,50,200", help="comma list of section counts (default 10,50,200)")
    ap.add_argument("--repeat", type=int, default=3, help="runs of each figure per size (median shown)")
    ap.add_argument("--keep", type=Path, help="generate the books here and keep them")
    args = ap.parse_args()
    sizes = sorted({int(s) for s in args.sizes.split(",") if s.strip()})
    if len(sizes) < 2:
        ap.error("--sizes needs at least two sizes to give a growth factor")
    workdir = args.keep or Path(tempfile.mkdtemp(prefix="tabbook-scale-"))
    results: dict[int, Runs] = {}
    try:
        for n in sizes:
            book = workdir / f"book{n}"
            if book.exists():
                shutil.rmtree(book)
            book = make_book(workdir, n)
            t0 = time.perf_counter()
            units = freeze(book)
            print(f"[scale] {n} sections: {units} units frozen in {time.perf_counter() - t0:.1f} s; timing…",
                  flush=True)
            results[n] = measure(book, args.repeat)
    finally:
        if args.keep is None:
            shutil.rmtree(workdir, ignore_errors=True)
    lo, hi = sizes[0], sizes[-1]
    ratio = hi / lo
    print(f"\nmedians of {args.repeat} runs, wall-clock seconds and CPU seconds (the builder and the processes it "
          f"waits for: Sphinx);\ngrowth = figure at {hi} / figure at {lo} sections ({ratio:.0f}x the sections), "
          "judged on CPU seconds: on a shared machine other work stretches the wall clock, not the CPU time")
    head = "".join(f"{f'{n} wall':>10}{f'{n} cpu':>9}" for n in sizes)
    print(f"{'figure':15}{head}{'growth wall':>13}{'growth cpu':>12}  target")
    missed = 0
    summary = {}
    for figure, (what, limit) in TARGETS.items():
        wall = {n: statistics.median(w for w, _ in results[n][figure]) for n in sizes}
        cpu = {n: statistics.median(c for _, c in results[n][figure]) for n in sizes}
        growth_wall, growth_cpu = wall[hi] / wall[lo], cpu[hi] / cpu[lo]
        ok = growth_cpu <= limit(ratio)
        missed += not ok
        summary[figure] = {"wall": wall, "cpu": cpu, "growth_wall": round(growth_wall, 2),
                           "growth_cpu": round(growth_cpu, 2), "ok": ok,
                           "runs": {n: [[round(w, 2), round(c, 2)] for w, c in results[n][figure]] for n in sizes}}
        cells = "".join(f"{wall[n]:10.2f}{cpu[n]:9.2f}" for n in sizes)
        print(f"{figure:15}{cells}{growth_wall:13.2f}{growth_cpu:12.2f}  "
              f"{what} ({limit(ratio):.0f}x): {'met' if ok else 'MISSED'}")
    print("\n" + json.dumps(summary))
    return 1 if missed else 0


if __name__ == "__main__":
    raise SystemExit(main())
