"""Benchmark what ``import d2l.<framework>`` costs beyond importing the framework itself.

The library defers plotting imports (matplotlib, IPython) into the functions
that draw, so importing it should cost little more than the framework: the
target is at most 50 ms. For each framework whose environment exists, in fresh
interpreters of that environment (the repository's ``d2l/`` on the path):

- ``import <framework>`` alone, and ``import d2l.<module>`` alone, each the
  median of ``--repeat`` fresh processes; the difference is the cost;
- ``import d2l.<module>`` timed after ``import <framework>`` in the same
  process: the cost itself, free of the process-to-process noise of the
  difference above; the ratio to the target is computed from it;
- the same after the module's own import statements ran: what its code costs
  (for JAX the rest is flax and optax, which the saved classes derive from);
- the packages that ``import d2l.<module>`` loads beyond the framework's own:
  no other framework and no plotting package may be among them.

What "the framework" is comes from config.ini: ``import_stack`` is the baseline
import (``import jax, flax.linen, optax`` for JAX) and ``heavy_modules`` the
framework's own packages (another framework's are the ones not allowed).

Usage: ``.venv/bin/python bench/import_cost.py [--repeat N] [--target-ms 50] [frameworks...]``.
Prints one line per framework with the ratio cost/target (≤ 1 is on target);
exits 1 if an import pulls in another framework or a plotting package.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tabbook.config import Config, Framework, load_config  # noqa: E402
from tabbook.errors import BookError  # noqa: E402
from tabbook.execute.envs import ensure_env  # noqa: E402

PLOTTING = {"matplotlib", "matplotlib_inline", "IPython"}

TIMED = """\
import sys, time, json
before = {{m.split('.')[0] for m in sys.modules}}
{setup}
t = time.perf_counter()
{statement}
seconds = time.perf_counter() - t
print(json.dumps([seconds, sorted({{m.split('.')[0] for m in sys.modules}} - before)]))
"""


def timed(python: Path, path: Path, statement: str, setup: str = "") -> tuple[float, set[str]]:
    """Seconds ``statement`` takes in a fresh interpreter, and the packages it loaded."""
    proc = subprocess.run(
        [str(python), "-P", "-c", TIMED.format(setup=setup, statement=statement)],
        capture_output=True, text=True, check=False,
        env={**os.environ, "PYTHONPATH": str(path), "TF_CPP_MIN_LOG_LEVEL": "3"},
    )
    if proc.returncode != 0:
        raise SystemExit(f"{python}: {statement!r} failed:\n{proc.stderr[-2000:]}")
    seconds, loaded = json.loads(proc.stdout.strip().splitlines()[-1])
    return seconds, set(loaded)


def header_imports(text: str) -> str:
    """The generated module's own top-level import statements (what it needs eagerly)."""
    tree = ast.parse(text)
    return "; ".join(ast.unparse(n) for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom)))


def unwanted_modules(config: Config, fw: Framework) -> set[str]:
    """What ``import d2l.<module>`` must not load: other frameworks' modules and plotting."""
    return (config.heavy_modules - set(fw.heavy_modules)) | PLOTTING


def measure(python: Path, path: Path, fw: Framework, unwanted: set[str], header: str, repeat: int) -> dict:
    module = fw.module
    own, lib, direct, body = [], [], [], []
    own_mods: set[str] = set()
    lib_mods: set[str] = set()
    for _ in range(repeat):  # interleaved, so drift in machine load hits all alike
        s, own_mods = timed(python, path, fw.import_stack)
        own.append(s)
        s, lib_mods = timed(python, path, f"import d2l.{module}")
        lib.append(s)
        direct.append(timed(python, path, f"import d2l.{module}",
                            setup=fw.import_stack)[0])
        body.append(timed(python, path, f"import d2l.{module}", setup=header or "pass")[0])
    extra = lib_mods - own_mods - {"d2l"}
    return {
        "framework_ms": 1000 * statistics.median(own),
        "library_ms": 1000 * statistics.median(lib),
        "direct_ms": 1000 * statistics.median(direct),
        "body_ms": 1000 * statistics.median(body),
        "unwanted": sorted(extra & unwanted),
        "extra": sorted(extra),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("frameworks", nargs="*", help="tabs to measure (default: all installed)")
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--target-ms", type=float, default=50.0)
    args = parser.parse_args(argv)
    config = load_config(ROOT)
    if not (config.library_dir / "__init__.py").is_file():
        raise SystemExit("d2l/ is not generated; run `python -m tabbook lib` first")
    bad = False
    with tempfile.TemporaryDirectory(prefix="import-cost-") as tmp:
        path = Path(tmp)
        (path / config.library_dir.name).symlink_to(config.library_dir, target_is_directory=True)
        for tab in args.frameworks or config.tabs:
            fw = config.frameworks[tab]
            try:
                python = ensure_env(config, fw, create=False).python
            except BookError:
                print(f"{tab:<11} skipped: environment not installed (make envs)")
                continue
            text = (config.library_dir / f"{fw.module}.py").read_text()
            r = measure(python, path, fw, unwanted_modules(config, fw), header_imports(text), args.repeat)
            cost = r["library_ms"] - r["framework_ms"]
            base = fw.import_stack
            print(f"{tab:<11} {base}: {r['framework_ms']:.0f} ms; import d2l.{fw.module}: "
                  f"{r['library_ms']:.0f} ms; difference {cost:+.0f} ms; measured after "
                  f"`{base}`: {r['direct_ms']:.1f} ms, ratio to the {args.target_ms:.0f} ms "
                  f"target {r['direct_ms'] / args.target_ms:.2f}; of which the module's own code (its "
                  f"imports done): {r['body_ms']:.1f} ms; also loads "
                  f"{', '.join(p for p in r['extra'] if not p.startswith('_')) or 'nothing else'}")
            if r["unwanted"]:
                bad = True
                print(f"{tab:<11} FAIL: import d2l.{fw.module} loads {', '.join(r['unwanted'])}")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
