"""What a Sphinx run reads and writes, said as it goes, for the builder to show (issue 52).

Sphinx runs quiet (``-q``): its own status lines name generated files and would drown the
build's. On a cold build of a large book that left twenty seconds of silence. With
``$TABBOOK_RENDER_PROGRESS`` set (the builder sets it: :mod:`tabbook.render.progress`), this
extension appends one short line per event to that file: ``n COUNT`` when Sphinx knows how many
pages it will read, ``r DOCNAME`` for each page read, ``w PAGENAME`` for each HTML page written.
The builder reads the file while Sphinx runs and after it. The file is opened at the first
event, after the gate (:mod:`.gate`), so a run set up ahead writes where the build now reads.
Without the variable (a plain ``sphinx-build``), nothing happens.
"""

from __future__ import annotations

import os
from typing import IO, Any

from sphinx.application import Sphinx
from sphinx.util.typing import ExtensionMetadata

from tabbook.render.ext import PageContext
from tabbook.render.sphinx import PROGRESS_ENV

_STREAMS: dict[int, IO[str]] = {}  # id(app) -> its open progress file


def _say(app: Sphinx, line: str) -> None:
    target = os.environ.get(PROGRESS_ENV)
    if not target:
        return
    stream = _STREAMS.get(id(app))
    if stream is None:
        try:
            stream = _STREAMS[id(app)] = open(target, "a", encoding="utf-8", buffering=1)  # noqa: SIM115
        except OSError:
            return  # progress is a courtesy: it never fails a build
    stream.write(line.replace("\n", " ") + "\n")


def _reading(app: Sphinx, env: Any, docnames: list[str]) -> None:
    _say(app, f"n {len(docnames)}")


def _read(app: Sphinx, doctree: Any) -> None:
    _say(app, f"r {app.env.docname}")


def _written(app: Sphinx, pagename: str, templatename: str, context: PageContext, doctree: Any) -> None:
    _say(app, f"w {pagename}")


def _close(app: Sphinx, exception: BaseException | None) -> None:
    stream = _STREAMS.pop(id(app), None)
    if stream is not None:
        stream.close()


def setup(app: Sphinx) -> ExtensionMetadata:
    if os.environ.get(PROGRESS_ENV):
        app.connect("env-before-read-docs", _reading)
        app.connect("doctree-read", _read)
        app.connect("html-page-context", _written)
        app.connect("build-finished", _close)
    return {"version": "0.1", "parallel_read_safe": True, "parallel_write_safe": True}
