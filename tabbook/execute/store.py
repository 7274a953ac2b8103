"""The freeze store: executed notebooks committed under ``_freeze/``, content-addressed.

An entry for (section, framework) is reused when its key matches. The key
hashes everything that can change an output: the framework's code cells of
the section after split (prose excluded), the framework's lock files, the
definitions of the generated ``d2l/<module>.py`` the unit can reach
(:mod:`tabbook.library.reach`), the Python version and the kernel name. Like
jupyter-cache but with the environment in the key.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from enum import Enum
from functools import lru_cache
from pathlib import Path
from typing import Any

from tabbook.errors import BookError, leads_out
from tabbook.execute.job import Provenance
from tabbook.execute.outputs import BINARY_IMAGES
from tabbook.execute.shape import output_size
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


#: The notebook metadata key under which the store keeps its bookkeeping.
META = "tabbook"
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


# --- reading an entry: its shape checked before anything uses it -------------------------------

_OUTPUT_TYPES = ("stream", "display_data", "execute_result", "error")
_CELL_TYPES = ("code", "markdown", "raw")


def _kind(value: Any) -> str:
    """A JSON value's type as JSON names it (``null``, ``a list``, …), for the messages."""
    names = {type(None): "null", bool: "a boolean", int: "a number", float: "a number", str: "a string",
             list: "a list", dict: "an object"}
    return names.get(type(value), type(value).__name__)


def _text(value: Any) -> bool:
    """A notebook's multiline text: a string, or a list of strings."""
    return isinstance(value, str) or (isinstance(value, list) and all(isinstance(v, str) for v in value))


#: What one text of an entry's metadata that a page shows may hold at most (characters).
MAX_FIELD = 1000
#: Nesting an entry's JSON values may have: a notebook is a few levels deep; JSON outputs a few more.
MAX_DEPTH = 64
#: The notebook format versions the builder reads: 4.0 to 4.5 (nbformat's own; it writes 4.5).
NBFORMAT, NBFORMAT_MINORS = 4, range(0, 6)
#: What a cell's stored output may pass ``[build] max_output_bytes`` by: the note a run's cap
#: appends (:func:`tabbook.execute.shape.cap_outputs`, ``cap_error``), whose figures grow with
#: the size. A run never stores more; an entry that holds more was not made by one.
CAP_NOTE_BYTES = 1024
#: Cell tags an entry may carry: the tags the book's marks give (split.FrameworkCell.tags).
_TAG = re.compile(r"[a-z][a-z0-9-]{0,63}")


def _field_problem(value: Any, where: str) -> str | None:
    """Why a text an entry holds for a page to show is not one: a string of one line of printable
    characters, at most :data:`MAX_FIELD` long. Why: it is pasted into a page's MyST, a PDF's
    LaTeX and a front page; escaped there too, but a line break or a control character has no
    honest reason to be in a device name or a version."""
    if not isinstance(value, str):
        return f"{where} is {_kind(value)}, not a string"
    if len(value) > MAX_FIELD:
        return f"{where} is {len(value):,} characters long (at most {MAX_FIELD:,})"
    if not value.isprintable():
        bad = next(c for c in value if not c.isprintable())
        return f"{where} holds the control character {bad!r} (one line of printable text expected)"
    return None


def provenance_problem(prov: Any, where: str = f"metadata.{META}.provenance") -> str | None:
    """What is wrong with an entry's provenance (None: nothing): an object whose values are
    one-line texts (``gpus``: a list of them; ``framework_imported``: a boolean)."""
    if not isinstance(prov, dict):
        return f"{where} is {_kind(prov)}, not an object"
    for name, value in prov.items():
        at = f"{where}.{name}"
        problems: Iterator[str | None]
        if name == "gpus":
            if not isinstance(value, list) or len(value) > 256:
                return f"{at} is {_kind(value)}, not a list of at most 256 device names"
            problems = (_field_problem(v, f"{at}[{i}]") for i, v in enumerate(value))
        elif isinstance(value, bool | int | float) or value is None:
            continue
        else:
            problems = iter([_field_problem(value, at)])
        if (problem := next((p for p in problems if p), None)) is not None:
            return problem
    return None


def _depth_problem(value: Any, where: str) -> str | None:
    """Nesting deeper than :data:`MAX_DEPTH` (walked without recursion: the check must not be
    what overflows the stack)."""
    todo = [(value, 1)]
    while todo:
        item, depth = todo.pop()
        if depth > MAX_DEPTH:
            return f"{where} is nested more than {MAX_DEPTH} levels deep"
        if isinstance(item, dict):
            todo.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list):
            todo.extend((v, depth + 1) for v in item)
    return None


def _image_problem(mime: str, value: Any, where: str) -> str | None:
    """An image stored as base64 that does not decode, or is not the type it says."""
    text = "".join(value) if isinstance(value, list) else value
    try:
        data = base64.b64decode("".join(text.split()), validate=True)
    except (binascii.Error, ValueError):
        return f"{where}: its {mime} is not base64"
    if not data.startswith(BINARY_IMAGES[mime]):
        return f"{where}: its {mime} does not hold a {mime.split('/')[1].upper()} image"
    return None


def _output_problem(out: Any, where: str) -> str | None:
    if not isinstance(out, dict):
        return f"{where} is {_kind(out)}, not an object"
    kind = out.get("output_type")
    if kind not in _OUTPUT_TYPES:
        return f"{where} has output_type {kind!r} (one of {', '.join(_OUTPUT_TYPES)} expected)"
    if kind == "stream":
        if not isinstance(out.get("name"), str) or not _text(out.get("text")):
            return f"{where}: a stream output needs a name and a text (a string or a list of strings)"
    elif kind == "error":
        if not isinstance(out.get("ename"), str) or not isinstance(out.get("evalue"), str) \
                or not _text(out.get("traceback", [])):
            return f"{where}: an error output needs ename, evalue (strings) and a traceback (strings)"
    else:
        data = out.get("data")
        if not isinstance(data, dict):
            return f"{where}: a {kind} output needs data, an object of mime type → content"
        for mime, value in data.items():
            # JSON mime types (application/json, application/vnd.*+json) hold JSON itself.
            if not (_text(value) or (mime.endswith("json") and isinstance(value, dict | list))):
                return f"{where}: mime type {mime!r} holds {_kind(value)} (a string or list of strings expected)"
            if mime in BINARY_IMAGES and (problem := _image_problem(mime, value, where)):
                return problem
        if not isinstance(out.get("metadata", {}), dict):
            return f"{where}: its metadata is {_kind(out['metadata'])}, not an object"
    return None


def entry_problem(nb: Any, max_output_bytes: int = 0) -> str | None:
    """What is wrong with the shape of a freeze entry (a notebook), or ``None``; with
    ``max_output_bytes`` (``[build] max_output_bytes``; 0: no cap), also a cell holding more
    output than a run keeps.

    Why: entries are committed, merged from shard stores and returned by Dask workers, and
    the plan, the merge of a page and the site's downloads index into them; checked here,
    once, a damaged entry is one located error instead of a traceback in each of them. The
    size too: a run caps what a cell keeps as it arrives, but a hand-edited entry with one
    200 MB stream was published whole (a 200 MB page, gigabytes of the builder's memory)."""
    if not isinstance(nb, dict):
        return f"the entry is {_kind(nb)}, not a notebook (an object)"
    version, minor = nb.get("nbformat", NBFORMAT), nb.get("nbformat_minor", 0)
    if isinstance(version, bool) or isinstance(minor, bool) or version != NBFORMAT or minor not in NBFORMAT_MINORS:
        return (f"it declares notebook format {version!r}.{minor!r}, which the builder does not read "
                f"(4.{NBFORMAT_MINORS[0]} to 4.{NBFORMAT_MINORS[-1]})")
    meta = nb.get("metadata", {})
    if not isinstance(meta, dict):
        return f"its metadata is {_kind(meta)}, not an object"
    ours = meta.get(META, {})
    if not isinstance(ours, dict):
        return f"metadata.{META} is {_kind(ours)}, not an object"
    for name, types in (("key", str), ("section", str), ("framework", str), ("key_parts", dict),
                        ("provenance", dict), ("seconds", int | float)):
        if name in ours and not isinstance(ours[name], types):
            return f"metadata.{META}.{name} is {_kind(ours[name])}"
    if "provenance" in ours and (problem := provenance_problem(ours["provenance"])) is not None:
        return problem
    if (problem := _depth_problem(nb, "the entry")) is not None:
        return problem
    cells = nb.get("cells")
    if not isinstance(cells, list):
        return f"its cells are {_kind(cells)}, not a list"
    for i, cell in enumerate(cells):
        if (problem := _cell_problem(cell, f"cell {i}")) is not None:
            return problem
        if max_output_bytes > 0 and (problem := _size_problem(cell, f"cell {i}", max_output_bytes)) is not None:
            return problem
    return None


def _size_problem(cell: NotebookCell, where: str, limit: int) -> str | None:
    """A cell whose outputs hold more than a run keeps (``limit``, and the cap's note): its
    displays and streams together, and its error apart (each is capped on its own)."""
    outputs = cell.get("outputs", []) if cell.get("cell_type") == "code" else []
    shown = sum(output_size(o) for o in outputs if o.get("output_type") != "error")
    errors = sum(output_size(o) for o in outputs if o.get("output_type") == "error")
    for what, size in (("output", shown), ("error output", errors)):
        if size > limit + CAP_NOTE_BYTES:
            return (f"{where}: its {what} holds {size:,} bytes, more than a run keeps ([build] max_output_bytes "
                    f"= {limit:,})")
    return None


def _cell_problem(cell: Any, where: str) -> str | None:
    if not isinstance(cell, dict):
        return f"{where} is {_kind(cell)}, not an object"
    if cell.get("cell_type") not in _CELL_TYPES:
        return f"{where} has cell_type {cell.get('cell_type')!r}"
    if not _text(cell.get("source", "")):
        return f"{where}: its source is not a string or a list of strings"
    meta = cell.get("metadata", {})
    if not isinstance(meta, dict):
        return f"{where}: its metadata is {_kind(meta)}, not an object"
    tags = meta.get("tags", [])
    if not isinstance(tags, list) or not all(isinstance(t, str) and _TAG.fullmatch(t) for t in tags):
        return f"{where}: its tags are not a list of tag names (lower-case letters, digits, dashes)"
    if cell["cell_type"] == "code":
        count = cell.get("execution_count")
        if count is not None and (isinstance(count, bool) or not isinstance(count, int)):
            return f"{where}: its execution_count is {_kind(count)}, not a number"
        outputs = cell.get("outputs", [])
        if not isinstance(outputs, list):
            return f"{where}: its outputs are {_kind(outputs)}, not a list"
        for j, out in enumerate(outputs):
            if (problem := _output_problem(out, f"{where}, output {j}")) is not None:
                return problem
    return None


def damaged_entry(shown: str, problem: str) -> BookError:
    """The error for a damaged entry, located at its file and saying how to recover."""
    return BookError(f"damaged freeze entry: {problem}; delete the file and build again (the unit is "
                     "executed anew), or build with --force --only on its section", shown)


def read_entry(path: Path, shown: str | None = None, max_output_bytes: int = 0) -> Notebook:
    """A freeze entry read from ``path`` and checked (:func:`entry_problem`, with the cap
    ``max_output_bytes``); a :class:`BookError` at ``shown`` (default: the path) when it is not
    JSON, not a notebook, or holds more output than a run keeps."""
    shown = shown or str(path)
    try:
        nb: Notebook = parse_entry(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as exc:
        raise damaged_entry(shown, f"not UTF-8 text ({exc.reason})") from exc
    except ValueError as exc:
        raise damaged_entry(shown, str(exc)) from exc
    if (problem := entry_problem(nb, max_output_bytes)) is not None:
        raise damaged_entry(shown, problem)
    return nb


def parse_entry(text: str) -> Any:
    """An entry's JSON; ``ValueError(why)`` when it is none. Why not ``json.loads`` alone: JSON
    nested deeper than Python's recursion limit raises ``RecursionError``, not a decode error."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not JSON ({exc.msg} at line {exc.lineno})") from exc
    except RecursionError:
        raise ValueError(f"not a notebook: its JSON is nested more than {MAX_DEPTH} levels deep") from None


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
