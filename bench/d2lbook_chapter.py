"""tabbook beside d2lbook 1.0.3 on this book's own chapter, executed, in one run.

The chapter is written in d2lbook's dialect, so both tools build the same scratch copy of the
book: its Markdown, images, bibliography and generated ``d2l/`` package.

- **d2lbook**: ``d2lbook build html`` (execute the default tab's notebooks, convert to reST,
  Sphinx) in the bench venv of ``bench/d2lbook_book.py`` (d2lbook 1.0.3 with ``setuptools<81``,
  ``pybtex==0.24.0`` and the PyTorch stack its notebooks run with), ``PYTHONPATH`` at the copy
  so ``from d2l import torch as d2l`` finds the generated package, a ``config.ini`` written for
  it (d2lbook's keys; ``tabs = pytorch``; no LaTeX style download). d2lbook asks ``nvidia-smi``
  how many GPUs there are and refuses to run a notebook that mentions GPUs without one; a stand-in
  ``nvidia-smi`` on its PATH says 2 (there is no GPU: CPU torch falls back to the CPU).
- **tabbook**: ``python -m tabbook -C COPY build``; for the one-framework figures with
  ``--frameworks pytorch`` (only PyTorch code runs; the pages still carry all four tabs, the
  others' cells without outputs, so tabbook renders more than d2lbook does), for the
  four-framework cold build without it. As a person at a terminal runs it: with the warm
  builder (``TABBOOK_WARM=1``, :mod:`tabbook.warm`) that a build starts for the next one. A cold
  build is always a fresh process (the copy's warm builder is stopped first); after every build
  the benchmark waits, untimed, until the warm builder it started accepts builds (a few seconds,
  less than a person takes to edit a sentence), so its start-up never overlaps the other
  tool's timed run. Two more rows, without a warm builder (``TABBOOK_WARM=0``: a script, CI),
  show what the warm builder buys: no-op and prose edit, each beside the same round's d2lbook
  figure.

What d2lbook cannot build as it is: a cell meant to raise (``#@raises``: tabbook shows its
traceback; d2lbook's executor stops at the first error). The sections whose PyTorch code has
one are found by reading the book; in both tools' copies those cells (in every tab) are wrapped
in ``try``/``except`` that prints the error, so both run the same code. And a cell that branches
on ``tab.selected`` in a way d2lbook 1.0.3 resolves wrongly (``if tab.selected('tensorflow'): …
else: …`` loses its ``if``): in both copies every such cell is split into one ``%%tab`` cell per
framework, resolved as tabbook resolves it (:func:`resolved_per_tab`).

Figures, rounds alternating the tools and swapping who goes first, median of ``--repeat`` with
min and max: cold (output and caches removed: tabbook ``build/`` and ``_freeze/``; d2lbook
``_build/``), no-op, one-sentence prose edit, one PyTorch code-cell edit (a comment added), and
tabbook's four-framework cold build against d2lbook's one-framework one. Then the first-load
bytes of one page in each site (headless Chromium, ``bench/page_weight.py``'s measurement).

Usage: ``.venv/bin/python bench/d2lbook_chapter.py [--repeat 3] [--workdir DIR] [--json FILE]``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import d2lbook_book  # noqa: E402  (bench/ is not a package)

from tabbook.book import read_book  # noqa: E402
from tabbook.config import load_config  # noqa: E402
from tabbook.source.split import split_section  # noqa: E402

FRAMEWORK = "pytorch"
#: What a copy of the book holds: its sources, and what the tabbook build reads besides them.
BOOK_FILES = ("config.ini", "index.md", "references.bib", "chapter_gpus", "img", "static", "d2l", "envs")
FIGURES = ("cold", "no-op", "prose edit", "code edit", "cold, 4 frameworks",
           "no-op, no warm builder", "prose edit, no warm builder")
#: tabbook's own figures (d2lbook's side is the same round's figure named here).
TABBOOK_ONLY = {"cold, 4 frameworks": "cold", "no-op, no warm builder": "no-op",
                "prose edit, no warm builder": "prose edit"}
TARGETS = {"no-op": 0.2, "prose edit": 0.1, "cold, 4 frameworks": 1.0}
LABELS = {"cold, 4 frameworks": "tabbook 4 frameworks cold vs d2lbook 1 cold",
          "no-op, no warm builder": "no-op, tabbook without a warm builder",
          "prose edit, no warm builder": "prose edit, tabbook without a warm builder"}
FAKE_NVIDIA_SMI = """#!/bin/sh
# bench/d2lbook_chapter.py: d2lbook runs notebooks that mention GPUs only when nvidia-smi lists
# some. There is no GPU here; the CPU build of torch runs them on the CPU.
echo "fake GPU 0 (CPU only)"
echo "fake GPU 1 (CPU only)"
"""


def log(msg: str) -> None:
    print(f"[d2lbook-chapter] {msg}", file=sys.stderr, flush=True)


def d2lbook_config(sections: list[str], title: str) -> str:
    return (
        "[project]\nname = d2l-gpus\n"
        f"title = {title}\nauthor = The tabbook authors\nrelease = 0.1.0\n\n"
        "[build]\nindex = index\nnotebooks = *.md chapter_gpus/*.md\n"
        "exclusions = README.md BENCHMARKS.md ARCHITECTURE.md CONTRIBUTING.md\n"
        "resources = img/\neval_notebook = True\ntabs = pytorch\n\n"
        "[pdf]\nbibfile = references.bib\nstyle =\nlatex_url =\n"
    )


def buildable_sections(book_root: Path) -> tuple[list[str], dict[str, str]]:
    """The toc's sections, and for those d2lbook cannot execute as they are, why."""
    book = read_book(load_config(book_root))
    keep, left_out = [], {}
    for rel in book.toc:
        cells = split_section(book.pages[rel], FRAMEWORK)
        raising = [fc for fc in cells if "raises-exception" in fc.tags]
        if raising:
            left_out[rel] = (f"{raising[0].where}: a PyTorch cell meant to raise (#@raises); "
                             "d2lbook's executor stops at the first error")
        keep.append(rel)
    return keep, left_out


def catching(cell: list[str]) -> list[str]:
    """A cell meant to raise, rewritten to catch and print its error (fence lines kept)."""
    head, body = [cell[0]], [x for x in cell[1:-1] if not x.strip().startswith("#@raises")]
    if body and body[0].startswith("%%tab"):
        head.append(body.pop(0))
    inner = [("    " + x) if x.strip() else x for x in body] or ["    pass\n"]
    return [*head, "try:\n", *inner, "except Exception as error:\n",
            "    print(type(error).__name__, error)\n", cell[-1]]


def with_raising_cells_caught(text: str) -> str:
    """A page's Markdown with each executable cell that is meant to raise (``#@raises``) catching
    its error instead: the same code runs in both tools, and d2lbook's executor does not stop."""
    out: list[str] = []
    cell: list[str] | None = None
    for line in text.splitlines(keepends=True):
        stripped = line.strip()
        if cell is None and stripped.startswith("```") and ".input" in stripped:
            cell = [line]
        elif cell is not None:
            cell.append(line)
            if stripped == "```":
                raises = any(x.strip().startswith("#@raises") for x in cell)
                out.extend(catching(cell) if raises else cell)
                cell = None
        else:
            out.append(line)
    return "".join(out + (cell or []))


def resolved_per_tab(book_root: Path) -> dict[str, str]:
    """Pages whose cells branch on ``tab.selected``, rewritten with each such cell split into one
    ``%%tab`` cell per framework, its branches resolved as tabbook resolves them.

    Why: d2lbook 1.0.3 resolves ``if tab.selected('tensorflow'): … else: …`` in a PyTorch
    notebook by dropping the ``if`` branch and keeping a bare ``else:`` (a ``SyntaxError`` when
    the cell runs). Both tools get the resolved cells, so they run the same code.
    """
    book = read_book(load_config(book_root))
    out = {}
    for rel in book.toc:
        section = book.pages[rel]
        per_fw = {fw: {fc.index: fc.source for fc in split_section(section, fw)} for fw in book.config.tabs}
        lines = (book_root / rel).read_text().splitlines(keepends=True)
        spans = []
        for i, cell in enumerate(section.cells):
            if cell.kind != "code" or "tab.selected" not in cell.source:
                continue
            start = cell.line - 1
            end = next(j for j in range(start + 1, len(lines)) if lines[j].strip() == "```")
            cells = [f"```{{.python .input}}\n%%tab {fw}\n{per_fw[fw][i]}\n```\n"
                     for fw in cell.tabs if i in per_fw.get(fw, {})]
            spans.append((start, end, "\n".join(cells)))
        if not spans:
            continue
        for start, end, text in reversed(spans):
            lines[start:end + 1] = [text]
        out[rel] = "".join(lines)
    return out


def make_copy(dest: Path, left_out: dict[str, str]) -> None:
    """A scratch copy of the book; in a section d2lbook cannot execute as it is, the cells meant
    to raise catch their error, in both tools' copies alike."""
    dest.mkdir(parents=True)
    for name in BOOK_FILES:
        src = ROOT / name
        if src.is_dir():
            shutil.copytree(src, dest / name, ignore=shutil.ignore_patterns("__pycache__"))
        elif src.is_file():
            shutil.copy2(src, dest / name)
    for rel, text in resolved_per_tab(ROOT).items():
        (dest / rel).write_text(text)
    for rel in left_out:
        page = dest / rel
        page.write_text(with_raising_cells_caught(page.read_text()))


class Tool:
    name = ""

    def __init__(self, root: Path, env: dict[str, str], edit_page: Path) -> None:
        self.root, self.env, self.page = root, env, edit_page

    def run(self, cmd: list[str], logf) -> float:  # type: ignore[no-untyped-def]
        return d2lbook_book.run_step(self.name, cmd, self.root, self.env, logf)


class Tabbook(Tool):
    name = "tabbook"

    def __init__(self, root: Path, edit_page: Path, frameworks: str | None) -> None:
        super().__init__(root, {**os.environ, "PYTHONPATH": str(ROOT)}, edit_page)
        self.frameworks = frameworks

    def tabbook(self, *args: str) -> list[str]:
        return [str(ROOT / ".venv" / "bin" / "python"), "-m", "tabbook", "-C", str(self.root), *args]

    def build(self, logf, warm: bool = True) -> float:  # type: ignore[no-untyped-def]
        only = ["--frameworks", self.frameworks] if self.frameworks else []
        self.env["TABBOOK_WARM"] = "1" if warm else "0"
        seconds = self.run(self.tabbook("build", *only), logf)
        if warm:  # untimed: until the warm builder this build started (if any) accepts builds
            d2lbook_book.run_step("tabbook-warm", self.tabbook("warm", "--wait", "120"),
                                  self.root, self.env, logf)
        return seconds

    def stop_warm(self, logf) -> None:  # type: ignore[no-untyped-def]
        d2lbook_book.run_step("tabbook-warm", self.tabbook("warm", "--stop"), self.root, self.env, logf)

    def make_cold(self, logf) -> None:  # type: ignore[no-untyped-def]
        self.stop_warm(logf)  # a cold build is a fresh process, as on a fresh machine
        for name in ("build", "_freeze"):
            shutil.rmtree(self.root / name, ignore_errors=True)


class D2lbook(Tool):
    name = "d2lbook"

    def __init__(self, root: Path, edit_page: Path, venv: Path, fake_bin: Path) -> None:
        env = {**os.environ, "PATH": f"{venv / 'bin'}:{fake_bin}:{os.environ.get('PATH', '')}",
               "PYTHONPATH": str(root), "PYTHONWARNINGS": "ignore"}
        env.pop("VIRTUAL_ENV", None)
        super().__init__(root, env, edit_page)
        self.venv = venv

    def build(self, logf) -> float:  # type: ignore[no-untyped-def]
        return self.run([str(self.venv / "bin" / "d2lbook"), "build", "html"], logf)

    def make_cold(self, logf) -> None:  # type: ignore[no-untyped-def]
        shutil.rmtree(self.root / "_build", ignore_errors=True)


def edit_prose(page: Path, k: int) -> None:
    """Append a sentence to the page's first paragraph of prose (after its title)."""
    lines = page.read_text().splitlines(keepends=True)
    for i, line in enumerate(lines):
        text = line.strip()
        if i > 0 and text and text[0].isalpha() and text.endswith("."):
            lines[i] = line.rstrip("\n") + f" One more sentence, edit {k}.\n"
            break
    page.write_text("".join(lines))


def edit_code(page: Path, k: int) -> None:
    """Add a comment to the page's first PyTorch-only cell (one unit to execute again)."""
    text = page.read_text()
    marker = "%%tab pytorch\n"
    at = text.index(marker) + len(marker)
    page.write_text(text[:at] + f"# edit {k}\n" + text[at:])


def execution_floor(report: Path) -> dict:
    """The least time any schedule of a cold build's units needs on this machine's cores: their
    total over the cores, or the longest unit if that is longer (from the build's own report)."""
    data = json.loads(report.read_text())
    units = [u for u in data["units"] if u["status"] == "executed"]
    per_framework: dict[str, float] = {}
    for u in units:
        per_framework[u["framework"]] = per_framework.get(u["framework"], 0.0) + u["seconds"]
    total = sum(per_framework.values())
    longest = max(units, key=lambda u: u["seconds"])
    cores = os.cpu_count() or 1
    return {"units": len(units), "unit_seconds": round(total, 1),
            "per_framework": {k: round(v, 1) for k, v in sorted(per_framework.items())},
            "longest": f"{longest['framework']} {longest['section']} {longest['seconds']:.1f} s",
            "cores": cores, "floor_s": round(max(total / cores, longest["seconds"]), 1),
            "build_s": data["seconds"], "execute_s": data["execute_seconds"], "sphinx_s": data["sphinx_seconds"]}


def why_four_frameworks_take_longer(floors: list[dict], d2lbook_cold: float) -> str:
    """The measured reason the four-framework cold build misses its target: the median round's floor."""
    f = sorted(floors, key=lambda f: f["floor_s"])[len(floors) // 2]
    frameworks = ", ".join(f"{k} {v:.1f}" for k, v in f["per_framework"].items())
    return (f"\nWhy four frameworks cold is not met (the median round's build/report.json): its {f['units']} units "
            f"ran {f['unit_seconds']:.1f} s in all ({frameworks}; longest: {f['longest']}). On {f['cores']} cores "
            f"no schedule executes them in less than {f['floor_s']:.1f} s, {f['floor_s'] / d2lbook_cold:.2f}× "
            f"d2lbook's whole one-framework build ({d2lbook_cold:.1f} s): the target is below that floor. "
            f"tabbook's build took {f['build_s']:.1f} s: execution {f['execute_s']:.1f} s, Sphinx {f['sphinx_s']:.1f} s "
            "(started during execution). With as many cores as units the floor is the longest unit.\n")


def weight(site: Path, page: str) -> int:
    sys.path.insert(0, str(ROOT / "bench"))
    import page_weight

    return page_weight.measure(site, [page])[0].bytes


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--workdir", type=Path)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    if not shutil.which("pandoc"):
        raise SystemExit("pandoc is not on the PATH (Debian: apt-get install pandoc); d2lbook needs it")
    venv = d2lbook_book.ensure_venv(d2lbook_book.DEFAULT_VENV, autodoc=True)
    keep, left_out = buildable_sections(ROOT)
    for rel, why in left_out.items():
        log(f"changed in both copies: {rel}: {why}")
    workdir = (args.workdir or Path(tempfile.mkdtemp(prefix="tabbook-d2lbook-chapter-"))).resolve()
    shutil.rmtree(workdir, ignore_errors=True)
    fake_bin = workdir / "fake-bin"
    fake_bin.mkdir(parents=True)
    (fake_bin / "nvidia-smi").write_text(FAKE_NVIDIA_SMI)
    (fake_bin / "nvidia-smi").chmod(0o755)
    edit_rel = next(rel for rel in keep if rel.endswith(("training.md", "toolkit.md")))
    copies = {name: workdir / name for name in ("tabbook", "tabbook-4", "d2lbook")}
    for copy in copies.values():
        make_copy(copy, left_out)
    title = load_config(ROOT).title
    (copies["d2lbook"] / "config.ini").write_text(d2lbook_config(keep, title))
    tools: dict[str, Tool] = {
        "tabbook": Tabbook(copies["tabbook"], copies["tabbook"] / edit_rel, FRAMEWORK),
        "d2lbook": D2lbook(copies["d2lbook"], copies["d2lbook"] / edit_rel, venv, fake_bin),
    }
    four = Tabbook(copies["tabbook-4"], copies["tabbook-4"] / edit_rel, None)
    runs: dict[str, dict[str, list[float]]] = {t: {f: [] for f in FIGURES} for t in tools}
    loads = []
    logpath = workdir / "d2lbook-chapter.log"
    floors: list[dict] = []
    tb = tools["tabbook"]
    assert isinstance(tb, Tabbook)
    with open(logpath, "w") as logf:
        try:
            for r in range(args.repeat):
                order = ["tabbook", "d2lbook"] if r % 2 == 0 else ["d2lbook", "tabbook"]
                loads.append(os.getloadavg()[0])
                for figure in FIGURES[:4]:
                    for name in order:
                        tool = tools[name]
                        if figure == "cold":
                            tool.make_cold(logf)
                        elif figure == "prose edit":
                            edit_prose(tool.page, r + 1)
                        elif figure == "code edit":
                            edit_code(tool.page, r + 1)
                        runs[name][figure].append(round(tool.build(logf), 2))
                # tabbook's own rows, each beside d2lbook's figure of this round
                tb.stop_warm(logf)
                runs["tabbook"]["no-op, no warm builder"].append(round(tb.build(logf, warm=False), 2))
                edit_prose(tb.page, 100 + r)
                runs["tabbook"]["prose edit, no warm builder"].append(round(tb.build(logf, warm=False), 2))
                four.make_cold(logf)
                runs["tabbook"]["cold, 4 frameworks"].append(round(four.build(logf, warm=False), 2))
                floors.append(execution_floor(four.root / "build" / "report.json"))
                for figure, theirs in TABBOOK_ONLY.items():
                    runs["d2lbook"][figure].append(runs["d2lbook"][theirs][-1])
                log(f"round {r + 1}: " + "; ".join(
                    f"{n} " + " ".join(f"{runs[n][f][-1]:.1f}" for f in FIGURES) for n in order))
        finally:  # no warm builder outlives the benchmark
            for copy in (tb, four):
                copy.stop_warm(logf)
    page = edit_rel.replace(".md", ".html")
    weights = {"tabbook": weight(copies["tabbook-4"] / "build" / "html", page),
               "d2lbook": weight(copies["d2lbook"] / "_build" / "html", page)}
    summary = {}
    for figure in FIGURES:
        med = {n: statistics.median(runs[n][figure]) for n in runs}
        summary[figure] = {"tabbook_s": med["tabbook"], "d2lbook_s": med["d2lbook"],
                           "tabbook_min_max": [min(runs["tabbook"][figure]), max(runs["tabbook"][figure])],
                           "d2lbook_min_max": [min(runs["d2lbook"][figure]), max(runs["d2lbook"][figure])],
                           "ratio": round(med["tabbook"] / med["d2lbook"], 3), "target": TARGETS.get(figure)}
    print(f"tabbook beside d2lbook 1.0.3 on this book's chapter ({len(keep)} pages; cells meant to raise "
          f"made to catch in: {', '.join(left_out) or 'none'}), PyTorch, median of {args.repeat}, "
          "tools alternating:")
    print("| figure | tabbook s (min–max) | d2lbook s (min–max) | tabbook / d2lbook | target |")
    print("| --- | ---: | ---: | ---: | --- |")
    for figure, row in summary.items():
        target = row["target"]
        verdict = "–" if target is None else f"≤ {target} — {'met' if row['ratio'] <= target else 'NOT met'}"
        label = LABELS.get(figure, figure)
        print(f"| {label} | {row['tabbook_s']:.2f} ({row['tabbook_min_max'][0]:.2f}–{row['tabbook_min_max'][1]:.2f}) | "
              f"{row['d2lbook_s']:.2f} ({row['d2lbook_min_max'][0]:.2f}–{row['d2lbook_min_max'][1]:.2f}) | "
              f"{row['ratio']:.2f} | {verdict} |")
    four_row = summary["cold, 4 frameworks"]
    if four_row["ratio"] > (four_row["target"] or 0):
        print(why_four_frameworks_take_longer(floors, four_row["d2lbook_s"]))
    ratio = weights["tabbook"] / weights["d2lbook"]
    print(f"| first-load bytes of {page} | {weights['tabbook'] / 1000:.1f} kB | {weights['d2lbook'] / 1000:.1f} kB | "
          f"{ratio:.3f} | ≤ 0.25 — {'met' if ratio <= 0.25 else 'NOT met'} |")
    if args.json:
        args.json.write_text(json.dumps({"runs": runs, "summary": summary, "weights": weights, "floors": floors,
                                         "left_out": left_out, "load_before_round": loads}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
