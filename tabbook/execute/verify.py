"""``tabbook verify-freeze``: does the store hold what the code gives? (issue 33, item 3)

A freeze entry's key proves which code it belongs to, never what its outputs are: a change
that touches only ``_freeze/`` (a pull request, a shard store, a Dask worker's reply) passes
``build --frozen`` whatever outputs it holds. A reviewer re-executes the entries this machine
can stand in for (those computed on a CPU: an entry computed on GPUs is reported as not
verified) into a throw-away store and compares, cell by cell, what a reader would see: the code
shown, and each output's type, stream, text, data and error. What differs from run to run is
masked before comparing (:data:`VOLATILE`): durations, memory addresses, dates and times,
temporary paths, process ids. Anything else that differs is reported at the entry and cell,
and the command exits non-zero.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, TypeVar

from tabbook.execute.outputs import KINDS
from tabbook.nbjson import CellOutput, Notebook, NotebookCell

if TYPE_CHECKING:
    from tabbook.execute.runner import Unit

#: What the plan keeps beside each unit (its key's parts): handed back to ``run`` as it came.
P = TypeVar("P")

#: What changes between two honest runs of the same code, each masked to a placeholder before
#: outputs are compared. Kept narrow on purpose: a number that is not a duration, a date or an
#: address is a result, and a result that differs is worth a reviewer's look.
VOLATILE: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("<address>", re.compile(r"\b0x[0-9a-fA-F]{6,}\b")),
    ("<datetime>", re.compile(r"\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?")),
    ("<date>", re.compile(r"\b\d{4}-\d{2}-\d{2}\b")),
    ("<time>", re.compile(r"\b\d{1,2}:\d{2}:\d{2}(\.\d+)?\b")),
    # A number followed by a unit of time or a rate: "0.53 ms", "12.1s", "3 µs", "1.2e-05 sec",
    # "850 examples/sec", "1,234.5 it/s".
    ("<duration>", re.compile(r"[-+]?\d[\d,]*(\.\d+)?([eE][-+]?\d+)?\s*(ns|us|µs|μs|ms|s|sec|secs|seconds?|"
                              r"min|minutes?|h|hours?|(\w+ ?)?/ ?(s|sec|second))\b")),
    ("<tmp>", re.compile(r"/tmp/[\w./-]+")),
    ("<pid>", re.compile(r"\b(pid|process) ?[:=]? ?\d+\b", re.I)),
)
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def mask(text: str) -> str:
    """``text`` with its volatile parts replaced by placeholders."""
    text = _ANSI.sub("", text)
    for placeholder, pattern in VOLATILE:
        text = pattern.sub(placeholder, text)
    return text


def _text(value: object) -> str:
    return "".join(value) if isinstance(value, list) else value if isinstance(value, str) else repr(value)


def shown(output: CellOutput) -> list[tuple[str, str]]:
    """What a reader sees of one output, as (what, comparable text) pairs."""
    kind = output.get("output_type", "?")
    if kind == "stream":
        return [(f"stream {output.get('name', '?')}", mask(_text(output.get("text", ""))))]
    if kind == "error":
        return [("error", mask(f"{output.get('ename', '')}: {output.get('evalue', '')}"))]
    data = output.get("data") or {}
    # A kind compared as text has its volatile parts masked; any other is compared as it is.
    return [(mime, mask(_text(v)) if mime in KINDS and KINDS[mime].text else _text(v))
            for mime, v in sorted(data.items())]


def _excerpt(text: str, limit: int = 160) -> str:
    one = text.replace("\n", "⏎")
    return one if len(one) <= limit else one[:limit] + "…"


def cell_differences(stored: NotebookCell, fresh: NotebookCell) -> list[str]:
    """How a stored code cell and the same cell executed again differ (empty: only in volatile parts)."""
    diffs = []
    if _text(stored.get("source", "")) != _text(fresh.get("source", "")):
        diffs.append("its code differs from the book's")
    # Streams are merged for the page (myst-nb's nb_merge_streams): compare them merged too.
    a = _merged(stored.get("outputs") or [])
    b = _merged(fresh.get("outputs") or [])
    if len(a) != len(b):
        diffs.append(f"{len(a)} outputs stored, {len(b)} when run again")
    for i in range(max(len(a), len(b))):
        x, y = a[i] if i < len(a) else [], b[i] if i < len(b) else []
        if x == y:
            continue
        xs, ys = dict(x), dict(y)
        for what in sorted(set(xs) | set(ys)):
            if xs.get(what) != ys.get(what):
                diffs.append(f"output {i} ({what}): stored {_excerpt(xs.get(what, '(none)'))!r}, "
                             f"run again {_excerpt(ys.get(what, '(none)'))!r}")
    return diffs


def _merged(outputs: list[CellOutput]) -> list[list[tuple[str, str]]]:
    out: list[list[tuple[str, str]]] = []
    streams: dict[str, int] = {}
    for o in outputs:
        if o.get("output_type") == "stream":
            name = f"stream {o.get('name', '?')}"
            if name in streams:
                i = streams[name]
                out[i] = [(name, out[i][0][1] + mask(_text(o.get("text", ""))))]
                continue
            streams[name] = len(out)
        out.append(shown(o))
    return out


class VerdictState(StrEnum):
    """What came of verifying one entry."""

    SAME = "same"  # as a new run gives it (volatile parts aside)
    DIFFERS = "differs"
    GPU = "gpu"  # computed on GPUs: not verified on this machine
    STALE = "stale"  # no entry
    FAILED = "failed"  # the new run failed


@dataclass
class Verdict:
    """One entry's outcome: identical (volatile parts aside), different, not verified, or failed."""

    entry: str  # the store path, relative to the book
    section: str
    framework: str
    state: VerdictState
    details: list[str] = field(default_factory=list)


def compare_entries(entry: str, section: str, framework: str, stored: Notebook, fresh: Notebook,
                    lines: list[int]) -> Verdict:
    """Compare two executions of one unit, cell by cell (``lines``: each code cell's Markdown line)."""
    a, b = stored.get("cells", []), fresh.get("cells", [])
    details = []
    if len(a) != len(b):
        details.append(f"{len(a)} cells stored, {len(b)} when run again")
    for k, (x, y) in enumerate(zip(a, b, strict=False)):
        where = f"{section}:{lines[k]}" if k < len(lines) else f"cell {k}"
        details += [f"{where}: {d}" for d in cell_differences(x, y)]
    return Verdict(entry, section, framework, VerdictState.DIFFERS if details else VerdictState.SAME, details)


def verify(units: list[tuple[Unit, P]], stored: Callable[[str, str], Notebook | None],
           rel: Callable[[str, str], str], is_gpu: Callable[[Notebook], bool],
           run: Callable[[list[tuple[Unit, P]]], dict[tuple[str, str], Notebook | str]]) -> list[Verdict]:
    """The verdict on every unit of ``units`` ((Unit, KeyParts) pairs of a plan forced to run
    them): GPU entries are set aside, the rest run once (``run`` returns the fresh notebook or
    an error per unit) and compared with what ``stored`` holds."""
    verdicts: list[Verdict] = []
    todo = []
    for unit, parts in units:
        nb = stored(unit.section, unit.framework)
        where = rel(unit.section, unit.framework)
        if nb is None:
            verdicts.append(Verdict(where, unit.section, unit.framework, VerdictState.STALE, ["no entry"]))
        elif is_gpu(nb):
            verdicts.append(Verdict(where, unit.section, unit.framework, VerdictState.GPU,
                                    ["computed on GPUs: run verify-freeze on such a machine"]))
        else:
            todo.append((unit, parts))
    fresh = run(todo) if todo else {}
    for unit, _ in todo:
        where = rel(unit.section, unit.framework)
        got = fresh.get((unit.section, unit.framework))
        if not isinstance(got, dict):
            verdicts.append(Verdict(where, unit.section, unit.framework, VerdictState.FAILED, [str(got or "not run")]))
            continue
        lines = [c.cell.line for c in unit.cells]
        verdicts.append(compare_entries(where, unit.section, unit.framework,
                                        stored(unit.section, unit.framework) or {}, got, lines))
    return verdicts
