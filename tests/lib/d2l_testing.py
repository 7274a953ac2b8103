"""Helpers for tests that run inside a framework environment against the installed d2l wheel.

These tests import ``d2l.<framework>`` as a reader would. ``tabbook.execute.wheeltest``
runs them with only the installed wheel on the path and sets ``TABBOOK_D2L_DIR``
to where it installed it, so :func:`load` can prove that the wheel, not the
repository checkout, is under test.
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

FRAMEWORK_ROOTS = {
    "torch": {"torch"},
    "jax": {"jax", "jaxlib", "flax", "optax"},
    "tensorflow": {"tensorflow", "keras"},
    "mxnet": {"mxnet"},
}
PLOTTING_ROOTS = {"matplotlib", "matplotlib_inline", "IPython"}


def load(module: str) -> ModuleType:
    """``import d2l.<module>``, checking it comes from the wheel libtest installed."""
    mod = importlib.import_module(f"d2l.{module}")
    expected = os.environ.get("TABBOOK_D2L_DIR")
    if expected:
        assert Path(mod.__file__).resolve().parent == Path(expected).resolve(), mod.__file__
    return mod


def need(mod: ModuleType, *names: str) -> None:
    """Skip (with the reason) when the chapter does not save these names yet."""
    missing = [n for n in names if n not in vars(mod)]
    if missing:
        pytest.skip(f"chapter_gpus does not save {', '.join(missing)} in {mod.__name__} yet")


def modules_after_import(statement: str) -> set[str]:
    """Top-level packages that ``statement`` loads in a fresh interpreter."""
    code = (
        "import sys, json\n"
        "before = {m.split('.')[0] for m in sys.modules}\n"
        f"{statement}\n"
        "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules} - before)))\n"
    )
    proc = subprocess.run([sys.executable, "-P", "-c", code], capture_output=True, text=True,
                          env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})
    assert proc.returncode == 0, proc.stderr
    return set(json.loads(proc.stdout.strip().splitlines()[-1]))


def assert_imports_only_its_framework(module: str) -> None:
    """``import d2l.<module>`` loads nothing beyond what the framework itself loads.

    Compared with the framework's own import, because some frameworks load
    plotting packages themselves (TensorFlow's Keras imports matplotlib and IPython).
    """
    extra = modules_after_import(f"import d2l.{module}") - modules_after_import(f"import {module}")
    others = set().union(*(r for m, r in FRAMEWORK_ROOTS.items() if m != module))
    assert not extra & others, f"import d2l.{module} imported {sorted(extra & others)}"
    assert not extra & PLOTTING_ROOTS, f"import d2l.{module} imported {sorted(extra & PLOTTING_ROOTS)}"


def check_lazy_plotting(mod: ModuleType) -> None:
    """Every deferred plotting name resolves on first access (PEP 562) when matplotlib is there."""
    lazy = vars(mod).get("_LAZY")
    if not lazy:
        pytest.skip(f"{mod.__name__} has no deferred plotting import yet")
    pytest.importorskip("matplotlib")
    for name in lazy:
        assert getattr(mod, name) is not None


def fit_synthetic(d2l: ModuleType, w, b: float, max_epochs: int = 3):
    """Train the chapter's linear regression on synthetic data; returns (trainer, model).

    The agreed API: ``SyntheticRegressionData(w, b)``, ``LinearRegression(lr)``,
    ``Trainer(max_epochs, num_gpus=0, gradient_clip_val=0).fit(model, data)``,
    and ``model.get_w_b()``.
    """
    need(d2l, "Trainer", "SyntheticRegressionData", "LinearRegression")
    if not hasattr(d2l.LinearRegression, "get_w_b"):
        pytest.skip("chapter_gpus's LinearRegression has no get_w_b yet")
    data = d2l.SyntheticRegressionData(w, b)
    model = d2l.LinearRegression(lr=0.03)
    trainer = d2l.Trainer(max_epochs=max_epochs, num_gpus=0)
    trainer.fit(model, data)
    return trainer, model


def prepared(d2l: ModuleType, w, b: float, num_gpus: int = 0):
    """A trainer that ran ``prepare_data`` and ``prepare_model``, and one prepared batch."""
    need(d2l, "Trainer", "SyntheticRegressionData", "LinearRegression")
    for method in ("prepare_data", "prepare_model", "prepare_batch"):
        if not hasattr(d2l.Trainer, method):
            pytest.skip(f"chapter_gpus's Trainer has no {method} yet")
    data = d2l.SyntheticRegressionData(w, b, num_train=64, num_val=32, batch_size=16)
    model = d2l.LinearRegression(lr=0.1)
    try:
        trainer = d2l.Trainer(max_epochs=1, num_gpus=num_gpus)
    except NotImplementedError as exc:
        pytest.skip(f"Trainer(num_gpus={num_gpus}) is not supported by the saved Trainer yet: {exc}")
    trainer.prepare_data(data)
    trainer.prepare_model(model)
    batch = trainer.prepare_batch(next(iter(trainer.train_dataloader)))
    return trainer, model, batch


class CountingScalar:
    """A scalar standing in for a device tensor: arithmetic stays "on the device",
    and every ``float()`` (a device-to-host copy and a wait, on a GPU) is counted."""

    conversions = 0

    def __init__(self, value: float) -> None:
        self.value = value

    def __add__(self, other):
        return CountingScalar(self.value + getattr(other, "value", other))

    __radd__ = __add__

    def __truediv__(self, other: float):
        return CountingScalar(self.value / other)

    def __float__(self) -> float:
        CountingScalar.conversions += 1
        return float(self.value)


def check_board_converts_each_point_once(d2l: ModuleType, monkeypatch: pytest.MonkeyPatch) -> None:
    """``ProgressBoard`` averages each complete group with tensor arithmetic and turns
    each average into a float once, however often ``show`` redraws (no quadratic cost)."""
    need(d2l, "ProgressBoard")
    pytest.importorskip("matplotlib")
    from IPython import display

    monkeypatch.setattr(display, "display", lambda *args, **kwargs: None)
    CountingScalar.conversions = 0
    board = d2l.ProgressBoard()
    epochs, steps, every_n = 3, 100, 10
    for epoch in range(epochs):
        for step in range(steps):
            board.draw(epoch + (step + 1) / steps, CountingScalar(1.0 + step % every_n), "loss", every_n)
        board.redraw()  # what show() does in a notebook
    points = epochs * steps // every_n
    assert CountingScalar.conversions == points  # not 10 + 20 + 30 points, nor 3 * 300 values
    xs, ys = board.axes.lines[0].get_data()
    assert len(xs) == points and all(abs(y - 5.5) < 1e-9 for y in ys)  # the mean of 1..10
    # Outside a notebook (here: no kernel) show() draws nothing and converts nothing.
    quiet = d2l.ProgressBoard()
    quiet.draw(0.1, CountingScalar(1.0), "loss")
    quiet.show()
    assert quiet.fig is None and CountingScalar.conversions == points and not d2l.in_notebook()


def check_synthetic_data_is_numpys(d2l: ModuleType, to_numpy) -> None:
    """``SyntheticRegressionData`` draws its numbers with NumPy from ``seed`` (features, then
    one unit of noise per example), so every framework's tab trains on the same examples.

    ``to_numpy`` turns the framework's tensor into a NumPy array.
    """
    np = pytest.importorskip("numpy")
    need(d2l, "SyntheticRegressionData")
    data = d2l.SyntheticRegressionData([2.0, -1.0], 0.5, noise=0.1, num_train=6, num_val=4, seed=3)
    X, y = to_numpy(data.X), to_numpy(data.y)
    assert (X.dtype, X.shape, y.dtype, y.shape) == (np.float32, (10, 2), np.float32, (10, 1))
    draws = np.random.default_rng(3).standard_normal((10, 3), dtype=np.float32)
    np.testing.assert_array_equal(X, draws[:, :2])
    w = np.array([[2.0], [-1.0]], dtype=np.float32)
    np.testing.assert_allclose(y, draws[:, :2] @ w + 0.5 + 0.1 * draws[:, 2:], rtol=1e-5, atol=1e-6)


def check_data_module_names_the_missing_method(d2l: ModuleType) -> None:
    """A DataModule subclass without ``get_dataloader`` fails with its own name in the
    message, and the base class takes no constructor arguments (no unused ``root``)."""
    need(d2l, "DataModule")

    class Empty(d2l.DataModule):
        pass

    with pytest.raises(NotImplementedError, match=r"Empty defines no get_dataloader\(train\)"):
        Empty().train_dataloader()
    with pytest.raises(TypeError):
        d2l.DataModule(root="../data")
