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
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields, replace
from enum import StrEnum
from typing import Any, cast

from tabbook.errors import BookError
from tabbook.nbjson import Notebook


@dataclass(frozen=True)
class Job:
    """One unit as its worker runs it: the notebook to execute and how."""

    notebook: Notebook  # the unit's code cells (runner.build_notebook)
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

    def error(self) -> UnitError:
        """The located error, still of its kind (:attr:`UnitError.failure`)."""
        return UnitError(self)

    def __str__(self) -> str:
        return self.error().location_message()


class UnitError(BookError):
    """A unit's failure as the error the build reports: ``file.md:LINE: message``, keeping the
    :class:`Failure` (and so its :class:`ErrorKind`) it was made from, so that whoever reads it
    later (the report, ``verify``) can tell a timeout from a cell's error without its text."""

    def __init__(self, failure: Failure):
        self.failure = failure
        super().__init__(failure.message, failure.path, failure.line)

    def __reduce__(self) -> tuple[type[UnitError], tuple[Failure]]:
        return (type(self), (self.failure,))


#: What a unit's provenance says as its device when no GPU was found.
CPU_ONLY = "CPU only"

#: A provenance value as the store's schema allows it (``entrycheck.provenance_problem``): one line
#: of text mostly, a number or boolean tolerated.
Scalar = str | int | float | bool | None


@dataclass(frozen=True)
class Provenance:
    """Where a unit's outputs were computed, as its entry records it (``metadata.tabbook.provenance``).

    Made by the worker (:func:`tabbook.execute.provenance.provenance`), stored with the entry, and
    read by the pages, the merge, the plan and the build through these fields instead of by key.
    An entry holds what the worker of its day wrote: any field may be absent (None), and keys
    this version does not know are kept (``extra``). ``keys`` is the order the record had, so that
    :meth:`as_dict` gives back what was read, byte for byte once serialised."""

    framework: Scalar = None
    framework_version: Scalar = None
    python: Scalar = None
    cpu: Scalar = None
    gpus: tuple[str, ...] | None = None
    device: Scalar = None
    date: Scalar = None
    host_platform: Scalar = None
    gpu_probe_error: Scalar = None
    framework_imported: Scalar = None  # False: the cells never imported the framework
    not_executed: Scalar = None  # why a page shows its code without outputs
    outdated: Scalar = None  # why the outputs shown are from an earlier version of the code
    extra: tuple[tuple[str, object], ...] = ()
    keys: tuple[str, ...] = ()

    @classmethod
    def from_dict(cls, data: Mapping[str, object] | None) -> Provenance:
        """A stored provenance object (checked by ``entrycheck.provenance_problem`` where it is read
        from a file): its known keys as fields, the others kept as they are."""
        data = data or {}
        known = {f.name for f in fields(cls)} - {"extra", "keys"}
        values: dict[str, Any] = {k: v for k, v in data.items() if k in known}
        if isinstance(values.get("gpus"), list):
            values["gpus"] = tuple(values["gpus"])
        return cls(**values, extra=tuple((k, v) for k, v in data.items() if k not in known), keys=tuple(data))

    def as_dict(self) -> dict[str, object]:
        """The record as it is stored: its keys in their order, absent ones left out."""
        extra = dict(self.extra)
        out: dict[str, object] = {}
        for key in self.keys:
            value = extra[key] if key in extra else getattr(self, key)
            out[key] = list(value) if key == "gpus" and isinstance(value, tuple) else value
        return out

    def with_(self, **changes: Scalar) -> Provenance:
        """This record with fields set; a field it did not have goes last, as a dict update would."""
        return replace(self, **cast(dict[str, Any], changes),
                       keys=(*self.keys, *(k for k in changes if k not in self.keys)))

    def __bool__(self) -> bool:
        """False for an empty record (an entry that recorded nothing), as its dict was."""
        return bool(self.keys)

    @property
    def on_gpu(self) -> bool:
        """Whether the outputs came from a GPU (the probe found one)."""
        return bool(self.gpus)

    def text(self, name: str, default: str = "") -> str:
        """A field as text; ``default`` when the record does not have it (a value it has is
        text, whatever it is: an entry's own data, shown as it was written)."""
        return str(getattr(self, name)) if name in self.keys else default

    def says_anything(self) -> bool:
        """Whether any value but the GPU list is set (unknown keys included): else the record is
        as good as none."""
        return any(value for key, value in self.as_dict().items() if key != "gpus")


@dataclass(frozen=True)
class Result:
    """What a worker gives back: the executed notebook and where it was computed, or a failure."""

    notebook: Notebook | None = None
    failure: Failure | None = None
    provenance: Provenance = field(default_factory=Provenance)
    seconds: float = 0.0
    # When each step of the unit happened (``time.time()``; the worker's :data:`worker.PHASES`
    # and the runner's hand-over and return), for the report: where a unit's time goes.
    phases: dict[str, float] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.failure is None

    def to_json(self) -> str:
        return json.dumps({**asdict(self), "provenance": self.provenance.as_dict()}, default=str)

    @classmethod
    def from_json(cls, text: str) -> Result:
        return cls.from_dict(json.loads(text))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Result:
        failure = data.get("failure")
        return cls(notebook=data.get("notebook"), provenance=Provenance.from_dict(data.get("provenance")),
                   seconds=float(data.get("seconds") or 0.0), phases=dict(data.get("phases") or {}),
                   failure=Failure(**{**failure, "kind": ErrorKind(failure["kind"])}) if failure else None)
