"""``python -m tabbook.render.sphinx_main ARGS``: ``sphinx-build ARGS``, ending without the teardown.

Why: once Sphinx has written its output and returned its status, a new interpreter still spends
a fifth of a second finalising itself: it frees every module and the environment's doctrees one
object at a time (measured on a 10-page book after a one-sentence edit: the run's last output
written 0.87 s after the build started, the process gone 0.21 s later). Nothing in that time
reaches a file. So this entry point runs Sphinx's own ``main``, then what an orderly exit does
that a reader could see (the ``atexit`` handlers, which flush and close logging handlers and
files registered with them; the standard streams), and ends the process there
(:func:`os._exit`), as the warm builder's forks already end (:mod:`tabbook.warm.fork`).

It imports nothing of tabbook: the run's ``conf.py`` and extensions do that themselves.
"""

from __future__ import annotations

import atexit
import os
import sys


def run(argv: list[str]) -> int:
    """Sphinx's exit status for ``argv`` (``sphinx-build``'s arguments), as ``python -m sphinx``
    would end with it: an ``int``, ``SystemExit``'s code (argparse's errors, ``--help``) included."""
    from sphinx.cmd.build import main

    try:
        return main(argv)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)


def end(code: int) -> None:
    """Leave now with ``code``, after the ``atexit`` handlers and with the standard streams flushed."""
    try:
        atexit._run_exitfuncs()  # noqa: SLF001 - what interpreter shutdown would call first
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):  # closed, or the reader went away: nothing to keep
                pass
        os._exit(code)


if __name__ == "__main__":  # pragma: no cover - run as a process; its effects are tested
    end(run(sys.argv[1:]))
