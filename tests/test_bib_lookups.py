"""pybtex's plugin look-ups read the installed entry points once per Sphinx run (tabbook.render.ext.bib).

Formatting a citation asks pybtex for its style, backend and name plugins, and each ask read
every installed distribution's metadata again (on d2l-en, half of a one-page edit's Sphinx time).
"""

from __future__ import annotations

from pathlib import Path
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


BIB = """@article{alpha2020,
  author = {Ada Lovelace and Charles Babbage},
  title = {Notes on an engine},
  journal = {Journal of Engines},
  year = {2020}
}
@book{beta2019,
  author = {Grace Hopper},
  title = {Compilers},
  publisher = {Navy Press},
  year = {2019}
}
"""


def _bib_project(src: Path) -> None:
    src.mkdir()
    (src / "refs.bib").write_text(BIB, encoding="utf-8")
    (src / "conf.py").write_text(
        "extensions = ['sphinxcontrib.bibtex', 'tabbook.render.ext.bib']\nbibtex_bibfiles = ['refs.bib']\n"
        "bibtex_reference_style = 'author_year'\n", encoding="utf-8")
    (src / "index.rst").write_text("Book\n====\n\n.. toctree::\n\n   other\n\nSee :cite:p:`alpha2020` and "
                                   ":cite:t:`beta2019`.\n\n.. bibliography::\n", encoding="utf-8")
    (src / "other.rst").write_text("Other\n=====\n\nProse.\n", encoding="utf-8")


def _build(src: Path, out: Path) -> None:
    import io

    from sphinx.application import Sphinx

    app = Sphinx(str(src), str(src), str(out / "html"), str(out / "doctrees"), "html",
                 status=io.StringIO(), warning=io.StringIO())
    app.build()


def test_formatted_entries_are_kept_between_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("sphinxcontrib.bibtex")
    from pybtex.style.formatting import BaseStyle

    formatted: list[str] = []
    real = BaseStyle.format_entry

    def counted(self: Any, label: str, entry: Any, bib_data: Any = None) -> Any:
        formatted.append(entry.key)
        return real(self, label, entry, bib_data)

    monkeypatch.setattr(BaseStyle, "format_entry", counted)
    src = tmp_path / "src"
    _bib_project(src)
    _build(src, tmp_path / "inc")
    assert sorted(set(formatted)) == ["alpha2020", "beta2019"]  # (the tooltips too)
    del formatted[:]
    (src / "other.rst").write_text("Other\n=====\n\nProse, edited.\n", encoding="utf-8")
    _build(src, tmp_path / "inc")
    assert formatted == []  # before: both formatted again, in every run
    # A changed entry is formatted again, the other is not; the page is a clean build's.
    (src / "refs.bib").write_text(BIB.replace("Compilers", "Compilers, second edition"), encoding="utf-8")
    (src / "index.rst").write_text((src / "index.rst").read_text(encoding="utf-8") + "\n", encoding="utf-8")
    _build(src, tmp_path / "inc")
    assert set(formatted) == {"beta2019"}
    _build(src, tmp_path / "clean")
    incremental = (tmp_path / "inc" / "html" / "index.html").read_text(encoding="utf-8")
    assert "second edition" in incremental
    assert incremental == (tmp_path / "clean" / "html" / "index.html").read_text(encoding="utf-8")
