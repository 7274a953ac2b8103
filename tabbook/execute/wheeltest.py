"""Test the ``d2l`` wheel the way readers get it: built, installed, imported in each framework.

``python -m tabbook libtest`` (``make libtest``):

1. regenerates ``d2l/`` (unless ``--no-generate``) and builds the wheel into
   ``build/dist/`` with ``pip wheel . --no-deps``;
2. for each framework whose environment exists, installs the wheel with
   ``pip install --no-deps --target`` into a throw-away folder and runs
   ``tests/lib/test_<module>.py`` with that environment's Python and only that
   folder on ``PYTHONPATH`` (``python -P``: the repository's own ``d2l/`` is
   never importable, so the tests see the wheel, not the checkout);
3. checks that a fresh Python 3.12 venv installs the wheel pulling numpy only,
   and that ``import d2l`` works there.

A framework without ``tests/lib/test_<module>.py`` is reported as skipped with
that reason (its module is untested: add the file). A framework without an
installed environment is reported as skipped too, not failed: environments
are created by ``make envs`` (or ``--any-env`` accepts an older completed one
from the cache, handy while requirements are in flux). What ``import d2l``
must not load is every framework's ``heavy_modules`` (config.ini) and matplotlib.
The last line reads ``libtest: N passed, N failed, N skipped``.
"""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from tabbook.config import Config
from tabbook.errors import BookError, Log
from tabbook.execute.envs import MARKER, ensure_env
from tabbook.files import BuildDir, cache_dir

PIP = [sys.executable, "-m", "pip", "--disable-pip-version-check"]


@dataclass(frozen=True)
class Outcome:
    name: str
    status: str  # "passed" | "failed" | "skipped"
    detail: str = ""


def build_wheel(config: Config, log: Log = print) -> Path:
    """``pip wheel . --no-deps -w build/dist``; returns the wheel of the current version."""
    dist = BuildDir(config.build_dir).dist
    dist.mkdir(parents=True, exist_ok=True)
    for old in dist.glob("d2l-*.whl"):
        old.unlink()
    subprocess.run([*PIP, "wheel", str(config.root), "--no-deps", "--quiet", "-w", str(dist)], check=True)
    wheels = sorted(dist.glob(f"d2l-{config.version}-*.whl"))
    if len(wheels) != 1:
        raise BookError(f"expected one wheel d2l-{config.version}-*.whl in {config.rel(dist)}, "
                        f"found {[w.name for w in dist.iterdir()]}")
    log(f"[libtest] built {config.rel(wheels[0])}")
    return wheels[0]


def env_python(config: Config, tab: str, overrides: dict[str, str], any_env: bool) -> Path | None:
    """The framework env's interpreter, or None when it is not installed."""
    if tab in overrides:
        return Path(overrides[tab])
    try:
        return ensure_env(config, config.frameworks[tab], create=False).python
    except BookError:
        if not any_env:
            return None
    done = sorted(glob.glob(str(cache_dir() / "venvs" / f"{tab}-*" / MARKER)), key=os.path.getmtime)
    return Path(done[-1]).parent / "bin" / "python" if done else None


def _has_pytest(python: Path) -> bool:
    return subprocess.run([str(python), "-c", "import pytest"], capture_output=True).returncode == 0


def lib_test(config: Config, tab: str) -> Path:
    """``tests/lib/test_<module>.py``: the tests of one framework's generated module."""
    return config.root / "tests" / "lib" / f"test_{config.frameworks[tab].module}.py"


def missing_test(config: Config, tab: str) -> Outcome | None:
    """The skip a framework without its tests/lib file gets (None: it has one)."""
    test = lib_test(config, tab)
    if test.is_file():
        return None
    module = config.frameworks[tab].module
    return Outcome(tab, "skipped", f"no {config.rel(test)}: d2l.{module} is untested (add that file)")


def run_framework(config: Config, tab: str, wheel: Path, python: Path, work: Path, log: Log = print) -> Outcome:
    """Install the wheel for one framework env and run its tests/lib file there."""
    if skipped := missing_test(config, tab):
        return skipped
    test = lib_test(config, tab)
    target = work / tab
    subprocess.run([*PIP, "install", "--quiet", "--no-deps", "--target", str(target), str(wheel)], check=True)
    path = [str(target)]
    if not _has_pytest(python):  # an env made before pytest joined its requirements
        helper = work / "pytest"
        if not helper.exists():
            subprocess.run([*PIP, "install", "--quiet", "--target", str(helper), "pytest"], check=True)
        path.append(str(helper))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(path), "TABBOOK_D2L_DIR": str(target / "d2l"),
           "TF_CPP_MIN_LOG_LEVEL": "2", "MPLBACKEND": "Agg"}
    cmd = [str(python), "-P", "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", str(test.parent),
           "--confcutdir", str(test.parent), str(test)]
    log(f"[libtest] {tab}: {python}")
    proc = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True)
    tail = (proc.stdout + proc.stderr).strip().splitlines()
    summary = tail[-1] if tail else ""
    if proc.returncode == 0:
        return Outcome(tab, "passed", summary)
    log("\n".join(tail[-60:]))
    return Outcome(tab, "failed", summary)


def check_fresh_venv(config: Config, wheel: Path, work: Path, log: Log = print) -> Outcome:
    """A new Python 3.12 venv installs the wheel with numpy as its only dependency."""
    found = sorted(glob.glob("/root/.pyenv/versions/3.12.*/bin/python3.12")) or sorted(
        glob.glob(str(Path.home() / ".pyenv/versions/3.12.*/bin/python3.12")))
    if not found:
        return Outcome("python3.12 venv", "skipped", "no Python 3.12 under ~/.pyenv")
    venv = work / "py312"
    subprocess.run([found[-1], "-m", "venv", str(venv)], check=True)
    py = str(venv / "bin" / "python")
    pip = [py, "-m", "pip", "--disable-pip-version-check"]
    before = {p["name"].lower() for p in json.loads(subprocess.run(
        [*pip, "list", "--format=json"], check=True, capture_output=True, text=True).stdout)}
    subprocess.run([*pip, "install", "--quiet", str(wheel)], check=True)
    after = {p["name"].lower() for p in json.loads(subprocess.run(
        [*pip, "list", "--format=json"], check=True, capture_output=True, text=True).stdout)}
    added = sorted(after - before)
    heavy = sorted(config.heavy_modules | {"matplotlib"})  # config.ini's heavy_modules of every framework
    code = (f"import sys, d2l; assert d2l.__version__ == {config.version!r}, d2l.__version__; "
            f"heavy = set({heavy!r}) & set(sys.modules); "
            "assert not heavy, heavy; print(d2l.__version__)")
    proc = subprocess.run([py, "-P", "-c", code], cwd=work, capture_output=True, text=True)
    if added != ["d2l", "numpy"] or proc.returncode != 0:
        return Outcome("python3.12 venv", "failed", f"installed {added}; {proc.stderr.strip()[-300:]}")
    log(f"[libtest] python3.12 venv: pip installed {', '.join(added)}; import d2l works")
    return Outcome("python3.12 venv", "passed", f"installed {', '.join(added)}")


def import_modules(config: Config, frameworks: list[str] | None = None, log: Log = print) -> list[Outcome]:
    """Import each generated ``d2l/<module>.py`` in its framework's environment (``lib --import``).

    What a reader does first (``from d2l import torch as d2l``), tried before any section runs:
    a module that names a package its environment lacks (d2l-en's ``d2l/jax.py`` imports
    TensorFlow Datasets) fails here with the import error, not in the middle of an execution.
    Only the generated package is on the path (through ``build/pylib``, as in the kernels).
    A framework whose environment is not installed is skipped, not created.
    """
    from tabbook.execute.envs import ensure_pylib

    outcomes = []
    path = str(ensure_pylib(config).resolve())
    package = config.library_dir.name
    for tab in frameworks or config.tabs:
        if tab not in config.frameworks:
            raise BookError(f"unknown framework {tab!r}; config.ini has {', '.join(config.tabs)}")
        fw = config.frameworks[tab]
        module = config.library_dir / f"{fw.module}.py"
        if not module.is_file():
            outcomes.append(Outcome(tab, "skipped", f"no {config.rel(module)}"))
            continue
        try:
            python = ensure_env(config, fw, create=False).python
        except BookError as exc:
            outcomes.append(Outcome(tab, "skipped", exc.message))
            continue
        code = f"import {package}.{fw.module} as m; print(len([n for n in vars(m) if not n.startswith('_')]))"
        env = {**os.environ, "PYTHONPATH": path, "TF_CPP_MIN_LOG_LEVEL": "2", "MPLBACKEND": "Agg"}
        with tempfile.TemporaryDirectory(prefix="tabbook-import-") as tmp:
            proc = subprocess.run([str(python), "-c", code], cwd=tmp, env=env, capture_output=True, text=True)
        if proc.returncode == 0:
            names = proc.stdout.strip().splitlines()[-1]
            outcomes.append(Outcome(tab, "passed", f"import {package}.{fw.module}: {names} public names"))
        else:
            tail = [line for line in proc.stderr.strip().splitlines() if line.strip()][-1:]
            outcomes.append(Outcome(tab, "failed", f"{config.rel(module)}: {' '.join(tail)}"))
        log(f"[lib] {tab:<12} {outcomes[-1].status:<8} {outcomes[-1].detail}")
    return outcomes


def libtest(config: Config, frameworks: list[str] | None = None, *, generate: bool = True,
            overrides: dict[str, str] | None = None, any_env: bool = False, venv_check: bool = True) -> int:
    """``python -m tabbook libtest``: exit status 1 if any framework's tests failed."""
    overrides = overrides or {}
    try:
        if generate:
            from tabbook.book import read_book
            from tabbook.library.cache import book_library
            from tabbook.library.generate import write_library

            for rel in write_library(config, book_library(read_book(config, extra_files=False))):
                print(f"[libtest] regenerated {rel}")
        wheel = build_wheel(config)
        outcomes: list[Outcome] = []
        with tempfile.TemporaryDirectory(prefix="tabbook-libtest-") as tmp:
            work = Path(tmp)
            for tab in frameworks or config.tabs:
                if tab not in config.frameworks:
                    raise BookError(f"unknown framework {tab!r}; config.ini has {', '.join(config.tabs)}")
                if skipped := missing_test(config, tab):
                    outcomes.append(skipped)
                    continue
                python = env_python(config, tab, overrides, any_env)
                if python is None:
                    outcomes.append(Outcome(tab, "skipped", "environment not installed (tabbook envs)"))
                    continue
                outcomes.append(run_framework(config, tab, wheel, python, work))
            if venv_check:
                outcomes.append(check_fresh_venv(config, wheel, work))
    except subprocess.CalledProcessError as exc:
        raise BookError(f"[libtest] command failed ({exc.returncode}): {' '.join(map(str, exc.cmd))}") from exc
    for o in outcomes:
        print(f"[libtest] {o.name:<16} {o.status:<8} {o.detail}")
    count = {s: sum(o.status == s for o in outcomes) for s in ("passed", "failed", "skipped")}
    print(f"libtest: {count['passed']} passed, {count['failed']} failed, {count['skipped']} skipped")
    return 1 if count["failed"] else 0

