"""``tabbook build --scheduler``: a real Dask cluster on localhost, a worker killed mid-unit.

A scheduler and two workers are started as separate processes (``python -m dask scheduler`` /
``dask worker``, random ports), as on a real cluster; the generated book (four sections in two
tabs, all in the builder's Python) is built through them and compared with a local build of the
same book. One section has a cell that sleeps, and the worker running it is SIGKILLed while it
runs: the scheduler gives the unit to the other worker and the build completes with the same
entries. With the scheduler told to give up at the first death, the same kill fails the build
naming the unit, and nothing of that unit reaches the store. The client alone writes the store.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from prerequisites import require
from scale_book import ROOT, comparable, entries, make_book, tabbook

try:
    import distributed
except ImportError:
    distributed = None
require(distributed, "the Dask extra (envs/builder-dask.txt) is not installed", module=True)

SLOW = 2  # the section whose alpha cell sleeps
SLEEP = 6.0


class Cluster:
    """A scheduler and workers on localhost, each a process of its own, logs in ``logs``."""

    def __init__(self, logs: Path, env: dict[str, str]):
        self.logs, self.env = logs, env
        self.procs: list[subprocess.Popen[bytes]] = []
        self.workers: dict[str, subprocess.Popen[bytes]] = {}  # address -> process
        self.address = ""

    def _start(self, name: str, *args: str) -> subprocess.Popen[bytes]:
        log = open(self.logs / f"{name}.log", "wb")  # noqa: SIM115 - closed with the process
        proc = subprocess.Popen([sys.executable, "-m", "dask", *args], stdout=log, stderr=subprocess.STDOUT,
                                env=self.env, cwd=self.logs, start_new_session=True)
        log.close()
        self.procs.append(proc)
        return proc

    def start(self, workers: int = 2) -> None:
        info = self.logs / "scheduler.json"
        self._start("scheduler", "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                    "--scheduler-file", str(info))
        self.address = json.loads(self._wait_for(lambda: info.is_file() and info.read_text().strip()
                                                 and info.read_text()))["address"]
        for i in range(workers):
            proc = self._start(f"worker{i}", "worker", self.address, "--host", "127.0.0.1", "--nthreads", "1",
                               "--no-nanny", "--no-dashboard", "--memory-limit", "0", "--name", f"w{i}")
            log = self.logs / f"worker{i}.log"
            found = self._wait_for(lambda log=log: re.search(r"Start worker at:\s+(\S+)", log.read_text()))
            self.workers[found.group(1)] = proc

    def _wait_for(self, probe, timeout: float = 120):  # noqa: ANN001, ANN202 - a test helper
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for proc in self.procs:
                assert proc.poll() is None, (self.logs / "scheduler.log").read_text()[-2000:]
            got = probe()
            if got:
                return got
            time.sleep(0.2)
        raise AssertionError(f"the cluster did not start in {timeout} s: logs in {self.logs}")

    def stop(self) -> None:
        for proc in reversed(self.procs):
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in self.procs:
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


def _env(book: Path, **extra: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "TABBOOK_CACHE": str(book / ".cache"),
            "PYTHONUNBUFFERED": "1", "DASK_DISTRIBUTED__LOGGING__DISTRIBUTED": "info",
            # One unit at a time on a one-thread worker: none waits in the queue of a worker that
            # dies (Dask would count that death against it too).
            "DASK_DISTRIBUTED__SCHEDULER__WORKER_SATURATION": "1.0", **extra}


@pytest.fixture(scope="module")
def book(tmp_path_factory: pytest.TempPathFactory) -> Path:
    book = make_book(tmp_path_factory.mktemp("dask"), sections=4, sleep={SLOW: SLEEP})
    proc = tabbook(book, "build", "--no-render", "--jobs", "2", "--freeze-dir", str(book.parent / "local"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return book


def _cluster(book: Path, logs: Path, **extra: str) -> Iterator[Cluster]:
    running = Cluster(logs, _env(book, **extra))
    try:
        running.start()
        yield running
    finally:
        running.stop()


@pytest.fixture(scope="module")
def cluster(book: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """Shared by the tests below, in order: the first kills one of its workers."""
    yield from _cluster(book, tmp_path_factory.mktemp("cluster"))


@pytest.fixture
def fragile_cluster(book: Path, tmp_path: Path) -> Iterator[Cluster]:
    """A scheduler that gives a task up at its worker's first death."""
    yield from _cluster(book, tmp_path, DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES="0")


def build_killing(book: Path, cluster: Cluster, store: Path, interrupt: bool = False) -> tuple[int, str, str]:
    """Build through the cluster; SIGKILL the worker that starts the slow unit, once (or, with
    ``interrupt``, press Ctrl-C on the client instead: SIGINT).

    Returns the exit status, the client's output, and the killed worker's address.
    """
    proc = subprocess.Popen(
        [sys.executable, "-m", "tabbook", "-C", str(book), "build", "--no-render", "--scheduler",
         cluster.address, "--freeze-dir", str(store)],
        cwd=ROOT, env=_env(book), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.stdout is not None
    lines, killed = [], ""
    for line in proc.stdout:
        lines.append(line)
        m = re.search(rf"start s{SLOW}\.md \[alpha\] on (\S+)", line)
        if m and not killed:
            killed = m.group(1)
            if interrupt:
                proc.send_signal(signal.SIGINT)
            else:
                cluster.workers[killed].kill()  # SIGKILL: no goodbye to the scheduler
    return proc.wait(timeout=300), "".join(lines), killed


def test_a_cluster_build_equals_a_local_build_though_a_worker_dies(book: Path, cluster: Cluster,
                                                                    tmp_path: Path) -> None:
    store = tmp_path / "store"
    code, out, killed = build_killing(book, cluster, store)
    assert code == 0, out
    assert killed and cluster.workers[killed].poll() is not None  # it really died mid-unit
    assert "[dask] 2 workers at" in out
    assert f"start s{SLOW}.md [alpha] on" in out and "(again: its worker was lost)" in out
    assert "[done] 8 executed" in out
    got, local = entries(store), entries(book.parent / "local")
    assert sorted(got) == sorted(local) and len(got) == 8
    for name in got:
        assert comparable(got[name]) == comparable(local[name]), name
    assert not list(store.rglob("*.tmp"))
    # The store is current for the book: a frozen build executes nothing.
    proc = tabbook(book, "build", "--frozen", "--no-render", "--freeze-dir", str(store))
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_ctrl_c_stops_the_units_on_the_workers_and_keeps_only_finished_units(book: Path, cluster: Cluster,
                                                                             tmp_path: Path) -> None:
    import psutil  # a dependency of distributed

    store = tmp_path / "store"
    code, out, started = build_killing(book, cluster, store, interrupt=True)
    assert code == 130, out
    assert started and "interrupted; nothing half-written was kept" in out
    # A unit that ended before Ctrl-C is stored whole (a GPU machine's time running out keeps
    # what was done); nothing else is, and nothing half-written.
    finished = set(re.findall(r"done\s+(\S+)\.md \[(\w+)\] ok", out))
    stored = {(p.parent.relative_to(store).as_posix(), p.stem) for p in store.rglob("*.ipynb")} if store.exists() else set()
    assert stored <= finished, (stored, out)
    assert f"s{SLOW}" not in {name for name, _ in stored}
    assert not store.exists() or not list(store.rglob("*.tmp"))

    def kernels_in_book() -> list[int]:  # the units' kernels run in the book's folder
        found = []
        for p in psutil.process_iter(["pid", "cwd", "cmdline"]):
            if p.info["cwd"] == str(book) and "ipykernel_launcher" in " ".join(p.info["cmdline"] or []):
                found.append(p.info["pid"])
        return found

    deadline = time.monotonic() + 60  # a wait for the workers to act on the stop, not a timing
    while kernels_in_book() and time.monotonic() < deadline:
        time.sleep(0.5)
    assert kernels_in_book() == []


def test_a_unit_whose_workers_all_die_fails_clearly_and_stores_nothing(book: Path, fragile_cluster: Cluster,
                                                                       tmp_path: Path) -> None:
    store = tmp_path / "store"
    code, out, killed = build_killing(book, fragile_cluster, store)
    assert code == 1, out
    assert killed
    assert f"s{SLOW}.md: [alpha] not executed: the workers it was given to died" in out
    assert "nothing of it was stored" in out
    got = entries(store)
    assert f"s{SLOW}/alpha.ipynb" not in got
    assert len(got) == 7  # the other units ran on the surviving worker and were kept
    assert not list(store.rglob("*.tmp"))


def test_without_dask_the_option_says_what_to_install(book: Path, tmp_path: Path) -> None:
    blocked = tmp_path / "blocked"
    blocked.mkdir()
    (blocked / "distributed.py").write_text("raise ImportError('blocked for the test', name='distributed')\n")
    proc = tabbook(book, "build", "--scheduler", "tcp://127.0.0.1:8786",
                   env={"PYTHONPATH": os.pathsep.join([str(blocked), str(ROOT)])})
    assert proc.returncode == 1
    assert "--scheduler needs Dask's distributed scheduler, which is not installed" in proc.stderr
    assert "pip install -r envs/builder-dask.txt" in proc.stderr
    proc = tabbook(book, "build", "--scheduler", "localhost:8786")
    assert proc.returncode == 1
    assert "--scheduler wants a Dask scheduler address such as tcp://HOST:8786" in proc.stderr


def test_a_build_without_a_reachable_scheduler_says_so(book: Path) -> None:
    proc = tabbook(book, "build", "--no-render", "--scheduler", "tcp://127.0.0.1:9",
                   "--freeze-dir", str(book.parent / "nowhere"), env={"DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT": "3s"})
    assert proc.returncode == 1
    assert "--scheduler tcp://127.0.0.1:9: cannot reach the Dask scheduler" in proc.stderr
    assert not (book.parent / "nowhere").exists()
