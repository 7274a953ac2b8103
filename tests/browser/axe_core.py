"""axe-core for the accessibility test, from the npm registry, installed at set-up (``make axe``).

The browser tests run axe-core (Deque's accessibility engine) over the built site. It is a test
tool, not part of the site: pinned with its integrity hash by ``tests/browser/axe/package-lock.json``
and installed with ``npm ci`` into the user-wide cache, in a folder named by that lock's hash (as
KaTeX is, ``tabbook.render.katex``), so every checkout on the machine shares it and a test run
needs no network. Nothing is ever loaded from a CDN: the test injects the installed file.

``python tests/browser/axe_core.py`` installs it (idempotent) and prints where.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
PROJECT = HERE / "axe"
sys.path.insert(0, str(HERE.parents[1]))  # tabbook's cache folder, when run as a script

from tabbook.files import cache_dir  # noqa: E402


def install_dir() -> Path:
    lock = (PROJECT / "package-lock.json").read_bytes()
    return cache_dir() / "axe" / hashlib.sha256(lock).hexdigest()[:12]


def axe_script() -> Path:
    """Where the installed ``axe.min.js`` is (it may not exist: :func:`install` makes it)."""
    return install_dir() / "node_modules" / "axe-core" / "axe.min.js"


def install() -> Path:
    """``npm ci`` into the cache unless it is there; returns ``axe.min.js``."""
    script = axe_script()
    if script.is_file():
        return script
    npm = shutil.which("npm")
    if npm is None:
        raise SystemExit("axe: npm is missing (Debian: apt-get install nodejs npm)")
    target = install_dir()
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=".install-"))
    try:
        for name in ("package.json", "package-lock.json"):
            shutil.copy2(PROJECT / name, tmp / name)
        proc = subprocess.run([npm, "ci", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error"],
                              cwd=tmp, capture_output=True, text=True)
        if proc.returncode != 0:
            raise SystemExit(f"axe: npm ci failed: {proc.stderr.strip()[-800:]}")
        try:
            tmp.rename(target)  # atomic: a concurrent install either sees all of it or none
        except OSError:
            if not script.is_file():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return script


if __name__ == "__main__":
    print(f"axe: {install()}")
