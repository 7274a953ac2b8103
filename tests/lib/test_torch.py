"""d2l.torch, installed from the wheel, in the PyTorch environment (run by tabbook.library.wheeltest)."""

from __future__ import annotations

import time

import pytest

torch = pytest.importorskip("torch")

from d2l_testing import (  # noqa: E402
    assert_imports_only_its_framework,
    check_lazy_plotting,
    fit_synthetic,
    load,
    need,
    prepared,
)

d2l = load("torch")
CPU = torch.device("cpu")


def cuda(i: int) -> torch.device:
    return torch.device("cuda", i)


def test_import_loads_no_other_framework_and_no_matplotlib() -> None:
    assert_imports_only_its_framework("torch")


@pytest.mark.parametrize("n", [0, 1, 2])
def test_device_helpers_with_n_gpus(monkeypatch: pytest.MonkeyPatch, n: int) -> None:
    need(d2l, "cpu", "gpu", "num_gpus", "try_gpu", "try_all_gpus")
    monkeypatch.setattr(torch.cuda, "device_count", lambda: n)
    assert d2l.num_gpus() == n
    assert d2l.cpu() == CPU and d2l.gpu() == cuda(0) and d2l.gpu(1) == cuda(1)
    assert d2l.try_gpu() == (cuda(0) if n >= 1 else CPU)
    assert d2l.try_gpu(1) == (cuda(1) if n >= 2 else CPU)
    assert d2l.try_gpu(n) == CPU
    assert d2l.try_all_gpus() == ([cuda(i) for i in range(n)] or [CPU])


def test_benchmark_waits_for_the_device_inside_the_timed_window(monkeypatch: pytest.MonkeyPatch) -> None:
    need(d2l, "benchmark")
    events: list[str] = []

    def synchronize(device=None) -> None:
        events.append("sync")
        time.sleep(0.05)  # the "GPU" finishes its queued work only now

    monkeypatch.setattr(torch.cuda, "synchronize", synchronize)
    seconds = d2l.benchmark(lambda: events.append("call"), cuda(0), repeat=1, warmup=0)
    assert events == ["call", "sync"] or events == ["sync", "call", "sync"]
    assert seconds >= 0.04  # waiting for the device is part of what is measured
    events.clear()
    d2l.benchmark(lambda: events.append("call"), cuda(0), repeat=3, warmup=2)
    assert events.count("call") == 5 and events[-1] == "sync"
    assert "sync" in events[2:events.index("call", 2) + 1]  # warm-up work drained before timing
    events.clear()
    assert d2l.benchmark(lambda: events.append("call"), CPU, repeat=2, warmup=1) >= 0
    assert events == ["call"] * 3  # nothing to wait for on the CPU


def test_trainer_fit_converges_on_synthetic_data() -> None:
    torch.manual_seed(0)
    w, b = torch.tensor([2.0, -3.4]), 4.2
    _, model = fit_synthetic(d2l, w, b)
    w_hat, b_hat = model.get_w_b()
    assert torch.allclose(w_hat.reshape(-1).cpu(), w, atol=0.1), w_hat
    assert abs(float(b_hat.reshape(-1)[0]) - b) < 0.1, b_hat


def test_prepare_model_and_batch_keep_everything_on_the_cpu_without_gpus() -> None:
    trainer, model, batch = prepared(d2l, torch.tensor([1.0, 2.0]), 0.5)
    assert {p.device for p in model.parameters()} == {CPU}
    assert {t.device for t in batch} == {CPU}


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_prepare_model_and_batch_place_everything_on_the_gpu() -> None:
    trainer, model, batch = prepared(d2l, torch.tensor([1.0, 2.0]), 0.5, num_gpus=1)
    assert {p.device for p in model.parameters()} == {cuda(0)}
    assert {t.device for t in batch} == {cuda(0)}


def test_lazy_plotting_names() -> None:
    check_lazy_plotting(d2l)
