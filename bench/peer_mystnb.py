"""tabbook beside plain Sphinx + myst-nb with its execution cache, on one generated book.

The peer is what a Jupyter Book 1 user runs: Sphinx, myst-nb and the furo theme (the same
pinned versions tabbook builds with, from the builder's venv) with ``nb_execution_mode =
"cache"``, so jupyter-cache re-executes a page only when its code changed. It is the stack
tabbook is built on: a figure where tabbook is slower is overhead of ours.

The book is generated twice from one description, once in each tool's dialect: N pages of a
title, two paragraphs and three small numpy cells, one framework. Both tools execute with the
same interpreter (a bench-only venv with numpy and ipykernel, made once under
``~/.cache/tabbook/bench-numpy-venv``): tabbook names it as the framework's ``interpreter``,
the peer as a project-local kernelspec (``JUPYTER_PATH``). Figures, per N:

- **cold**: output and caches removed (tabbook: ``build/``, ``_freeze/``; peer: ``_build/``
  and its jupyter-cache), then a build: every page executed and rendered;
- **no-op**: the same build again;
- **prose edit**: one sentence appended to a paragraph of the middle page;
- **code edit**: a comment added to a cell of the middle page (one page re-executed).

With ``--d2lbook``, a third tool builds the same book: d2lbook 1.0.3 (``d2lbook build html``,
in ``bench/d2lbook_book.py``'s environment without autodoc), whose dialect the tabbook copy is
already written in (only ``config.ini`` differs: d2lbook's keys, no LaTeX style download). It
executes with the same interpreter, named as the ``python3`` kernel in a project-local
``JUPYTER_PATH``. d2lbook re-executes a page whose Markdown is newer than its evaluated
notebook, so a prose edit runs the page's code again there.

Rounds rotate the tools (who goes first changes every round), so the machine's load falls on
all alike; each figure is the median of ``--repeat`` rounds (min and max kept). The ratios
printed are tabbook / peer (and tabbook / d2lbook) of the medians, with issue 43's targets
for tabbook / peer beside them.

Usage: ``.venv/bin/python bench/peer_mystnb.py [--sizes 10,40] [--repeat 3] [--d2lbook] [--json FILE]``.
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

ROOT = Path(__file__).resolve().parent.parent
BENCH_VENV = Path.home() / ".cache" / "tabbook" / "bench-numpy-venv"
# The kernel side both tools run: numpy and ipykernel pinned as in envs/ (the builder's ipykernel).
KERNEL_PINS = ["numpy==2.3.5", "ipykernel==7.4.0"]
KERNEL = "bench-numpy"
FIGURES = ("cold", "no-op", "prose edit", "code edit")
# issue 43's targets for tabbook / peer (issue 18's were 1.0, 0.2, 1.0, 1.0).
TARGETS = {"cold": 0.8, "no-op": 0.2, "prose edit": 0.8, "code edit": 0.8}


def log(msg: str) -> None:
    print(f"[peer] {msg}", file=sys.stderr, flush=True)


def kernel_python() -> Path:
    """The interpreter both tools execute with, made once (reused while its pins are the same)."""
    marker = BENCH_VENV / "tabbook-pins.txt"
    want = "\n".join(KERNEL_PINS) + "\n"
    python = BENCH_VENV / "bin" / "python"
    if not (marker.is_file() and marker.read_text() == want and python.exists()):
        log(f"creating {BENCH_VENV} with {' '.join(KERNEL_PINS)}")
        shutil.rmtree(BENCH_VENV, ignore_errors=True)
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(BENCH_VENV)], check=True)
        subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet",
                        "--disable-pip-version-check", *KERNEL_PINS], check=True)
        marker.write_text(want)
    return python


# ------------------------------------------------------------------------------------ the book

def page_cells(i: int) -> list[str]:
    return [
        f"import numpy as np\nrng = np.random.default_rng({i})\nx = rng.normal(size=(64, 64))",
        "y = x @ x.T\nprint(y.shape, round(float(y.trace()), 3))",
        "np.linalg.norm(x, axis=0)[:4]",
    ]


def page_prose(i: int) -> tuple[str, str]:
    return (f"Page {i} multiplies a random matrix by its transpose and looks at the result.",
            "The product is symmetric, and its trace is the sum of squares of every entry.")


def write_tabbook_book(root: Path, n: int, python: Path) -> None:
    (root / "pages").mkdir(parents=True)
    (root / "config.ini").write_text(
        "[project]\nname = peer\ntitle = Peer book\nauthor = bench\nversion = 0.1\n\n"
        "[build]\nindex = index.md\nnotebooks = *.md pages/*.md\ntabs = numpy\ndefault_tab = numpy\n"
        "freeze_dir = _freeze\n\n"
        f"[framework:numpy]\nlabel = NumPy\nimport = numpy\ninterpreter = {python}\n")
    entries = "\n".join(f"pages/p{i:03d}" for i in range(n))
    (root / "index.md").write_text(f"# Peer book\n\n```toc\n:maxdepth: 1\n\n{entries}\n```\n")
    for i in range(n):
        first, second = page_prose(i)
        cells = "\n\n".join(f"```{{.python .input}}\n{c}\n```" for c in page_cells(i))
        (root / "pages" / f"p{i:03d}.md").write_text(f"# Page {i}\n\n{first}\n\n{second}\n\n{cells}\n")


def write_peer_book(root: Path, n: int, python: Path) -> None:
    (root / "pages").mkdir(parents=True)
    kernel_dir = root / "jupyter" / "kernels" / KERNEL
    kernel_dir.mkdir(parents=True)
    (kernel_dir / "kernel.json").write_text(json.dumps({
        "argv": [str(python), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "bench numpy", "language": "python"}))
    (root / "conf.py").write_text(
        "project = 'Peer book'\nauthor = 'bench'\nextensions = ['myst_nb']\nhtml_theme = 'furo'\n"
        "nb_execution_mode = 'cache'\nnb_execution_cache_path = '_cache'\nnb_merge_streams = True\n"
        "exclude_patterns = ['_build', '_cache', 'jupyter']\n")
    entries = "\n".join(f"pages/p{i:03d}" for i in range(n))
    (root / "index.md").write_text(f"# Peer book\n\n```{{toctree}}\n:maxdepth: 1\n\n{entries}\n```\n")
    front = f"---\nfile_format: mystnb\nkernelspec:\n  name: {KERNEL}\n  display_name: bench numpy\n---\n"
    for i in range(n):
        first, second = page_prose(i)
        cells = "\n\n".join(f"```{{code-cell}} ipython3\n{c}\n```" for c in page_cells(i))
        (root / "pages" / f"p{i:03d}.md").write_text(f"{front}# Page {i}\n\n{first}\n\n{second}\n\n{cells}\n")


# ------------------------------------------------------------------------------------ the tools

class Tool:
    """One tool on its copy of the book: how to build it, make it cold, and edit a page."""

    name = ""

    def __init__(self, root: Path, n: int) -> None:
        self.root = root
        self.middle = root / "pages" / f"p{n // 2:03d}.md"

    def command(self) -> tuple[list[str], dict[str, str]]:
        raise NotImplementedError

    def outputs(self) -> list[Path]:
        raise NotImplementedError

    def make_cold(self) -> None:
        for path in self.outputs():
            shutil.rmtree(path, ignore_errors=True)

    def build(self) -> float:
        cmd, env = self.command()
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, cwd=self.root, env={**os.environ, **env}, capture_output=True, text=True)
        seconds = time.perf_counter() - t0
        if proc.returncode != 0:
            sys.stderr.write(proc.stdout[-4000:] + proc.stderr[-4000:])
            raise SystemExit(f"{self.name} build failed in {self.root}")
        return seconds

    def edit_prose(self, k: int) -> None:
        text = self.middle.read_text()
        self.middle.write_text(text.replace("every entry.", f"every entry (edit {k}).", 1)
                               if "every entry." in text else
                               text.replace(f"(edit {k - 1})", f"(edit {k})", 1))

    def edit_code(self, k: int) -> None:
        text = self.middle.read_text()
        marker = "y = x @ x.T"
        head, tail = text.split(marker, 1)
        tail = tail.split("\n", 1)[1]
        self.middle.write_text(f"{head}{marker}  # edit {k}\n{tail}")


def write_d2lbook_book(root: Path, n: int, python: Path) -> None:
    """tabbook's copy (the same dialect), with d2lbook's config.ini and its kernel named."""
    write_tabbook_book(root, n, python)
    (root / "config.ini").write_text(
        "[project]\nname = peer\ntitle = Peer book\nauthor = bench\nversion = 0.1\n\n"
        "[build]\nindex = index\nnotebooks = *.md pages/*.md\n\n[pdf]\nstyle =\n")
    kernel_dir = root / "jupyter" / "kernels" / "python3"  # the kernel d2lbook's notebooks name
    kernel_dir.mkdir(parents=True)
    (kernel_dir / "kernel.json").write_text(json.dumps({
        "argv": [str(python), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Python 3", "language": "python"}))


class Tabbook(Tool):
    name = "tabbook"

    def command(self) -> tuple[list[str], dict[str, str]]:
        return ([str(ROOT / ".venv" / "bin" / "python"), "-m", "tabbook", "-C", str(self.root), "build"],
                {"PYTHONPATH": str(ROOT)})

    def outputs(self) -> list[Path]:
        return [self.root / "build", self.root / "_freeze"]


class Peer(Tool):
    name = "sphinx+myst-nb"

    def command(self) -> tuple[list[str], dict[str, str]]:
        return ([str(ROOT / ".venv" / "bin" / "sphinx-build"), "-q", "-b", "html", ".", "_build/html"],
                {"JUPYTER_PATH": str(self.root / "jupyter")})

    def outputs(self) -> list[Path]:
        return [self.root / "_build", self.root / "_cache"]


class D2lbook(Tool):
    name = "d2lbook"
    venv: Path | None = None  # set by main (bench/d2lbook_book.py's environment, made once)

    def command(self) -> tuple[list[str], dict[str, str]]:
        assert self.venv is not None
        return ([str(self.venv / "bin" / "d2lbook"), "build", "html"],
                {"PATH": f"{self.venv / 'bin'}:{os.environ.get('PATH', '')}",
                 "JUPYTER_PATH": str(self.root / "jupyter"), "PYTHONWARNINGS": "ignore"})

    def outputs(self) -> list[Path]:
        return [self.root / "_build"]


TOOLS = {"tabbook": (Tabbook, write_tabbook_book), "peer": (Peer, write_peer_book),
         "d2lbook": (D2lbook, write_d2lbook_book)}


def load() -> float:
    return os.getloadavg()[0]


def warm_up(workdir: Path, python: Path, keys: list[str]) -> None:
    """One untimed cold build of a one-page book per tool: first runs after the kernel's venv
    was made or the disk cache was cold are much slower (a minute, once) and would be one tool's
    first cold figure only."""
    for key in keys:
        cls, writer = TOOLS[key]
        root = workdir / f"{key}-warm-up"
        shutil.rmtree(root, ignore_errors=True)
        writer(root, 1, python)
        cls(root, 1).build()
        shutil.rmtree(root, ignore_errors=True)


def measure(n: int, repeat: int, workdir: Path, python: Path, keys: list[str]) -> dict:
    """Rounds of the four figures for the tools ``keys`` on books of ``n`` pages; every run kept."""
    runs: dict[str, dict[str, list[float]]] = {t: {f: [] for f in FIGURES} for t in keys}
    loads: list[float] = []
    breakdowns: list[dict] = []
    loads_each: list[dict] = []  # the 1-minute load average before every build
    for r in range(repeat):
        tools: list[tuple[str, Tool]] = []
        for key in keys:
            cls, writer = TOOLS[key]
            root = workdir / f"{key}-{n}"
            shutil.rmtree(root, ignore_errors=True)
            writer(root, n, python)
            tools.append((key, cls(root, n)))
        if len(tools) == 2 and r % 2:  # two tools: swap; more: rotate, so each goes first in turn
            tools.reverse()
        elif len(tools) > 2:
            tools = tools[r % len(tools):] + tools[:r % len(tools)]
        loads.append(load())
        for figure in FIGURES:
            for key, tool in tools:
                loads_each.append({"round": r, "figure": figure, "tool": key, "load1": load()})
                if figure == "cold":
                    tool.make_cold()
                elif figure == "prose edit":
                    tool.edit_prose(r + 1)
                elif figure == "code edit":
                    tool.edit_code(r + 1)
                runs[key][figure].append(round(tool.build(), 3))
                if key == "tabbook" and figure == "code edit":  # where its time went (build/report.json)
                    report = json.loads((tool.root / "build" / "report.json").read_text())
                    units = [u for u in report["units"] if u["status"] == "executed"]
                    breakdowns.append({k: report[k] for k in ("seconds", "execute_seconds", "sphinx_seconds")}
                                      | {"unit": units[0] if units else None})
        log(f"N={n} round {r + 1}: " + "; ".join(
            f"{k} " + " ".join(f"{runs[k][f][-1]:.2f}" for f in FIGURES) for k, _ in tools))
    summary = {}
    for figure in FIGURES:
        med = {k: statistics.median(runs[k][figure]) for k in runs}
        summary[figure] = {
            **{f"{k}_s": med[k] for k in runs},
            **{f"{k}_min_max": [min(runs[k][figure]), max(runs[k][figure])] for k in runs},
            "ratio": round(med["tabbook"] / med["peer"], 3), "target": TARGETS[figure],
            **({"ratio_d2lbook": round(med["tabbook"] / med["d2lbook"], 3)} if "d2lbook" in runs else {})}
    return {"pages": n, "runs": runs, "load_before_round": loads, "figures": summary, "code_breakdowns": breakdowns,
            "load_before_each": loads_each}


def table(results: list[dict]) -> str:
    sizes = [r["pages"] for r in results]
    head = " / ".join(f"N = {n}" for n in sizes)
    d2l = "d2lbook_s" in results[0]["figures"]["cold"]
    lines = [f"| figure ({head}) | tabbook s | peer s | tabbook / peer | target |"
             + (" d2lbook s | tabbook / d2lbook |" if d2l else ""),
             "| --- | ---: | ---: | ---: | --- |" + (" ---: | ---: |" if d2l else "")]
    for figure in FIGURES:
        cells = [results[i]["figures"][figure] for i in range(len(results))]
        ratios = [c["ratio"] for c in cells]
        target = TARGETS[figure]
        met = "met" if all(x <= target for x in ratios) else "NOT met"
        tb = " / ".join(f"{c['tabbook_s']:.2f}" for c in cells)
        peer = " / ".join(f"{c['peer_s']:.2f}" for c in cells)
        ratio = " / ".join(f"{x:.2f}" for x in ratios)
        row = f"| {figure} | {tb} | {peer} | {ratio} | ≤ {target} — {met} |"
        if d2l:
            row += (" " + " / ".join(f"{c['d2lbook_s']:.2f}" for c in cells) + " | "
                    + " / ".join(f"{c['ratio_d2lbook']:.2f}" for c in cells) + " |")
        lines.append(row)
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="10,40", help="page counts, comma-separated")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--workdir", type=Path)
    ap.add_argument("--json", type=Path, help="also write every run here")
    ap.add_argument("--d2lbook", action="store_true", help="d2lbook 1.0.3 builds the same book too")
    args = ap.parse_args(argv)
    python = kernel_python()
    keys = ["tabbook", "peer"]
    if args.d2lbook:
        if not shutil.which("pandoc"):
            raise SystemExit("pandoc is not on the PATH (Debian: apt-get install pandoc); d2lbook needs it")
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        import d2lbook_book

        D2lbook.venv = d2lbook_book.ensure_venv(d2lbook_book.BARE_VENV, autodoc=False)
        keys.append("d2lbook")
    # tabbook as installed: its bytecode written (as `make` and a wheel's install do), whatever
    # PYTHONDONTWRITEBYTECODE says; Sphinx's, in the venv, was written when pip installed it.
    subprocess.run([str(ROOT / ".venv" / "bin" / "python"), "-m", "compileall", "-q", str(ROOT / "tabbook")],
                   check=True)
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="tabbook-peer-"))
    warm_up(workdir, python, keys)
    results = [measure(int(n), args.repeat, workdir, python, keys) for n in args.sizes.split(",")]
    print("tabbook beside Sphinx + myst-nb (nb_execution_mode = cache)" + (" and d2lbook 1.0.3" if args.d2lbook else "")
          + f", one framework (numpy), median of {args.repeat}, tools alternating:")
    print(table(results))
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    if not args.workdir:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
