"""Reading a freeze entry: its shape checked before anything uses it.

An entry is a file anyone can edit by hand (or damage in a merge), so nothing of it is trusted
until :func:`entry_problem` has walked it: notebook format, cell and output types, texts,
nesting depth, image data, the provenance's fields, and the output sizes a run would have
capped. :func:`read_entry` gives a located error for the first problem.

Why a module of its own: this is a schema check, the same for the store, the merge of stores
and a Dask worker's result, and it reads nothing of the store's layout or keys; kept in
:mod:`.store` it made that module the longest of the package.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tabbook.errors import BookError
from tabbook.execute.outputs import BINARY_IMAGES
from tabbook.execute.shape import output_size
from tabbook.nbjson import Notebook, NotebookCell

#: The notebook metadata key under which the store keeps its bookkeeping.
META = "tabbook"

_OUTPUT_TYPES = ("stream", "display_data", "execute_result", "error")
_CELL_TYPES = ("code", "markdown", "raw")


def _kind(value: object) -> str:
    """A JSON value's type as JSON names it (``null``, ``a list``, …), for the messages."""
    names = {type(None): "null", bool: "a boolean", int: "a number", float: "a number", str: "a string",
             list: "a list", dict: "an object"}
    return names.get(type(value), type(value).__name__)


def _text(value: object) -> bool:
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


def _field_problem(value: object, where: str) -> str | None:
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


def provenance_problem(prov: object, where: str = f"metadata.{META}.provenance") -> str | None:
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


def _depth_problem(value: object, where: str) -> str | None:
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


def _image_problem(mime: str, value: object, where: str) -> str | None:
    """An image stored as base64 that does not decode, or is not the type it says."""
    text = "".join(value) if isinstance(value, list) else value
    if not isinstance(text, str):  # the caller has checked it is text (_text); kept for the type
        return f"{where}: its {mime} is not base64"
    try:
        data = base64.b64decode("".join(text.split()), validate=True)
    except (binascii.Error, ValueError):
        return f"{where}: its {mime} is not base64"
    if not data.startswith(BINARY_IMAGES[mime]):
        return f"{where}: its {mime} does not hold a {mime.split('/')[1].upper()} image"
    return None


def _output_problem(out: object, where: str) -> str | None:
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


def entry_problem(nb: object, max_output_bytes: int = 0) -> str | None:
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


def _cell_problem(cell: object, where: str) -> str | None:
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
