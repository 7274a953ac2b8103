"""The names merge writes and the Sphinx extensions read: one declaration of the contract.

``merge`` gives each code cell that ran in one framework the framework and its run as cell
metadata (:data:`CELL_KEY`), which myst-nb keeps on the cell's node, and writes each prose tab
as a :data:`PROSE_TAB` directive whose arguments are the same two values; the extensions read
them as data from the doctree (never from a class name). Declaring them once means the two
sides cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TypedDict

from tabbook.nbjson import NotebookCell

#: The key of a merged code cell's metadata holding its :class:`TabMark`:
#: ``{"framework": "jax", "run": 3}``.
CELL_KEY = "tabbook"
#: The directive a prose tab is written as: ``{tabbook-tab} jax 3`` (framework, run).
PROSE_TAB = "tabbook-tab"
#: The class of the raw HTML the front page's generated part is written with (its picker, its
#: tables): under ``[html] raw_html = escape`` it is the one raw HTML published, and only in the
#: root page's last ``{only} html`` block, which the sources step appends after everything the
#: author wrote (:mod:`tabbook.render.ext.rawhtml`, which takes the class off again).
GENERATED_HTML = "tabbook-generated"


class TabMarkData(TypedDict):
    """A :class:`TabMark` as a cell's metadata and a node's attribute hold it."""

    framework: str
    run: int


@dataclass(frozen=True)
class TabMark:
    """Where a cell or prose tab of a merged page belongs: its framework, and its run (the
    consecutive framework cells with no shared prose between them that become one tab set)."""

    framework: str
    run: int

    def as_metadata(self) -> TabMarkData:
        return {"framework": self.framework, "run": self.run}

    @classmethod
    def of_cell(cls, cell: NotebookCell) -> TabMark | None:
        """The mark of a merged notebook cell (its metadata), or None."""
        mark = cell.get("metadata", {}).get(CELL_KEY)
        return cls.from_metadata(mark) if isinstance(mark, dict) else None

    @classmethod
    def from_metadata(cls, data: Mapping[str, str | int]) -> TabMark | None:
        if "framework" not in data or "run" not in data:
            return None
        return cls(str(data["framework"]), int(data["run"]))


#: Class of the note that says where each framework's outputs were computed.
PROVENANCE_CLASS = "tabbook-provenance"
#: Class of an output replaced by a note because the target format cannot show it.
UNSUPPORTED_CLASS = "tabbook-unsupported"
#: sphinx-design sync group of the framework tabs: ``?tab=jax`` selects a framework on any page.
SYNC_GROUP = "tab"
#: Caption of the root toctree that lists generated pages; in LaTeX those become the appendix.
APPENDIX_CAPTION = "Appendix"
#: Class of the ``{div}`` that opens a solution: its text is the solution's summary line.
SOLUTION_START_CLASS = "tabbook-solution-start"
#: Class of the empty ``{div}`` that closes a solution.
SOLUTION_END_CLASS = "tabbook-solution-end"
#: Class of the ``<details>`` element a solution becomes on the site.
SOLUTION_CLASS = "tabbook-solution"
