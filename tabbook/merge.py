"""Stage 5, merge: a section's executed notebooks → one MyST-NB document.

Code cells carry the framework they ran in (tags ``tabbook-fw-<name>``) and
the run they belong to (``tabbook-run-<n>``): consecutive framework cells with
no shared prose between them form one run, which the Sphinx extension turns
into one tab set. myst-nb drops Markdown cells' metadata, so prose tabs are
wrapped in ``{div}`` blocks whose classes say the same thing.
"""

from __future__ import annotations

import copy
from typing import Any

from .myst import to_myst, toc_to_toctree, wrap_div
from .read import Section

FW_PREFIX = "tabbook-fw-"
RUN_PREFIX = "tabbook-run-"
PROVENANCE_CLASS = "tabbook-provenance"


def _md(source: str) -> dict[str, Any]:
    return {"cell_type": "markdown", "metadata": {}, "source": source}


def describe_provenance(label: str, prov: dict[str, Any]) -> str:
    """One discreet line: where and with what a framework's outputs were computed."""
    if not prov:
        return f"{label} outputs: not recorded."
    device = prov.get("device", "?")
    cpu = prov.get("cpu", "")
    where = device if prov.get("gpus") else f"CPU only ({cpu})" if cpu else "CPU only"
    return (
        f"{label} outputs computed on {where}, {label} {prov.get('framework_version', '?')}, "
        f"Python {prov.get('python', '?')}, {prov.get('date', '?')}."
    )


def merge_section(
    section: Section,
    executed: dict[str, dict[str, Any]],
    tabs: tuple[str, ...],
    labels: dict[str, str],
    downloads: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Merge ``executed[framework]`` notebooks (keyed by cell index) into one notebook.

    ``labels`` maps framework name → display label; ``downloads`` maps framework
    → relative link to that framework's notebook, shown beside the provenance.
    """
    # The k-th code cell a framework runs is the k-th cell of its executed
    # notebook: the freeze key covers exactly that sequence, so this holds
    # whenever an entry is reused, whatever prose changed around it.
    ran = {fw: nb.get("cells", []) for fw, nb in executed.items()}
    ordinal = {fw: 0 for fw in tabs}
    cells: list[dict[str, Any]] = []
    run = 0
    last_kind: str | None = None  # "code" / "prose" when the previous item was tabbed
    multi = len(tabs) > 1
    for cell in section.cells:
        if cell.kind == "markdown" and not cell.tabs:
            last_kind = None
            if cell.source.lstrip().startswith("```toc"):
                cells.append(_md(toc_to_toctree(cell.source.strip())))
            else:
                cells.append(_md(to_myst(cell.source)))
            continue
        kind = "code" if cell.kind == "code" else "prose"
        if kind != last_kind:
            run += 1
        last_kind = kind
        for fw in tabs:
            if fw not in cell.tabs:
                continue
            if kind == "prose":
                body = to_myst(cell.source)
                if multi:
                    body = wrap_div(body, ["tabbook-tab", FW_PREFIX + fw, f"{RUN_PREFIX}{run}"])
                cells.append(_md(body))
                continue
            k = ordinal[fw]
            ordinal[fw] += 1
            executed_cell = ran[fw][k] if fw in ran and k < len(ran[fw]) else None
            if executed_cell is None:
                continue  # the unit failed or was not run; the build reports it
            new = copy.deepcopy(executed_cell)
            tags = list(new["metadata"].get("tags", []))
            if multi:
                tags += [FW_PREFIX + fw, f"{RUN_PREFIX}{run}"]
            new["metadata"] = {"tags": tags}
            cells.append(new)
    provenance = {fw: nb.get("metadata", {}).get("tabbook", {}).get("provenance", {})
                  for fw, nb in executed.items()}
    if provenance:
        lines = []
        for fw in tabs:
            if fw not in provenance:
                continue
            text = describe_provenance(labels.get(fw, fw), provenance[fw])
            if downloads and fw in downloads:
                text += f" {downloads[fw]}"
            lines.append(f"- {text}")
        cells.append(_md(wrap_div("\n".join(lines), [PROVENANCE_CLASS])))
    for i, cell in enumerate(cells):
        cell["id"] = f"cell-{i}"
    return {
        "nbformat": 4,
        "nbformat_minor": 5,
        "metadata": {
            "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
            "language_info": {"name": "python", "pygments_lexer": "ipython3"},
        },
        "cells": cells,
    }
