"""Execution on a Dask cluster: ``tabbook build --scheduler tcp://HOST:PORT``.

A book of hundreds of sections in four frameworks needs more than one machine. Dask's
``distributed`` scheduler already runs on a laptop, a Slurm allocation or a Kubernetes cluster,
keeps track of its workers and re-runs the tasks of a worker that dies; tabbook only gives it
(section, framework) units. Each task runs on a worker exactly what a local build runs for that
unit: the framework's environment is found or created on the worker's host as locally
(:func:`tabbook.execute.envs.ensure_env`), and the unit executes in a worker subprocess and
kernel of its own (:class:`tabbook.execute.runner.Runner`). The task returns the executed notebook
as data; the client, and only the client, writes it into the freeze store (atomically, in
:func:`tabbook.execute.plan.run`, which the build hands this runner), so a worker never writes into the store and a unit whose
worker dies leaves nothing behind: the scheduler runs it again on another worker, and after
``distributed.scheduler.allowed-failures`` deaths the unit fails with a message saying so.

Workers see the book at the same path as the client (a shared file system, or the same
checkout at the same place on each host); each task checks that the section, the framework's
lock files and the generated library it finds there are the ones the client keyed the unit by,
so a stale checkout on a worker is an error, never wrong outputs under a current key.

Dask is an optional extra of the builder (``envs/builder-dask.txt``): nothing here imports it
until a build names a scheduler.
"""

from __future__ import annotations

import socket
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

from tabbook.config import Config, load_config
from tabbook.errors import BookError
from tabbook.execute.gpus import Devices, detect
from tabbook.execute.job import ErrorKind, Failure, Result
from tabbook.execute.runner import Progress, Runner, Unit, UnitResult

if TYPE_CHECKING:
    from distributed import Client, Future

#: What to install for ``--scheduler`` (the pinned versions are in envs/builder-dask.txt).
DASK_REQUIREMENTS = "envs/builder-dask.txt"
#: The worker events the client shows as progress.
TOPIC = "tabbook-progress"


def require_distributed() -> ModuleType:
    """``distributed``, or a clear error saying what to install (Dask is an optional extra)."""
    try:
        import distributed
    except ImportError as exc:
        raise BookError(
            f"--scheduler needs Dask's distributed scheduler, which is not installed in this Python "
            f"({exc.name} missing): install the builder's optional extra with "
            f"`.venv/bin/python -m pip install -r {DASK_REQUIREMENTS}`") from exc
    return distributed


@dataclass(frozen=True)
class Request:
    """What a worker needs to run one unit: the unit and what the client keyed it by."""

    build: str  # this build's id: progress events and the stop signal are per build
    root: str  # the book's root on the client (workers see the book at the same path)
    overlay: str | None  # the overlay the client read, if any
    unit: Unit
    env_hash: str  # the freeze key's environment part, as the client computed it
    library_hash: str  # hash of the whole d2l/<module>.py the client keyed the unit with


# -- worker side ------------------------------------------------------------------------------

_lock = threading.Lock()
_configs: dict[tuple[str, str | None], Config] = {}
_prepared: set[tuple[str, str | None, str]] = set()


def _worker_config(request: Request) -> Config:
    """The book's configuration as this host reads it, with the client's overlay (cached per
    worker process; the lock keeps two tasks of a multi-threaded worker from reading it twice)."""
    with _lock:
        cached = _configs.get((request.root, request.overlay))
        if cached is None:
            overlay = Path(request.overlay) if request.overlay else None
            cached = _configs[(request.root, request.overlay)] = load_config(Path(request.root), overlay)
        return cached


def _prepare(config: Config, request: Request) -> None:
    """Find or create the framework's environment and kernel on this host, once per process,
    and check that it and the library are what the client keyed the unit by."""
    from tabbook.execute.envs import checked_env, ensure_env, lock_hash, write_kernelspec
    from tabbook.execute.store import text_hash

    unit = request.unit
    host = socket.gethostname()
    section = Path(request.root) / unit.section
    if not section.is_file():
        raise BookError(f"worker {host} does not see the book at {request.root} (workers need the book "
                        "at the client's path: a shared file system or the same checkout there)", unit.section)
    framework = config.framework(unit.framework)
    with _lock:
        done = (request.root, request.overlay, unit.framework)
        if done not in _prepared:
            env = ensure_env(config, framework, create=True, log=lambda _msg: None)
            checked_env(config, framework, env)
            write_kernelspec(config, framework, env)
            _prepared.add(done)
    if lock_hash(framework) != request.env_hash:
        raise BookError(f"[{unit.framework}] worker {host}'s environment is not the client's (another lock "
                        "file or --python interpreter there): its outputs would be stored under a key "
                        "they do not match", unit.section)
    lib = config.library_dir / f"{framework.module}.py"
    text = lib.read_text(encoding="utf-8") if lib.is_file() else None
    if text_hash(text) != request.library_hash:
        raise BookError(f"[{unit.framework}] worker {host}'s {config.rel(lib)} is not the client's "
                        "(a stale checkout there?)", unit.section)


def run_unit(request: Request) -> tuple[Result, str]:
    """The task a worker runs: one unit, in a subprocess and kernel of its own; returns its
    result and this host's name.

    A failure of the unit is data (its :class:`~.job.Failure`, at ``file.md:LINE``), as in a
    local build. The unit stops when the client signals this build's stop event (Ctrl-C on the
    client).
    """
    import distributed

    from tabbook.execute.envs import kernel_env

    worker = distributed.get_worker()
    unit = request.unit
    host = socket.gethostname()
    worker.log_event(TOPIC, {"build": request.build, "event": "start", "unit": unit.name, "worker": worker.address})
    t0 = time.monotonic()
    try:
        config = _worker_config(request)
        _prepare(config, request)
    except BookError as exc:
        return Result(failure=Failure(ErrorKind.HOST, exc.message, exc.path, exc.line),
                      seconds=time.monotonic() - t0), host
    # The host's GPUs and its machine lock, as in a local build: Dask workers on one host (and
    # local builds beside them) never share a device, and a run-alone unit runs alone there.
    env = kernel_env(config)
    runner = Runner(1, env, progress=lambda _msg: None, devices=Devices(detect(env), per_gpu=config.units_per_gpu))
    # The worker's client, taken here: the watcher thread below is not a task thread, where
    # Dask could find it by itself.
    stop = distributed.Event(f"tabbook-stop-{request.build}", client=distributed.get_client())
    finished = threading.Event()

    def watch() -> None:
        while not finished.is_set():
            try:
                if stop.wait(timeout=1):
                    runner.stop()
                    return
            except Exception:  # the client is gone: the scheduler cancels the task itself
                time.sleep(1)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        result = runner.run([unit])[0]
    finally:
        finished.set()
    return Result(notebook=result.notebook, failure=result.failure, provenance=result.provenance,
                  seconds=result.seconds), host


# -- client side ------------------------------------------------------------------------------


class ClusterRunner(Runner):
    """Runs units as tasks on a Dask cluster; the progress lines are a local build's."""

    def __init__(self, address: str, config: Config, keys: dict[tuple[str, str], tuple[str, str]],
                 progress: Progress = print, workers_timeout: float = 120):
        super().__init__(1, {}, progress)
        self.address = address
        self.config = config
        self.keys = keys  # (section, framework) -> (env hash, library hash) of the unit's key
        self.workers_timeout = workers_timeout
        self.build = uuid.uuid4().hex[:12]
        self._client: Client | None = None
        self._futures: list[Future[tuple[Result, str]]] = []
        self._started: set[str] = set()

    def _event(self, event: tuple[float, object]) -> None:
        """A worker's progress event (on the client's event-loop thread)."""
        _, msg = event
        if not isinstance(msg, dict) or msg.get("build") != self.build or msg.get("event") != "start":
            return
        with self._lock:
            name = msg["unit"]
            again = name in self._started
            self._started.add(name)
            if name not in self._running:
                self._running.append(name)
            running = ", ".join(self._running) or "-"
            where = f" on {msg.get('worker', '?')}" + (" (again: its worker was lost)" if again else "")
            self.progress(f"[exec {self._done}/{self._total}] start {name}{where}  (running: {running})")

    def _finished(self, unit: Unit, result: UnitResult, host: str) -> None:
        with self._lock:
            if unit.name in self._running:
                self._running.remove(unit.name)
            self._done += 1
            running = ", ".join(self._running) or "-"
            status = "ok" if result.ok else "FAIL"
            self.progress(f"[exec {self._done}/{self._total}] done  {unit.name} {status} "
                          f"{result.seconds:.1f}s{' on ' + host if host else ''}  (running: {running})")

    def _connect(self) -> Client:
        distributed = require_distributed()
        if self.address.startswith("tls://"):
            security = distributed.Security()  # Dask's own settings: DASK_DISTRIBUTED__COMM__TLS__*
            if not (security.tls_ca_file and security.tls_client_cert):
                raise BookError(f"--scheduler {self.address}: no TLS credentials for the client: set "
                                "DASK_DISTRIBUTED__COMM__TLS__CA_FILE, DASK_DISTRIBUTED__COMM__TLS__CLIENT__CERT "
                                "and DASK_DISTRIBUTED__COMM__TLS__CLIENT__KEY (or distributed.comm.tls in a "
                                "Dask configuration file); README: Building a large book")
        try:
            # Dask's own connect timeout (distributed.comm.timeouts.connect, 30 s unless configured).
            client: Client = distributed.Client(self.address, set_as_default=False)
        except OSError as exc:
            raise BookError(f"--scheduler {self.address}: cannot reach the Dask scheduler: {exc}") from exc
        try:
            client.wait_for_workers(1, timeout=self.workers_timeout)
        except (TimeoutError, distributed.TimeoutError) as exc:
            client.close()
            raise BookError(f"--scheduler {self.address}: no worker joined the cluster within "
                            f"{self.workers_timeout:.0f} s") from exc
        workers = client.scheduler_info(n_workers=-1).get("workers", {})
        self.progress(f"[dask] {len(workers)} workers at {self.address}")
        return client

    def run(self, units: list[Unit], on_result: Callable[[UnitResult], None] | None = None) -> list[UnitResult]:
        self._total = len(units)
        if not units:
            return []
        distributed = require_distributed()
        self._client = client = self._connect()
        overlay = str(self.config.overlay) if self.config.overlay else None
        try:
            client.subscribe_topic(TOPIC, self._event)
            index: dict[object, int] = {}  # a future's key (the text given to submit) → its unit
            for i, unit in enumerate(units):
                env_hash, library_hash = self.keys[(unit.section, unit.framework)]
                request = Request(self.build, str(self.config.root), overlay, unit, env_hash, library_hash)
                # The plan's order (longest first) as Dask's priority: higher runs sooner.
                future = client.submit(run_unit, request, key=f"tabbook-{self.build}-{i}", pure=False,
                                       priority=len(units) - i)
                index[future.key] = i
                self._futures.append(future)
            results: list[UnitResult | None] = [None] * len(units)
            for future in distributed.as_completed(self._futures, loop=client.loop):
                unit = units[index[future.key]]
                host = ""
                try:
                    done, host = future.result()
                    result = UnitResult.of(unit, done, done.seconds)
                except distributed.KilledWorker as exc:
                    result = unit.failed(ErrorKind.NOT_RUN, f"not executed: the workers it was given to died, "
                                         f"and the scheduler gave up on it ({exc}); nothing of it was stored")
                except Exception as exc:  # the task itself failed on the worker (not the unit)
                    result = unit.failed(ErrorKind.HOST, f"the Dask task failed on its worker: "
                                         f"{type(exc).__name__}: {exc}")
                results[index[future.key]] = result
                self._finished(unit, result, host)
                if on_result is not None:
                    on_result(result)
            return [r for r in results if r is not None]
        except BaseException:
            self.stop()
            raise
        finally:
            self._close()

    def stop(self) -> None:
        """Ctrl-C: tell the workers to kill this build's units, cancel what has not started."""
        self._stopping = True
        client = self._client
        if client is None:
            return
        try:
            import distributed

            distributed.Event(f"tabbook-stop-{self.build}", client=client).set()
            client.cancel(self._futures, force=True)
        except Exception:  # the scheduler is gone: it can no longer run anything of ours
            pass

    def _close(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            try:
                client.unsubscribe_topic(TOPIC)
            except Exception:
                pass
            client.close()
