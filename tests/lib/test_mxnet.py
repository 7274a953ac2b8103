"""d2l.mxnet, installed from the wheel, in the MXNet environment (run by tabbook.execute.wheeltest)."""

from __future__ import annotations

import time

import pytest

mx = pytest.importorskip("mxnet")

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

d2l = load("mxnet")
np = mx.np
mx.npx.set_np()


def test_import_loads_no_other_framework_and_no_matplotlib() -> None:
    assert_imports_only_its_framework("mxnet")


@pytest.mark.parametrize("n", [0, 1, 2, 8])
def test_device_helpers_with_n_gpus(monkeypatch: pytest.MonkeyPatch, n: int) -> None:
    need(d2l, "cpu", "gpu", "num_gpus", "try_gpu", "try_all_gpus")
    monkeypatch.setattr(mx.context, "num_gpus", lambda: n)
    assert d2l.num_gpus() == n
    assert d2l.cpu() == mx.cpu() and d2l.gpu() == mx.gpu(0) and d2l.gpu(1) == mx.gpu(1)
    assert d2l.try_gpu() == (mx.gpu(0) if n >= 1 else mx.cpu())
    assert d2l.try_gpu(1) == (mx.gpu(1) if n >= 2 else mx.cpu())
    assert d2l.try_gpu(n) == mx.cpu()
    assert d2l.try_all_gpus() == ([mx.gpu(i) for i in range(n)] or [mx.cpu()])


def test_benchmark_waits_for_the_engine_inside_the_timed_window(monkeypatch: pytest.MonkeyPatch) -> None:
    need(d2l, "benchmark")
    events: list[str] = []

    def waitall() -> None:
        events.append("wait")
        time.sleep(0.05)

    monkeypatch.setattr(mx.npx, "waitall", waitall)
    seconds = d2l.benchmark(lambda: events.append("call"), d2l.cpu(), repeat=3, warmup=2)
    assert events == ["call", "call", "wait", "call", "call", "call", "wait"]
    assert seconds >= 0.05 / 3 * 0.8


def test_trainer_fit_converges_on_synthetic_data() -> None:
    mx.random.seed(0)
    w, b = np.array([2.0, -3.4]), 4.2
    _, model = fit_synthetic(d2l, w, b)
    w_hat, b_hat = model.get_w_b()
    assert abs(w_hat.reshape(-1) - w).max().item() < 0.1, w_hat
    assert abs(b_hat.reshape(-1)[0].item() - b) < 0.1, b_hat


def test_prepare_model_and_batch_stay_on_the_cpu_without_gpus() -> None:
    trainer, model, batch = prepared(d2l, np.array([1.0, 2.0]), 0.5)
    params = model.collect_params().values()
    assert params and all(p.list_ctx() == [mx.cpu()] for p in params)
    assert all(t.ctx == mx.cpu() for t in batch)


@pytest.mark.skipif(mx.context.num_gpus() == 0, reason="needs a GPU and an MXNet built with CUDA")
def test_prepare_model_places_parameters_on_the_gpu() -> None:
    trainer, model, batch = prepared(d2l, np.array([1.0, 2.0]), 0.5, num_gpus=1)
    assert all(p.list_ctx() == [mx.gpu(0)] for p in model.collect_params().values())
    assert all(t.ctx == mx.gpu(0) for t in batch)


def test_lazy_plotting_names() -> None:
    check_lazy_plotting(d2l)


def test_board_converts_each_point_to_a_float_once(monkeypatch: pytest.MonkeyPatch) -> None:
    check_board_converts_each_point_once(d2l, monkeypatch)


@pytest.mark.parametrize(("n", "wanted", "expected"), [(0, 1, 0), (1, 1, 1), (1, 8, 1), (2, 8, 2), (8, 8, 8)])
def test_trainer_takes_the_gpus_that_exist(monkeypatch: pytest.MonkeyPatch, n: int, wanted: int,
                                           expected: int) -> None:
    monkeypatch.setattr(mx.context, "num_gpus", lambda: n)
    trainer = d2l.Trainer(max_epochs=1, num_gpus=wanted)
    assert trainer.gpus == [mx.gpu(i) for i in range(expected)]
    assert trainer.device == (mx.gpu(0) if expected else mx.cpu())


def test_prepare_batch_moves_every_array_to_the_trainer_device() -> None:
    trainer = d2l.Trainer(max_epochs=1)
    batch = (np.ones((2, 3)), np.zeros((2, 1)))
    assert trainer.prepare_batch(batch) is batch
    other = mx.cpu(1)  # stands in for a GPU: another context
    trainer.gpus, trainer.device = [other], other
    assert [a.ctx for a in trainer.prepare_batch(batch)] == [other, other]


def test_memory_stats_reads_the_driver(monkeypatch: pytest.MonkeyPatch) -> None:
    need(d2l, "memory_stats")
    monkeypatch.setattr(mx.context, "gpu_memory_info", lambda device_id=0: (6 << 30, 16 << 30))
    assert d2l.memory_stats(mx.gpu(0)) == {"in_use": 10 << 30, "peak": None}
    assert d2l.memory_stats(mx.cpu()) is None


def test_gradient_clipping_is_a_trainer_method_and_bounds_the_norm() -> None:
    assert callable(getattr(d2l.Trainer, "clip_gradients", None))
    trainer, model, batch = prepared(d2l, np.array([3.0, -4.0]), 0.5)
    *inputs, target = batch
    with mx.autograd.record():
        loss = model.loss(model(*inputs), target) * 1000  # a huge gradient
    loss.backward()
    trainer.clip_gradients(1.0)
    grads = [p.grad() for p in model.collect_params().values() if p.grad_req != "null"]
    norm = float(np.sqrt(sum((g ** 2).sum() for g in grads)))
    assert 0.99 < norm <= 1.0 + 1e-4


def test_synthetic_data_is_the_same_numpy_draw_in_every_framework() -> None:
    check_synthetic_data_is_numpys(d2l, lambda a: a.asnumpy())


def test_data_module_names_the_missing_method() -> None:
    check_data_module_names_the_missing_method(d2l)
