"""Writing files the one safe way: atomically, under a unique temporary name, with the umask's mode.

Why one module: the builder writes notebooks into the freeze store, ``d2l/*.py``, the pages of
``build/src``, the site's downloads, decks, fonts and a dozen caches. Each used to do its own
"temp file, then rename", several under a fixed ``.<name>.tmp``, which two builds of one book
(a warm builder's fork and the live preview, a test and a benchmark) clobber: one rename then
publishes the other's half-written file, or fails because the other renamed it first. Here the
temporary file is made by :func:`tempfile.mkstemp` in the target's folder (the rename stays on
one file system, so it is atomic), it gets the mode a plain ``open()`` would give (mkstemp
makes it 0600: a web server could not read the site), and it is removed when anything fails,
so a reader sees the old file or the new one, never half of one, and no temporary is left.
The data is synced before the rename and the folder after it (:data:`FSYNC`), so a crash or a
power loss leaves the old file or the new one too, not an empty one under the new name.

It also owns the user-wide cache folder (framework environments, KaTeX), which every process
of every book shares, and the lock that lets one build of a book run at a time
(:func:`book_lock`): unique names keep two writers from publishing each other's half files, but
two builds would still interleave whole stages (one deletes what the other is about to read).
It imports nothing of tabbook: every stage may use it.
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

#: Environment variable that moves the user-wide cache (tests give each book its own).
CACHE_ENV = "TABBOOK_CACHE"


def cache_dir() -> Path:
    """The user-wide cache: ``$TABBOOK_CACHE``, else ``$XDG_CACHE_HOME/tabbook``, else
    ``~/.cache/tabbook``; venvs and KaTeX are kept there once for every book."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV])
    base = os.environ.get("XDG_CACHE_HOME")
    return (Path(base) if base else Path.home() / ".cache") / "tabbook"


def new_file_mode() -> int:
    """The mode ``open()`` gives a new file under this process's umask.

    Why: :func:`tempfile.mkstemp` makes its file 0600, and a rename keeps that; the site's
    notebooks and decks, the store's entries and ``d2l/*.py`` would then be unreadable by a web
    server or another user. Read from ``/proc`` where it can be (setting the umask to read it
    is process-wide, and threads may be creating files meanwhile)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return 0o666 & ~int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return 0o666 & ~mask


#: Whether writes are made durable (``fsync`` of the file before its rename, of its folder after).
#: Why: a rename is atomic for readers, but after a power loss or a kernel crash the file system
#: may have kept the rename and not the data (ext4's delayed allocation: a zero-length entry in
#: ``_freeze/``). The cost is measured by ``bench/fsync.py`` (BENCHMARKS.md); only that benchmark
#: and ``$TABBOOK_NO_FSYNC`` (a throwaway CI build) turn it off.
FSYNC = not os.environ.get("TABBOOK_NO_FSYNC")


def _sync_file(fd: int) -> None:
    if FSYNC:
        os.fsync(fd)


def sync_folder(folder: Path) -> None:
    """Make a rename in ``folder`` durable (its entry written to disk); a no-op where a folder
    cannot be opened for that (some file systems refuse: the rename is still atomic)."""
    if not FSYNC:
        return
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


#: What :func:`_temp_beside` names its files: ``.<target name>.<mkstemp's 8 characters>.tmp``.
TEMP_NAME = re.compile(r"^\..+\.[a-z0-9_]{8}\.tmp$")


def _temp_beside(path: Path) -> tuple[int, Path]:
    """A new, uniquely named file in ``path``'s folder (made if missing), with the umask's mode."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, new_file_mode())
    except BaseException:
        os.close(fd)
        Path(tmp).unlink(missing_ok=True)
        raise
    return fd, Path(tmp)


def write_beside(path: Path, data: str | bytes) -> Path:
    """Write ``data`` (text as UTF-8 with ``\\n`` line ends, or bytes) to a new, uniquely named
    file in ``path``'s folder and return it, for the caller to ``os.replace`` onto ``path``
    (several files written first, then all renamed: ``d2l/``) or to remove. Nothing is left
    behind when writing fails."""
    fd, tmp = _temp_beside(path)
    try:
        if isinstance(data, bytes):
            with os.fdopen(fd, "wb") as fb:
                fb.write(data)
                fb.flush()
                _sync_file(fb.fileno())
        else:
            with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as ft:
                ft.write(data)
                ft.flush()
                _sync_file(ft.fileno())
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return tmp


def write_atomic(path: Path, data: str | bytes) -> None:
    """Write ``data`` (text or bytes) to ``path``: readers never see half a file, and a
    failure (encoding, disk full, Ctrl-C) leaves the old one and no temporary file."""
    tmp = write_beside(path, data)
    try:
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    sync_folder(path.parent)


def write_if_changed(path: Path, data: str | bytes) -> bool:
    """:func:`write_atomic` unless ``path`` already holds ``data``; True if it wrote.

    An unchanged file keeps its modification time, which is what tells Sphinx, the site's
    publication and a browser's cache that nothing needs doing."""
    try:
        if isinstance(data, bytes):
            if path.read_bytes() == data:
                return False
        elif path.read_text(encoding="utf-8") == data:
            return False
    except (OSError, UnicodeDecodeError):
        pass  # missing, unreadable, or not text: write it
    write_atomic(path, data)
    return True


@contextmanager
def atomic_target(path: Path) -> Iterator[Path]:
    """A temporary path beside ``path`` for a writer that wants a file name (fontTools, a
    copy); it replaces ``path`` when the block ends without an error, and is removed if not."""
    fd, tmp = _temp_beside(path)
    os.close(fd)
    try:
        yield tmp
        if FSYNC:
            sync_fd = os.open(tmp, os.O_RDONLY)
            try:
                os.fsync(sync_fd)
            finally:
                os.close(sync_fd)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    sync_folder(path.parent)


def copy_atomic(src: Path, dst: Path) -> None:
    """Copy ``src``'s bytes to ``dst`` atomically (with the umask's mode, not ``src``'s)."""
    with atomic_target(dst) as tmp:
        shutil.copyfile(src, tmp)


# --- one build of a book at a time ---------------------------------------------------------------

#: The lock file in a book's build folder (``build/``); it holds the holder's pid.
LOCK_NAME = ".tabbook.lock"
#: A temporary file older than this, found when the lock is taken, was left by a killed process.
STALE_TEMP_SECONDS = 600.0
#: The stamp of the last sweep: the folders are walked at most once per ``STALE_TEMP_SECONDS``.
SWEPT_NAME = ".tabbook.swept"

_held: dict[Path, tuple[int, int]] = {}  # lock file -> (fd, depth): re-entrant within a process


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


@contextmanager
def book_lock(build_dir: Path, sweep: Iterable[Path] = (), log: Callable[[str], object] = _say) -> Iterator[None]:
    """Hold the book's build lock (``build/.tabbook.lock``, ``fcntl.flock``) for the block.

    Why: every command that writes ``build/``, the freeze store or ``d2l/`` takes it, so a second
    build of the same book (two terminals, ``make serve`` beside ``make html``, a warm builder's
    fork) waits, saying who it waits for, instead of deleting files the first is reading. The
    kernel releases a ``flock`` when its holder dies, so ``kill -9`` leaves no stale lock. It is
    re-entrant in one process (``pdf`` runs a ``build``); a fork inherits it with the process.
    Once the lock is held, temporary files older than :data:`STALE_TEMP_SECONDS` under
    ``sweep`` (a killed build's) are removed: no process writing them can be alive, since
    every writer of those folders holds this lock."""
    path = (build_dir / LOCK_NAME).resolve()
    if path in _held:
        fd, depth = _held[path]
        _held[path] = (fd, depth + 1)
        try:
            yield
        finally:
            _held[path] = (fd, depth)
        return
    fd = _acquire(path, log, "another build of this book")
    _held[path] = (fd, 1)
    try:
        sweep_stale_temps(path.parent, sweep)
        yield
    finally:
        del _held[path]
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


@contextmanager
def exclusive(path: Path, waiting_for: str, log: Callable[[str], object] = _say) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``path`` for the block, saying ``[lock] waiting for
    <waiting_for> (pid N)`` if another process holds it. For what processes of several books
    share (a framework environment in the user-wide cache); not re-entrant."""
    fd = _acquire(path.resolve(), log, waiting_for)
    try:
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def _acquire(path: Path, log: Callable[[str], object], waiting_for: str) -> int:
    """Open and lock ``path``, waiting (once announced) while another process holds it; retry
    when the file was removed or replaced meanwhile (``clean``), so both hold the same inode."""
    said = False
    while True:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                if not said:
                    holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "unknown"
                    log(f"[lock] waiting for {waiting_for} (pid {holder}) to finish; lock: {path}")
                    said = True
                fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                same = os.fstat(fd).st_ino == os.stat(path).st_ino
            except FileNotFoundError:
                same = False
            if same:
                os.ftruncate(fd, 0)
                os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
                return fd
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)  # the file we locked was removed: lock the one now there


def sweep_stale_temps(stamp_dir: Path, folders: Iterable[Path], older_than: float = STALE_TEMP_SECONDS) -> list[Path]:
    """Remove this module's temporary files older than ``older_than`` seconds under
    ``folders``, at most once per ``older_than`` (``stamp_dir``'s stamp file says when it was
    last done); return those removed. Call it only while holding the lock of every writer."""
    stamp = stamp_dir / SWEPT_NAME
    now = time.time()
    try:
        if now - stamp.stat().st_mtime < older_than:
            return []
    except OSError:
        pass
    removed: list[Path] = []
    for folder in folders:
        for dirpath, _, names in os.walk(folder):
            for name in names:
                if not TEMP_NAME.match(name):
                    continue
                file = Path(dirpath) / name
                try:
                    if now - file.lstat().st_mtime > older_than:
                        file.unlink()
                        removed.append(file)
                except OSError:
                    pass
    try:
        stamp.parent.mkdir(parents=True, exist_ok=True)
        stamp.touch()
        os.utime(stamp, (now, now))
    except OSError:
        pass
    return removed
