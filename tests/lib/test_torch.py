"""d2l.torch, installed from the wheel, in the PyTorch environment (run by tabbook.execute.wheeltest)."""

from __future__ import annotations

import time

import pytest

torch = pytest.importorskip("torch")

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

d2l = load("torch")
CPU = torch.device("cpu")


def cuda(i: int) -> torch.device:
    return torch.device("cuda", i)


def test_import_loads_no_other_framework_and_no_matplotlib() -> None:
    assert_imports_only_its_framework("torch")


@pytest.mark.parametrize("n", [0, 1, 2, 8])
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


def test_board_converts_each_point_to_a_float_once(monkeypatch: pytest.MonkeyPatch) -> None:
    check_board_converts_each_point_once(d2l, monkeypatch)


@pytest.mark.parametrize(("n", "wanted", "expected"), [(0, 1, 0), (1, 1, 1), (1, 8, 1), (2, 1, 1), (2, 8, 2), (4, 2, 2), (8, 8, 8)])
def test_trainer_takes_the_gpus_that_exist(monkeypatch: pytest.MonkeyPatch, n: int, wanted: int,
                                           expected: int) -> None:
    monkeypatch.setattr(torch.cuda, "device_count", lambda: n)
    trainer = d2l.Trainer(max_epochs=1, num_gpus=wanted)
    assert trainer.gpus == [cuda(i) for i in range(expected)]
    assert trainer.device == (cuda(0) if expected else CPU)


def test_prepare_batch_moves_every_tensor_to_the_trainer_device() -> None:
    trainer = d2l.Trainer(max_epochs=1)
    batch = (torch.ones(2, 3), torch.zeros(2, 1))
    assert trainer.prepare_batch(batch) is batch  # no GPU: nothing to copy
    meta = torch.device("meta")  # stands in for a GPU: a device other than the CPU
    trainer.gpus, trainer.device = [meta], meta
    assert [t.device for t in trainer.prepare_batch(batch)] == [meta, meta]


def test_benchmark_accepts_a_device_name(monkeypatch: pytest.MonkeyPatch) -> None:
    syncs: list[object] = []
    monkeypatch.setattr(torch.cuda, "synchronize", lambda device=None: syncs.append(device))
    assert d2l.benchmark(lambda: None, "cuda:0", repeat=2, warmup=1) >= 0
    assert syncs == [cuda(0), cuda(0)]
    syncs.clear()
    assert d2l.benchmark(lambda: None, "cpu", repeat=2, warmup=1) >= 0
    assert syncs == []


def test_memory_stats_reads_the_cuda_allocator(monkeypatch: pytest.MonkeyPatch) -> None:
    need(d2l, "memory_stats")
    monkeypatch.setattr(torch.cuda, "memory_allocated", lambda device=None: 3 << 20)
    monkeypatch.setattr(torch.cuda, "max_memory_allocated", lambda device=None: 5 << 20)
    assert d2l.memory_stats("cuda:0") == {"in_use": 3 << 20, "peak": 5 << 20}
    assert d2l.memory_stats(cuda(1)) == {"in_use": 3 << 20, "peak": 5 << 20}
    assert d2l.memory_stats(CPU) is None


def test_synthetic_data_is_reproducible_and_splits_train_and_validation() -> None:
    a = d2l.SyntheticRegressionData([1.0, -1.0], 0.5, num_train=40, num_val=24, batch_size=16)
    b = d2l.SyntheticRegressionData([1.0, -1.0], 0.5, num_train=40, num_val=24, batch_size=16)
    assert torch.equal(a.X, b.X) and torch.equal(a.y, b.y)
    assert sum(len(X) for X, _ in a.train_dataloader()) == 40
    assert sum(len(X) for X, _ in a.val_dataloader()) == 24
    first = torch.cat([X for X, _ in a.val_dataloader()])
    assert torch.equal(first, a.X[40:])  # validation batches come in order


def test_synthetic_data_is_the_same_numpy_draw_in_every_framework() -> None:
    check_synthetic_data_is_numpys(d2l, lambda t: t.numpy())


def test_data_module_names_the_missing_method() -> None:
    check_data_module_names_the_missing_method(d2l)
