"""The Python entry: build a book from a script or a notebook as the command line does.

``tabbook.api.build_book(root, ["html"])`` is ``tabbook -C root build html``: the same parser
reads the same options, so the two cannot drift apart, and the same error edge reports a
book's problems as ``file.md:LINE: message`` on stderr and returns the exit status (0 when
the build succeeded) instead of raising.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path


def build_book(root: str | os.PathLike[str] = ".", targets: Sequence[str] = ("html",), *,
               tab: str | None = None, overlay: str | os.PathLike[str] | None = None,
               execute: bool | None = None, strict: bool = False, external: bool = False,
               options: Sequence[str] = ()) -> int:
    """Build the book in ``root``: ``targets`` are d2lbook's (``eval``, ``rst``, ``html``, ``pdf``,
    ``pkg``, ``lib``, ``slides``, ``linkcheck``, ``all``); ``tab`` runs one tab's code only;
    ``overlay`` names a tabbook.ini; ``execute`` overrides ``[build] eval_notebook``; ``strict``
    turns warnings into errors; ``external`` makes ``linkcheck`` ask external servers;
    ``options`` are more ``tabbook build`` options as words (``["--jobs", "2"]``).
    Returns the exit status the ``tabbook`` command would."""
    from tabbook.cli import main

    argv = ["-C", str(Path(root))]
    if overlay is not None:
        argv += ["--overlay", str(overlay)]
    argv += ["build", *targets]
    if tab is not None:
        argv += ["--tab", tab]
    if execute is not None:
        argv.append("--execute" if execute else "--no-execute")
    if strict:
        argv.append("--strict")
    if external:
        argv.append("--external")
    return main([*argv, *options])
