"""Sphinx's warnings, mapped back to the Markdown line an author wrote, as build errors.

Sphinx reads what the sources step generated (``build/src/<page>.ipynb`` or ``.md``), so its
warnings name those files, and myst-nb numbers a notebook's lines from ``(cell + 1) * 10000``.
The sources step keeps, beside each generated page, a line map
(``build/linemaps/<page>.json``: for every cell of the notebook, or every line of the page,
the line of the Markdown file it came from); :mod:`tabbook.render.ext.diagnostics` records each
warning of the Sphinx run. Here the two meet: every warning becomes a
:class:`~tabbook.errors.BookError` at ``chapter/page.md:LINE``, all of them at once, as
``-W --keep-going`` would report them but at the source.

Warnings about a page are found only when Sphinx reads the page; on the next incremental run
it would not read it again and the problem would go unreported. So a run with warnings marks
the generated pages it names as changed (their modification time), and a warning Sphinx gave
no page for makes the next run read everything: the next build reports them again until they
are fixed.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from tabbook.config import Config
from tabbook.errors import BookError
from tabbook.render.sources import line_map_path, source_dir

_LOCATION = re.compile(r"^(?P<path>.*?)(?::(?P<line>\d+))?$")
#: The (first) line of myst-nb's numbering for cell ``i`` is ``(i + 1) * CELL_BASE + 1``.
CELL_BASE = 10000


def _load(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def source_line(config: Config, generated: Path, line: int | None) -> tuple[str, int | None] | None:
    """``(page.md, line)`` for a line of a generated page; None when the page has no map."""
    try:
        rel = generated.resolve().relative_to(source_dir(config).resolve())
    except ValueError:
        return None
    stem = rel.with_suffix("").as_posix()
    data = _load(line_map_path(config, stem))
    if data is None:
        return None
    page = data["source"]
    if line is None:
        return page, None
    if "cells" in data:
        cell, row = divmod(line - 1, CELL_BASE)
        cells = data["cells"]
        if not 1 <= cell <= len(cells):
            return page, None
        rows = cells[cell - 1]
        if not rows:
            return page, None
        found = rows[min(max(row - 1, 0), len(rows) - 1)]
    else:
        rows = data["lines"]
        if not rows:
            return page, None
        found = rows[min(max(line - 1, 0), len(rows) - 1)]
    return page, (found or None)


def to_error(config: Config, record: dict[str, Any]) -> BookError:
    """One recorded warning as an error at the Markdown source (or where Sphinx put it)."""
    first, *rest = str(record.get("message", "")).split("\n")
    message = (first.strip() or "(no message)") + "".join(f"\n    {x}" for x in rest if x.strip())
    kind = f" [{record['type']}.{record['subtype']}]" if record.get("type") and record.get("subtype") else ""
    level = str(record.get("level", "WARNING")).lower()
    text = f"{message}{kind}" if level == "warning" else f"{level}: {message}{kind}"
    location = record.get("location")
    if not location:
        return BookError(f"Sphinx: {text}")
    m = _LOCATION.match(str(location))
    assert m is not None  # the pattern matches any string
    path, line = Path(m.group("path")), int(m.group("line")) if m.group("line") else None
    mapped = source_line(config, path, line)
    if mapped is not None:
        return BookError(text, *mapped)
    try:
        shown = config.rel(path)
    except ValueError:
        shown = str(path)
    return BookError(text, shown, line)


def collect(config: Config, records_file: Path) -> list[BookError]:
    """The run's warnings as errors (sorted, duplicates dropped); marks their pages for re-reading."""
    records = _load(records_file) or []
    errors: list[BookError] = []
    seen: set[str] = set()
    touched: set[Path] = set()
    everything = False
    for record in records if isinstance(records, list) else []:
        error = to_error(config, record)
        if error.location_message() not in seen:
            seen.add(error.location_message())
            errors.append(error)
        location = record.get("location")
        m = _LOCATION.match(str(location)) if location else None
        generated = Path(m.group("path")) if m else None
        if generated is not None and generated.is_file() and source_dir(config).resolve() in generated.resolve().parents:
            touched.add(generated)
        else:
            everything = True
    for path in touched:
        os.utime(path)  # newer than Sphinx's record of reading it: read again next time
    if everything:
        for pickle in (config.build_dir / "doctrees").glob("*/environment.pickle"):
            pickle.unlink()
    errors.sort(key=lambda e: (e.path or "", e.line or 0))
    return errors
