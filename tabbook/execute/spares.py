"""Workers started ahead of their units: the kernel is up and answering when the unit comes.

Most of a small unit's time is not its cells: a worker interpreter starts and imports nbclient,
then a kernel starts and imports IPython (about a second together, :file:`BENCHMARKS.md`). A
:class:`Spare` does that part before the unit is handed to it: ``python -m tabbook.execute.worker
--prestart KERNEL CWD JOB RESULT`` starts the kernel exactly as nbclient would for the unit
(:func:`tabbook.execute.worker.prestart`) and then waits on its standard input for ``go``.

What keeps it sound:

- **The kernel runs nothing of the book before the unit's first cell.** It is started and asked
  for ``kernel_info``, nothing else; a page that sets environment variables before its first
  import (``multigpu.md`` for JAX) sees a kernel that has imported nothing but itself.
- **A spare fits one kind of unit**: the same kernel, folder (the kernel's working folder and
  ``sys.path``) and environment, all fixed when a process starts. A unit that fits none starts
  its worker as before; a unit that needs a GPU or runs alone never takes one (its environment
  is known only when it is placed).
- **A kernel is used once.** Whoever takes a spare renames its claim file first (one rename
  succeeds, even between the warm builder's forks); a used spare ends with its unit, and an
  unused one is discarded (the end of its input: the worker shuts its kernel down and exits).

Two owners start spares: a build (:meth:`tabbook.execute.runner.Runner.prestart`, once the plan
knows its stale units, so the kernels start while the build keys, orders and sets up Sphinx) and
the warm builder (:class:`Pool`: one spare per framework the book's last builds executed, kept
between builds, so that a code edit at a terminal finds its kernel waiting).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from tabbook.execute.reap import UNIT_ENV
from tabbook.execute.worker import GO, PRESTART
from tabbook.lifetime import WORKER_PARENT_ENV

#: The claim file's name while nobody has taken the spare.
FREE = "free"


@dataclass(frozen=True)
class Kind:
    """What a kernel is fixed to when it starts: which kernel, its folder, its environment."""

    kernel_name: str
    cwd: str
    env: tuple[tuple[str, str], ...]

    @classmethod
    def of(cls, kernel_name: str, cwd: str | Path, env: Mapping[str, str]) -> Kind:
        return cls(kernel_name, str(cwd), tuple(sorted((k, v) for k, v in env.items()
                                                         if k not in (UNIT_ENV, WORKER_PARENT_ENV))))


@dataclass
class Spare:
    """A worker started ahead of its unit, its kernel starting or started."""

    kind: Kind
    proc: subprocess.Popen[str]
    folder: Path  # job.json, result.json, cell.json, and the claim file
    token: str  # marks every process of the unit (reap.end_marked)

    @property
    def job(self) -> Path:
        return self.folder / "job.json"

    @property
    def result(self) -> Path:
        return self.folder / "result.json"

    @property
    def cell(self) -> Path:
        return self.folder / "cell.json"

    @property
    def free(self) -> bool:
        return (self.folder / FREE).exists()

    def take(self) -> bool:
        """Claim it (True), unless someone did first. Whether it is still alive is not asked
        here: a fork of the warm builder is not its parent; :meth:`go` fails if it is gone."""
        try:
            os.rename(self.folder / FREE, self.folder / f"taken-{os.getpid()}")
        except FileNotFoundError:
            return False
        return True

    def go(self) -> None:
        """Hand it the job written at :attr:`job`: it runs it, watching this process."""
        assert self.proc.stdin is not None
        self.proc.stdin.write(f"{GO} {os.getpid()}\n")
        self.proc.stdin.close()

    def discard(self, wait: bool = True) -> None:
        """End an unused spare: the end of its input makes the worker shut its kernel down and
        exit (killed after a few seconds if it does not); its folder goes."""
        try:
            if self.proc.stdin is not None and not self.proc.stdin.closed:
                self.proc.stdin.close()
        except OSError:
            pass
        if wait:
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(self.proc.pid, signal.SIGKILL)
                except OSError:
                    pass
                self.proc.wait()
            shutil.rmtree(self.folder, ignore_errors=True)


def start(kind: Kind) -> Spare:
    """Start a worker for a unit of ``kind``; it starts the kernel and waits for its job."""
    folder = Path(tempfile.mkdtemp(prefix="tabbook-unit-"))
    (folder / FREE).touch()
    token = uuid.uuid4().hex
    job, result = folder / "job.json", folder / "result.json"
    env = {**dict(kind.env), UNIT_ENV: token, WORKER_PARENT_ENV: str(os.getpid())}
    proc = subprocess.Popen(
        [sys.executable, "-m", "tabbook.execute.worker", PRESTART, kind.kernel_name, kind.cwd, str(job), str(result)],
        env=env, start_new_session=True, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True)
    return Spare(kind, proc, folder, token)


@dataclass
class Pool:
    """The warm builder's spares: one per kind that its forks' builds asked for (:meth:`want`),
    the latest ask per kernel winning. A fork gets the pool as it was at the fork and takes from
    it (:meth:`take`); the builder then tops it up (:meth:`top_up`) once that build has ended,
    so a kernel starting never competes with the build for the processor."""

    spares: list[Spare] = field(default_factory=list)
    wanted: dict[str, Kind] = field(default_factory=dict)  # kernel name -> the kind to keep ready

    def take(self, kind: Kind) -> Spare | None:
        for spare in self.spares:
            if spare.kind == kind and spare.take():
                return spare
        return None

    def want(self, kind: Kind) -> None:
        self.wanted[kind.kernel_name] = kind

    def top_up(self) -> int:
        """Forget the spares that were used or ended, discard those no longer wanted, start one
        for each wanted kind that has none; how many it started."""
        keep: list[Spare] = []
        for spare in self.spares:
            if not spare.free or spare.proc.poll() is not None:
                spare.discard(wait=False)  # taken: its build's runner reaps its files
                continue
            if self.wanted.get(spare.kind.kernel_name) != spare.kind:
                spare.discard()
                continue
            keep.append(spare)
        have = {s.kind for s in keep}
        started = [start(kind) for kind in self.wanted.values() if kind not in have]
        self.spares = keep + started
        return len(started)

    def fds(self) -> list[int]:
        """Its pipes to the spares, which another process forked from the warm builder must not
        keep: the end of a spare's input is what ends it (:meth:`Spare.discard`)."""
        return [f.fileno() for s in self.spares for f in (s.proc.stdin, s.proc.stdout)
                if f is not None and not f.closed]

    def close(self) -> None:
        for spare in self.spares:
            if spare.free:
                spare.discard()
        self.spares = []
