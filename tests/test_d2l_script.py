"""The ``d2l`` package in a plain script, installed as a reader installs it: no notebook, no IPython.

``d2l.Trainer(...).fit(model, data)`` used to fail outside a notebook (``ProgressBoard.show``
imported IPython, which no extra installs) and, with IPython present, printed
``<Figure size 450x300 with 1 Axes>`` at every epoch. A board outside a kernel now draws nothing,
and each extra installs what its helpers import (``plot`` brings IPython for ``use_svg_display``).

The venv is made fresh, and the wheel (built from this checkout by its own backend) and torch
are installed into it from the machine's configured package sources, with uv when present (as
the framework environments are, so torch comes from the same cache) or pip.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tabbook.config import load_config
from tabbook.execute.installer import chosen_installer, pip_sources, uv_binary
from tabbook.render.package import build_wheel

ROOT = Path(__file__).resolve().parent.parent
TORCH = (ROOT / "envs" / "pytorch.txt").read_text().split("torch==")[1].split()[0]

SCRIPT = """
from d2l import torch as d2l

data = d2l.SyntheticRegressionData(w=[2.0, -3.4], b=4.2)
model = d2l.LinearRegression(lr=0.03)
d2l.Trainer(max_epochs=3).fit(model, data)
points = model.board.points
print("curves:", sorted(points), "points:", sum(map(len, points.values())))
print("weights:", [round(float(v), 1) for v in model.net.weight.detach().reshape(-1)])
"""

PLOT = """
import sys
from d2l import torch as d2l

d2l.use_svg_display()
board = d2l.ProgressBoard(xlabel='x')
for i in range(10):
    board.draw(i, float(i * i), 'square')
board.show()
print("in a notebook:", d2l.in_notebook(), "drawn:", board.fig is not None)
print("IPython imported:", 'IPython' in sys.modules)
"""


def _install(python: Path, *requirements: str) -> None:
    if chosen_installer() == "uv":
        cmd = [str(uv_binary()), "pip", "install", "--quiet", "--python", str(python), *pip_sources()]
    else:
        cmd = [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    proc = subprocess.run([*cmd, *requirements], capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]


def _run(python: Path, code: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    # -I: the checkout's d2l/ and any PYTHONPATH stay out; only the installed wheel is seen.
    return subprocess.run([str(python), "-I", "-c", code], capture_output=True, text=True, cwd=cwd, timeout=600)


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A fresh venv with this checkout's wheel and its ``torch`` extra, and the wheel."""
    tmp = tmp_path_factory.mktemp("d2l-script")
    wheel = build_wheel(load_config(ROOT), tmp / "dist")
    subprocess.run([sys.executable, "-m", "venv", str(tmp / "venv")], check=True)
    python = tmp / "venv" / "bin" / "python"
    _install(python, f"d2l[torch] @ {wheel.as_uri()}", f"torch=={TORCH}")
    return python, wheel


def test_trainer_fits_in_a_plain_script_without_ipython(venv: tuple[Path, Path], tmp_path: Path) -> None:
    python, _ = venv
    missing = _run(python, "import importlib.util as u; print([m for m in ('IPython', 'matplotlib') "
                           "if u.find_spec(m) is None])", tmp_path)
    assert missing.stdout.strip() == "['IPython', 'matplotlib']", missing  # d2l[torch] brings neither
    proc = _run(python, SCRIPT, tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Figure" not in proc.stdout + proc.stderr
    assert "curves: ['train_loss', 'val_loss']" in proc.stdout  # the board kept its points
    assert "weights: [2.0, -3.4]" in proc.stdout, proc.stdout  # and the model did learn
    assert list(tmp_path.iterdir()) == []  # no file left behind either


def test_the_plot_extra_installs_what_the_plotting_helpers_import(venv: tuple[Path, Path], tmp_path: Path) -> None:
    python, wheel = venv
    _install(python, f"d2l[torch,plot] @ {wheel.as_uri()}", f"torch=={TORCH}")
    proc = _run(python, PLOT, tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "in a notebook: False drawn: False" in proc.stdout
    assert "Figure" not in proc.stdout + proc.stderr
