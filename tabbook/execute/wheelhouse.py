"""``tabbook wheelhouse``: the wheels a network-less GPU machine needs to execute the book.

A GPU build machine typically has its frameworks (a CUDA build of PyTorch, JAX) and no
Jupyter, and cannot download. What the kernel and the builder's execution side need
(``offline-requirements.txt``: ipykernel, nbclient, nbformat, jupyter-client, markdown-it-py,
and everything they depend on) is downloaded here, on a host with the registries, as wheels
for the GPU machine's Python (CPython 3.12 on manylinux x86-64 by default), into an ignored
folder that travels with the working tree; there ``pip install --no-index --find-links``
installs it into a venv that sees the system's frameworks (``--system-site-packages``).

What the book's own code imports besides the frameworks (this book: matplotlib) may be missing
there too: ``[build] offline_requirements`` names requirement files of it, downloaded without
their dependencies (``--no-deps``: numpy and the like come with the machine's frameworks, and
the wheelhouse must stay small enough to travel), so such a file lists every package it needs.
Everything to install is written to ``WHEELHOUSE/requirements.txt``: one ``-r`` there.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tabbook.errors import BookError

REQUIREMENTS = Path(__file__).with_name("offline-requirements.txt")
PLATFORMS = ("manylinux2014_x86_64", "manylinux_2_17_x86_64", "manylinux_2_28_x86_64")


def gather(dest: Path, python_version: str = "3.12", extra: tuple[Path, ...] = ()) -> tuple[int, int, int]:
    """Download the wheels into ``dest`` (with ``extra``, the book's own requirement files, each
    package without its dependencies) and write ``dest/requirements.txt``, what to install
    there; returns (how many wheels, their bytes, the bytes of the kernel and builder part)."""
    major, _, minor = python_version.partition(".")
    if not (major.isdigit() and minor.isdigit()):
        raise BookError(f"wheelhouse: --python-version {python_version!r} is not like 3.12")
    for path in extra:
        if not path.is_file():
            raise BookError("[build] offline_requirements: no such file", str(path))
    dest.mkdir(parents=True, exist_ok=True)
    base = [sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check",
            "--only-binary=:all:", "--python-version", python_version, "--implementation", "cp",
            "--abi", f"cp{major}{minor}", "--dest", str(dest)]
    for platform in PLATFORMS:
        base += ["--platform", platform]
    for old in dest.glob("*.whl"):  # what is there is what the requirements ask for now (pip caches)
        old.unlink()
    own = -1
    for cmd in ([*base, "-r", str(REQUIREMENTS)],
                *([*base, "--no-deps", "-r", str(path)] for path in extra)):
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise BookError(f"wheelhouse: pip download failed:\n{proc.stderr.strip()[-2000:]}")
        if own < 0:
            own = sum(w.stat().st_size for w in dest.glob("*.whl"))
    parts = [f"# {REQUIREMENTS.name}: the kernel and the builder's execution side\n" + REQUIREMENTS.read_text()]
    parts += [f"# {path.name}: what the book's code needs besides the frameworks\n" + path.read_text()
              for path in extra]
    (dest / "requirements.txt").write_text(
        "# Written by `tabbook wheelhouse`: pip install --no-index --find-links THIS_FOLDER -r THIS_FILE\n"
        + "\n".join(parts))
    wheels = sorted(dest.glob("*.whl"))
    return len(wheels), sum(w.stat().st_size for w in wheels), own

