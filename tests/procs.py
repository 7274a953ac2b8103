"""The live processes of this machine, for tests that check a build left none behind."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path


def processes(match: Callable[[list[bytes], str], bool]) -> list[str]:
    """The pids whose command line (its arguments) and working folder ``match`` accepts."""
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            args = cmdline.read_bytes().split(b"\0")
            here = os.readlink(cmdline.parent / "cwd")
        except OSError:  # ended meanwhile, or not ours to read
            continue
        if match(args, here):
            found.append(cmdline.parent.name)
    return found


def alive(pid: str) -> bool:
    """Whether process ``pid`` runs (a zombie no longer does: killed, not yet reaped by init)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rfind(")") + 2:].split()[0] != "Z"


def left_by(book: Path, build: int | None = None) -> list[str]:
    """The processes a build of ``book`` started and left: a kernel or what a cell started (found
    by their folder, inside the book), a Sphinx run (its command line names the book), and,
    given the build's pid, its workers and Sphinx runs (their environment names it as parent)."""
    marker = str(book).encode()
    parents = {f"TABBOOK_WORKER_PARENT={build}".encode(), f"TABBOOK_SPHINX_PARENT={build}".encode()}

    def match(args: list[bytes], here: str) -> bool:
        return here.startswith(str(book)) or any(marker in a for a in args)
    found = [pid for pid in processes(match) if alive(pid)]
    for environ in Path("/proc").glob("[0-9]*/environ") if build is not None else ():
        try:
            if parents & set(environ.read_bytes().split(b"\0")) and alive(environ.parent.name):
                found.append(environ.parent.name)
        except OSError:
            continue
    return sorted(set(found))


def gone(pids: Callable[[], list[str]], seconds: float) -> list[str]:
    """``pids()`` once it is empty, or what it still gives after ``seconds``."""
    deadline = time.monotonic() + seconds
    while (left := pids()) and time.monotonic() < deadline:
        time.sleep(0.2)
    return left
