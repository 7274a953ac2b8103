"""The freeze store: executed notebooks committed under ``_freeze/``, content-addressed.

An entry for (section, framework) is reused when its key matches. The key
hashes everything that can change an output: the framework's code cells of
the section after split (prose excluded), the framework's lock files, the
definitions of the generated ``d2l/<module>.py`` the unit can reach
(:mod:`tabbook.library.reach`), the Python version and the kernel name. Like
jupyter-cache but with the environment in the key.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from enum import Enum
from functools import lru_cache
from pathlib import Path
from typing import Any

from tabbook.errors import BookError, leads_out
from tabbook.execute.entrycheck import META, read_entry
from tabbook.execute.job import Provenance
from tabbook.files import write_atomic
from tabbook.nbjson import Notebook, NotebookCell
from tabbook.settings import leads_outside
from tabbook.source.split import FrameworkCell

#: Version 2: the library part hashes only the definitions the unit can reach
#: (:mod:`tabbook.library.reach`), no longer the whole generated module.
KEY_VERSION = "2"
#: Keys of version 1 hashed the whole generated module; an entry stored under one is still
#: current when that key, computed now, is the same (:meth:`KeyParts.legacy_key`).
LEGACY_KEY_VERSION = "1"


def _key(version: str, *parts: str) -> str:
    h = hashlib.sha256()
    for part in (version, *parts):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()


@dataclass(frozen=True)
class KeyParts:
    cells: str  # hash of the framework's code cells (source + tags)
    env: str  # hash of requirements + constraints + python request
    library: str  # hash of the library definitions the unit can reach, and the library's header
    python: str  # e.g. "3.11.7"
    kernel: str
    # Not in the key, recorded to explain it and to check a worker's checkout:
    library_file: str = ""  # hash of the whole d2l/<module>.py (the version-1 key's library part)
    library_names: tuple[tuple[str, str], ...] = ()  # each reached definition's name and short hash
    library_whole: str | None = None  # why the library part covers the whole module, if it does
    library_others: tuple[tuple[str, str], ...] = ()  # other generated modules the unit imports: hashes
    library_rules: str = ""  # the version of the reach rules that computed ``library``
    # In the key only when set: the contents of [build] dependencies (d2lbook's files whose change
    # rebuilds everything); a book without them keeps the keys it had.
    depends: str = ""

    def _extra(self) -> tuple[str, ...]:
        return (self.depends,) if self.depends else ()

    @property
    def key(self) -> str:
        return _key(KEY_VERSION, self.cells, self.env, self.library, self.python, self.kernel, *self._extra())

    @property
    def legacy_key(self) -> str:
        """The version-1 key of the same unit: equal to an entry's key, the entry ran this very
        code against this very library, so it is current whatever the new key says."""
        return _key(LEGACY_KEY_VERSION, self.cells, self.env, self.library_file, self.python, self.kernel,
                    *self._extra())

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "cells": self.cells, "env": self.env, "library": self.library,
            "python": self.python, "kernel": self.kernel,
            "library_file": self.library_file, "library_names": dict(self.library_names),
        }
        if self.library_whole:
            out["library_whole"] = self.library_whole
        if self.library_others:
            out["library_others"] = dict(self.library_others)
        if self.library_rules:
            out["library_rules"] = self.library_rules
        if self.depends:
            out["depends"] = self.depends
        return out


@dataclass(frozen=True)
class StoredParts:
    """An entry's key parts as it recorded them (:meth:`KeyParts.as_dict`, read back), to say what
    changed and whether the entry still stands. An entry holds what the tabbook of its day wrote:
    a version-1 entry has no ``library_names`` (its library part is the whole module's hash), any
    part may be absent (None) or not what this version writes (they are compared, never trusted);
    ``raw`` is the object as stored, for re-stamping it (:meth:`FreezeStore.upgrade`)."""

    cells: object = None
    env: object = None
    library: object = None
    python: object = None
    kernel: object = None
    library_file: object = None
    library_names: object = None  # name -> short hash (version 2); None in a version-1 entry
    library_whole: object = None
    library_others: object = None
    library_rules: object = None
    depends: object = ""  # "" when absent: a book without [build] dependencies
    raw: tuple[tuple[str, object], ...] = ()

    @classmethod
    def from_dict(cls, data: object) -> StoredParts:
        if not isinstance(data, dict):
            return cls()
        known = {f for f in cls.__dataclass_fields__ if f != "raw"}
        return cls(**{k: v for k, v in data.items() if k in known}, raw=tuple(data.items()))

    def __bool__(self) -> bool:
        """False when the entry recorded no key parts."""
        return bool(self.raw)

    @property
    def versioned(self) -> bool:
        """Whether these are version-2 parts: the library keyed by the names the unit reaches."""
        return "library_names" in dict(self.raw)

    def as_dict(self) -> dict[str, object]:
        return dict(self.raw)


def cells_hash(cells: list[FrameworkCell]) -> str:
    """Hash of what the kernel runs and how it is judged; prose and line numbers excluded."""
    h = hashlib.sha256()
    for fc in cells:
        h.update(json.dumps([fc.source, list(fc.tags), fc.cell.raises]).encode())
        h.update(b"\0")
    return h.hexdigest()


def text(value: Any) -> str:
    """A notebook's multiline text (a string, or a list of strings) as one string."""
    return "".join(value) if isinstance(value, list) else str(value)


@lru_cache(maxsize=64)
def text_hash(text: str | None) -> str:
    """sha256 of a text. Cached: every unit's key records its framework's whole generated library
    hash, the same few texts hundreds of times in a large book (a string keeps its own dict hash)."""
    return hashlib.sha256((text or "").encode()).hexdigest()


#: The kernel a notebook that is not a unit's names: a page's merged notebook, a reader's download.
PYTHON3 = "python3"


def new_notebook(cells: list[NotebookCell], kernel_name: str = PYTHON3) -> Notebook:
    """The one notebook skeleton (nbformat 4.5): what a unit's kernel runs (its kernel named; the
    kernel's own ``language_info`` replaces this one), what a page merges, what a reader downloads."""
    display = "Python 3 (ipykernel)" if kernel_name == PYTHON3 else kernel_name
    return {"nbformat": 4, "nbformat_minor": 5,
            "metadata": {"kernelspec": {"name": kernel_name, "display_name": display, "language": "python"},
                         "language_info": {"name": "python", "pygments_lexer": "ipython3"}},
            "cells": cells}


@dataclass(frozen=True)
class Entry:
    """A store notebook read through the store's schema (``metadata.tabbook``): the key it was
    stored under, that key's parts, where and how long it was computed, its cells. The plan, the
    merge of stores and the site ask it, rather than each digging through the dicts."""

    notebook: Notebook

    @property
    def meta(self) -> dict[str, Any]:
        meta = (self.notebook.get("metadata") or {}).get(META)
        return meta if isinstance(meta, dict) else {}

    @property
    def key(self) -> str | None:
        """The key it was stored under (None: a notebook the store did not write)."""
        key = self.meta.get("key")
        return key if isinstance(key, str) else None

    @property
    def parts(self) -> StoredParts:
        """The key's parts as stored (:meth:`KeyParts.as_dict`), to say what changed."""
        return StoredParts.from_dict(self.meta.get("key_parts"))

    @property
    def provenance(self) -> Provenance:
        """Where it was computed (device, framework versions, date), as the worker recorded it."""
        prov = self.meta.get("provenance")
        return Provenance.from_dict(prov if isinstance(prov, dict) else None)

    @property
    def gpus(self) -> list[str]:
        return list(self.provenance.gpus or [])

    @property
    def seconds(self) -> float | None:
        """How long the unit took when it was stored (None: not recorded)."""
        seconds = self.meta.get("seconds")
        return float(seconds) if isinstance(seconds, int | float) else None

    @property
    def cells(self) -> list[NotebookCell]:
        return list(self.notebook.get("cells") or [])


def gpu_entry_current(entry: Entry | None, parts: KeyParts) -> bool:
    """Whether an entry computed on a GPU still stands for ``parts`` on this host.

    GPU outputs come from another environment (a GPU machine's own interpreter, another
    Python, another kernel) than a CPU host's locked venv, so their key never equals the CPU
    key. They stay current while what they show can only be the same code's: the unit's
    cells and the library definitions it can reach are unchanged. A CPU build then keeps them (it never
    replaces a current GPU entry); when the code changes they are stale like any other, and
    whatever host builds next executes them. ``make exec-check`` re-runs everything on the
    CPU into a scratch store regardless, so GPU outputs cannot hide code that no longer runs.
    """
    if entry is None:
        return False
    stored = entry.parts
    # A version-1 entry's library part is the whole module's hash: current while it is unchanged.
    same_library = stored.library == (parts.library if stored.versioned else parts.library_file)
    return (bool(entry.gpus) and stored.cells == parts.cells and same_library
            and stored.depends == parts.depends)


class Match(Enum):
    """Why an entry is current for a unit's key parts (:func:`match`)."""

    #: stored under the unit's key
    KEY = "key"
    #: stored under the version-1 key this unit has now: same code, environment and whole library
    LEGACY = "legacy"
    #: GPU outputs of the same code and library (:func:`gpu_entry_current`)
    GPU = "gpu"


def match(entry: Entry | None, parts: KeyParts) -> Match | None:
    """Why an entry is current for ``parts`` (:class:`Match`); ``None`` when it is stale or missing."""
    stored = entry.key if entry is not None else None
    if stored is None:
        return None
    if stored == parts.key:
        return Match.KEY
    if stored == parts.legacy_key:
        return Match.LEGACY
    return Match.GPU if gpu_entry_current(entry, parts) else None


def public_copy(nb: Notebook) -> Notebook:
    """An entry with the store's bookkeeping (keys, hashes) dropped and its provenance kept."""
    out: Notebook = json.loads(json.dumps(nb))
    meta = out.setdefault("metadata", {})
    prov = meta.pop(META, {}).get("provenance")
    if prov:
        meta[META] = {"provenance": prov}
    return out


class FreezeStore:
    """The committed store of executed notebooks: its layout and metadata schema live here only.

    Layout: ``<root>/<section path without .md>/<framework>.ipynb``, one JSON notebook each,
    written atomically with sorted keys (stable diffs). Schema: ``metadata.tabbook`` holds
    ``key`` (what :meth:`lookup` compares), ``key_parts`` (why it changed), ``section``,
    ``framework``, ``provenance`` and ``seconds``.
    """

    def __init__(self, root: Path, book_root: Path | None = None, max_output_bytes: int = 0) -> None:
        self.root = Path(root)
        self.book_root = book_root  # errors name entries relative to it (``_freeze/…``)
        # [build] max_output_bytes: an entry whose cell holds more is damaged (entry_problem).
        self.max_output_bytes = max_output_bytes

    def shown(self, path: Path) -> str:
        """How an error names an entry file: relative to the book when it is inside it."""
        if self.book_root is not None:
            # As written first: a path a symbolic link leads elsewhere is named where it is.
            for where, base in ((path.absolute(), self.book_root.absolute()),
                                (path.resolve(), self.book_root.resolve())):
                try:
                    return str(where.relative_to(base))
                except ValueError:
                    pass
        return str(path)

    def path(self, section: str, framework: str) -> Path:
        """``_freeze/chapter_gpus/devices/pytorch.ipynb`` for ``chapter_gpus/devices.md``."""
        stem = section[:-3] if section.endswith(".md") else section
        return self.root / stem / f"{framework}.ipynb"

    def checked_path(self, section: str, framework: str) -> Path:
        """:meth:`path`, refused (a :class:`BookError` at it) when a symbolic link on the way
        leads out of the store: its entry would be read from, or written to, another folder."""
        path = self.path(section, framework)
        if (real := leads_outside(self.root, path)) is not None:
            raise leads_out(self.shown(path), real, "the freeze store's folder")
        return path

    def load(self, section: str, framework: str) -> Entry | None:
        """The stored entry, or ``None`` if missing; a damaged one (not JSON, not the shape
        of a notebook) is a :class:`BookError` at its file (:func:`read_entry`)."""
        path = self.checked_path(section, framework)
        if not path.is_file():
            return None
        return Entry(read_entry(path, self.shown(path), self.max_output_bytes))

    def signature(self, section: str, framework: str) -> str:
        """The entry file's size and modification time: what changes whenever it is rewritten."""
        try:
            st = self.path(section, framework).stat()
        except OSError:
            return "missing"
        return f"entry {st.st_size} {st.st_mtime_ns}"

    def last_seconds(self, section: str, framework: str) -> float | None:
        """How long the unit took when its stored entry was made (None: never run)."""
        try:
            entry = self.load(section, framework)
        except BookError:  # a damaged entry a --force build replaces: never run, as far as it says
            return None
        return entry.seconds if entry is not None else None

    def store(self, section: str, framework: str, nb: Notebook, parts: KeyParts,
              provenance: Provenance, seconds: float) -> Path:
        """Stamp ``nb`` with the store's metadata and write it atomically; returns its path."""
        if not parts.library:  # a plan's deferred key (plan.Plan.keys_for_todo): never stored
            raise ValueError(f"{section} [{framework}]: key without its library part")
        nb.setdefault("metadata", {})[META] = {
            "key": parts.key, "key_parts": parts.as_dict(), "section": section,
            "framework": framework, "provenance": provenance.as_dict(), "seconds": round(seconds, 2),
        }
        path = self.checked_path(section, framework)
        write_notebook(path, nb)
        return path

    def upgrade(self, section: str, framework: str, entry: Entry, parts: KeyParts) -> Path:
        """Re-stamp a current version-1 entry with version-2 key parts; its outputs, provenance
        and time are kept as they are (only the bookkeeping changes). An entry current under its
        version-1 key gets the version-2 key; a GPU entry keeps its key and environment parts
        (they describe the GPU machine) and gets the library parts, which it is compared by."""
        meta = dict(entry.meta)
        if match(entry, parts) is Match.GPU:
            stored = entry.parts.as_dict()
            new = parts.as_dict()
            stored.update({k: v for k, v in new.items() if k.startswith("library")})
            meta.update(key_parts=stored)
        else:
            meta.update(key=parts.key, key_parts=parts.as_dict())
        nb = {**entry.notebook, "metadata": {**entry.notebook.get("metadata", {}), META: meta}}
        path = self.checked_path(section, framework)
        write_notebook(path, nb)
        return path

    def entries(self) -> list[Path]:
        """Every entry file in the store, sorted."""
        return sorted(self.root.rglob("*.ipynb")) if self.root.is_dir() else []


def write_notebook(path: Path, nb: Notebook) -> None:
    """Deterministic bytes for the same notebook: no spurious git changes."""
    write_atomic(path, json.dumps(nb, indent=1, sort_keys=True, ensure_ascii=False) + "\n")
