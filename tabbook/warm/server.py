"""The warm builder: a background process per book that runs, in forks of itself, the builds
that ``tabbook build`` commands hand over (:mod:`.client`).

It is started by a build that found none (``python -m tabbook warm --serve SOCKET``), imports
what a build and its Sphinx run import (:mod:`.preload`), then listens on the book's socket
(:mod:`.address`). For each build it:

- refuses a peer of another user (``SO_PEERCRED``) and a request that does not arrive within
  :data:`REQUEST_TIMEOUT` seconds (a stuck client must not stop it serving others). It speaks
  nothing HTTP-like: the socket is a Unix socket in a private folder, which no browser page can
  reach, so there is no ``Host`` or ``Origin`` to check (``tests/test_serve_guard.py``); a
  connection that does not open with its own request byte is closed unread;
- forks (:func:`tabbook.warm.fork.run_in_fork`): the fork takes the command line's standard
  streams, folder, umask and environment, leads a process group of its own (the command line
  forwards signals to the group: the build's Sphinx fork stops with it) and runs the command
  (``cli.main``, handed in by the command line so that nothing here imports it) with
  :func:`tabbook.warm.launch.fork_sphinx` as its way to run Sphinx;
- tells the command line the fork's pid at once, and its exit status when it ends, as a shell
  would report it (``128 + N`` when a signal N ended it); what is left of its process group
  then (a Sphinx fork, when a signal killed the build) is killed.

Once no build runs, it keeps ready what the last builds will want next: a kernel of each kind
they executed (:class:`tabbook.execute.spares.Pool`) and a Sphinx run of the command the last
render ran, set up and waiting at its gate (:mod:`.spare`).

Between builds it imports what the last HTML run recorded. It ends after :data:`IDLE_SECONDS`
without a build, or when asked (``tabbook warm --stop``).
"""

from __future__ import annotations

import gc
import json
import os
import selectors
import signal
import socket
import struct
import sys
import time
from pathlib import Path
from typing import Protocol

from tabbook.config import load_config
from tabbook.execute import spares
from tabbook.render.sphinx import Launcher
from tabbook.warm.address import peer, same_user
from tabbook.warm.client import connect
from tabbook.warm.fork import exit_status, run_in_fork
from tabbook.warm.launch import SphinxRun, fork_sphinx
from tabbook.warm.preload import Preloaded, remember_entry_points
from tabbook.warm.spare import SpareSphinx

#: A warm builder ends after this long without a build.
IDLE_SECONDS = 15 * 60
#: Builds at once; one more is refused (its command line then builds by itself).
MAX_BUILDS = 4
#: Seconds a connected command line has to send its request.
REQUEST_TIMEOUT = 5.0
#: The most a fork says of the kernels to keep ready (a pipe's buffer holds it without a reader).
ASK_BYTES = 60_000


class Command(Protocol):
    """What a fork runs: the command line's ``main``, with the way to run Sphinx; its exit status."""

    def __call__(self, argv: list[str], *, sphinx: Launcher, kernels: spares.Pool) -> int: ...


def read_frame(conn: socket.socket) -> bytes:
    def exactly(size: int) -> bytes:
        data = bytearray()
        while len(data) < size:
            chunk = conn.recv(min(1 << 16, size - len(data)))
            if not chunk:
                raise EOFError
            data += chunk
        return bytes(data)

    (size,) = struct.unpack("!I", exactly(4))
    return exactly(size)


def _log(message: str) -> None:
    print(f"[warm] {message}", file=sys.stderr, flush=True)


class Server:
    """The accept loop and the builds it runs: ``builds`` maps each fork's pid to its command
    line's connection, on which its exit status is sent when the fork is reaped."""

    def __init__(self, listener: socket.socket, command: Command, preloaded: Preloaded) -> None:
        self.listener = listener
        self.command = command
        self.preloaded = preloaded
        self.builds: dict[int, socket.socket] = {}
        # Kernels started ahead (execute/spares.py), one of each kind the builds asked for: a
        # fork takes from the pool as it was when it forked, and says on its pipe (``asks``)
        # which kinds the next build should find; the pool is topped up once no build runs.
        self.kernels = spares.Pool()
        self.asks: dict[int, int] = {}  # a fork's pid -> the read end of its pipe
        # The Sphinx command the last render ran (its cmd, env and inputs), and its run set up
        # ahead (tabbook.warm.spare), which the forks see as fork_sphinx.spare.
        self.sphinx_wanted: SphinxRun | None = None
        self.wake_read, self.wake_write = os.pipe()
        os.set_blocking(self.wake_read, False)
        os.set_blocking(self.wake_write, False)

    def run(self) -> None:
        signal.set_wakeup_fd(self.wake_write)  # a fork's end (SIGCHLD) wakes the loop at once
        signal.signal(signal.SIGCHLD, lambda signum, frame: None)
        selector = selectors.DefaultSelector()
        selector.register(self.listener, selectors.EVENT_READ, "accept")
        selector.register(self.wake_read, selectors.EVENT_READ, "reap")
        last = time.monotonic()
        try:
            while True:
                self._reap()
                if not self.builds:
                    if time.monotonic() - last > IDLE_SECONDS:
                        return
                    self.preloaded.refresh()  # what the last build's Sphinx run loaded, if new
                for key, _ in selector.select(timeout=1.0):
                    if key.data == "reap":
                        try:
                            while os.read(self.wake_read, 512):
                                pass
                        except BlockingIOError:
                            pass
                    elif self._accept():
                        last = time.monotonic()
                    elif self._stopping:
                        return
        finally:
            signal.set_wakeup_fd(-1)
            selector.close()
            for conn in self.builds.values():
                conn.close()
            self.kernels.close()
            if fork_sphinx.spare is not None:
                fork_sphinx.spare.discard()
                fork_sphinx.spare = None

    _stopping = False

    def _accept(self) -> bool:
        """Take one connection; whether it started a build."""
        try:
            conn, _ = self.listener.accept()
        except OSError:
            return False
        fds: list[int] = []
        try:
            conn.settimeout(REQUEST_TIMEOUT)
            pid, uid = peer(conn)
            if not same_user(uid):
                _log(f"refused a connection from pid {pid}: user {uid}, not {os.getuid()}")
                return False
            msg, fds, _, _ = socket.recv_fds(conn, 1, 3)
            if msg == b"s":
                conn.sendall(b"k")
                self._stopping = True
                return False
            if msg != b"t" or len(fds) != 3 or len(self.builds) >= MAX_BUILDS:
                return False  # a ping, or one build too many: that command line builds by itself
            self._fork(conn, fds, json.loads(read_frame(conn)))
            return True
        except (OSError, EOFError, ValueError, KeyError, TypeError) as exc:
            _log(f"a request was not read ({exc.__class__.__name__}: {exc}); its command line builds by itself")
            return False
        finally:
            for fd in fds:
                os.close(fd)
            if not any(c is conn for c in self.builds.values()):
                conn.close()

    def _fork(self, conn: socket.socket, fds: list[int], request: dict) -> None:
        argv = list(request["argv"])

        ask_read, ask_write = os.pipe()

        def build() -> int:
            sys.argv = [sys.argv[0], *argv]
            status = self.command(argv, sphinx=fork_sphinx, kernels=self.kernels)
            if status < 128:  # not a build a signal stopped: its author goes on editing
                said = json.dumps({"kernels": [[k.kernel_name, k.cwd, k.env] for k in self.kernels.wanted.values()],
                                   "sphinx": fork_sphinx.last}).encode()
                if len(said) < ASK_BYTES:  # the pipe holds it all: the builder reads it once this fork ends
                    os.write(ask_write, said)
            return status

        others = [c.fileno() for c in self.builds.values()] + list(self.asks.values())
        try:
            pid = run_in_fork(build, stdio=(fds[0], fds[1], fds[2]), env=request["env"], cwd=request["cwd"],
                              umask=request["umask"], new_group=True,
                              close=[self.listener.fileno(), conn.fileno(), self.wake_read, self.wake_write,
                                     ask_read, *others])
        except BaseException:
            os.close(ask_read)
            raise
        finally:
            os.close(ask_write)
        self.builds[pid] = conn
        self.asks[pid] = ask_read
        try:
            conn.settimeout(REQUEST_TIMEOUT)
            conn.sendall(f"pid {pid}\n".encode())
        except OSError:
            pass  # the command line is gone: the build still runs and is reaped

    def _heed(self, pid: int) -> None:
        """What the ended fork asked for: the kinds of kernel to keep ready; once no build
        runs, the pool is topped up (a kernel starting never slows a build down)."""
        fd = self.asks.pop(pid, None)
        if fd is None:
            return
        try:
            os.set_blocking(fd, False)
            said = b""
            while chunk := os.read(fd, 65536):
                said += chunk
        except (BlockingIOError, OSError):
            pass
        finally:
            os.close(fd)
        try:
            asked = json.loads(said or b"{}")
            for name, cwd, env in asked.get("kernels", []):
                self.kernels.want(spares.Kind(name, cwd, tuple((k, v) for k, v in env)))
            if asked.get("sphinx"):
                self.sphinx_wanted = asked["sphinx"]
        except (ValueError, TypeError, AttributeError):
            pass
        if not self.builds:
            try:
                self.kernels.top_up()
            except OSError as exc:
                _log(f"kernels were not started ahead ({exc})")
            self._top_up_sphinx()

    def _top_up_sphinx(self) -> None:
        """Keep one Sphinx run of the last render's command set up ahead: a taken one is
        replaced, one set up for another command or other inputs is ended first."""
        spare, wanted = fork_sphinx.spare, self.sphinx_wanted
        if spare is not None and not spare.free():  # a build took it: it has ended, or ends now
            spare.end()
            fork_sphinx.spare = spare = None
        if spare is not None and (wanted is None or (spare.cmd, spare.env, spare.inputs)
                                  != (wanted["cmd"], wanted["env"], wanted["inputs"])):
            spare.discard()
            fork_sphinx.spare = spare = None
        if spare is None and wanted is not None:
            try:
                fork_sphinx.spare = SpareSphinx(wanted["cmd"], wanted["env"], wanted["inputs"],
                                                close=[self.listener.fileno(), self.wake_read, self.wake_write,
                                                       *self.kernels.fds()])
            except OSError as exc:
                _log(f"Sphinx was not set up ahead ({exc})")

    def _reap(self) -> None:
        while self.builds:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                pid, status = 0, 0
            if not pid:
                return
            conn = self.builds.pop(pid, None)
            if conn is None:
                continue
            self._heed(pid)
            try:  # whatever the build left in its group (its Sphinx fork, if a signal ended it) ends too
                os.killpg(pid, signal.SIGKILL)
            except OSError:
                pass
            with conn:
                try:
                    conn.sendall(f"rc {exit_status(status)}\n".encode())
                except OSError:
                    pass


def serve_forever(path: Path, root: Path, command: Command) -> int:
    """The warm builder of the book at ``root``, listening at ``path``: import, listen, fork one
    child per build (which runs ``command``); end when idle or asked to."""
    os.chdir(root)
    preloaded = Preloaded(load_config(root))
    remember_entry_points()  # before the plugins' modules take their own references
    preloaded.refresh()
    # What was imported stays: out of the collector's sight, a fork's collections do not touch
    # (and so copy) every page of it.
    gc.collect()
    gc.freeze()
    if path.exists():
        other = connect(path)
        if other is not None:
            other.close()
            return 0  # another one is already serving this book
        path.unlink(missing_ok=True)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        listener.bind(str(path))
    except OSError:
        listener.close()
        return 0  # another one started meanwhile
    inode = path.stat().st_ino
    listener.listen(8)
    try:
        Server(listener, command, preloaded).run()
    finally:
        listener.close()
        try:
            if path.stat().st_ino == inode:  # not a successor's socket
                path.unlink()
        except OSError:
            pass
    return 0
