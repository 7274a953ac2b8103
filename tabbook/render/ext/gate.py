"""Sphinx started early: it sets up, then waits for the builder's word before reading a source.

Why: a Sphinx run spends its first second importing itself and its extensions, loading the
pickled environment and starting the KaTeX renderer, none of which depends on the sources.
When a build executes code, :class:`tabbook.render.sphinx.SphinxRun` starts Sphinx before the
units run and lets it go on once the sources step has written ``build/src``, so that second
overlaps execution instead of following it. Under ``$TABBOOK_SPHINX_GATE`` the process reads
one line from its standard input at ``builder-inited`` (after every other handler, before the
builder looks at the source folder): ``go`` lets the build proceed; anything else, or the end
of input (the builder stopped, or failed before its sources were written), ends the process
before it has read or written anything.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

from tabbook.render.sphinx import GATE_ENV as ENV_VAR
from tabbook.render.sphinx import GATE_GO as GO

if TYPE_CHECKING:
    from sphinx.application import Sphinx
    from sphinx.util.typing import ExtensionMetadata
#: Exit status of a run the builder called off: nothing was read or written.
CALLED_OFF = 75


def _wait_for_the_builder(app: Sphinx) -> None:
    if os.environ.get(ENV_VAR) != "1":
        return
    word = sys.stdin.readline().strip()
    if word != GO:
        sys.stdout.flush()
        os._exit(CALLED_OFF)  # no cleanup on purpose: nothing may be written


def setup(app: Sphinx) -> ExtensionMetadata:
    app.connect("builder-inited", _wait_for_the_builder, priority=999)
    return {"version": "0.1", "parallel_read_safe": True, "parallel_write_safe": True}
