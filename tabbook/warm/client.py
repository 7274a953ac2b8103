"""The command line's side of the warm builder: find the book's, hand a build over, start one.

A ``tabbook build`` at a terminal connects to the book's warm builder (:mod:`.server`), checks
that it runs as the same user (:func:`tabbook.warm.address.peer`), hands over its arguments,
working folder, environment, umask and its standard input, output and error (file descriptors
passed over the socket), and waits for the build's exit status. Meanwhile it forwards the
signals a terminal or a job control sends it (Ctrl-C, SIGTERM, SIGHUP, Ctrl-Z and ``fg``) to the
build's whole process group, its Sphinx fork included.

Nothing waits forever on a builder that does not answer: connecting and handing over have
timeouts (:data:`CONNECT_TIMEOUT`, :data:`HANDOVER_TIMEOUT`); past them the build says so,
ends that builder and builds by itself.

``TABBOOK_WARM=0`` turns it off, ``=1`` on; by default it is on when standard output is a terminal
and ``$CI`` is unset, so scripts and CI start no background process.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path

from tabbook.files import BuildDir
from tabbook.warm.address import PACKAGE, peer, same_user, socket_path

ENV = "TABBOOK_WARM"
#: Seconds to wait for the connection itself (the builder accepts from its backlog).
CONNECT_TIMEOUT = 2.0
#: Seconds from handing a build over to the builder saying it runs it (it forks at once; it may
#: first be importing what the last build loaded).
HANDOVER_TIMEOUT = 10.0
#: The signals forwarded to the build while it runs in the warm builder.
FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGCONT)


def enabled() -> bool:
    value = os.environ.get(ENV, "")
    if value in ("0", "1"):
        return value == "1"
    return not os.environ.get("CI") and sys.stdout.isatty()


def frame(payload: bytes) -> bytes:
    """A message on the socket: its length, then its bytes."""
    return struct.pack("!I", len(payload)) + payload


def connect(path: Path, timeout: float = CONNECT_TIMEOUT) -> socket.socket | None:
    """A connection to the warm builder at ``path`` if one listens there as this user."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        sock.connect(str(path))
        if not same_user(peer(sock)[1]):
            raise ConnectionRefusedError("another user's process")
    except OSError:
        sock.close()
        return None
    return sock


def _connect_book(root: Path) -> socket.socket | None:
    path = socket_path(root)
    return connect(path) if path is not None else None


def hand_over(argv: list[str], root: Path, timeout: float = HANDOVER_TIMEOUT) -> int | None:
    """Run this build in the book's warm builder; its exit status, or None when there is none
    (or it did not take the build within ``timeout`` seconds: then this process builds)."""
    path = socket_path(root)
    sock = connect(path) if path is not None else None
    if sock is None or path is None:
        return None
    with sock:
        builder_pid = peer(sock)[0]
        umask = os.umask(0o022)
        os.umask(umask)
        request = json.dumps({"argv": argv, "cwd": os.getcwd(), "env": dict(os.environ),
                              "umask": umask}).encode()
        sys.stdout.flush()
        sys.stderr.flush()
        reader = sock.makefile("rb")
        try:
            sock.settimeout(timeout)
            socket.send_fds(sock, [b"t"], [0, 1, 2])
            sock.sendall(frame(request))
            first = reader.readline()
        except TimeoutError:
            _end_wedged(builder_pid, path, timeout)
            return None
        except OSError:
            return None  # it ended just now: build here
        if not first.startswith(b"pid "):
            return None  # it refused (ending, busy, or the request could not be read): build here
        sock.settimeout(None)  # a build takes as long as it takes
        return _wait_for_build(int(first.split()[1]), reader)


def _end_wedged(pid: int, path: Path, timeout: float) -> None:
    """A builder that did not take a build in time (stopped, or stuck) is ended, so that no
    later build waits for it either; the next build starts a fresh one."""
    print(f"tabbook: the warm builder (pid {pid}) did not take the build within {timeout:g}s; "
          f"ended it, building without it", file=sys.stderr, flush=True)
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass
    path.unlink(missing_ok=True)


def _wait_for_build(pid: int, reader) -> int:  # noqa: ANN001 - the socket's binary reader
    """Wait for the build (process group ``pid``) to end, forwarding signals to it; its status."""

    def forward(signum: int, frame: object) -> None:
        try:
            os.killpg(pid, signum)
        except OSError:
            pass

    def suspend(signum: int, frame: object) -> None:  # Ctrl-Z: the build stops, then this process
        forward(signal.SIGSTOP, frame)
        signal.signal(signal.SIGTSTP, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTSTP)  # stopped here until `fg` or `bg` continues it
        signal.signal(signal.SIGTSTP, suspend)
        forward(signal.SIGCONT, frame)

    previous = {sig: signal.signal(sig, forward) for sig in FORWARDED}
    previous[signal.SIGTSTP] = signal.signal(signal.SIGTSTP, suspend)
    try:
        last = reader.readline()
        if not last.startswith(b"rc "):
            # The warm builder ended before its build did: wait for the build's processes.
            while _group_alive(pid):
                time.sleep(0.1)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if last.startswith(b"rc "):
        return int(last.split()[1])
    print(f"tabbook: the warm builder ended before its build (pid {pid}) did: its exit status is "
          f"unknown; {ENV}=0 builds without it", file=sys.stderr)
    return 1


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def start(root: Path) -> None:
    """Start the book's warm builder in the background, if none is running (it outlives this build)."""
    path = socket_path(root)
    if path is None or running(root):
        return
    # The child's own environment, built here: it imports tabbook from this checkout.
    env = {k: v for k, v in os.environ.items() if k != ENV}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(PACKAGE.parent), os.environ.get("PYTHONPATH")) if p)
    build = BuildDir(root / "build")
    log = open(build.warm_log, "ab") if build.path.is_dir() else subprocess.DEVNULL
    try:
        subprocess.Popen([sys.executable, "-m", "tabbook", "-C", str(root.resolve()), "warm", "--serve", str(path)],
                         cwd=root, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                         start_new_session=True)
    finally:
        if log is not subprocess.DEVNULL:
            log.close()


def running(root: Path) -> bool:
    """Whether the book's warm builder (for this builder code) accepts builds."""
    sock = _connect_book(root)
    if sock is None:
        return False
    with sock:
        try:
            sock.sendall(b"p")  # a ping, not a build: it hangs up
        except OSError:
            return False
    return True


def wait_ready(root: Path, timeout: float = 60.0) -> bool:
    """Wait until the book's warm builder accepts builds (for benchmarks and tests)."""
    deadline = time.monotonic() + timeout
    while not running(root):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def stop(root: Path) -> bool:
    """End the book's warm builder (for this builder code); whether one was running."""
    sock = _connect_book(root)
    if sock is None:
        return False
    with sock:
        try:
            socket.send_fds(sock, [b"s"], [])
            sock.recv(1)
        except OSError:
            return False
    return True
