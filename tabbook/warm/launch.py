"""Sphinx run in a fork of a warm process, in place of a new interpreter.

:data:`fork_sphinx` is a :data:`tabbook.render.sphinx.Launcher`: the warm builder hands it to the
builds it runs (``build.Options.sphinx``), and each of their Sphinx runs is then a fork of a
process that has Sphinx and the extensions imported, with the same command line, environment,
gate and diagnostics as a new interpreter's run. A fork per run keeps one run's module state out of
the next. When the warm builder has a run of the same command set up ahead
(:mod:`tabbook.warm.spare`), a build takes that one instead; and a build that rendered says
here what it ran (:meth:`SphinxLauncher.rendered`), so that the warm builder sets up the next.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypedDict

from tabbook.warm.fork import Forked
from tabbook.warm.spare import SpareRun, SpareSphinx


class SphinxRun(TypedDict):
    """A render's Sphinx run as the next spare is set up for it (the fork tells the warm builder)."""

    cmd: list[str]
    env: dict[str, str]
    inputs: str


class SphinxLauncher:
    """How the warm builder's builds start Sphinx: the spare set up ahead when it fits, else a fork."""

    def __init__(self) -> None:
        #: Set in the warm builder; a build's fork sees it as it was when the build forked.
        self.spare: SpareSphinx | None = None
        #: Set in a build's fork by its last successful render: what the next spare should run.
        self.last: SphinxRun | None = None

    def __call__(self, cmd: list[str], env: Mapping[str, str]) -> Forked | SpareRun:
        spare = self.spare
        if spare is not None and spare.fits(cmd, env) and spare.claim():
            return spare.run()
        args = cmd[3:]  # cmd: python -m MODULE ARGS (tabbook.render.sphinx.sphinx_command)

        def sphinx() -> int:
            from sphinx.cmd.build import build_main

            return build_main(args)

        return Forked(sphinx, env)

    def rendered(self, cmd: list[str], env: Mapping[str, str], inputs: str) -> None:
        """A run of ``cmd`` in ``env`` rendered; ``inputs``: what it read besides the sources."""
        self.last = {"cmd": list(cmd), "env": dict(env), "inputs": inputs}


#: The warm builder's launcher (one per process).
fork_sphinx = SphinxLauncher()
