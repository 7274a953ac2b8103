"""d2l.jax, installed from the wheel, in the JAX environment (run by tabbook.execute.wheeltest)."""

from __future__ import annotations

import time

import pytest

jax = pytest.importorskip("jax")

import numpy as np  # noqa: E402 - after the skip: the builder's venv has no numpy
from d2l_testing import (  # noqa: E402
    assert_imports_only_its_framework,
    check_board_converts_each_point_once,
    check_data_module_names_the_missing_method,
    check_lazy_plotting,
    check_synthetic_data_is_numpys,
    fit_synthetic,
    load,
    need,
    prepared,
)

d2l = load("jax")
CPU = jax.devices("cpu")[0]


class FakeGpu:
    """Stands in for a jax.Device of platform 'gpu' (a CPU-only jaxlib cannot make one)."""

    platform = "gpu"

    def __init__(self, i: int) -> None:
        self.id = i

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FakeGpu) and other.id == self.id

    def __hash__(self) -> int:
        return self.id


def fake_devices(n: int):
    real = jax.devices

    def devices(backend=None):
        if backend == "gpu":
            if n == 0:
                raise RuntimeError("Unknown backend: 'gpu' requested, but no platforms that are "
                                   "instances of gpu are present.")
            return [FakeGpu(i) for i in range(n)]
        return real(backend)

    return devices


def test_import_loads_no_other_framework_and_no_matplotlib() -> None:
    assert_imports_only_its_framework("jax")


@pytest.mark.parametrize("n", [0, 1, 2, 8])
def test_device_helpers_with_n_gpus(monkeypatch: pytest.MonkeyPatch, n: int) -> None:
    need(d2l, "cpu", "gpu", "num_gpus", "try_gpu", "try_all_gpus")
    monkeypatch.setattr(jax, "devices", fake_devices(n))
    assert d2l.num_gpus() == n
    assert d2l.cpu() == CPU
    if n >= 1:
        assert d2l.gpu() == FakeGpu(0)
    with pytest.raises(RuntimeError, match=f"JAX has no GPU {n}: it found {n}\\."):
        d2l.gpu(n)  # a JAX device must exist to be named; None would mean "the default"
    assert d2l.try_gpu() == (FakeGpu(0) if n >= 1 else CPU)
    assert d2l.try_gpu(1) == (FakeGpu(1) if n >= 2 else CPU)
    assert d2l.try_gpu(n) == CPU
    assert d2l.try_all_gpus() == ([FakeGpu(i) for i in range(n)] or [CPU])


def test_benchmark_blocks_until_results_are_ready(monkeypatch: pytest.MonkeyPatch) -> None:
    need(d2l, "benchmark")
    events: list[object] = []
    real = jax.block_until_ready

    def block_until_ready(x):
        events.append(("block", len(x) if isinstance(x, list) else 1))
        time.sleep(0.05)  # the device finishes the queued computations only now
        return real(x)

    monkeypatch.setattr(jax, "block_until_ready", block_until_ready)
    f = jax.jit(lambda a: (a @ a).sum())
    x = jax.device_put(np.ones((8, 8), np.float32), CPU)
    seconds = d2l.benchmark(lambda: f(x), CPU, repeat=3, warmup=2)
    assert events[-1] == ("block", 3)  # all timed results are waited for, once
    assert ("block", 2) in events  # warm-up results are waited for before the clock starts
    assert seconds >= 0.05 / 3 * 0.8


def test_trainer_fit_converges_on_synthetic_data() -> None:
    w, b = np.array([2.0, -3.4], np.float32), 4.2
    _, model = fit_synthetic(d2l, w, b)
    w_hat, b_hat = model.get_w_b()
    np.testing.assert_allclose(np.asarray(w_hat).reshape(-1), w, atol=0.1)
    assert abs(float(np.asarray(b_hat).reshape(-1)[0]) - b) < 0.1


def test_prepare_model_commits_the_variables_to_the_cpu_without_gpus() -> None:
    trainer, model, batch = prepared(d2l, np.array([1.0, 2.0], np.float32), 0.5)
    leaves = jax.tree_util.tree_leaves(trainer.variables)
    assert leaves and all(leaf.devices() == {CPU} and leaf.committed for leaf in leaves)
    for t in batch:  # NumPy batches, or arrays already on the trainer's device
        assert isinstance(t, np.ndarray) or t.devices() == {CPU}


@pytest.mark.skipif(not any(d.platform == "gpu" for d in jax.devices()), reason="needs a GPU")
def test_prepare_model_commits_the_variables_to_the_gpu() -> None:
    trainer, model, batch = prepared(d2l, np.array([1.0, 2.0], np.float32), 0.5, num_gpus=1)
    gpu = jax.devices("gpu")[0]
    assert all(leaf.devices() == {gpu} for leaf in jax.tree_util.tree_leaves(trainer.variables))


def test_lazy_plotting_names() -> None:
    check_lazy_plotting(d2l)


def test_board_converts_each_point_to_a_float_once(monkeypatch: pytest.MonkeyPatch) -> None:
    check_board_converts_each_point_once(d2l, monkeypatch)


@pytest.mark.parametrize(("n", "wanted", "expected"), [(0, 1, 0), (1, 1, 1), (1, 8, 1), (2, 8, 2), (8, 8, 8)])
def test_trainer_takes_the_gpus_that_exist(monkeypatch: pytest.MonkeyPatch, n: int, wanted: int,
                                           expected: int) -> None:
    monkeypatch.setattr(jax, "devices", fake_devices(n))
    trainer = d2l.Trainer(max_epochs=1, num_gpus=wanted)
    assert trainer.gpus == [FakeGpu(i) for i in range(expected)]
    assert trainer.device == (FakeGpu(0) if expected else CPU)


def test_prepare_batch_commits_the_batch_to_the_trainer_device() -> None:
    trainer = d2l.Trainer(max_epochs=1)
    batch = (np.ones((2, 3), np.float32), np.zeros((2, 1), np.float32))
    assert trainer.prepare_batch(batch) is batch
    trainer.gpus, trainer.device = [CPU], CPU  # the path a GPU takes, with the CPU as target
    moved = trainer.prepare_batch(batch)
    assert all(a.devices() == {CPU} and a.committed for a in moved)


def test_memory_stats_reads_the_device_statistics() -> None:
    need(d2l, "memory_stats")

    class GpuWithStats(FakeGpu):
        def memory_stats(self):
            return {"bytes_in_use": 11, "peak_bytes_in_use": 13, "bytes_limit": 17}

    assert d2l.memory_stats(GpuWithStats(0)) == {"in_use": 11, "peak": 13}
    assert d2l.memory_stats(CPU) is None


def test_synthetic_data_is_the_same_numpy_draw_in_every_framework() -> None:
    check_synthetic_data_is_numpys(d2l, np.asarray)


def test_data_module_names_the_missing_method() -> None:
    check_data_module_names_the_missing_method(d2l)
