"""Figure numbers from the recorded outlines (tabbook.render.ext.fignumbers) are Sphinx's own.

A small numbered book (rst, so nothing but Sphinx and the one extension runs): a root toctree
numbering two chapters, one of which holds a toctree of its own, figures with and without
captions, a table with a title, a captioned listing, sections several deep and a figure under
an unnumbered part. After a full read and after an incremental one (a figure added to the first
chapter, which renumbers the later ones), the numbers assigned from the outlines are the numbers
Sphinx's own walk assigns from the doctrees, and no doctree was unpickled to assign them
(only the root page's, which Sphinx's section numbering reads).
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest

PAGES = {
    "index.rst": """Book
====

.. toctree::
   :numbered:

   alpha
   beta

Intro part
----------

.. figure:: pic.png

   Root figure.
""",
    "alpha.rst": """Alpha
=====

.. figure:: pic.png
   :name: fig-a1

   First of alpha.

Sub
---

.. table:: A titled table
   :name: tab-a

   ===  ===
   x    y
   ===  ===

.. code-block:: python
   :caption: A listing
   :name: code-a

   x = 1

.. figure:: pic.png

   {extra}
""",
    "beta.rst": """Beta
====

.. toctree::

   gamma

.. figure:: pic.png

   Beta's figure.

.. figure:: pic.png
   :name: uncaptioned
""",
    "gamma.rst": """Gamma
=====

Deep
----

Deeper
~~~~~~

.. figure:: pic.png

   In a deep section.
""",
}


def _write(src: Path, extra: str) -> None:
    for name, text in PAGES.items():
        (src / name).write_text(text.replace("{extra}", extra), encoding="utf-8")


def _app(src: Path, out: Path) -> object:
    from sphinx.application import Sphinx

    return Sphinx(str(src), None, str(out / "html"), str(out / "doctrees"), "html",
                  confoverrides={"extensions": ["tabbook.render.ext.fignumbers"], "numfig": True,
                                 "numfig_secnum_depth": 2},
                  status=io.StringIO(), warning=io.StringIO(), freshenv=False)


def _sphinx_numbers(env: object) -> dict[str, object]:
    """Sphinx's own walk over the doctrees, on the same environment (then put back)."""
    from sphinx.environment.collectors.toctree import TocTreeCollector

    from tabbook.render.ext.fignumbers import SPHINX_ASSIGN

    ours = env.toc_fignumbers  # type: ignore[attr-defined]
    SPHINX_ASSIGN(TocTreeCollector(), env)
    theirs = env.toc_fignumbers  # type: ignore[attr-defined]
    env.toc_fignumbers = ours  # type: ignore[attr-defined]
    return theirs  # type: ignore[no-any-return]


@pytest.mark.parametrize("extra", ["Alpha's second figure."])
def test_outline_numbers_are_sphinxs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, extra: str) -> None:
    from sphinx.environment import BuildEnvironment

    src, out = tmp_path / "src", tmp_path / "out"
    src.mkdir()
    (src / "pic.png").write_bytes(b"")
    (src / "conf.py").write_text("", encoding="utf-8")
    _write(src, extra)
    app = _app(src, out)
    app.build()  # type: ignore[attr-defined]
    env = app.builder.env  # type: ignore[attr-defined]
    numbers = env.toc_fignumbers
    assert numbers == _sphinx_numbers(env)
    assert numbers["beta"]["figure"] and numbers["gamma"]["figure"]  # the walk entered both toctrees
    assert "code-block" in numbers["alpha"] and "table" in numbers["alpha"]

    # Incremental: a figure more in alpha, every later figure renumbered; nothing unpickled.
    (src / "alpha.rst").write_text(PAGES["alpha.rst"].replace("{extra}", extra) +
                                   "\n.. figure:: pic.png\n\n   One more.\n", encoding="utf-8")
    loaded: list[str] = []
    real = BuildEnvironment.get_doctree

    def counted(self: BuildEnvironment, docname: str) -> object:
        loaded.append(docname)
        return real(self, docname)

    app = _app(src, out)
    monkeypatch.setattr(BuildEnvironment, "get_doctree", counted)
    read = app.builder.read()  # type: ignore[attr-defined]
    env = app.builder.env  # type: ignore[attr-defined]
    assert read == ["alpha"]
    list(env.check_dependents(app, set(read)))  # where Sphinx numbers, before it writes
    # Section numbering (Sphinx's) reads the one page holding a numbered toctree; figure
    # numbering read all four before.
    assert loaded == ["index"]
    assert env.toc_fignumbers != numbers  # alpha has one figure more
    assert env.toc_fignumbers == _sphinx_numbers(env)
