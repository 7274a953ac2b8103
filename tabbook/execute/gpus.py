"""The machine's GPUs, what a unit needs of them, and who holds which.

A build machine for a d2lbook book has several GPUs and many more CPU cores; the units of a
book are run in parallel, so each kernel must see only the GPU(s) it was given
(``CUDA_VISIBLE_DEVICES``), or every kernel would allocate memory on every GPU and time its
code beside others. This module is the policy; :class:`tabbook.execute.runner.Runner` applies it.

- **Detection** asks ``nvidia-smi --query-gpu`` (the interface every CUDA machine has, and the
  one d2lbook asks), so a stand-in script on the PATH simulates a machine in tests. An
  existing ``CUDA_VISIBLE_DEVICES`` limits the build to those devices.
- **Needs** are guessed from a unit's code, as d2lbook guesses (a single-device call → one GPU;
  asking for every device or naming a second one → all of them), unless the book declares them.
- **Holding** a GPU is a file lock per (device, slot) in a machine-wide folder, taken by the
  builder that starts the unit and dropped when it ends, so two builds on one machine never
  share a device; a unit that must run alone takes the machine lock exclusively while every
  other unit holds it shared.
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

ALL = -1  # a unit that wants every GPU of the machine
QUERY = ("nvidia-smi", "--query-gpu=index,uuid,name,memory.total", "--format=csv,noheader,nounits")

# Code that asks for every device, or names one past the first: it wants all of them.
_ALL_PATTERN = re.compile(
    r"try_all_gpus\s*\(|\bgpu\s*\(\s*[1-9]|cuda:[1-9]|\.cuda\s*\(\s*[1-9]|/GPU:[1-9]|num_gpus\s*=\s*[2-9]"
    r"|\bdevices\s*\(\s*\)\s*\[\s*[1-9]")
# Code that asks for one accelerator, in any of the four frameworks' spellings.
_ONE_PATTERN = re.compile(
    r"\btry_gpu\s*\(|\bgpu\s*\(|\bcuda\b|num_gpus|/GPU:|devices\s*\(\s*['\"]gpu|\bmx\.gpu|jax\.devices\s*\(")


@dataclass(frozen=True)
class Gpu:
    index: str  # what CUDA_VISIBLE_DEVICES names it by (nvidia-smi's index, PCI bus order)
    uuid: str  # stable across CUDA_VISIBLE_DEVICES views: names its lock files
    name: str
    memory_mib: int

    def describe(self) -> str:
        return f"GPU {self.index} ({self.name}, {self.memory_mib // 1024} GiB)"


def parse_query(text: str) -> list[Gpu]:
    """``nvidia-smi --query-gpu=index,uuid,name,memory.total --format=csv,noheader,nounits`` → GPUs."""
    gpus = []
    for line in text.splitlines():
        fields = [f.strip() for f in line.split(",")]
        if len(fields) < 4 or not fields[0].isdigit():
            continue
        index, uuid, name, memory = fields[0], fields[1], ", ".join(fields[2:-1]), fields[-1]
        gpus.append(Gpu(index, uuid, name, int(memory) if memory.isdigit() else 0))
    return gpus


def visible(gpus: list[Gpu], cuda_visible: str | None) -> list[Gpu]:
    """The GPUs an existing ``CUDA_VISIBLE_DEVICES`` leaves (indices or UUIDs; "" or -1: none)."""
    if cuda_visible is None:
        return gpus
    kept: list[Gpu] = []
    for item in (part.strip() for part in cuda_visible.split(",")):
        if not item or item.startswith("-"):
            break  # CUDA stops at the first invalid entry
        found = [g for g in gpus if item in (g.index, g.uuid) or (len(item) > 4 and g.uuid.startswith(item))]
        if not found:
            break
        kept.extend(g for g in found if g not in kept)
    return kept


def detect(env: Mapping[str, str] | None = None,
           run: Callable[..., subprocess.CompletedProcess[str]] = subprocess.run) -> list[Gpu]:
    """This machine's GPUs that a build may use: none where ``nvidia-smi`` is missing or fails."""
    env = os.environ if env is None else env
    program = shutil.which(QUERY[0], path=env.get("PATH"))
    if program is None:
        return []
    try:
        proc = run([program, *QUERY[1:]], capture_output=True, text=True, timeout=30, env=dict(env))
    except (OSError, subprocess.TimeoutExpired):
        return []
    if proc.returncode != 0:
        return []
    return visible(parse_query(proc.stdout), env.get("CUDA_VISIBLE_DEVICES"))


def guess_need(code: str) -> int:
    """How many GPUs code asks for, read as d2lbook reads it: 0, 1 or :data:`ALL`."""
    if _ALL_PATTERN.search(code):
        return ALL
    return 1 if _ONE_PATTERN.search(code) else 0


def wanted(need: int, gpus: list[Gpu]) -> int:
    """``need`` on this machine: :data:`ALL` becomes the number of GPUs there are."""
    return len(gpus) if need == ALL else need


@dataclass(frozen=True)
class Placement:
    """Where a unit runs: the GPUs it was given ("" = none) and whether it runs alone."""

    gpus: tuple[Gpu, ...] = ()
    alone: bool = False
    host_has_gpus: bool = False

    def env(self, base: Mapping[str, str]) -> dict[str, str]:
        """The unit's environment: only its GPUs visible, memory taken as needed, not all at once.

        JAX preallocates 75% of a GPU and TensorFlow maps all of it when a process starts; a
        GPU shared by kernels (``units_per_gpu`` > 1), or a book's second process, then fails
        to allocate. The book's own settings win.
        """
        env = dict(base)
        if self.host_has_gpus:
            env["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"  # the indices nvidia-smi printed
            env["CUDA_VISIBLE_DEVICES"] = ",".join(g.index for g in self.gpus)
            env.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
            env.setdefault("TF_FORCE_GPU_ALLOW_GROWTH", "true")
        return env

    def describe(self) -> str:
        where = ("GPU " + ",".join(g.index for g in self.gpus)) if self.gpus else "CPU"
        return where + (", alone" if self.alone else "")


def lock_folder() -> Path:
    """The machine-wide folder of device and machine locks (``$TABBOOK_GPU_LOCKS`` in tests)."""
    folder = Path(os.environ.get("TABBOOK_GPU_LOCKS") or Path(tempfile.gettempdir()) / "tabbook-gpu-locks")
    if not folder.is_dir():
        folder.mkdir(parents=True, exist_ok=True)
        try:
            folder.chmod(0o1777)  # every user's builds share the machine's GPUs
        except OSError:
            pass
    return folder


class _FileLock:
    """A non-blocking ``flock`` on one file, held until :meth:`release`."""

    def __init__(self, path: Path):
        self.path = path
        self.fd: int | None = None

    def try_take(self, exclusive: bool = True) -> bool:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666)
        try:
            fcntl.flock(fd, (fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH) | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            return False
        self.fd = fd
        return True

    def release(self) -> None:
        if self.fd is not None:
            os.close(self.fd)  # closing the descriptor drops the lock
            self.fd = None


@dataclass
class Held:
    """What a running unit holds; given back when it ends."""

    placement: Placement
    locks: list[_FileLock]

    def release(self) -> None:
        for lock in self.locks:
            lock.release()
        self.locks = []


class Devices:
    """The GPUs of the machine as slots (``per_gpu`` units at a time on each) and the machine lock.

    :meth:`try_take` never blocks: the runner asks again when a unit ends, and now and then for
    units of other builds on the machine, whose locks it cannot be told about.
    """

    def __init__(self, gpus: list[Gpu], per_gpu: int = 1, folder: Path | None = None):
        self.gpus = gpus
        self.per_gpu = max(1, per_gpu)
        self.folder = folder or lock_folder()
        self.in_use: dict[str, int] = {g.uuid: 0 for g in gpus}

    def try_take(self, need: int, alone: bool = False) -> Held | None:
        """Locks for a unit wanting ``need`` GPUs (:data:`ALL`: every one), or None if not now."""
        machine = _FileLock(self.folder / "machine.lock")
        if not machine.try_take(exclusive=alone):
            return None
        count = min(wanted(need, self.gpus), len(self.gpus))
        taken: list[_FileLock] = [machine]
        chosen: list[Gpu] = []
        # The least loaded devices first, so units spread before they share.
        for gpu in sorted(self.gpus, key=lambda g: self.in_use[g.uuid]):
            if len(chosen) == count:
                break
            if self.in_use[gpu.uuid] >= self.per_gpu:
                continue
            for slot in range(self.per_gpu):
                lock = _FileLock(self.folder / f"gpu-{_safe(gpu.uuid or gpu.index)}-{slot}.lock")
                if lock.try_take():
                    taken.append(lock)
                    chosen.append(gpu)
                    break
        if len(chosen) < count:
            for lock in taken:
                lock.release()
            return None
        for gpu in chosen:
            self.in_use[gpu.uuid] += 1
        placement = Placement(tuple(sorted(chosen, key=lambda g: int(g.index) if g.index.isdigit() else 0)),
                              alone, bool(self.gpus))
        return Held(placement, taken)

    def give_back(self, held: Held) -> None:
        for gpu in held.placement.gpus:
            self.in_use[gpu.uuid] -= 1
        held.release()


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name)
