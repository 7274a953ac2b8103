"""A Sphinx run set up ahead by the warm builder, waiting at its gate for the next build.

Why: in the warm builder a prose edit's Sphinx fork still spends about 0.08 s before it reads a
page: it reads ``conf.py``, runs every extension's ``setup``, loads the pickled environment and
sets up the theme and its templates (``BENCHMARKS.md``, issue 43). None of that depends on the
sources, so the warm builder does it once a build has rendered: it forks a run of that build's
Sphinx command, gated (:mod:`tabbook.render.ext.gate`), which sets itself up and waits. The next
build whose Sphinx command and environment are the same takes it instead of forking its own
(:class:`tabbook.warm.launch.SphinxLauncher`).

What keeps it sound:

- **It reads and writes nothing of the book before it is told to go**, as any gated run: the
  gate is after every ``builder-inited`` handler, before the builder looks at the sources.
- **It is taken only if nothing it read has changed since.** The build that rendered last says
  what Sphinx read besides the sources (:meth:`tabbook.render.sphinx.SphinxRun.inputs`: the site
  stamp, which covers ``conf.py``, ``config.ini``, the render context and the resources; the
  pickled environment's size and time; the bibliographies' sizes and times); the build that
  takes the spare computes the same at its render and calls the spare off when they differ,
  then runs Sphinx afresh.
- **It is used once.** A build takes it by reading its one token from a pipe (one read gets
  it, even between builds running at once); the warm builder replaces a taken spare after the
  build, and ends one that no longer fits (told to stop at its gate: it exits having read nothing).

The spare is the warm builder's child, not the build's: the build learns its exit status from
a pipe the run writes before it ends, and kills it by pid.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterable, Mapping

from tabbook.lifetime import SPHINX_PARENT_ENV
from tabbook.render.sphinx import GATE_ENV, GATE_GO
from tabbook.warm.fork import Running, run_in_fork

#: The token a build reads to take the spare.
TOKEN = b"t"
#: What ends a waiting run without reading anything (any line but ``go``; the gate exits).
CALL_OFF = "off\n"


def comparable(env: Mapping[str, str]) -> dict[str, str]:
    """A Sphinx run's environment less what differs between two runs of one book by design:
    the pid of the process the run must not outlive, and the gate."""
    return {k: v for k, v in env.items() if k not in (SPHINX_PARENT_ENV, GATE_ENV)}


class SpareSphinx:
    """One gated Sphinx run of ``cmd`` (``python -m MODULE ARGS``) in ``env``, forked by the warm
    builder; ``inputs``: what it read besides the sources, as the last render described them."""

    def __init__(self, cmd: list[str], env: Mapping[str, str], inputs: str, close: Iterable[int] = ()) -> None:
        self.cmd = list(cmd)
        self.env = dict(env)
        self.inputs = inputs
        self.token, self._token_write = os.pipe()
        os.write(self._token_write, TOKEN)
        os.set_blocking(self.token, False)
        self.err = tempfile.TemporaryFile()
        gate_read, self.gate = os.pipe()
        self.status, status_write = os.pipe()
        args = self.cmd[3:]

        def sphinx() -> int:
            code = 1
            try:
                from sphinx.cmd.build import build_main

                code = build_main(args)
                return code
            finally:
                os.write(status_write, f"{code}\n".encode())

        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            self.pid = run_in_fork(sphinx, stdio=(gate_read, devnull, self.err.fileno()),
                                   env={**comparable(self.env), GATE_ENV: "1", SPHINX_PARENT_ENV: str(os.getpid())},
                                   close=[self.gate, self.status, self.token, self._token_write, *close])
        finally:
            os.close(gate_read)
            os.close(devnull)
            os.close(status_write)
        # A handle on this very process (the pid may be reaped and reused before it is ended).
        self.pidfd = os.pidfd_open(self.pid) if hasattr(os, "pidfd_open") else -1

    def fits(self, cmd: list[str], env: Mapping[str, str]) -> bool:
        return cmd == self.cmd and comparable(env) == comparable(self.env)

    def claim(self) -> bool:
        """Take the spare for this process's build; False if another build took it first."""
        try:
            return os.read(self.token, 1) == TOKEN
        except (BlockingIOError, OSError):
            return False

    def free(self) -> bool:
        """In the warm builder, while no build runs: whether no build has taken it."""
        if self.claim():
            os.write(self._token_write, TOKEN)
            return True
        return False

    def run(self) -> SpareRun:
        return SpareRun(self)

    def discard(self) -> None:
        """In the warm builder: end it if no build took it, and let go of its pipes."""
        if self.claim():
            try:
                os.write(self.gate, CALL_OFF.encode())
            except OSError:
                pass
        self.release()

    def end(self) -> None:
        """In the warm builder, after the build that took it ended: should that build have been
        killed before it could end the run, the run ends now, not writing on alone."""
        if self.pidfd >= 0:
            try:
                signal.pidfd_send_signal(self.pidfd, signal.SIGKILL)
            except OSError:
                pass  # it ended already
        self.release()

    def release(self) -> None:
        """In the warm builder: its pipes and files go."""
        for fd in (self.gate, self.status, self.token, self._token_write, self.pidfd):
            try:
                if fd >= 0:
                    os.close(fd)
            except OSError:
                pass
        self.err.close()


class SpareRun(Running):
    """A taken spare as :class:`tabbook.render.sphinx.SphinxRun` uses a running Sphinx
    (``communicate``, ``kill``, ``wait``, ``returncode``); ``set_up_for`` is what the spare read
    besides the sources, which the run compares with the build's before letting it go."""

    def __init__(self, spare: SpareSphinx) -> None:
        self.spare = spare
        self.pid = spare.pid
        self.set_up_for = spare.inputs
        self.returncode: int | None = None
        self._told = False

    def _tell(self, word: str) -> None:
        if not self._told:
            self._told = True
            try:
                os.write(self.spare.gate, (word if word.strip() == GATE_GO else CALL_OFF).encode())
            except OSError:
                pass  # it ended already

    def poll(self) -> int | None:
        return self.wait(0) if self.returncode is None and self._ready(0) else self.returncode

    def _ready(self, timeout: float | None) -> bool:
        return bool(select.select([self.spare.status], [], [], timeout)[0])

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            if not self._ready(timeout):
                raise subprocess.TimeoutExpired(["spare sphinx"], timeout or 0)
            said = b""
            while not said.endswith(b"\n"):
                chunk = os.read(self.spare.status, 64)
                if not chunk:  # ended without saying (a signal, or called off at the gate)
                    break
                said += chunk
            self.returncode = int(said) if said.strip().lstrip(b"-").isdigit() else -signal.SIGKILL
        return self.returncode

    def communicate(self, input: str = "", timeout: float | None = None) -> tuple[str, str]:  # noqa: A002
        self._tell(input)
        deadline = None if timeout is None else time.monotonic() + timeout
        self.wait(None if deadline is None else max(0.0, deadline - time.monotonic()))
        err = self.spare.err
        err.seek(0)
        return "", err.read().decode(errors="replace")
