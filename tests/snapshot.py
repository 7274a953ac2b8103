"""Snapshot files under ``tests/snapshots/``: a test's output compared with a reviewed file.

``TABBOOK_SNAPSHOT_UPDATE=1`` writes the files instead (after an intended change; review the
diff in git). A missing snapshot fails unless updating, so a new test cannot pass by writing
what it got the first time nobody looked.
"""

from __future__ import annotations

import difflib
import os
from pathlib import Path

SNAPSHOTS = Path(__file__).resolve().parent / "snapshots"
UPDATE_ENV = "TABBOOK_SNAPSHOT_UPDATE"


def updating() -> bool:
    return os.environ.get(UPDATE_ENV, "") == "1"


def check(relative: str, text: str) -> None:
    """``text`` equals the snapshot ``tests/snapshots/<relative>`` (or becomes it, when updating)."""
    path = SNAPSHOTS / relative
    if not text.endswith("\n"):
        text += "\n"
    if updating():
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
        return
    if not path.is_file():
        raise AssertionError(f"no snapshot {path.relative_to(SNAPSHOTS.parent)}: run with {UPDATE_ENV}=1 and review it")
    want = path.read_text(encoding="utf-8")
    if want != text:
        diff = "".join(difflib.unified_diff(want.splitlines(True), text.splitlines(True),
                                            f"snapshot {relative}", "this run"))
        raise AssertionError(f"{relative} differs from its snapshot ({UPDATE_ENV}=1 rewrites it):\n{diff}")
