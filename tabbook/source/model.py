"""The book's data model: a page read (:class:`Section`) is cells of code and prose with their
Markdown lines, the blocks of each prose cell, and its tables of contents.

Why a module of its own: a dozen modules of every stage use these types, and few of them
parse anything; they used to import the model together with the parser (:mod:`.read`),
which makes the model.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from tabbook.errors import BookError
from tabbook.source.constructs import Kind

CellKind = Literal["code", "markdown"]




@dataclass(frozen=True)
class Block:
    """One block of prose as the dialect's markdown-it parse found it.

    ``kind``: the construct it is (:class:`~tabbook.source.constructs.Kind`, each declared
    once in :data:`~tabbook.source.constructs.TABLE`); ``attr``: for display math the
    ``:eqlabel:`` on its closing line, if any, for an attribute line its name (``label``,
    ``eqlabel``, ``width``). Rows ``start`` … ``end - 1`` are 0-based; ``level`` is markdown-it's
    nesting level (blocks of one container share it). Containers (lists,
    quotes) come before the blocks inside them.
    """

    kind: Kind
    start: int
    end: int
    level: int = 0
    attr: str = ""


@dataclass(frozen=True)
class Cell:
    """One unit of the section: a code cell or a run of prose.

    ``tabs`` is the frameworks the cell belongs to; for prose, an empty tuple
    means shared prose (every framework sees it). ``line`` is the 1-based line
    of the cell's first source line in ``path`` (for code: the opening fence).
    """

    kind: CellKind
    source: str
    path: str
    line: int
    tabs: tuple[str, ...] = ()
    flags: frozenset[str] = frozenset()
    raises: str | None = None  # expected exception class name ("" = any)
    # File line (1-based) of each line of ``source``; empty when not recorded.
    source_lines: tuple[int, ...] = ()
    # Prose: the text the book shows (``source`` with its slide marks stripped: only decks keep
    # them) and the blocks markdown-it found in it (rows 0-based in ``prose``), which render
    # emits MyST from without parsing again; empty when not recorded.
    prose: str = field(default="", compare=False, repr=False)
    blocks: tuple[Block, ...] = field(default=(), compare=False, repr=False)
    # The cell's tab line said ``all``: it belongs to every tab the section exists for
    # (see :func:`section_tabs`), not necessarily to every tab of the book.
    every_tab: bool = False
    # The solution (``<!-- solution … -->`` … ``<!-- end solution -->``) the cell is part of:
    # its number in the section, from 1; 0 for a cell outside every solution.
    solution: int = 0

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}"


@dataclass(frozen=True)
class TocBlock:
    line: int
    entries: tuple[str, ...]
    maxdepth: int | None
    numbered: bool
    entry_lines: tuple[int, ...] = ()  # the line of each entry, for messages about it

    def line_of(self, entry: str) -> int:
        """The line an entry is written on (the block's first line when not recorded)."""
        if entry in self.entries and len(self.entry_lines) == len(self.entries):
            return self.entry_lines[self.entries.index(entry)]
        return self.line


@dataclass(frozen=True)
class Section:
    path: str  # relative to the book root, e.g. "chapter_gpus/devices.md"
    title: str
    cells: tuple[Cell, ...]
    toc: tuple[TocBlock, ...] = ()
    labels: dict[str, int] = field(default_factory=dict)  # name -> line
    refs: tuple[tuple[str, str, int], ...] = ()  # (role, target, line)
    # Source bugs read the way d2lbook reads them (a prose tab closed by the next
    # :begin_tab:): the build goes on and reports each at its line.
    warnings: tuple[BookError, ...] = ()
    # Each solution's number -> (the text after "solution" in its opening line, that line).
    solutions: dict[int, tuple[str, int]] = field(default_factory=dict)
    # Labels another page of the book owns (a toc page over a copy no toc lists): renamed on this
    # page when it is rendered, so references go to the owner (tabbook.book.shadow_labels).
    shadowed: tuple[str, ...] = ()

    @property
    def code_cells(self) -> tuple[Cell, ...]:
        return tuple(c for c in self.cells if c.kind == "code")
