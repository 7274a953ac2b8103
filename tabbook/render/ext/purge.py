"""Every page Sphinx is about to read again is purged before the first one is read.

Why: Sphinx's serial reader purges and reads one page at a time, in name order, while its
parallel reader purges them all first. So, serially, a label or equation that moves from
``b.md`` to ``a.md`` is met in ``a`` while ``b``'s old copy is still registered: "duplicate
label", a failed incremental build that a clean build would pass (and ``tabbook check``, which
knows the labels are unique, does not report). Purging all outdated pages at
``env-before-read-docs``, as the parallel reader does, makes both orders agree; the reader's
own purge of each page is then a repeat that finds nothing.
"""

from __future__ import annotations

from sphinx.application import Sphinx
from sphinx.environment import BuildEnvironment
from sphinx.util.typing import ExtensionMetadata


def _purge_outdated_first(app: Sphinx, env: BuildEnvironment, docnames: list[str]) -> None:
    for docname in docnames:
        if docname in env.all_docs:
            app.events.emit("env-purge-doc", env, docname)
            env.clear_doc(docname)


def setup(app: Sphinx) -> ExtensionMetadata:
    app.connect("env-before-read-docs", _purge_outdated_first)
    return {"version": "0.1", "parallel_read_safe": True, "parallel_write_safe": True}
