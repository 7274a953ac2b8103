"""The ``tab`` object d2lbook's notebooks use at run time, for tests that compare our static
resolution of ``tab.selected(...)`` with what running the cell would do."""

from __future__ import annotations


class RuntimeTab:
    """What ``tab`` is when d2lbook runs a cell in Jupyter: ``selected`` is true for one framework."""

    def __init__(self, framework: str) -> None:
        self.framework = framework

    def selected(self, *names: object) -> bool:
        flat = [n for a in names for n in (a if isinstance(a, (list, tuple)) else [a])]
        return self.framework in flat
