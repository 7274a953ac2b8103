"""Time d2lbook 1.0.3 building a whole d2lbook-dialect book (d2l-en) to HTML, execution off.

The baseline for issue 12 (tabbook and d2lbook side by side on the whole d2l-en book).

What it does:

1. Creates, once, a virtual environment for d2lbook under ``~/.cache/tabbook/d2lbook-venv``
   (reused while its pins are unchanged; ``--venv`` picks another place) with::

       d2lbook==1.0.3  setuptools<81  pybtex==0.24.0

   The two extra pins are what d2lbook 1.0.3 needs today (its own requirements are unpinned
   but for Sphinx 5.3.0 and sphinxcontrib-bibtex 2.4.2): ``setuptools<81`` keeps
   ``pkg_resources``, which setuptools 81 removed; ``pybtex==0.24.0`` is the pybtex that
   sphinxcontrib-bibtex 2.4.2 works with. Debian's ``pandoc`` must be on the PATH (notedown/nbconvert call it to turn notebooks
   into reST); the script stops with a message when it is not.
2. Copies the book to a scratch folder (the checkout is never modified; ``.git`` and ``_build``
   are left behind) and edits the COPY's ``config.ini``: ``[build] eval_notebook = False`` (no
   code runs; the notebooks are converted as they are) and empty ``[pdf] style`` and
   ``latex_url`` (otherwise ``d2lbook build rst`` downloads a LaTeX style from the network).
3. Full build, every tab, the way d2l-en's own CI builds its HTML
   (``.github/workflow_scripts/build_*.sh`` and ``build_html.sh``)::

       d2lbook build eval --tab <t>      for each tab in config.ini (pytorch, mxnet, jax, tensorflow)
       d2lbook build rst --tab all       merges the tabs' notebooks, writes reST
       cp static/frontpage/frontpage.html _build/rst_all/   (index.md's raw-html include)
       d2lbook build html --tab all      colab/sagemaker notebooks + sphinx-build -j 4

   ``eval`` has to run per tab first: ``html --tab all`` merges whatever per-tab notebooks
   already exist before it converts the other tabs itself. (A plain ``d2lbook build html``
   builds the default tab only.)
4. No-op rebuild: the same commands again, nothing changed (``--repeat N`` times; the median
   run is reported, with every run's total).

It prints one JSON object: seconds per step and in total for both builds, and what came out
(HTML pages, how many of them carry d2lbook's framework tabs). ``PYTHONPATH`` is set to the
book copy, so ``d2l`` is importable.

The d2l API page (``chapter_appendix-tools-for-deep-learning/d2l.md``) autodocs ``d2l.torch``,
which imports torch, torchvision, pandas, scipy, matplotlib and requests. Without them every
build fails those imports, and Sphinx re-reads that page on every build, no-op included (as it
does any page whose autodoc failed): d2lbook would then do less on a full build and more on a
no-op than on d2l-en's own CI. So the venv also gets ``AUTODOC_PINS`` (books/d2l-en/pytorch.txt's
pins plus torchvision 0.28.0) and a small import hook (``_tabbook_torchvision_shim.pth``) that
lets the registry's CUDA-built torchvision import beside the CPU torch wheel; see ``SHIM_PACKAGE``.
``--no-autodoc`` leaves them out (its own venv, ``~/.cache/tabbook/d2lbook-venv-bare``).

Measured on the whole d2l-en book (1.0.3: 192 pages, 4 tabs, 192 HTML pages out, 125 of them
tabbed) on 2 cores shared with other jobs, three runs: full build 277-302 s (eval 4 × 4-7 s,
rst 188-215 s: one pandoc call per notebook, html 55-75 s: colab/sagemaker notebooks +
sphinx-build); no-op 19.0-20.0 s (three no-ops of a quiet run; 47 s under heavy load; 27.6 s
without autodoc, where the d2l API page is re-read every time). The book needed no fix: only
the config edits above, pandoc, and the two pins.

Usage::

    .venv/bin/python bench/d2lbook_book.py --book /path/to/d2l-en [--workdir DIR] [--keep]
        [--tabs pytorch,mxnet] [--venv DIR] [--log FILE] [--repeat N] [--no-autodoc]

The whole d2l-en book takes many minutes: run it under ``nohup`` and poll the log
(``--log``, default ``<workdir>/d2lbook.log``, gets d2lbook's own output).
"""

from __future__ import annotations

import argparse
import configparser
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PINS = ["d2lbook==1.0.3", "setuptools<81", "pybtex==0.24.0"]
# What d2l/torch.py imports, for the d2l API page's autodoc (books/d2l-en/pytorch.txt's pins).
AUTODOC_PINS = ["torch==2.13.0", "torchvision==0.28.0", "numpy==2.3.5", "pandas==2.3.3", "scipy==1.16.3",
                "matplotlib==3.10.8", "matplotlib-inline==0.2.2", "requests==2.32.5", "pillow==13.0.0"]
# torchvision 0.28.0 from the registry is a CUDA build that cannot import beside the CPU torch
# wheel on its own: the same local package as books/d2l-en/pytorch.txt's makes it import (its
# Python parts work; its C++ ops raise when called), acting only when torchvision is imported.
SHIM_PACKAGE = Path(__file__).resolve().parent.parent / "books" / "d2l-en" / "torchvision-cpu-shim"
AUTODOC_PINS.append(str(SHIM_PACKAGE))
DEFAULT_VENV = Path.home() / ".cache" / "tabbook" / "d2lbook-venv"
BARE_VENV = Path.home() / ".cache" / "tabbook" / "d2lbook-venv-bare"  # --no-autodoc
COPY_IGNORE = shutil.ignore_patterns(".git", "_build", "__pycache__", ".ipynb_checkpoints")


def log(msg: str) -> None:
    print(f"[d2lbook-bench] {msg}", file=sys.stderr, flush=True)


def find_python311() -> str:
    for cand in ("python3.11", str(Path.home() / ".pyenv" / "shims" / "python3.11")):
        path = shutil.which(cand)
        if path:
            return path
    if sys.version_info[:2] == (3, 11):
        return sys.executable
    raise SystemExit("python3.11 not found (d2lbook's environment is made with it)")


def ensure_venv(venv: Path, autodoc: bool) -> Path:
    """The d2lbook environment at ``venv``, made (or remade) when its pins file differs."""
    marker = venv / "tabbook-pins.txt"
    pins = PINS + (AUTODOC_PINS if autodoc else [])
    want = "\n".join(pins) + "\n"
    d2lbook = venv / "bin" / "d2lbook"
    if marker.is_file() and marker.read_text() == want and d2lbook.exists():
        return venv
    log(f"creating {venv} with {' '.join(pins)}")
    if venv.exists():
        shutil.rmtree(venv)
    venv.parent.mkdir(parents=True, exist_ok=True)
    python = str(venv / "bin" / "python")
    subprocess.run([find_python311(), "-m", "venv", str(venv)], check=True)
    subprocess.run([python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *pins], check=True)
    if autodoc:
        subprocess.run([python, "-c", "import torchvision"], check=True)
    marker.write_text(want)
    return venv


def copy_book(book: Path, dest: Path) -> None:
    shutil.copytree(book, dest, ignore=COPY_IGNORE, symlinks=True)


def edit_config(config_ini: Path) -> list[str]:
    """Turn execution off and the LaTeX download off in the copy's config.ini; returns its tabs.

    Line edits, so the comments and d2lbook's multi-line values stay as they are.
    """
    text = config_ini.read_text()
    section = None
    out = []
    seen = set()
    for line in text.splitlines(keepends=True):
        m = re.match(r"\s*\[([^\]]+)\]", line)
        if m:
            section = m.group(1).strip()
        key = re.match(r"(\w+)\s*=", line)
        if key:
            name = key.group(1)
            if section == "build" and name == "eval_notebook":
                line, _ = "eval_notebook = False\n", seen.add("eval_notebook")
            elif section == "pdf" and name in ("style", "latex_url"):
                line, _ = f"{name} =\n", seen.add(name)
        out.append(line)
    text = "".join(out)
    if "eval_notebook" not in seen:  # d2lbook's default is True: add it to [build]
        text = re.sub(r"^\[build\][^\n]*\n", "[build]\neval_notebook = False\n", text, count=1, flags=re.M)
    config_ini.write_text(text)
    parser = configparser.ConfigParser()
    parser.read_string(text)
    tabs = parser.get("build", "tabs", fallback="")
    return [t.strip().lower() for t in tabs.split(",") if t.strip()]


def run_step(name: str, cmd: list[str], cwd: Path, env: dict[str, str], logf) -> float:
    logf.write(f"\n===== {name}: {' '.join(cmd)}\n")
    logf.flush()
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, env=env, stdout=logf, stderr=subprocess.STDOUT)
    seconds = time.perf_counter() - t0
    logf.write(f"===== {name}: exit {proc.returncode} in {seconds:.1f} s\n")
    logf.flush()
    log(f"{name}: {seconds:.1f} s (exit {proc.returncode})")
    if proc.returncode != 0:
        raise SystemExit(f"{name} failed (exit {proc.returncode}); see {logf.name}")
    return seconds


def build(copy: Path, venv: Path, tabs: list[str], logf) -> dict:
    d2lbook = str(venv / "bin" / "d2lbook")
    env = {**os.environ, "PATH": f"{venv / 'bin'}:{os.environ.get('PATH', '')}",
           "PYTHONPATH": str(copy), "PYTHONWARNINGS": "ignore"}
    env.pop("VIRTUAL_ENV", None)
    steps: dict[str, float] = {}
    t0 = time.perf_counter()
    for tab in tabs or [None]:
        cmd = [d2lbook, "build", "eval"] + (["--tab", tab] if tab else [])
        steps[f"eval {tab or 'default'}"] = run_step(f"eval {tab or 'default'}", cmd, copy, env, logf)
    all_tab = ["--tab", "all"] if len(tabs) > 1 else []
    steps["rst"] = run_step("rst", [d2lbook, "build", "rst", *all_tab], copy, env, logf)
    frontpage = copy / "static" / "frontpage" / "frontpage.html"
    rst_dir = copy / "_build" / ("rst_all" if all_tab else "rst")
    if frontpage.is_file() and rst_dir.is_dir():
        shutil.copy2(frontpage, rst_dir / "frontpage.html")  # copy2: same mtime, a no-op stays one
    steps["html"] = run_step("html", [d2lbook, "build", "html", *all_tab], copy, env, logf)
    return {"total_s": round(time.perf_counter() - t0, 2), "steps_s": {k: round(v, 2) for k, v in steps.items()}}


def html_summary(copy: Path, tabs: list[str]) -> dict:
    html = copy / "_build" / "html"
    pages = [p for p in html.rglob("*.html")
             if not any(part.startswith("_") for part in p.relative_to(html).parts)]
    special = {"genindex.html", "search.html", "py-modindex.html"}
    content = [p for p in pages if p.name not in special]
    tabbed = 0
    per_tab = {t: 0 for t in tabs}
    for p in content:
        text = p.read_text(errors="replace")
        if "mdl-tabs" in text:
            tabbed += 1
        for t in tabs:
            if re.search(rf'href="#{re.escape(t)}-\d+-\d+"', text):
                per_tab[t] += 1
    return {"html_pages": len(content), "pages_with_tabs": tabbed, "pages_with_tab": per_tab,
            "images": sum(1 for _ in (html / "_images").glob("*")) if (html / "_images").is_dir() else 0}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--book", type=Path, required=True, help="the book's checkout (read only)")
    ap.add_argument("--workdir", type=Path, help="scratch folder (default: a new temporary one)")
    ap.add_argument("--keep", action="store_true", help="keep the scratch folder")
    ap.add_argument("--venv", type=Path,
                    help=f"d2lbook's venv (default {DEFAULT_VENV}; with --no-autodoc {BARE_VENV})")
    ap.add_argument("--tabs", help="comma-separated tabs to build (default: all of config.ini's)")
    ap.add_argument("--log", type=Path, help="d2lbook's output (default <workdir>/d2lbook.log)")
    ap.add_argument("--repeat", type=int, default=1,
                    help="no-op rebuilds to run (the median is reported; 0: none)")
    ap.add_argument("--no-autodoc", action="store_true",
                    help="no torch/torchvision in d2lbook's venv: the d2l API page's autodoc fails")
    args = ap.parse_args()

    book = args.book.resolve()
    if not (book / "config.ini").is_file() or not (book / "index.md").is_file():
        raise SystemExit(f"{book} has no config.ini and index.md: not a d2lbook book")
    if not shutil.which("pandoc"):
        raise SystemExit("pandoc is not on the PATH (Debian: apt-get install pandoc)")
    venv_dir = args.venv or (BARE_VENV if args.no_autodoc else DEFAULT_VENV)
    venv = ensure_venv(venv_dir.expanduser().resolve(), autodoc=not args.no_autodoc)

    workdir = (args.workdir or Path(tempfile.mkdtemp(prefix="d2lbook-book-"))).resolve()
    copy = workdir / book.name
    if copy.exists():
        shutil.rmtree(copy)
    workdir.mkdir(parents=True, exist_ok=True)
    log(f"copying {book} to {copy}")
    copy_book(book, copy)
    tabs = edit_config(copy / "config.ini")
    if args.tabs:
        wanted = [t.strip().lower() for t in args.tabs.split(",") if t.strip()]
        unknown = set(wanted) - set(tabs)
        if unknown:
            raise SystemExit(f"unknown tabs {sorted(unknown)}; config.ini has {tabs}")
        tabs = wanted
    logpath = args.log or workdir / "d2lbook.log"
    result: dict = {"book": str(book), "copy": str(copy), "tabs": tabs, "d2lbook": PINS[0],
                    "autodoc": not args.no_autodoc,
                    "cores": os.cpu_count(), "log": str(logpath)}
    try:
        with open(logpath, "a") as logf:
            result["full"] = build(copy, venv, tabs, logf)
            result["output"] = html_summary(copy, tabs)
            if result["output"]["html_pages"] == 0:
                raise SystemExit("d2lbook wrote no HTML page")
            if args.repeat > 0:
                runs = [build(copy, venv, tabs, logf) for _ in range(args.repeat)]
                best = sorted(runs, key=lambda r: r["total_s"])[(len(runs) - 1) // 2]  # the median run
                result["noop"] = {**best, "runs_s": [r["total_s"] for r in runs],
                                  "ratio_to_full": round(best["total_s"] / result["full"]["total_s"], 3)}
    finally:
        if not args.keep and args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)
            result["copy"] = "(removed)"
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
