"""The offline GPU-machine recipe, on this host (issue 17, items 2 and 5).

``tabbook wheelhouse`` gathers the wheels for CPython 3.12 (the GPU machine's Python); a bare
3.12 venv (no ipykernel, no nbclient, no network use: ``--no-index``) installs them, and then
runs the builder itself, execution only, on a small book: what README's "Executing on a GPU
machine" tells the GPU machine to do. The wheels are downloaded once per machine
(``~/.cache/tabbook/wheelhouse-test``) from the package registry, as set-up does.
"""

from __future__ import annotations

import glob
import json
import os
import re
import subprocess
import sys
from pathlib import Path

from prerequisites import require
from test_d2lbook_build import make_book

ROOT = Path(__file__).resolve().parent.parent
PY312 = sorted(glob.glob(str(Path.home() / ".pyenv" / "versions" / "3.12.*" / "bin" / "python3.12")))


def test_the_wheelhouse_lets_a_bare_python_execute_a_book_without_the_network(tmp_path: Path) -> None:
    require(PY312, "no Python 3.12 under ~/.pyenv to stand for the GPU machine's")
    house = Path.home() / ".cache" / "tabbook" / "wheelhouse-test"
    proc = subprocess.run([sys.executable, "-m", "tabbook", "-C", str(ROOT), "wheelhouse", "--dest", str(house)],
                          capture_output=True, text=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    size = sum(w.stat().st_size for w in house.glob("*.whl"))
    assert 0 < size < 64 * 2**20, size  # it has to travel with the working tree
    own = re.search(r"the kernel and builder: ([0-9.]+) MB", proc.stdout)
    assert own is not None and 0 < float(own.group(1)) < 40, proc.stdout
    # One file says what to install there: the kernel and builder part, and what the book's code
    # needs besides the frameworks (config.ini's offline_requirements: matplotlib), downloaded
    # without its dependencies (numpy comes with the machine's frameworks).
    wanted = (house / "requirements.txt").read_text()
    assert "ipykernel==" in wanted and "matplotlib==" in wanted
    assert list(house.glob("matplotlib-*.whl")) and not list(house.glob("numpy-*.whl"))

    venv = tmp_path / "gpu-venv"
    subprocess.run([PY312[-1], "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    assert subprocess.run([str(python), "-c", "import ipykernel"], capture_output=True).returncode != 0
    from tabbook.execute.wheelhouse import REQUIREMENTS

    install = subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                              "--no-index", "--find-links", str(house), "-r", str(REQUIREMENTS)],
                             capture_output=True, text=True)
    assert install.returncode == 0, install.stderr

    book, overlay = make_book(tmp_path, eval_notebook=True)
    text = overlay.read_text().replace("python = current\n", "")
    overlay.write_text(text)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "TABBOOK_"))}
    env |= {"PYTHONPATH": str(ROOT), "TABBOOK_CACHE": str(tmp_path / ".cache")}
    run = subprocess.run([str(python), "-m", "tabbook", "-C", str(book), "--overlay", str(overlay),
                          "--python", f"pytorch={python}", "--python", f"mxnet={python}", "build", "--no-render"],
                         capture_output=True, text=True, cwd=tmp_path, env=env, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "[done] 4 executed" in run.stdout
    entry = json.loads((book / "_freeze" / "chapter_a" / "second" / "mxnet.ipynb").read_text())
    assert entry["metadata"]["tabbook"]["provenance"]["python"].startswith("3.12.")
    assert not (tmp_path / ".cache" / "venvs").exists()  # nothing was created or installed for the tabs
