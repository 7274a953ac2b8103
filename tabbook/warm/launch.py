"""Sphinx run in a fork of a warm process, in place of a new interpreter.

:func:`fork_sphinx` is a :data:`tabbook.render.sphinx.Launcher`: the warm builder hands it to the
builds it runs (``build.Options.sphinx``), and each of their Sphinx runs is then a fork of a
process that has Sphinx and the extensions imported, with the same command line, environment,
gate and diagnostics as a new interpreter's run. A fork per run keeps one run's module state out of
the next.
"""

from __future__ import annotations

from collections.abc import Mapping

from tabbook.warm.fork import Forked


def fork_sphinx(cmd: list[str], env: Mapping[str, str]) -> Forked:
    """``cmd`` (``python -m MODULE ARGS``, :func:`tabbook.render.sphinx.sphinx_command`): ``ARGS`` run in a fork."""
    args = cmd[3:]

    def sphinx() -> int:
        from sphinx.cmd.build import build_main

        return build_main(args)

    return Forked(sphinx, env)
