"""Execute one (section, framework) notebook with nbclient; run as a subprocess.

``python -m tabbook.execute.worker job.json result.json``: a :class:`~.job.Job` in, a
:class:`~.job.Result` out. The result file is written only at the end (atomically), holding the
executed notebook or a :class:`~.job.Failure` of its kind at ``file.md:LINE`` of the failing cell. SIGTERM becomes KeyboardInterrupt so that
nbclient's context manager shuts the kernel down before the worker exits. The worker is a
subreaper: when the unit ends, every process its cells started (daemons included) is killed.
Each cell's output is capped while it runs, and the kernel's memory on request.
"""

from __future__ import annotations

import os
import signal
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from tabbook.execute.capped import capped_client
from tabbook.execute.job import ErrorKind, Failure, Job, Result
from tabbook.execute.progress import record_cell
from tabbook.execute.provenance import probe_info, probe_source, provenance
from tabbook.execute.reap import become_subreaper, end_descendants, kernel_pid, limit_memory
from tabbook.execute.shape import (
    cap_outputs,
    cell_line,
    coalesce_streams,
    drop_noise,
    error_outputs,
    out_of_memory,
    raising_line,
    short_error,
    size_text,
    strip_ansi,
)
from tabbook.files import write_atomic
from tabbook.lifetime import WORKER_PARENT_ENV, end_with_parent
from tabbook.nbjson import NotebookCell

if TYPE_CHECKING:
    from types import FrameType

    from nbclient import NotebookClient
    from nbformat import NotebookNode

START_ATTEMPTS = 3

#: When each step of this worker's unit happened (``time.time()``), sent back in its result:
#: ``imports`` (nbclient imported), ``kernel_ready`` (it answered), ``go`` (a worker started
#: ahead got its job), ``first_cell``, ``cells_done`` (the probe starts), ``kernel_down``.
PHASES: dict[str, float] = {}


def _mark(phase: str) -> None:
    PHASES.setdefault(phase, time.time())


def run(job: Job, clients: list[NotebookClient], started: NotebookClient | None = None) -> Result:
    """Execute the job's notebook, the GPU probe after it; the notebook with its provenance, or a
    failure. ``started``: the client of a kernel started ahead for this job (:func:`prestart`),
    used for its first attempt. Each client made is added to ``clients``, its kernel still
    running: the caller shuts them down (:func:`shut_down`) once the result is written."""
    import nbclient  # noqa: F401 - imported here, once, for the record of when imports ended
    import nbformat

    _mark("imports")
    nb = nbformat.from_dict(job.notebook)
    nb.cells.append(nbformat.v4.new_code_cell(probe_source(job.import_name, job.gpu_probe)))
    produced: dict[int, int] = {}
    failure = execute(job, nb, produced, clients, started)
    info = probe_info(nb.cells.pop())
    failure = failure or unmet_raises(job, nb.cells)
    if failure is not None:
        return Result(failure=failure)
    for index, cell in enumerate(nb.cells):
        cell.get("metadata", {}).pop("execution", None)
        coalesce_streams(cell)  # an entry never shows how a print was flushed
        drop_noise(cell, job.stderr_filters)
        cap_outputs(cell, job.max_output_bytes, produced.get(index, 0))
    return Result(notebook=dict(nb), provenance=provenance(job, info))


def shut_down(clients: list[NotebookClient]) -> None:
    """Shut each client's kernel down as nbclient does when a notebook ends (gracefully unless
    the client says ``immediate``); one that is gone already is skipped."""
    for client in clients:
        if client.km is None:
            continue
        try:
            client._cleanup_kernel()
        except Exception:  # noqa: BLE001, S110 - ending anyway: end_descendants takes what is left
            pass


def execute(job: Job, nb: NotebookNode, produced: dict[int, int], clients: list[NotebookClient],
            started: NotebookClient | None = None) -> Failure | None:
    """Run every cell of ``nb`` in a new kernel (its last cell is the probe); None when all ran.

    A kernel can die before its first reply when parallel kernels race for ports; nothing has
    run yet then, so starting it again is safe. ``started``'s kernel, started ahead
    (:func:`prestart`) and having run nothing, is the first attempt's, with its client, already
    answering. Kernels are left running (``clients``): the result is written first, and the
    worker shuts them down after, while the build goes on."""
    from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError

    running: list[int] = []  # the index of the cell that runs

    def on_cell_start(cell: NotebookNode, cell_index: int) -> None:
        running[:] = [cell_index]
        _mark("cells_done" if cell_index == len(nb.cells) - 1 else "first_cell")
        if job.progress and cell_index < len(nb.cells) - 1:  # the build shows it while the cell runs
            record_cell(Path(job.progress), f"{job.section}:{cell_line(nb.cells[cell_index])}")

    def on_notebook_start(notebook: NotebookNode) -> None:
        """Before the first cell: the kernel's memory cap."""
        _mark("kernel_ready")
        if job.memory_limit:
            pid = kernel_pid(clients[-1])
            if pid is None:
                raise RuntimeError("[build] memory_limit: the kernel's process is not known, so it cannot be capped")
            limit_memory(pid, job.memory_limit)

    for attempt in range(START_ATTEMPTS):
        produced.clear()
        ahead = started if attempt == 0 else None
        clients.append(capped_client(job.max_output_bytes, produced)(
            nb, km=ahead.km if ahead is not None else None,
            timeout=job.timeout, kernel_name=job.kernel_name, resources={"metadata": {"path": job.cwd}},
            allow_errors=False, record_timing=False, interrupt_on_timeout=False,
            on_cell_start=on_cell_start, on_notebook_start=on_notebook_start,
            coalesce_streams=False))  # merged afterwards (coalesce_streams)
        client = clients[-1]
        # The kernel outlives execute() (shut_down, after the result is written); nbclient's
        # clean-up then treats a kernel started ahead as one it started itself.
        client.owns_km = False
        try:
            if ahead is not None and ahead.kc is not None:
                # What nbclient does once a client it starts answers (start_new_kernel_client):
                # the one started ahead answered already, and waiting for it again costs 0.2 s.
                client.kc, ahead.kc = ahead.kc, None
                client.kc.allow_stdin = False
                on_notebook_start(nb)
            client.execute()
            return None
        except (CellTimeoutError, DeadKernelError, CellExecutionError, RuntimeError) as exc:
            unstarted = isinstance(exc, RuntimeError) and not isinstance(exc, DeadKernelError) and not running
            if unstarted and attempt + 1 < START_ATTEMPTS:
                shut_down([client])
                continue
            cell = nb.cells[running[0]] if running and running[0] < len(nb.cells) - 1 else None
            return failure_of(job, exc, cell)
    return None  # not reached: the last attempt returns


def failure_of(job: Job, exc: Exception, cell: NotebookCell | None) -> Failure:
    """nbclient's error, as the failure of its kind at the cell's line (the line that raised)."""
    from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError

    fw, memory = f"[{job.framework}]", job.memory_limit
    if isinstance(exc, CellTimeoutError):
        return Failure(ErrorKind.TIMEOUT, f"{fw} cell exceeded the {job.timeout} s timeout", job.section, cell_line(cell))
    if isinstance(exc, DeadKernelError):
        note = f" (with [build] memory_limit = {size_text(memory)}, it may have run out of memory)" if memory else ""
        return Failure(ErrorKind.DEAD_KERNEL, f"{fw} the kernel died while running this cell ({exc}){note}",
                       job.section, cell_line(cell))
    if isinstance(exc, CellExecutionError):
        text = short_error(strip_ansi(str(exc)))
        if memory and out_of_memory(cell):
            return Failure(ErrorKind.MEMORY, f"{fw} MemoryError: the cell needed more memory than [build] "
                           f"memory_limit = {size_text(memory)} allows (use less, or raise the key):\n{text}",
                           job.section, raising_line(cell))
        return Failure(ErrorKind.CELL, f"{fw} unexpected error:\n{text}", job.section, raising_line(cell))
    return Failure(ErrorKind.KERNEL, f"{fw} kernel {job.kernel_name} failed to start or run: {exc}", job.section)


def unmet_raises(job: Job, cells: list[NotebookCell]) -> Failure | None:
    """The first ``#@raises`` cell that did not raise, or raised something else."""
    for cell in cells:
        expected = cell["metadata"]["tabbook"].get("raises")
        if expected is None:
            continue
        errors = error_outputs(cell)
        got = errors[0].get("ename", "") if errors else None
        if got is None:
            why = f"is marked #@raises {expected or 'an exception'} but did not raise"
        elif expected and got != expected and not got.endswith("." + expected):
            why = f"raised {got}, but is marked #@raises {expected}"
        else:
            continue
        return Failure(ErrorKind.RAISES, f"[{job.framework}] cell {why}", job.section, cell_line(cell))
    return None


def _raise_interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def _stop_when_orphaned(builder: int | None = None) -> None:
    """End this worker (SIGTERM: its kernel is shut down) once its parent is gone, or the
    ``builder`` it runs a job for (a worker started ahead by the warm builder runs the job of
    one of its forks, which is not its parent).

    The worker runs in a session of its own so that a build can kill it with its kernel; the
    other side of that is that nothing kills it when the build itself is killed outright (a
    Dask worker process SIGKILLed mid-unit). Its result would go nowhere, so it stops.
    """
    import threading
    import time

    parent = os.getppid()

    def alive() -> bool:
        if builder is None:
            return True
        try:
            os.kill(builder, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            pass
        return True

    def watch() -> None:
        while os.getppid() == parent and alive():
            time.sleep(1)
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch, daemon=True).start()


#: The first argument of a worker started ahead of its job (:func:`prestart`).
PRESTART = "--prestart"
#: The line on a started-ahead worker's standard input that hands it its job (then the pid of the
#: build that hands it over, which it must not outlive); anything else, or the end of input, ends it.
GO = "go"


#: What a worker prints once its result is written: the builder goes on with it while the
#: worker shuts its kernel down (:class:`tabbook.execute.runner.Runner` waits for that later).
WRITTEN = "TABBOOK-RESULT-WRITTEN"


def prestart(kernel_name: str, cwd: str) -> NotebookClient | None:
    """Start the kernel a job will run in, before the job is known: the process, then a client
    that waits until it answers (``kernel_info``), exactly as nbclient starts one for a notebook
    (its own code, on an empty notebook); the client (its manager and channels) is returned for
    the job's. Nothing of the book runs: a page's first cell may set environment variables
    before its first import, so the kernel imports nothing but itself. None when it fails: the
    job then starts its kernel as usual."""
    import nbformat

    _mark("imports")
    starter = capped_client(0, {})(nbformat.v4.new_notebook(), kernel_name=kernel_name, resources={"metadata": {"path": cwd}},
                             shutdown_kernel="immediate")  # unused, it has run nothing
    starter.owns_km = False
    try:
        starter.km = starter.create_kernel_manager()
        starter.start_new_kernel()
        starter.start_new_kernel_client()
    except Exception:  # noqa: BLE001 - any failure: the job starts its own kernel
        shut_down([starter])
        return None
    _mark("kernel_ready")
    return starter


def _wait_for_job(started: NotebookClient | None) -> bool:
    """Block until the builder hands over the job (True) or discards this worker (False, its
    kernel shut down). The builder's pid on the line is watched like the parent's."""
    line = sys.stdin.readline().split()
    if line[:1] != [GO]:
        return False
    _mark("go")
    if len(line) > 1 and line[1].isdigit():
        _stop_when_orphaned(int(line[1]))
    return True


def main(argv: list[str]) -> int:
    signal.signal(signal.SIGTERM, _raise_interrupt)
    # A builder killed outright sends this worker SIGTERM: its kernel shut down, its processes ended.
    end_with_parent(signal.SIGTERM, WORKER_PARENT_ENV)
    become_subreaper()
    _stop_when_orphaned()
    # The kernel's connection file (its HMAC key: whoever reads it can run code in the kernel)
    # is a temporary file of this process (jupyter_client's mkstemp): made in the job's private
    # folder, which the runner removes however this worker ends, a cell that kills it included
    # (it was left in /tmp).
    tempfile.tempdir = str(Path(argv[3] if argv[0] == PRESTART else argv[0]).parent)
    started: NotebookClient | None = None
    clients: list[NotebookClient] = []
    try:
        if argv[0] == PRESTART:  # --prestart KERNEL_NAME CWD JOB RESULT: the job comes later
            kernel_name, cwd, argv = argv[1], argv[2], argv[3:]
            started = prestart(kernel_name, cwd)
            if not _wait_for_job(started):
                return 0
            job = Job.from_json(Path(argv[0]).read_text())
            if started is not None and (job.kernel_name, job.cwd) != (kernel_name, cwd):
                shut_down([started])  # not the kernel this job runs in: never used
                started = None
        else:
            job = Job.from_json(Path(argv[0]).read_text())
        result = run(job, clients, started)
        write_atomic(Path(argv[1]), replace(result, phases=dict(PHASES)).to_json())
        print(WRITTEN, flush=True)  # the build goes on with it; the kernel shuts down meanwhile
    finally:  # the kernel is shut down; what its cells started goes too, even on SIGTERM
        shut_down([*clients, *([started] if started is not None else [])])
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second SIGTERM must not cut the sweep short
        end_descendants()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
