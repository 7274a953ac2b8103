"""``tabbook wheelhouse``: the wheels a network-less GPU machine needs to execute the book.

A GPU build machine typically has its frameworks (a CUDA build of PyTorch, JAX) and no
Jupyter, and cannot download. What the kernel and the builder's execution side need
(``offline-requirements.txt``: ipykernel, nbclient, nbformat, jupyter-client, markdown-it-py,
and everything they depend on) is downloaded here, on a host with the registries, as wheels
for the GPU machine's Python (CPython 3.12 on manylinux x86-64 by default), into an ignored
folder that travels with the working tree; there ``pip install --no-index --find-links``
installs it into a venv that sees the system's frameworks (``--system-site-packages``).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tabbook.errors import BookError

REQUIREMENTS = Path(__file__).with_name("offline-requirements.txt")
PLATFORMS = ("manylinux2014_x86_64", "manylinux_2_17_x86_64", "manylinux_2_28_x86_64")


def gather(dest: Path, python_version: str = "3.12") -> tuple[int, int]:
    """Download the wheels into ``dest``; returns (how many wheels, their bytes)."""
    major, _, minor = python_version.partition(".")
    if not (major.isdigit() and minor.isdigit()):
        raise BookError(f"wheelhouse: --python-version {python_version!r} is not like 3.12")
    dest.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check",
           "--only-binary=:all:", "--python-version", python_version, "--implementation", "cp",
           "--abi", f"cp{major}{minor}", "--dest", str(dest), "-r", str(REQUIREMENTS)]
    for platform in PLATFORMS:
        cmd += ["--platform", platform]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise BookError(f"wheelhouse: pip download failed:\n{proc.stderr.strip()[-2000:]}")
    wheels = sorted(dest.glob("*.whl"))
    return len(wheels), sum(w.stat().st_size for w in wheels)
