"""The one fork routine of the warm processes: run a function in a fork of this process, with
the standard streams, environment, folder and umask of the process it stands in for.

A fork of a process that has Sphinx and tabbook imported starts a build or a Sphinx run without
a second of imports. What a new interpreter would get from ``subprocess`` (its streams, ``env``,
``cwd``, default signal handling), the fork sets for itself here before it runs the function; its
exit status is the function's (``128 + N`` for an interrupting signal N, 1 for an exception,
whose traceback goes to its standard error as a crashed command's would).
"""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping

from tabbook.errors import interrupted_status, raise_interrupted

#: What the function a fork runs returns: its exit status (None: 0).
Work = Callable[[], "int | None"]

#: Signals a fork turns into :class:`tabbook.errors.Interrupted` (Ctrl-C into KeyboardInterrupt):
#: its clean-up runs, as in a command that got them.
INTERRUPTING = (signal.SIGTERM, signal.SIGHUP)
#: Signals a fork handles as a new process does (the warm builder's own handlers undone).
DEFAULTED = (signal.SIGCHLD, signal.SIGTSTP, signal.SIGCONT, signal.SIGTTIN, signal.SIGTTOU)
BLOCKED = {signal.SIGINT, *INTERRUPTING}


def exit_status(wait_status: int) -> int:
    """A :func:`os.waitpid` status as a shell reports it: the exit code, or 128 + N for signal N."""
    code = os.waitstatus_to_exitcode(wait_status)
    return 128 - code if code < 0 else code


def run_in_fork(work: Work, *, stdio: tuple[int, int, int] | None = None,
                env: Mapping[str, str] | None = None, cwd: str | None = None, umask: int | None = None,
                new_group: bool = False, close: Iterable[int] = ()) -> int:
    """Run ``work()`` in a fork of this process; the fork's pid (the caller waits for it).

    ``stdio``: the file descriptors that become the fork's standard input, output and error
    (closed in the fork once copied there, when above 2); None keeps this process's.
    ``env``, ``cwd``, ``umask``: the fork's, as ``subprocess`` gives a child its own (None keeps
    this process's). ``new_group``: the fork leads a process group of its own, so that one
    signal to the group reaches everything the work starts (a build's Sphinx fork included).
    ``close``: descriptors of this process the fork must not keep (a listening socket).
    """
    sys.stdout.flush()
    sys.stderr.flush()
    # Until the fork has its own handlers, a signal waits: one that came between the fork and
    # them would unwind this process's code (the warm builder's loop) in the fork.
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, BLOCKED)
    pid = os.fork()
    if pid:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        if new_group:
            try:
                os.setpgid(pid, pid)  # also here, so that a signal sent right away finds the group
            except OSError:
                pass
        return pid
    code = 1
    try:  # pragma: no cover - runs in the fork; its effects are tested
        if new_group:
            os.setpgid(0, 0)
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        for sig in INTERRUPTING:
            signal.signal(sig, raise_interrupted)
        for sig in DEFAULTED:
            signal.signal(sig, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        for fd in close:
            os.close(fd)
        if stdio is not None:
            for target, fd in enumerate(stdio):
                os.dup2(fd, target)
            for fd in set(stdio) - {0, 1, 2}:
                os.close(fd)
            sys.stdin = io.TextIOWrapper(io.FileIO(0, "r", closefd=False))
            sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), line_buffering=True)
            sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), write_through=True)
        if cwd is not None:
            os.chdir(cwd)
        if umask is not None:
            os.umask(umask)
        if env is not None:  # the fork's own environment, as subprocess's env= gives a child one
            os.environ.clear()
            os.environ.update(env)
        result = work()
        code = result if isinstance(result, int) else 0
    except SystemExit as exc:  # argparse's errors and --help
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except KeyboardInterrupt as exc:
        code = interrupted_status(exc)
    except BaseException:  # noqa: BLE001 - shown as a crashed command would show it
        import traceback

        traceback.print_exc()
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)
    raise AssertionError("unreachable")  # pragma: no cover


def wait(pid: int) -> int:
    """Wait for a fork to end; its exit status (:func:`exit_status`)."""
    while True:
        try:
            _, status = os.waitpid(pid, 0)
        except InterruptedError:  # pragma: no cover - Python retries waitpid itself
            continue
        return exit_status(status)


class Running:
    """A process this one runs a build's Sphinx in (a fork, or a spare it took): its pid, and
    ``returncode`` once it is known; :meth:`kill` ends it, as :class:`subprocess.Popen`'s does."""

    pid: int
    returncode: int | None

    def kill(self) -> None:
        if self.returncode is None:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


class Forked(Running):
    """A function run in a fork, with the parts of :class:`subprocess.Popen` that
    :class:`tabbook.render.sphinx.SphinxRun` uses (``communicate``, ``kill``, ``wait``,
    ``returncode``): standard input is a pipe, standard output is discarded, standard error is
    kept for :meth:`communicate`."""

    def __init__(self, work: Work, env: Mapping[str, str]) -> None:
        self.returncode: int | None = None
        self._err = tempfile.TemporaryFile()
        read_end, self._input = os.pipe()
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            self.pid = run_in_fork(work, stdio=(read_end, devnull, self._err.fileno()), env=env,
                                   close=[self._input])
        finally:
            os.close(read_end)
            os.close(devnull)

    def poll(self) -> int | None:
        if self.returncode is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.returncode = exit_status(status)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.returncode is None:
            if deadline is None:
                self.returncode = wait(self.pid)
            elif self.poll() is None:
                if time.monotonic() > deadline:
                    raise subprocess.TimeoutExpired(["forked"], timeout or 0)
                time.sleep(0.01)
        return self.returncode

    def communicate(self, input: str = "", timeout: float | None = None) -> tuple[str, str]:  # noqa: A002
        if self._input >= 0:
            try:
                os.write(self._input, input.encode())
            except BrokenPipeError:
                pass  # it ended already
            os.close(self._input)
            self._input = -1
        self.wait(timeout)
        self._err.seek(0)
        err = self._err.read().decode(errors="replace")
        self._err.close()
        return "", err

