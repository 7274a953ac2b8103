"""pybtex's plugin look-ups read the installed entry points once per Sphinx run (tabbook.render.ext.bib).

Formatting a citation asks pybtex for its style, backend and name plugins, and each ask read
every installed distribution's metadata again (on d2l-en, half of a one-page edit's Sphinx time).
"""

from __future__ import annotations

from typing import Any

import pytest


def test_entry_points_are_read_once(monkeypatch: pytest.MonkeyPatch) -> None:
    pybtex_plugin = pytest.importorskip("pybtex.plugin")
    from tabbook.render.ext import bib

    reads: list[dict[str, Any]] = []
    real = pybtex_plugin.entry_points

    def counted(**query: Any) -> Any:
        reads.append(query)
        return real(**query)

    monkeypatch.setattr(pybtex_plugin, "entry_points", counted)
    bib._entry_points_read_once()
    first = [pybtex_plugin.find_plugin("pybtex.backends", "text") for _ in range(5)]
    style = [pybtex_plugin.find_plugin("pybtex.style.formatting") for _ in range(5)]
    assert len(set(first)) == 1 and first[0].__name__ == "Backend"  # the same plugin as before
    assert len(set(style)) == 1
    asked = [tuple(sorted(q.items())) for q in reads]
    assert len(asked) == len(set(asked)), asked  # each query once (before: once per look-up, 10 here)
    assert {q["group"] for q in reads} >= {"pybtex.backends", "pybtex.style.formatting"}
    # A plugin registered at run time is still found first, as pybtex finds it.
    monkeypatch.setitem(pybtex_plugin._RUNTIME_PLUGINS, "pybtex.backends", {"text": bib.NoBibliography})
    assert pybtex_plugin.find_plugin("pybtex.backends", "text") is bib.NoBibliography
