"""How long a framework environment takes to create: uv beside pip (issue 29).

For each framework of the book, the environment is created twice, the way a build creates it
(``tabbook.execute.envs.ensure_env``: ``python -m venv``, then the hashed lock installed in
hash-checking mode), into a throw-away ``[build] venvs`` folder: once with
``[build] installer = pip``, once with ``uv``. Both installers work from their caches as this
machine has them (pip's HTTP cache, uv's wheel cache), which is what a second clone or a CI run
on the same machine sees; the first-ever install downloads the wheels either way. Each
environment is then checked to import its framework and to hold the same packages under both
installers (``pip freeze``), so the figures compare the same result.

Usage: ``python bench/env_create.py [FRAMEWORK ...] [--json]`` (default: every tab). Needs uv
(``envs/builder.txt``); prints the figures with the issue's target (uv several times faster).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tabbook.config import load_config  # noqa: E402
from tabbook.execute.envs import check_env, ensure_env  # noqa: E402
from tabbook.execute.installer import hashed_lock, uv_binary  # noqa: E402


def _frozen(python: Path) -> list[str]:
    out = subprocess.run([str(python), "-m", "pip", "freeze", "--all", "--disable-pip-version-check"],
                         check=True, capture_output=True, text=True).stdout
    return sorted(line.lower() for line in out.splitlines() if not line.lower().startswith("pip=="))


def create(config, name: str, installer: str, base: Path) -> tuple[float, list[str], str]:  # noqa: ANN001
    """Seconds to create ``name``'s environment with ``installer`` under ``base``; its packages."""
    config = dataclasses.replace(config, venvs=base / installer, installer=installer)
    fw = config.framework(name)
    started = time.perf_counter()
    env = ensure_env(config, fw, log=lambda _line: None)
    seconds = time.perf_counter() - started
    version = check_env(config, fw, env)
    return seconds, _frozen(env.python), version


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("frameworks", nargs="*")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if uv_binary() is None:
        print("env_create: uv is not installed (envs/builder.txt): skipped")
        return 0
    config = load_config(ROOT)
    names = args.frameworks or [t for t in config.tabs if config.framework(t).requirements]
    rows = []
    for name in names:
        fw = config.framework(name)
        assert fw.requirements is not None
        hashed = hashed_lock(fw.requirements) is not None
        with tempfile.TemporaryDirectory(prefix="tabbook-bench-envs-") as tmp:
            pip_s, pip_pkgs, version = create(config, name, "pip", Path(tmp))
            shutil.rmtree(Path(tmp) / "pip")  # the disk is not shared by both at once
            uv_s, uv_pkgs, uv_version = create(config, name, "uv", Path(tmp))
        same = pip_pkgs == uv_pkgs and version == uv_version
        rows.append({"framework": name, "packages": len(pip_pkgs), "hashed": hashed, "pip_s": round(pip_s, 1),
                     "uv_s": round(uv_s, 1), "speedup": round(pip_s / uv_s, 1), "same_packages": same,
                     "version": version})
        if not same:
            print(f"{name}: pip and uv installed different packages: "
                  f"{sorted(set(pip_pkgs) ^ set(uv_pkgs))}", file=sys.stderr)
    if args.json:
        print(json.dumps(rows, indent=1))
    else:
        print("framework environment created from its lock (python -m venv + install, bytecode compiled; "
              "target: uv several times faster than pip)")
        print(f"{'framework':<12}{'packages':>9}{'hashes':>8}{'pip s':>8}{'uv s':>8}{'pip/uv':>8}  same packages")
        for r in rows:
            print(f"{r['framework']:<12}{r['packages']:>9}{'yes' if r['hashed'] else 'no':>8}{r['pip_s']:>8}"
                  f"{r['uv_s']:>8}{r['speedup']:>7}x  {'yes' if r['same_packages'] else 'NO'}")
    return 0 if all(r["same_packages"] for r in rows) else 1


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        raise SystemExit(main())
