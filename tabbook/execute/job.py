"""What crosses the worker boundary: a :class:`Job` in, a :class:`Result` out, serialised here alone.

A unit runs in a worker subprocess (:mod:`.worker`), perhaps on a Dask worker on another host
(:mod:`.cluster`). What it was given and what it gave back used to be dicts whose keys each side
knew by heart, the worker supplying the defaults again, and nbclient's typed errors became
strings there that the plan wrapped back into a :class:`~tabbook.errors.BookError`. Here each is
a small dataclass with ``to_json``/``from_json`` (jupyter-cache's executors return a result
object, never an exception across the pool); a failure keeps its kind (:class:`ErrorKind`, as
nbclient's ``CellExecutionError``, ``CellTimeoutError`` and ``DeadKernelError`` keep theirs) and
its ``file.md:LINE`` across the trip.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any

from tabbook.errors import BookError


@dataclass(frozen=True)
class Job:
    """One unit as its worker runs it: the notebook to execute and how."""

    notebook: dict[str, Any]  # the unit's code cells (runner.build_notebook)
    section: str  # chapter_gpus/devices.md: where its failures are located
    framework: str
    kernel_name: str
    import_name: str  # the package whose version the provenance records
    cwd: str  # the section's folder: where its cells run
    timeout: int  # seconds one cell may run ([build] cell_timeout)
    gpu_probe: str = ""  # [framework:X] gpu_probe ("" = report no GPUs)
    stderr_filters: tuple[str, ...] = ()  # regexes of stderr lines dropped from outputs
    max_output_bytes: int = 0  # output one cell keeps; 0 = all of it
    memory_limit: int = 0  # bytes of address space the kernel may use; 0 = no cap
    progress: str = ""  # a file where the worker records the cell that runs (execute/progress.py); "": none

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> Job:
        data = json.loads(text)
        return cls(**{**data, "stderr_filters": tuple(data.get("stderr_filters", ()))})


class ErrorKind(StrEnum):
    """Why a unit failed; each kind is one way the worker (or what runs it) can end without outputs."""

    CELL = "cell"  # a cell raised (nbclient's CellExecutionError)
    MEMORY = "memory"  # a cell raised MemoryError under [build] memory_limit
    TIMEOUT = "timeout"  # a cell ran past [build] cell_timeout (CellTimeoutError)
    DEAD_KERNEL = "dead-kernel"  # the kernel process died (DeadKernelError)
    KERNEL = "kernel"  # the kernel did not start, or stopped answering
    RAISES = "raises"  # a #@raises cell did not raise what it says
    WORKER = "worker"  # the worker process ended without a result (a crash, an interrupt)
    NOT_RUN = "not-run"  # never ran: the build was interrupted, or the cluster gave up on it
    HOST = "host"  # the host that was to run it cannot (a Dask worker's checkout or environment)
    RESULT = "result"  # what came back is not a notebook


@dataclass(frozen=True)
class Failure:
    """A unit's failure as data: its kind, what to say, and where (the Markdown file and line)."""

    kind: ErrorKind
    message: str  # "[jax] cell exceeded the 600 s timeout"
    path: str | None = None
    line: int | None = None

    def error(self) -> BookError:
        return BookError(self.message, self.path, self.line)

    def __str__(self) -> str:
        return self.error().location_message()


@dataclass(frozen=True)
class Result:
    """What a worker gives back: the executed notebook and where it was computed, or a failure."""

    notebook: dict[str, Any] | None = None
    failure: Failure | None = None
    provenance: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0
    # When each step of the unit happened (``time.time()``; the worker's :data:`worker.PHASES`
    # and the runner's hand-over and return), for the report: where a unit's time goes.
    phases: dict[str, float] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.failure is None

    def to_json(self) -> str:
        return json.dumps(asdict(self), default=str)

    @classmethod
    def from_json(cls, text: str) -> Result:
        return cls.from_dict(json.loads(text))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Result:
        failure = data.get("failure")
        return cls(notebook=data.get("notebook"), provenance=data.get("provenance") or {},
                   seconds=float(data.get("seconds") or 0.0), phases=dict(data.get("phases") or {}),
                   failure=Failure(**{**failure, "kind": ErrorKind(failure["kind"])}) if failure else None)
