"""Merge: a section's executed notebooks → one MyST-NB document.

Code cells carry the framework they ran in and the run they belong to as data, a
:class:`~tabbook.render.names.TabMark` in their metadata: consecutive framework cells with no
shared prose between them form one run, which the Sphinx extension turns into one tab set.
myst-nb drops Markdown cells' metadata, so a prose tab is written as a ``{tabbook-tab}``
directive whose arguments are the same two values. A solution's cells
are bracketed by two ``{div}`` cells, the first holding its summary line, which the extension
(:mod:`tabbook.render.ext.solutions`) turns into one element a reader opens (and leaves out of
the PDFs).
"""

from __future__ import annotations

import itertools
import json

from tabbook.execute.job import CPU_ONLY, Provenance
from tabbook.execute.store import Entry, new_notebook
from tabbook.nbjson import Notebook, NotebookCell
from tabbook.render.myst import (
    cell_to_myst_lines,
    myst_text,
    toc_to_toctree,
    wrap_directive,
    wrap_div,
    wrap_div_lines,
)
from tabbook.render.names import (
    CELL_KEY,
    PROSE_TAB,
    PROVENANCE_CLASS,
    SOLUTION_END_CLASS,
    SOLUTION_START_CLASS,
    TabMark,
)
from tabbook.source.model import Section


def _md(source: str) -> NotebookCell:
    return {"cell_type": "markdown", "metadata": {}, "source": source}


def with_version(label: str, version: str) -> str:
    """"PyTorch 2.13.0, ": a framework's name and version in a provenance line, or "" when the
    version is not known ("?": a tab of plain Python or of a standard-library module, whose
    version is Python's, which the line gives anyway). ``version`` is the entry's own text,
    escaped here (:func:`myst_text`)."""
    return "" if version in ("", "?") else f"{label} {myst_text(version)}, "


def describe_provenance(label: str, prov: Provenance) -> str:
    """One discreet line: where and with what a framework's outputs were computed. Every value
    comes from the entry, data anyone who can change ``_freeze/`` writes: it is shown as text
    (:func:`myst_text`), never read as MyST."""
    if not prov:
        return f"{label} outputs: not recorded."

    def shown(name: str, default: str) -> str:
        value = getattr(prov, name)
        return myst_text(value) if value else default

    if prov.not_executed:
        return f"{label}: code shown without outputs ({shown('not_executed', '')})."
    cpu = shown("cpu", "")
    where = shown("device", "?") if prov.on_gpu else f"{CPU_ONLY} ({cpu})" if cpu else CPU_ONLY
    line = (f"{label} outputs computed on {where}, {with_version(label, str(prov.framework_version or '?'))}"
            f"Python {shown('python', '?')}, {shown('date', '?')}.")
    if prov.outdated:
        line = f"{label} outputs from an earlier version of this code ({shown('outdated', '')}): " + line
    return line


def outdated_notice(labels: dict[str, str], provenance: dict[str, Provenance]) -> str | None:
    """A warning at the top of a page whose outputs (some framework's) are older than its code:
    a GPU machine computed them and this build's machine could not stand in (execute/plan.py)."""
    old = [(fw, p) for fw, p in provenance.items() if p.outdated]
    if not old:
        return None
    lines = [f"- {labels.get(fw, fw)}: computed on {myst_text(p.text('device', '?'))} on "
             f"{myst_text(p.text('date', '?'))}; {myst_text(p.outdated)}." for fw, p in old]
    return ("```{warning}\nSome code on this page is shown as an earlier version of it ran, with its "
            "outputs, kept because this build could not run the current code where they were computed:\n\n" + "\n".join(lines)
            + "\n```")


def solution_summary(text: str) -> str:
    """The line a reader clicks to open a solution: "Solution", and the marker's text."""
    return f"Solution {text}".strip()


def _solution_marks(number: int, section: Section, line: int) -> tuple[NotebookCell, NotebookCell, int]:
    """The two cells around solution ``number``, and the line of its opening marker."""
    text, opened = section.solutions.get(number, ("", line))
    start = _md(wrap_div(solution_summary(text), [SOLUTION_START_CLASS]))
    end = _md(wrap_div("", [SOLUTION_END_CLASS]))
    return start, end, opened


def _shown(cell: NotebookCell) -> str:
    """What a reader sees of a code cell: its source, tags and outputs (not execution counts)."""
    outputs = [{k: v for k, v in o.items() if k != "execution_count"} for o in cell.get("outputs", [])]
    return json.dumps([cell["source"], cell["metadata"].get("tags", []), outputs], sort_keys=True)


def _run(cell: NotebookCell) -> int | None:
    mark = TabMark.of_cell(cell)
    return mark.run if mark is not None else None


def share_identical_runs(cells: list[NotebookCell], tabs: tuple[str, ...]) -> list[NotebookCell]:
    """Show a run of code cells once, without tabs, when every framework ran and showed the same.

    Tabs that would all hold the same code and the same output only add clicks
    (and page weight); shared code with shared results stays shared.
    """
    out: list[NotebookCell] = []
    for run, group in itertools.groupby(cells, key=_run):
        members = [(cell, TabMark.of_cell(cell)) for cell in group]
        if run is None:
            out.extend(cell for cell, _ in members)
            continue
        by_fw: dict[str, list[str]] = {}
        for cell, mark in members:
            by_fw.setdefault(mark.framework if mark else "", []).append(_shown(cell))
        seqs = list(by_fw.values())
        if set(by_fw) == set(tabs) and all(seq == seqs[0] for seq in seqs):
            first = next(iter(by_fw))
            for cell, mark in members:
                if mark is not None and mark.framework == first:
                    del cell["metadata"][CELL_KEY]
                    out.append(cell)
        else:
            out.extend(cell for cell, _ in members)
    return out


def merge_section(
    section: Section,
    executed: dict[str, Notebook],
    tabs: tuple[str, ...],
    labels: dict[str, str],
    downloads: dict[str, str] | None = None,
    line_maps: list[list[int]] | None = None,
) -> Notebook:
    """Merge ``executed[framework]`` notebooks (keyed by cell index) into one notebook.

    ``labels`` maps framework name → display label; ``downloads`` maps framework
    → relative link to that framework's notebook, shown beside the provenance.
    ``line_maps``, when given, receives one list per cell of the result: the line of
    ``section.path`` each line of the cell's source came from (what maps a Sphinx
    warning about the merged notebook back to the Markdown).
    """
    origin: dict[int, list[int]] = {}  # id(cell) -> its line map
    # The k-th code cell a framework runs is the k-th cell of its executed
    # notebook: the freeze key covers exactly that sequence, so this holds
    # whenever an entry is reused, whatever prose changed around it.
    ran = {fw: nb.get("cells", []) for fw, nb in executed.items()}
    ordinal = {fw: 0 for fw in tabs}
    cells: list[NotebookCell] = []
    run = 0
    last_kind: str | None = None  # "code" / "prose" when the previous item was tabbed
    multi = len(tabs) > 1
    open_solution = 0
    pending_end: NotebookCell | None = None
    for cell in section.cells:
        if cell.solution != open_solution:
            if pending_end is not None:
                cells.append(pending_end)
                origin[id(pending_end)] = [cell.line] * (pending_end["source"].count("\n") + 1)
                pending_end = None
            if cell.solution:
                start, pending_end, opened = _solution_marks(cell.solution, section, cell.line)
                cells.append(start)
                origin[id(start)] = [opened] * (start["source"].count("\n") + 1)
            open_solution = cell.solution
            last_kind = None
        if cell.kind == "markdown" and not cell.tabs:
            last_kind = None
            if cell.source.lstrip().startswith("```toc"):
                toc = toc_to_toctree(cell.source.strip())
                cells.append(_md(toc))
                origin[id(cells[-1])] = [cell.line] * (toc.count("\n") + 1)
            else:
                text, rows = cell_to_myst_lines(cell)
                cells.append(_md(text))
                origin[id(cells[-1])] = rows
            continue
        kind = "code" if cell.kind == "code" else "prose"
        if kind != last_kind:
            run += 1
        last_kind = kind
        for fw in tabs:
            if fw not in cell.tabs:
                continue
            if kind == "prose":
                body, rows = cell_to_myst_lines(cell)
                if multi:
                    body = wrap_directive(body, PROSE_TAB, [fw, str(run)])
                    rows = wrap_div_lines(rows)
                cells.append(_md(body))
                origin[id(cells[-1])] = rows
                continue
            k = ordinal[fw]
            ordinal[fw] += 1
            executed_cell = ran[fw][k] if fw in ran and k < len(ran[fw]) else None
            if executed_cell is None:
                continue  # the unit failed or was not run; the build reports it
            # A deep copy (the merge edits it); notebooks are JSON, and a round trip through
            # the C encoder is several times cheaper than copy.deepcopy on every page of a build.
            new = json.loads(json.dumps(executed_cell))
            new["metadata"] = {"tags": list(new["metadata"].get("tags", []))}
            if multi:
                new["metadata"][CELL_KEY] = TabMark(fw, run).as_metadata()
            cells.append(new)
            origin[id(new)] = list(cell.source_lines) or [cell.line]
    if pending_end is not None:
        cells.append(pending_end)
        origin[id(pending_end)] = [section.cells[-1].line] * (pending_end["source"].count("\n") + 1)
    provenance = {fw: Entry(nb).provenance for fw, nb in executed.items()}
    cells += _provenance_cells(provenance, len(executed), tabs, labels, downloads)
    if notice := outdated_notice(labels, provenance):
        cells.insert(min(1, len(cells)), _md(notice))
    if multi:
        cells = share_identical_runs(cells, tabs)
    if line_maps is not None:
        line_maps[:] = [origin.get(id(cell), []) for cell in cells]  # []: the builder's own cell
    return _notebook(cells)


def _provenance_cells(provenance: dict[str, Provenance], units: int, tabs: tuple[str, ...],
                      labels: dict[str, str], downloads: dict[str, str] | None) -> list[NotebookCell]:
    """Where each framework's outputs were computed, as one cell at the page's end (none
    when nothing was executed for the page)."""
    reasons = {p.not_executed for p in provenance.values()}
    if provenance and len(provenance) == units and len(reasons) == 1 and None not in reasons:
        # Nothing ran (execution off): one line, not one per framework.
        return [_md(wrap_div(f"Code shown without outputs ({reasons.pop()}).", [PROVENANCE_CLASS]))]
    if not provenance:
        return []
    lines = []
    for fw in tabs:
        if fw not in provenance:
            continue
        text = describe_provenance(labels.get(fw, fw), provenance[fw])
        if downloads and fw in downloads:
            text += f" {downloads[fw]}"
        lines.append(f"- {text}")
    return [_md(wrap_div("\n".join(lines), [PROVENANCE_CLASS]))]


def _notebook(cells: list[NotebookCell]) -> Notebook:
    """The merged notebook of ``cells``, each with a stable id."""
    for i, cell in enumerate(cells):
        cell["id"] = f"cell-{i}"
    return new_notebook(cells)
