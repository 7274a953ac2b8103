"""Every warning Sphinx (or an extension, or docutils) reports, kept for the builder to judge.

Sphinx prints warnings against the files it reads, which are generated (``build/src/…ipynb``,
lines numbered from 10000 per notebook cell by myst-nb): no use to an author. This extension
records each warning of the run, with its location as Sphinx resolved it, in the JSON file
named by ``$TABBOOK_WARNINGS``; the builder (:mod:`tabbook.render.diagnostics`) maps each back
to the Markdown line it came from and fails the build listing all of them. Without that
variable (a plain ``sphinx-build``), nothing changes.

The collector sits on Sphinx's own logger, after Sphinx's handler, so it sees records whose
location Sphinx has already turned into ``path:line``; ``suppress_warnings`` applies as usual.
Warnings re-emitted from parallel readers (``-j``) arrive through the same logger.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.util.logging import NAMESPACE, WarningSuppressor, get_node_location
from sphinx.util.typing import ExtensionMetadata

from tabbook.files import write_atomic
from tabbook.render.sphinx import WARNINGS_ENV as ENV_VAR
from tabbook.render.warning import SphinxWarning

_COLLECTORS: dict[int, Collector] = {}  # id(app) -> its collector


class Collector(logging.Handler):
    """Keeps WARNING and worse records (:class:`~tabbook.render.warning.SphinxWarning`)."""

    def __init__(self, app: Sphinx) -> None:
        super().__init__(logging.WARNING)
        self.app = app
        self.records: list[SphinxWarning] = []
        self.addFilter(WarningSuppressor(app))

    def _location(self, record: logging.LogRecord) -> str | None:
        location = getattr(record, "location", None)
        if isinstance(location, tuple):
            docname, line = location
            if not docname:
                return None
            path = str(self.app.env.doc2path(docname))
            return f"{path}:{line}" if line else path
        if isinstance(location, nodes.Node):
            return get_node_location(location)
        if isinstance(location, str) and location and not os.path.isabs(location.split(":")[0]):
            return str(self.app.env.doc2path(location))  # a docname
        return location or None

    def emit(self, record: logging.LogRecord) -> None:
        try:
            message = logging.LogRecord.getMessage(record)  # without Sphinx's location prefix
        except (TypeError, ValueError):
            message = str(record.msg)
        self.records.append(SphinxWarning(
            level=record.levelname, location=self._location(record), message=message,
            type=getattr(record, "type", None), subtype=getattr(record, "subtype", None)))


def _write(app: Sphinx, exception: BaseException | None) -> None:
    target = os.environ.get(ENV_VAR)
    collector = _COLLECTORS.pop(id(app), None)
    if not target or collector is None:
        return
    logging.getLogger(NAMESPACE).removeHandler(collector)
    write_atomic(Path(target), json.dumps([r.as_dict() for r in collector.records], indent=1))


def setup(app: Sphinx) -> ExtensionMetadata:
    if os.environ.get(ENV_VAR):
        collector = Collector(app)
        logging.getLogger(NAMESPACE).addHandler(collector)
        _COLLECTORS[id(app)] = collector
        app.connect("build-finished", _write)
    return {"version": "0.1", "parallel_read_safe": True, "parallel_write_safe": True}
