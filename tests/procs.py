"""The live processes of this machine, for tests that check a build left none behind."""

from __future__ import annotations

import os
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
