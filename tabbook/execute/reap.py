"""Every process of a unit ends with it: the worker as a subreaper (:func:`become_subreaper`),
its descendants killed when the unit ends (:func:`end_descendants`), a dead worker's processes
found by their mark (:func:`end_marked`), and the kernel's address space capped on request.

Why a module of its own: the runner ends a dead worker's processes with it too, without
importing the worker's nbclient code.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path


def limit_memory(pid: int, limit: int) -> None:
    """Cap process ``pid``'s address space at ``limit`` bytes (``[build] memory_limit``).

    Why RLIMIT_AS, set from outside: it needs no cgroup (rarely delegated to a user), a cell
    cannot raise it again (the hard limit is lowered too), and an allocation past it fails in
    the cell, as a ``MemoryError`` at its line, instead of the machine swapping or the kernel's
    OOM killer choosing a victim. It counts address space, not resident memory: GPU frameworks
    reserve much of it, so the key is for CPU code or must be set generously."""
    import resource

    resource.prlimit(pid, resource.RLIMIT_AS, (limit, limit))


def kernel_pid(client: object) -> int | None:
    provisioner = getattr(getattr(client, "km", None), "provisioner", None)
    pid = getattr(provisioner, "pid", None)
    return pid if isinstance(pid, int) else None


# --- every process of a unit ends with it -------------------------------------------------------

#: prctl(2)'s option that makes orphaned descendants children of this process (Linux >= 3.4).
PR_SET_CHILD_SUBREAPER = 36


def become_subreaper() -> bool:
    """Make this worker the parent of every orphan among its descendants; True if it is.

    Why: a cell may start a process that detaches (``setsid``, a double fork: a server, a
    ``nohup`` job). Its parent exits, so it is no longer below the kernel, and the worker's
    process group or session does not hold it either; without a subreaper it becomes init's
    and outlives the build. As a subreaper, the worker finds it among its own children when the
    unit ends (:func:`end_descendants`). Not Linux, or refused: False, and only processes still
    below the worker are ended."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (children first), from ``/proc``'s parent links."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
            ppid = int(text[text.rfind(")") + 2:].split()[1])
        except (OSError, ValueError, IndexError):
            continue  # ended meanwhile
        children.setdefault(ppid, []).append(int(stat.parent.name))
    out: list[int] = []
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def end_descendants(seconds: float = 10.0) -> int:
    """Kill (SIGKILL) and reap every process below this worker; how many there were.

    Called when the unit ends, its kernel already shut down: what is left is what the cells
    started and did not stop. Killed processes' own children are orphaned to this subreaper,
    so it repeats until none is left (or ``seconds`` pass)."""
    import time

    me = os.getpid()
    seen: set[int] = set()
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        pids = descendants(me)
        if not pids:
            break
        for pid in pids:
            seen.add(pid)
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        _reap()
        time.sleep(0.02)
    _reap()
    return len(seen)


#: The environment variable marking every process of one unit (its worker, kernel and whatever
#: its cells start), with a token of its own: how the runner finds them when the worker is gone.
UNIT_ENV = "TABBOOK_UNIT"


def marked(token: str) -> list[int]:
    """The processes whose environment holds ``TABBOOK_UNIT=token`` (this user's; ``/proc``)."""
    entry = f"{UNIT_ENV}={token}".encode()
    found = []
    for environ in Path("/proc").glob("[0-9]*/environ"):
        try:
            if entry in environ.read_bytes().split(b"\0"):
                found.append(int(environ.parent.name))
        except (OSError, ValueError):
            continue  # ended meanwhile, or another user's
    return [pid for pid in found if pid != os.getpid()]


def end_marked(token: str, seconds: float = 10.0) -> int:
    """Kill (SIGKILL) every process of a unit whose worker died: how many there were.

    Why: the worker ends what its cells started (it is their subreaper), but a worker killed
    outright (by a cell, ``os.kill(os.getppid(), 9)``; by the OOM killer) cannot; its kernel and
    a process a cell started in a session of its own are then init's. They still carry the
    unit's token in their environment (it is inherited), which is how the runner finds them.
    A process that cleared its own environment escapes this: it would need a cgroup."""
    import time

    seen: set[int] = set()
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and (pids := marked(token)):
        for pid in pids:
            seen.add(pid)
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        _reap()
        time.sleep(0.02)
    return len(seen)


def _reap() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


