"""Edit → page updated at a terminal: tabbook's warm builder beside sphinx-autobuild + myst-nb.

The books are ``bench/peer_mystnb.py``'s (N pages, three small numpy cells each; one framework),
each built once before timing. Each round makes one edit to the middle page and times from the
write until that page's HTML file in the site holds the edit:

- **tabbook**: a person at a terminal saves and runs ``tabbook build``; the warm builder
  (``TABBOOK_WARM=1``, started by the first build and left running) builds in a fork of itself,
  with a kernel of the framework started ahead (``tabbook/execute/spares.py``). Timed: the write,
  then the command until it returns (the page is written by then; checked).
- **sphinx-autobuild**: running on the peer's book (``nb_execution_mode = "cache"``); timed: the
  write, then polling the page's HTML file (every 10 ms) until it holds the edit.

Edits: **prose** (a sentence appended to a paragraph) and **code** (a comment added to the second
cell; the page's unit runs again: its three cells, numpy imported anew). The tools alternate
round by round; each figure is the median of ``--repeat`` rounds, min and max kept, with the
1-minute load average before every edit. For tabbook's code edits, the build's record
(``build/report.json``) gives the breakdown: the unit's phases after it was handed to its
worker (negative: before, a kernel started ahead), its store, and the render.

Usage: ``.venv/bin/python bench/terminal_edit.py [--sizes 10,40] [--repeat 5] [--json FILE]``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import peer_mystnb  # noqa: E402  (bench/ is not a package)
import serve_latency  # noqa: E402

ROOT = peer_mystnb.ROOT
PY = str(ROOT / ".venv" / "bin" / "python")
TARGETS = {"prose": 0.5, "code": 1.5}


def tabbook_env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "TABBOOK_WARM": "1"}


def tabbook_build(root: Path) -> None:
    proc = subprocess.run([PY, "-m", "tabbook", "-C", str(root), "build"], env=tabbook_env(),
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"tabbook build failed:\n{proc.stdout[-3000:]}{proc.stderr[-3000:]}")


def edit(src: Path, kind: str, marker: str) -> None:
    text = src.read_text()
    if kind == "prose":
        at = text.index("every entry.") + len("every entry.")
        src.write_text(f"{text[:at]} {marker}{text[at:]}")
    else:
        head, tail = text.split("y = x @ x.T", 1)
        tail = tail.split("\n", 1)[1]
        src.write_text(f"{head}y = x @ x.T  # {marker}\n{tail}")


def wait_for(page: Path, marker: str, proc: subprocess.Popen[str], timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            if marker in page.read_text():
                return
        except OSError:
            pass
        if proc.poll() is not None:
            raise SystemExit("sphinx-autobuild exited")
        if time.monotonic() > deadline:
            raise SystemExit(f"{page} never showed {marker!r}")
        time.sleep(0.01)


def breakdown(root: Path) -> dict:
    """The code edit's record: build, execution, render, and the unit's phases."""
    report = json.loads((root / "build" / "report.json").read_text())
    units = [u for u in report["units"] if u["status"] == "executed"]
    return {"seconds": report["seconds"], "execute_seconds": report["execute_seconds"],
            "sphinx_seconds": report["sphinx_seconds"], "warm": report["warm"],
            "unit": {k: units[0].get(k) for k in ("seconds", "started_ahead", "phases")} if units else None}


def measure(n: int, repeat: int, workdir: Path, python: Path) -> dict:
    roots = {}
    for cls, key, writer in ((peer_mystnb.Tabbook, "tabbook", peer_mystnb.write_tabbook_book),
                             (peer_mystnb.Peer, "sphinx-autobuild", peer_mystnb.write_peer_book)):
        root = workdir / f"{key}-{n}"
        shutil.rmtree(root, ignore_errors=True)
        writer(root, n, python)
        cls(root, n).build()  # built once, as a script would
        roots[key] = root
    middle = f"p{n // 2:03d}"
    # The warm builder: started by the first build at a terminal, then one edit of each kind
    # untimed, so its pool holds a kernel (as after an author's first code edit).
    tabbook_build(roots["tabbook"])
    time.sleep(3)
    for kind in ("prose", "code"):
        edit(roots["tabbook"] / "pages" / f"{middle}.md", kind, f"warm-up {kind}")
        tabbook_build(roots["tabbook"])
    port = serve_latency.free_port()
    auto = serve_latency.start("sphinx-autobuild", roots["sphinx-autobuild"], port, workdir / f"autobuild-{n}.log")
    serve_latency.wait_for_url(auto, f"http://127.0.0.1:{port}/pages/{middle}.html")
    runs: dict[str, dict[str, list[float]]] = {t: {"prose": [], "code": []} for t in roots}
    loads: list[dict] = []
    breakdowns: list[dict] = []
    try:
        for r in range(repeat):
            order = list(roots) if r % 2 == 0 else list(reversed(roots))
            for kind in ("prose", "code"):
                for key in order:
                    time.sleep(4)  # the warm builder tops its kernels up after a build; autobuild settles
                    marker = f"edit {kind} {key} {r}"
                    src = roots[key] / "pages" / f"{middle}.md"
                    page = roots[key] / ("build/html" if key == "tabbook" else "_build/html") / "pages" / f"{middle}.html"
                    loads.append({"tool": key, "edit": kind, "round": r, "load1": os.getloadavg()[0]})
                    t0 = time.perf_counter()
                    edit(src, kind, marker)
                    if key == "tabbook":
                        tabbook_build(roots[key])
                        seconds = time.perf_counter() - t0
                        if marker not in page.read_text():
                            raise SystemExit(f"tabbook's page lacks {marker!r}")
                        if kind == "code":
                            breakdowns.append(breakdown(roots[key]))
                    else:
                        wait_for(page, marker, auto)
                        seconds = time.perf_counter() - t0
                    runs[key][kind].append(round(seconds, 3))
            peer_mystnb.log(f"N={n} round {r + 1}: " + "; ".join(
                f"{k} prose {runs[k]['prose'][-1]:.2f} code {runs[k]['code'][-1]:.2f}" for k in roots))
    finally:
        serve_latency.stop(auto)
        subprocess.run([PY, "-m", "tabbook", "-C", str(roots["tabbook"]), "warm", "--stop"], env=tabbook_env(),
                       capture_output=True)
    summary = {}
    for kind in ("prose", "code"):
        med = {k: statistics.median(runs[k][kind]) for k in runs}
        summary[kind] = {"tabbook_s": med["tabbook"], "autobuild_s": med["sphinx-autobuild"],
                         "tabbook_min_max": [min(runs["tabbook"][kind]), max(runs["tabbook"][kind])],
                         "autobuild_min_max": [min(runs["sphinx-autobuild"][kind]), max(runs["sphinx-autobuild"][kind])],
                         "ratio": round(med["tabbook"] / med["sphinx-autobuild"], 3), "target_s": TARGETS[kind]}
    return {"pages": n, "runs": runs, "loads": loads, "figures": summary, "code_breakdowns": breakdowns}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="10,40")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--workdir", type=Path)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    python = peer_mystnb.kernel_python()
    subprocess.run([PY, "-m", "compileall", "-q", str(ROOT / "tabbook")], check=True)  # as installed
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="tabbook-terminal-"))
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    results = [measure(int(n), args.repeat, workdir, python) for n in args.sizes.split(",")]
    print("| edit → page updated | " + " | ".join(f"N = {r['pages']}: tabbook / autobuild (ratio)" for r in results)
          + " | target |")
    print("| --- | " + " | ".join("---" for _ in results) + " | --- |")
    for kind in ("prose", "code"):
        cells = [r["figures"][kind] for r in results]
        print(f"| {kind} | " + " | ".join(f"{c['tabbook_s']:.2f} / {c['autobuild_s']:.2f} s ({c['ratio']:.2f})"
                                          for c in cells) + f" | ≤ {TARGETS[kind]} s |")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    if not args.workdir:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
