"""Where a book's warm builder listens, and who may talk to it.

The socket lives in a private folder (``$TMPDIR/tabbook-warm-UID/``, mode 0700, owned by the
user) and both ends check the other's user id on the connection itself (``SO_PEERCRED``): a
build hands over its terminal and environment only to a builder of its own user, and the builder
runs builds only for its own user.

The socket's name is a hash of everything that decides what the loaded code is: the interpreter,
the book's folder, tabbook's own files and the installed packages' folders. A changed builder
or a ``pip install`` gives a new name, so a stale builder is never used.
"""

from __future__ import annotations

import hashlib
import os
import site
import socket
import stat
import struct
import sys
import sysconfig
import tempfile
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent


def _folder() -> Path:
    return Path(tempfile.gettempdir()) / f"tabbook-warm-{os.getuid()}"


def private_folder() -> Path | None:
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


def code_hash() -> str:
    """What a warm builder runs: the builder's fingerprint (every file of tabbook, the versions of
    what renders), so a changed builder gets a warm builder of its own."""
    from tabbook.files import builder_fingerprint

    return builder_fingerprint()


def socket_path(root: Path, code: str | None = None) -> Path | None:
    """The book's warm builder's address, for the builder code (``code``: :func:`code_hash`) and
    packages installed now."""
    folder = private_folder()
    if folder is None:
        return None
    h = hashlib.sha256()
    for part in (sys.executable, str(root.resolve()), code if code is not None else code_hash()):
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


def peer(sock: socket.socket) -> tuple[int, int]:
    """The (pid, uid) of the process at the other end of a connected Unix socket (``SO_PEERCRED``:
    the kernel's record of who connected, or who listens, not anything the peer says)."""
    raw = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    pid, uid, _gid = struct.unpack("3i", raw)
    return pid, uid


def same_user(uid: int) -> bool:
    """Whether a peer's user id is this process's: the only peer either end talks to."""
    return uid == os.getuid()
