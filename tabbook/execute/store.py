"""The freeze store: executed notebooks committed under ``_freeze/``, content-addressed.

An entry for (section, framework) is reused when its key matches. The key
hashes everything that can change an output: the framework's code cells of
the section after split (prose excluded), the framework's lock files, the
generated ``d2l/<module>.py``, the Python version and the kernel name. Like
jupyter-cache but with the environment in the key.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tabbook.source.split import FrameworkCell

KEY_VERSION = "1"


@dataclass(frozen=True)
class KeyParts:
    cells: str  # hash of the framework's code cells (source + tags)
    env: str  # hash of requirements + constraints + python request
    library: str  # hash of d2l/<module>.py
    python: str  # e.g. "3.11.7"
    kernel: str

    @property
    def key(self) -> str:
        h = hashlib.sha256()
        for part in (KEY_VERSION, self.cells, self.env, self.library, self.python, self.kernel):
            h.update(part.encode())
            h.update(b"\0")
        return h.hexdigest()

    def as_dict(self) -> dict[str, str]:
        return {
            "cells": self.cells, "env": self.env, "library": self.library,
            "python": self.python, "kernel": self.kernel,
        }


def cells_hash(cells: list[FrameworkCell]) -> str:
    """Hash of what the kernel runs and how it is judged; prose and line numbers excluded."""
    h = hashlib.sha256()
    for fc in cells:
        h.update(json.dumps([fc.source, list(fc.tags), fc.cell.raises]).encode())
        h.update(b"\0")
    return h.hexdigest()


def text_hash(text: str | None) -> str:
    return hashlib.sha256((text or "").encode()).hexdigest()


def entry_path(freeze_dir: Path, section_path: str, framework: str) -> Path:
    """``_freeze/chapter_gpus/devices/pytorch.ipynb`` for ``chapter_gpus/devices.md``."""
    stem = section_path[:-3] if section_path.endswith(".md") else section_path
    return freeze_dir / stem / f"{framework}.ipynb"


def load_entry(path: Path) -> dict[str, Any] | None:
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None  # a damaged entry is treated as missing and re-executed


def entry_key(nb: dict[str, Any] | None) -> str | None:
    if not nb:
        return None
    return nb.get("metadata", {}).get("tabbook", {}).get("key")


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` via a temp file + rename: readers never see half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def store_entry(path: Path, nb: dict[str, Any]) -> None:
    write_atomic(path, json.dumps(nb, indent=1, sort_keys=True, ensure_ascii=False) + "\n")
