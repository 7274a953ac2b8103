"""d2l.tensorflow, installed from the wheel, in the TensorFlow environment (run by tabbook.execute.wheeltest)."""

from __future__ import annotations

import time

import pytest

tf = pytest.importorskip("tensorflow")

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

d2l = load("tensorflow")


def device_of(variable) -> str:
    """Keras 3 variables keep their device on the backing ``tf.Variable`` (``.value``)."""
    return getattr(variable, "device", None) or variable.value.device


def fake_physical_devices(n: int):
    real = tf.config.list_physical_devices

    def list_physical_devices(device_type=None):
        if device_type == "GPU":
            return [tf.config.PhysicalDevice(f"/physical_device:GPU:{i}", "GPU") for i in range(n)]
        return real(device_type)

    return list_physical_devices


def test_import_loads_no_other_framework_and_no_matplotlib() -> None:
    assert_imports_only_its_framework("tensorflow")


@pytest.mark.parametrize("n", [0, 1, 2, 8])
def test_device_helpers_with_n_gpus(monkeypatch: pytest.MonkeyPatch, n: int) -> None:
    need(d2l, "cpu", "gpu", "num_gpus", "try_gpu", "try_all_gpus")
    monkeypatch.setattr(tf.config, "list_physical_devices", fake_physical_devices(n))
    assert d2l.num_gpus() == n
    assert d2l.cpu() == "/CPU:0" and d2l.gpu() == "/GPU:0" and d2l.gpu(1) == "/GPU:1"
    assert d2l.try_gpu() == ("/GPU:0" if n >= 1 else "/CPU:0")
    assert d2l.try_gpu(1) == ("/GPU:1" if n >= 2 else "/CPU:0")
    assert d2l.try_gpu(n) == "/CPU:0"
    assert d2l.try_all_gpus() == ([f"/GPU:{i}" for i in range(n)] or ["/CPU:0"])


def test_benchmark_syncs_the_devices_inside_the_timed_window(monkeypatch: pytest.MonkeyPatch) -> None:
    need(d2l, "benchmark")
    events: list[str] = []

    def sync_devices() -> None:
        events.append("sync")
        time.sleep(0.05)

    monkeypatch.setattr(tf.test.experimental, "sync_devices", sync_devices)
    seconds = d2l.benchmark(lambda: events.append("call"), d2l.cpu(), repeat=3, warmup=2)
    assert events == ["call", "call", "sync", "call", "call", "call", "sync"]
    assert seconds >= 0.05 / 3 * 0.8


def test_trainer_fit_converges_on_synthetic_data() -> None:
    tf.random.set_seed(0)
    w, b = tf.constant([2.0, -3.4]), 4.2
    _, model = fit_synthetic(d2l, w, b)
    w_hat, b_hat = model.get_w_b()
    np.testing.assert_allclose(np.reshape(w_hat.numpy(), -1), w.numpy(), atol=0.1)
    assert abs(float(np.reshape(b_hat.numpy(), -1)[0]) - b) < 0.1


def test_prepare_model_and_batch_stay_on_the_cpu_without_gpus() -> None:
    trainer, model, batch = prepared(d2l, tf.constant([1.0, 2.0]), 0.5)
    assert model.trainable_variables
    assert all(device_of(v).endswith("CPU:0") for v in model.trainable_variables)
    assert all(t.device.endswith("CPU:0") for t in batch)


@pytest.mark.skipif(not tf.config.list_physical_devices("GPU"), reason="needs a GPU")
def test_prepare_model_places_variables_on_the_gpu() -> None:
    trainer, model, batch = prepared(d2l, tf.constant([1.0, 2.0]), 0.5, num_gpus=1)
    assert all(device_of(v).endswith("GPU:0") for v in model.trainable_variables)


def test_lazy_plotting_names() -> None:
    check_lazy_plotting(d2l)


def test_board_converts_each_point_to_a_float_once(monkeypatch: pytest.MonkeyPatch) -> None:
    check_board_converts_each_point_once(d2l, monkeypatch)


@pytest.mark.parametrize(("n", "wanted", "expected"), [(0, 1, 0), (1, 1, 1), (1, 8, 1), (2, 8, 2), (8, 8, 8)])
def test_trainer_takes_the_gpus_that_exist(monkeypatch: pytest.MonkeyPatch, n: int, wanted: int,
                                           expected: int) -> None:
    monkeypatch.setattr(tf.config, "list_physical_devices", fake_physical_devices(n))
    trainer = d2l.Trainer(max_epochs=1, num_gpus=wanted)
    assert trainer.gpus == [f"/GPU:{i}" for i in range(expected)]
    assert trainer.device == ("/GPU:0" if expected else "/CPU:0")


def test_memory_stats_reads_the_gpu_allocator(monkeypatch: pytest.MonkeyPatch) -> None:
    need(d2l, "memory_stats")
    asked: list[str] = []

    def get_memory_info(device: str) -> dict[str, int]:
        asked.append(device)
        return {"current": 7, "peak": 9}

    monkeypatch.setattr(tf.config.experimental, "get_memory_info", get_memory_info)
    assert d2l.memory_stats("/GPU:1") == {"in_use": 7, "peak": 9}
    assert d2l.memory_stats("/job:localhost/replica:0/task:0/device:GPU:0") == {"in_use": 7, "peak": 9}
    assert asked == ["GPU:1", "GPU:0"]
    assert d2l.memory_stats("/CPU:0") is None


def test_synthetic_data_is_the_same_numpy_draw_in_every_framework() -> None:
    check_synthetic_data_is_numpys(d2l, lambda t: t.numpy())


def test_data_module_names_the_missing_method() -> None:
    check_data_module_names_the_missing_method(d2l)
