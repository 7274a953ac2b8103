"""Each unit's record, from the plan's decision to the report: which units a build may run
(:class:`Selection`), what the plan decided (:class:`UnitState`) and why (:func:`explain`), and
what came of it (:class:`UnitStatus`, :class:`UnitOutcome`).

Why a module of its own: these records are the plan's vocabulary, read by the command line,
the build, the editions and the report, none of which needs the planning itself; kept in
:mod:`.plan` they made every reader import the store look-ups and the runner, and the module
grew past the size one reads in a sitting.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from tabbook.errors import BookError
from tabbook.execute.store import Entry, KeyParts
from tabbook.library.reach import HEADER, changed_names
from tabbook.nbjson import Notebook


@dataclass(frozen=True)
class Selection:
    """Which units a build may execute (the command line's ``--force``, ``--only``, …)."""

    force: bool = False  # re-execute the selected units even when current
    frameworks: tuple[str, ...] | None = None  # execute only these
    only: tuple[str, ...] | None = None  # sections (paths) to execute
    shard: tuple[int, int] | None = None  # (i, n): execute units i, i+n, ...
    frozen_only: bool = False  # never execute: a unit that would run is an error
    # Re-run a stale unit even where this machine is less than the one that computed its entry
    # (fewer GPUs than the entry's, or than the page needs); by default its entry is kept, marked.
    execute_here: bool = False

    def selects(self, section: str, framework: str) -> bool:
        return (self.frameworks is None or framework in self.frameworks) and (
            self.only is None or section in self.only)


class UnitState(StrEnum):
    """The plan's decision for a unit (a ``--dry-run`` line; :class:`UnitOutcome`)."""

    REUSE = "reuse"  # its entry is current
    RUN = "run"  # stale: it executes in this build
    STALE = "stale"  # stale, but execution is off: shown as code only
    OUTDATED = "outdated"  # stale, its entry kept: this machine cannot stand in for the one that computed it
    SKIP = "skip"  # not selected in this build (--only, --frameworks, another --shard)


class UnitStatus(StrEnum):
    """What came of a unit (``build/report.json``)."""

    REUSED = "reused"
    EXECUTED = "executed"
    FAILED = "failed"
    SKIPPED = "skipped"
    NOT_EXECUTED = "not-executed"
    OUTDATED = "outdated"


@dataclass
class UnitOutcome:
    """One (section, framework) unit from plan to report: what the plan decided and why, and
    what came of it. One record per unit, where there used to be four parallel dicts and lists
    (notebooks, origins, statuses, plan lines) that had to be kept in step.

    ``state``: the plan's decision (:class:`UnitState`). ``why``: which inputs changed since the
    entry was stored (its code, library names, a lock file, Python, the kernel), or why it is
    reused. ``status``: what came of it (:class:`UnitStatus`); None for a unit another shard
    runs. ``notebook``: what its
    page shows. ``origin``: where that notebook came from when it is not new in this build
    (the store file's signature, or why it shows code only), for the sources step's memo.
    """

    section: str
    framework: str
    state: UnitState = UnitState.REUSE
    why: list[str] = field(default_factory=list)
    library_names: list[str] = field(default_factory=list)  # the library names that changed, if any
    library_whole: str | None = None  # why the key covers the whole library, if it does
    placement: str | None = None
    status: UnitStatus | None = None
    seconds: float = 0.0
    error: BookError | None = None  # why it failed, or why its outputs are kept outdated (UnitError: of its kind)
    notebook: Notebook | None = None
    origin: str | None = None
    current: bool = False  # its entry matches its key (a forced unit runs all the same)
    phases: dict[str, float] = field(default_factory=dict)  # when each step of its run happened (job.Result)
    gpu_need: int = 0  # how many GPUs its code asks for ([build] gpus or its code: gpus.guess_need)

    @property
    def id(self) -> tuple[str, str]:
        return (self.section, self.framework)

    def show(self, notebook: Notebook, origin: str | None, status: UnitStatus | None = None) -> None:
        """What the unit's page shows, where it came from, and (if given) the report's status."""
        self.notebook, self.origin = notebook, origin
        if status is not None:
            self.status = status

    @property
    def device(self) -> str:
        """Where the outputs its page shows were computed ("1× NVIDIA H100…", "CPU only"; "" when
        it shows none), read from the notebook's provenance."""
        prov = Entry(self.notebook).provenance if self.notebook is not None else None
        return "" if not prov or prov.not_executed else prov.text("device")

    def as_json(self) -> dict[str, Any]:
        """The plan's decision (``build --dry-run --json``)."""
        out: dict[str, Any] = {"page": self.section, "framework": self.framework, "state": self.state,
                               "why": self.why}
        if self.library_names:
            out["library_names"] = self.library_names
        if self.library_whole:
            out["library_whole"] = self.library_whole
        if self.placement is not None:
            out["placement"] = self.placement
        return out

    def as_report(self) -> dict[str, Any]:
        """What came of it (``build/report.json``)."""
        return {"section": self.section, "framework": self.framework, "status": self.status,
                "seconds": round(self.seconds, 3), **({"error": self.error.location_message()} if self.error else {}),
                **({"device": self.device} if self.device else {}), **self._phases()}

    def _phases(self) -> dict[str, Any]:
        """Its run's steps in seconds after it was handed to its worker (a negative one
        happened before: a kernel started ahead), in the order they happened."""
        if "handed" not in self.phases:
            return {}
        t0 = self.phases["handed"]
        steps = sorted((t - t0, name) for name, t in self.phases.items() if name not in ("handed", "spare"))
        return {"started_ahead": "spare" in self.phases, "phases": {name: round(t, 3) for t, name in steps}}


def explain(entry: Entry | None, parts: KeyParts) -> tuple[list[str], list[str]]:
    """Why an entry is not current for ``parts``: the inputs that changed, and the library names.

    Read from the key parts the entry recorded; an entry of version-1 keys recorded only the
    whole library's hash, so a library change there cannot be narrowed to names."""
    if entry is None:
        return ["no entry"], []
    stored = entry.parts
    if not stored:
        return ["its entry records no key parts"], []
    why: list[str] = []
    names: list[str] = []
    if stored.cells != parts.cells:
        why.append("its code")
    # A GPU entry's environment is the GPU machine's, never this host's lock: it is compared by
    # code and library alone (store.gpu_entry_current), so only those can be why it is stale.
    if not entry.gpus:
        if stored.env != parts.env:
            why.append("the lock file")
        if stored.python != parts.python:
            why.append("Python")
        if stored.kernel != parts.kernel:
            why.append("the kernel")
    if stored.depends != parts.depends:
        why.append("[build] dependencies")
    old_names = stored.library_names
    legacy = not isinstance(old_names, dict)  # a version-1 entry: its library part is the whole file's hash
    if stored.library != (parts.library_file if legacy else parts.library):
        if parts.library_whole:
            why.append(f"the library (keyed whole: {parts.library_whole})")
        elif stored.library_whole or legacy:
            what = ("keyed whole before" if stored.library_whole
                    else "keyed on the whole library by an older tabbook")
            why.append(f"the library ({what})")
        else:
            names = changed_names(old_names if isinstance(old_names, dict) else {}, dict(parts.library_names))
            if HEADER in names:
                why.append("the library's header (its imports and import-time code)")
            names = [n for n in names if n != HEADER]
            if names:
                why.append(f"library names: {', '.join(names)}")
    return why or ["its key (another key version)"], names
