"""Execute: a framework's notebook → executed notebook, in its own kernel.

Each (section, framework) unit runs in a worker subprocess (``tabbook.execute.worker``)
that drives nbclient; the parent only schedules, shows progress and collects
results. Scheduling is in order (longest first, as the plan sorts them): a unit starts
once a core is free, the GPUs it needs are free (:mod:`.gpus`: it then sees only
those), and no unit that must run alone is running; a unit that must run alone waits
for every other to end, and starts nothing beside it. A unit crosses to its worker as a
:class:`~.job.Job` and comes back as a :class:`~.job.Result`; a failure is data (its
:class:`~.job.Failure`), never an exception thrown across the pool, so other units' results are kept. Workers
run in their own process groups: on Ctrl-C or SIGTERM the parent kills them
and their kernels, and nothing half-written reaches the freeze store.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path

from tabbook.execute import spares
from tabbook.execute.gpus import Devices, Held, Placement
from tabbook.execute.job import ErrorKind, Failure, Job, Result
from tabbook.execute.progress import LiveStatus, current_cell
from tabbook.execute.reap import UNIT_ENV, end_marked
from tabbook.execute.store import new_notebook
from tabbook.execute.worker import WRITTEN
from tabbook.lifetime import WORKER_PARENT_ENV
from tabbook.nbjson import Notebook, NotebookCell
from tabbook.source.pycode import line_mapper
from tabbook.source.split import FrameworkCell


@dataclass(frozen=True)
class Unit:
    """One (section, framework) execution."""

    section: str  # chapter_gpus/devices.md
    framework: str
    cells: tuple[FrameworkCell, ...]
    kernel_name: str
    import_name: str
    cwd: Path
    timeout: int
    stderr_filters: tuple[str, ...] = ()
    max_output_bytes: int = 0  # output one cell keeps ([build] max_output_bytes); 0 = all of it
    memory_limit: int = 0  # bytes of address space the kernel may use ([build] memory_limit); 0 = no cap
    gpu_probe: str = ""  # config.ini's gpu_probe of the framework ("" = no GPUs reported)
    gpus: int = 0  # GPUs it needs (gpus.ALL: every one of the machine); 0 = it sees none
    alone: bool = False  # timing code: nothing else runs on the machine meanwhile

    @property
    def name(self) -> str:
        return f"{self.section} [{self.framework}]"

    def job(self, progress: str = "") -> Job:
        """What its worker runs (``progress``: where it records the cell that runs)."""
        return Job(notebook=build_notebook(self), section=self.section, framework=self.framework,
                   kernel_name=self.kernel_name, import_name=self.import_name, cwd=str(self.cwd),
                   timeout=self.timeout, gpu_probe=self.gpu_probe, stderr_filters=self.stderr_filters,
                   max_output_bytes=self.max_output_bytes, memory_limit=self.memory_limit, progress=progress)

    def failed(self, kind: ErrorKind, why: str, where: str | None = None) -> UnitResult:
        """A result of this unit that says why it has no outputs, at its page (``where``: the
        cell that was running, ``file.md:LINE``, when it is known)."""
        path, line = self.section, None
        if where is not None:
            file, _, number = where.rpartition(":")
            if file and number.isdigit():
                path, line = file, int(number)
        return UnitResult(unit=self, failure=Failure(kind, f"[{self.framework}] {why}", path, line))


@dataclass(frozen=True, kw_only=True)
class UnitResult(Result):
    """A unit's :class:`~.job.Result`, with the unit it is of."""

    unit: Unit

    @classmethod
    def of(cls, unit: Unit, result: Result, seconds: float, phases: dict[str, float] | None = None) -> UnitResult:
        return cls(unit=unit, notebook=result.notebook, failure=result.failure, provenance=result.provenance,
                   seconds=seconds, phases={**result.phases, **(phases or {})})


def build_notebook(unit: Unit) -> Notebook:
    """The nbformat-4 notebook the kernel runs: the unit's code cells only."""
    cells: list[NotebookCell] = []
    for fc in unit.cells:
        # The Markdown line of each line the kernel runs: a traceback's "line N" of the
        # cell becomes the line of the file that raised (the worker's error location).
        line_of = line_mapper(fc, "", False)
        lines = [line_of(row) for row in range(1, fc.source.count("\n") + 2)]
        cells.append({
            "cell_type": "code",
            "id": f"c{fc.index}",
            "metadata": {
                "tags": list(fc.tags),
                "tabbook": {"index": fc.index, "line": fc.cell.line, "raises": fc.cell.raises, "lines": lines},
            },
            "source": fc.source,
            "outputs": [],
            "execution_count": None,
        })
    return new_notebook(cells, unit.kernel_name)


Progress = Callable[[str], None]

#: Characters of a worker's own output (its log, shown when it fails) the builder keeps: the end.
LOG_TAIL = 64_000


def _tail(proc: subprocess.Popen[str], result: Path) -> tuple[str, bool]:
    """The last :data:`LOG_TAIL` characters a worker wrote, read until it says its ``result`` is
    written (:data:`~.worker.WRITTEN`, and the file is there: True) or exits (False). Why not ``communicate()``: it
    keeps everything, and a process a cell started may write to the worker's output without end."""
    assert proc.stdout is not None
    chunks: deque[str] = deque()
    size = 0
    while line := proc.stdout.readline(65536):
        if line.rstrip("\n") == WRITTEN and result.is_file():  # not a cell's process echoing it
            return "".join(chunks)[-LOG_TAIL:], True
        chunks.append(line)
        size += len(line)
        while size - len(chunks[0]) >= LOG_TAIL:
            size -= len(chunks.popleft())
    proc.wait()
    return "".join(chunks)[-LOG_TAIL:], False


# How often a unit waiting for a device held by another build on the machine asks again.
POLL_SECONDS = 0.5


class Runner:
    """Runs units in parallel worker processes, up to ``jobs`` at a time, each on its GPUs."""

    def __init__(self, jobs: int, env: dict[str, str], progress: Progress = print,
                 devices: Devices | None = None, live: LiveStatus | None = None,
                 lent: spares.Pool | None = None):
        self.jobs = max(1, jobs)
        self.env = env
        self.progress = progress
        self.live = live  # what each running unit's current cell is, said while it runs
        self.devices = devices or Devices([])
        # Workers started ahead (execute/spares.py): this runner's own (prestart), discarded when
        # it closes unless used, and those the warm builder lends (``lent``), which stay its own
        # unless taken; a unit asks the pool for the kind of kernel it runs in.
        self.spares = spares.Pool()
        self.lent = lent
        # Workers whose result is in, shutting their kernels down; run() waits for them unless
        # ``linger``, set by a build that renders meanwhile and calls join() after.
        self._finishing: list[threading.Thread] = []
        self.linger = False
        self._procs: dict[subprocess.Popen[str], str] = {}  # each running worker and its unit's token
        self._lock = threading.Lock()
        self._done = 0
        self._running: list[str] = []
        self._total = 0
        self._stopping = False

    def _report(self, event: str, unit: Unit, extra: str = "") -> None:
        with self._lock:
            if event == "start":
                self._running.append(unit.name)
            else:
                self._running.remove(unit.name)
                self._done += 1
            running = ", ".join(self._running) or "-"
        line = f"[exec {self._done}/{self._total}] {event:5} {unit.name}{extra}  (running: {running})"
        (self.live.say if self.live is not None else self.progress)(line)

    def kind(self, unit: Unit, placement: Placement | None = None) -> spares.Kind | None:
        """The kind of kernel ``unit`` runs in (:class:`spares.Kind`); None for a unit that may
        not take a spare: one that needs GPUs or runs alone, placed only when it starts."""
        if placement is None:
            if unit.gpus or unit.alone:
                return None
            placement = Placement(host_has_gpus=bool(self.devices.gpus))
        elif placement.gpus or placement.alone:
            return None
        return spares.Kind.of(unit.kernel_name, unit.cwd, placement.env(self.env))

    def prestart(self, units: list[Unit]) -> int:
        """Start the workers (and kernels) of the first units that will run, up to one per core,
        before they are handed over (:mod:`.spares`): while the build goes on keying, ordering
        and starting Sphinx. Those the warm builder lends are used first. How many it started."""
        lent = {s.kind for s in self.lent.spares if s.free} if self.lent is not None else set()
        started = 0
        for unit in units[:self.jobs]:
            kind = self.kind(unit)
            if kind is None:
                continue
            if kind in lent:
                lent.discard(kind)
                continue
            self.spares.spares.append(spares.start(kind))
            started += 1
        return started

    def _take_spare(self, unit: Unit, placement: Placement) -> spares.Spare | None:
        kind = self.kind(unit, placement)
        if kind is None:
            return None
        with self._lock:
            return self.spares.take(kind) or (self.lent.take(kind) if self.lent is not None else None)

    def close(self) -> None:
        """Discard this runner's spares that no unit took (the lent ones stay the lender's)."""
        self.spares.close()

    def _finish(self, proc: subprocess.Popen[str], token: str) -> None:
        """A worker whose result is in: read what it still writes while it shuts its kernel down,
        and end what it leaves if it fails to."""
        assert proc.stdout is not None
        while proc.stdout.read(65536):
            pass
        proc.wait()
        if proc.returncode != 0:
            end_marked(token)
        with self._lock:
            self._procs.pop(proc, None)

    def join(self) -> None:
        """Wait until every worker whose result came back has shut its kernel down and ended
        (:attr:`linger`: the build calls this once its pages are rendered)."""
        for thread in self._finishing:
            thread.join()
        self._finishing = []

    def _run_one(self, unit: Unit, placement: Placement | None = None) -> UnitResult:
        if self._stopping:
            return unit.failed(ErrorKind.NOT_RUN, "not run (build interrupted)")
        placement = placement or Placement()
        where = f" on {placement.describe()}" if self.devices.gpus or placement.alone else ""
        self._report("start", unit, where)
        t0, handed = time.monotonic(), time.time()
        spare = self._take_spare(unit, placement)
        if spare is not None:
            with self._lock:
                self._procs[spare.proc] = spare.token  # stop() ends it from now on
            try:
                folder = spare.folder
                (folder / "job.json").write_text(unit.job(progress=str(folder / "cell.json")).to_json())
                spare.go()  # its kernel started (or is starting) ahead: the job's cells run now
            except OSError:  # it ended meanwhile (its kernel could not start): a worker of its own
                with self._lock:
                    self._procs.pop(spare.proc, None)
                spare.discard()
                spare = None
        with (tempfile.TemporaryDirectory(prefix="tabbook-unit-") if spare is None else nullcontext(None)) as tmp:
            folder = spare.folder if spare is not None else Path(str(tmp))
            job = folder / "job.json"
            out = folder / "result.json"
            cell = folder / "cell.json"  # the worker's current cell (tabbook.execute.progress)
            if spare is not None:
                token, proc = spare.token, spare.proc
            else:
                job.write_text(unit.job(progress=str(cell)).to_json())
                token = uuid.uuid4().hex  # marks the unit's processes (reap.end_marked)
                env = {**placement.env(self.env), UNIT_ENV: token, WORKER_PARENT_ENV: str(os.getpid())}
                proc = subprocess.Popen(
                    [sys.executable, "-m", "tabbook.execute.worker", str(job), str(out)],
                    env=env, start_new_session=True,
                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                )
                with self._lock:
                    self._procs[proc] = token
            if self.live is not None:
                self.live.started(unit.name, unit.framework, cell)
            try:
                log, written = _tail(proc, out)
            finally:
                if self.live is not None:
                    self.live.finished(unit.name)
            if written:  # its kernel shuts down while the build goes on (join waits for it)
                thread = threading.Thread(target=self._finish, args=(proc, token), daemon=True)
                thread.start()
                self._finishing.append(thread)
            else:
                if proc.returncode != 0 or not out.is_file():
                    end_marked(token)  # the worker could not end what its unit started: done here
                with self._lock:
                    self._procs.pop(proc, None)
            seconds = time.monotonic() - t0
            if out.is_file():
                result = UnitResult.of(unit, Result.from_json(out.read_text()), seconds,
                                       {"handed": handed, "returned": time.time(), **({"spare": 1.0} if spare else {})})
            else:
                tail = "\n".join((log or "").strip().splitlines()[-20:])
                why = "interrupted" if self._stopping else f"worker exited with {proc.returncode}"
                running = current_cell(cell)  # the cell it was running: where the report points
                at_cell = running.get("where") if running else None
                result = UnitResult.of(unit, unit.failed(ErrorKind.WORKER, f"execution {why}\n{tail}",
                                                         at_cell if isinstance(at_cell, str) else None), seconds)
        if spare is not None:
            shutil.rmtree(spare.folder, ignore_errors=True)
        status = "ok" if result.ok else "FAIL"
        self._report("done", unit, f" {status} {seconds:.1f}s")
        return result

    def run(self, units: list[Unit], on_result: Callable[[UnitResult], None] | None = None) -> list[UnitResult]:
        """Run ``units``, starting them in their order as cores, GPUs and the machine allow;
        ``on_result`` gets each result as its unit ends (so a build stopped later keeps it)."""
        self._total = len(units)
        if not units:
            return []
        free = threading.Condition()
        running: list[Unit] = []

        def finish(unit: Unit, held: Held) -> None:
            with free:
                running.remove(unit)
                self.devices.give_back(held)
                free.notify_all()

        def start(unit: Unit) -> Held:
            """Block until ``unit`` may start; what it holds (its GPUs, its share of the machine)."""
            with free:
                while True:
                    if self._stopping:
                        raise KeyboardInterrupt
                    cores_free = len(running) < self.jobs and not any(u.alone for u in running)
                    if cores_free and not (unit.alone and running):
                        held = self.devices.try_take(unit.gpus, alone=unit.alone)
                        if held is not None:
                            running.append(unit)
                            return held
                    free.wait(POLL_SECONDS)  # a unit of this build ends, or another build's may have

        def one(unit: Unit, held: Held) -> UnitResult:
            try:
                result = self._run_one(unit, held.placement)
            finally:
                finish(unit, held)
            if on_result is not None and not self._stopping:
                on_result(result)
            return result

        pool = ThreadPoolExecutor(max_workers=self.jobs)
        futures = []
        with self.live or nullcontext():
            try:
                for unit in units:
                    held = start(unit)
                    futures.append(pool.submit(one, unit, held))
                return [f.result() for f in futures]
            except BaseException:
                self.stop()
                raise
            finally:
                pool.shutdown(wait=True, cancel_futures=True)
                self.close()
                if not self.linger or self._stopping:
                    self.join()

    def stop(self) -> None:
        """Kill every worker process group (worker + its kernel), spares included."""
        self._stopping = True
        with self._lock:
            procs = list(self._procs) + [s.proc for s in self.spares.spares if s.free]
            tokens = list(self._procs.values()) + [s.token for s in self.spares.spares if s.free]
        for proc in procs:
            try:
                os.killpg(proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + 5
        for proc in procs:
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        for token in tokens:  # what a worker killed before it could clean up left behind
            end_marked(token, seconds=2.0)
