"""A warm builder: ``tabbook build`` run by a process that has tabbook and Sphinx loaded already.

Why: a fresh ``tabbook build`` spends about a second importing Sphinx, myst-nb, the theme and
tabbook's extensions before it can re-render the one page a prose edit changed: half of that
build (issue 18). ``make serve`` keeps a warm process for the live preview; this does the same
for the command line, as Gradle's daemon and mypy's ``dmypy`` do.

How:

- After a build that did not find one, ``tabbook build`` starts a warm builder for the book in the
  background (``python -m tabbook warm --serve SOCKET``: the command line, :mod:`tabbook.cli`,
  hands this module what a fork runs and what to import first, so nothing here imports it). It imports what a build and its Sphinx run import
  (Sphinx, the extensions, the theme, what the last warm run loaded), then listens on a Unix
  socket in a private folder (``$TMPDIR/tabbook-warm-UID/``, mode 0700).
- The next ``tabbook build`` of the same book connects, hands over its arguments, working folder,
  environment and its standard input, output and error (file descriptors passed over the socket),
  and waits. The warm builder forks; the fork runs the build exactly as the command line would, and
  its Sphinx run is a further fork (:data:`tabbook.render.sphinx.IN_PROCESS`). Ctrl-C and SIGTERM
  are passed on to the fork; its exit status is the command's.
- The socket's name is a hash of everything that decides what the loaded code is: the
  interpreter, the book's folder, tabbook's own files and the installed packages' folders. A
  changed builder or a ``pip install`` gives a new name, so a stale builder is never used; it
  ends after :data:`IDLE_SECONDS` without a build.

``TABBOOK_WARM=0`` turns it off, ``=1`` on; by default it is on when standard output is a terminal
and ``$CI`` is unset, so scripts and CI start no background process.
``python -m tabbook warm --stop`` ends the book's warm builder.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import site
import socket
import stat
import struct
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from tabbook.config import Config, load_config

#: What a fork runs: the command line's ``main(argv)``, its exit status returned.
Command = Callable[[list[str]], int]
#: Imports what a build of the book imports (the live preview's ``tabbook.serve.warm_up``).
WarmUp = Callable[[Config], None]

ENV = "TABBOOK_WARM"
#: A warm builder ends after this long without a build.
IDLE_SECONDS = 15 * 60
#: Builds at once; one more is refused (its command line then builds by itself).
MAX_BUILDS = 4
PACKAGE_PARENT = Path(__file__).resolve().parent.parent
#: Set in a warm builder's forks: the command line must neither hand over nor start another.
_INSIDE = False


def enabled() -> bool:
    if _INSIDE:
        return False
    value = os.environ.get(ENV, "")
    if value in ("0", "1"):
        return value == "1"
    return not os.environ.get("CI") and sys.stdout.isatty()


def _folder() -> Path:
    return Path(tempfile.gettempdir()) / f"tabbook-warm-{os.getuid()}"


def _private_folder() -> Path | None:
    """The sockets' folder, made if missing; None if someone else could write into it."""
    folder = _folder()
    try:
        folder.mkdir(mode=0o700, exist_ok=True)
        st = folder.lstat()
    except OSError:
        return None
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o077:
        return None
    return folder


def _code_hash() -> str:
    """tabbook's own files, all of them (code, templates, static files): what a warm builder runs."""
    h = hashlib.sha256()
    package = Path(__file__).resolve().parent
    for folder, dirs, files in os.walk(package):
        dirs[:] = sorted(d for d in dirs if d not in ("__pycache__", "node_modules"))
        for name in sorted(files):
            h.update(name.encode() + b"\0" + Path(folder, name).read_bytes())
    return h.hexdigest()


def socket_path(root: Path) -> Path | None:
    """The book's warm builder's address, for the builder code and packages installed now."""
    folder = _private_folder()
    if folder is None:
        return None
    h = hashlib.sha256()
    for part in (sys.executable, str(root.resolve()), _code_hash()):
        h.update(part.encode() + b"\0")
    # Where packages are installed, by the same reckoning in every process that asks (the
    # command line, a test, a benchmark): a package installed or removed changes its folder's time.
    paths = sysconfig.get_paths()
    entries = [paths["purelib"], paths["platlib"], site.getusersitepackages(),
               *os.environ.get("PYTHONPATH", "").split(os.pathsep)]
    for entry in dict.fromkeys(e for e in entries if e):
        try:
            h.update(f"{entry}:{os.stat(entry).st_mtime_ns}\0".encode())
        except OSError:
            h.update(f"{entry}:-\0".encode())
    return folder / f"{h.hexdigest()[:32]}.sock"


# ---- the command line's side -------------------------------------------------------------------

def _frame(payload: bytes) -> bytes:
    return struct.pack("!I", len(payload)) + payload


def _connect(path: Path) -> socket.socket | None:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(str(path))
    except OSError:
        sock.close()
        return None
    return sock


def _connect_book(root: Path) -> socket.socket | None:
    """A connection to the book's warm builder for the code and packages here, if one listens."""
    path = socket_path(root)
    return _connect(path) if path is not None else None


def hand_over(argv: list[str], root: Path) -> int | None:
    """Run this build in the book's warm builder; its exit status, or None when there is none."""
    sock = _connect_book(root)
    if sock is None:
        return None
    with sock:
        umask = os.umask(0o022)
        os.umask(umask)
        request = json.dumps({"argv": argv, "cwd": os.getcwd(), "env": dict(os.environ),
                              "umask": umask}).encode()
        sys.stdout.flush()
        sys.stderr.flush()
        try:
            socket.send_fds(sock, [b"t"], [0, 1, 2])
            sock.sendall(_frame(request))
        except OSError:
            return None  # it ended just now: build here
        reader = sock.makefile("rb")
        first = reader.readline()
        if not first.startswith(b"pid "):
            return None  # it refused (ending, or the request could not be read): build here
        pid = int(first.split()[1])

        def forward(signum: int, frame: object) -> None:
            try:
                os.kill(pid, signum)
            except ProcessLookupError:
                pass

        previous = {sig: signal.signal(sig, forward) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            last = reader.readline()
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
    if last.startswith(b"rc "):
        return int(last.split()[1])
    print(f"tabbook: the warm builder's build (pid {pid}) ended without an exit status; "
          f"{ENV}=0 builds without it", file=sys.stderr)
    return 1


def start(root: Path) -> None:
    """Start the book's warm builder in the background, if none is running (it outlives this build)."""
    path = socket_path(root)
    if path is None or running(root):
        return
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (str(PACKAGE_PARENT), os.environ.get("PYTHONPATH")) if p)}
    env.pop(ENV, None)
    log = open(root / "build" / "warm.log", "ab") if (root / "build").is_dir() else subprocess.DEVNULL
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
        sock.sendall(b"p")  # a ping, not a build: it hangs up
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
        socket.send_fds(sock, [b"s"], [])
        sock.recv(1)
    return True


# ---- the warm builder's side -------------------------------------------------------------------

def _remember_entry_points() -> None:
    """Read the installed packages' entry points once, for every build this process forks.

    Sphinx, myst-nb, Pygments and pybtex look up their plugins on every run, and each lookup
    reads every installed distribution's metadata again (~0.1 s of a one-page re-render). The
    installed packages cannot change under a warm builder: a change gives another socket name
    (:func:`socket_path`), so this process is never asked to build with them.
    """
    import importlib.metadata as stdlib_metadata

    modules: list = [stdlib_metadata]
    try:
        import importlib_metadata  # the backport myst-nb uses

        modules.append(importlib_metadata)
    except ImportError:
        pass
    for module in modules:
        every = module.entry_points()

        def entry_points(*, _every=every, **params):  # noqa: ANN001, ANN202 - the library's own signature
            return _every.select(**params) if params else _every

        module.entry_points = entry_points


def _warm_up(config: Config, warm_up: WarmUp) -> None:
    """Import what a build of the book and its Sphinx run import (``warm_up``: the live
    preview's, which includes what the book's last HTML run recorded)."""
    _remember_entry_points()  # before the plugins' modules take their own references
    _import_learned(config, warm_up)


#: The record of the last HTML run's imports, as last imported from: its modification time.
_learned: int | None = None


def _import_learned(config: Config, warm_up: WarmUp) -> None:
    """Warm up again when the book's last HTML run has recorded new imports (render/ext): between
    builds, so that the next fork starts with them loaded."""
    from tabbook.render.sphinx import learned_modules

    global _learned
    try:
        mtime = learned_modules(config).stat().st_mtime_ns
    except OSError:
        mtime = None
    if _learned is None or mtime != _learned:
        warm_up(config)
        _learned = mtime


def _read_frame(conn: socket.socket) -> bytes:
    head = b""
    while len(head) < 4:
        chunk = conn.recv(4 - len(head))
        if not chunk:
            raise EOFError
        head += chunk
    (size,) = struct.unpack("!I", head)
    body = bytearray()
    while len(body) < size:
        chunk = conn.recv(min(1 << 16, size - len(body)))
        if not chunk:
            raise EOFError
        body += chunk
    return bytes(body)


def _build_in_fork(conn: socket.socket, fds: list[int], command: Command) -> None:
    """In a fork of the warm builder: become the command line that connected, build, report."""
    import io
    import traceback

    global _INSIDE
    code = 1
    try:
        request = json.loads(_read_frame(conn))
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        os.chdir(request["cwd"])
        os.umask(request["umask"])  # files are made as the command line would make them
        os.environ.clear()
        os.environ.update(request["env"])
        os.environ[ENV] = "0"  # whatever this build starts hands nothing back to its own builder
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, signal.default_int_handler)
        sys.stdin = io.TextIOWrapper(io.FileIO(0, "r", closefd=False))
        sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), line_buffering=True)
        sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), write_through=True)
        sys.argv = [sys.argv[0], *request["argv"]]
        _INSIDE = True
        from tabbook.render import sphinx

        sphinx.IN_PROCESS = True
        conn.sendall(f"pid {os.getpid()}\n".encode())
        try:
            code = command(request["argv"])
        except SystemExit as exc:  # argparse's errors and --help
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:  # noqa: BLE001 - shown to the user, as a crashed command would show it
        traceback.print_exc()
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
            conn.sendall(f"rc {code}\n".encode())
        finally:
            os._exit(code)


def _reap(children: set[int]) -> None:
    for pid in list(children):
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            done = pid
        if done:
            children.discard(pid)


def serve_forever(path: Path, root: Path, command: Command, warm_up: WarmUp) -> int:
    """The warm builder: import, listen, fork one child per build (which runs ``command`` as
    the command line would); end when idle or asked to."""
    import gc

    os.chdir(root)
    config = load_config(root)
    _warm_up(config, warm_up)
    # What was imported stays: out of the collector's sight, a fork's collections do not touch
    # (and so copy) every page of it.
    gc.collect()
    gc.freeze()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    if path.exists():
        other = _connect(path)
        if other is not None:
            other.close()
            return 0  # another one is already serving this book
        path.unlink(missing_ok=True)
    try:
        listener.bind(str(path))
    except OSError:
        return 0  # another one started meanwhile
    inode = path.stat().st_ino
    listener.listen(8)
    listener.settimeout(1.0)  # also how soon after a build it imports what that build learned
    children: set[int] = set()
    last = time.monotonic()
    try:
        while True:
            _reap(children)
            if not children:
                if time.monotonic() - last > IDLE_SECONDS:
                    return 0
                _import_learned(config, warm_up)  # what the last build's Sphinx run loaded, if new
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            conn.settimeout(None)
            with conn:
                try:
                    msg, fds, _, _ = socket.recv_fds(conn, 1, 3)
                except OSError:
                    continue
                if msg == b"s":
                    conn.sendall(b"k")
                    return 0
                if msg != b"t" or len(fds) != 3 or len(children) >= MAX_BUILDS:
                    for fd in fds:
                        os.close(fd)
                    continue
                last = time.monotonic()
                sys.stdout.flush()
                sys.stderr.flush()
                pid = os.fork()
                if pid == 0:
                    listener.close()
                    _build_in_fork(conn, fds, command)
                children.add(pid)
                for fd in fds:
                    os.close(fd)
    finally:
        listener.close()
        try:
            if path.stat().st_ino == inode:  # not a successor's socket
                path.unlink()
        except OSError:
            pass

