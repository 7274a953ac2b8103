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

It also owns the user-wide cache folder (framework environments, KaTeX), which every process
of every book shares. It imports nothing of tabbook: every stage may use it.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
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
        else:
            with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as ft:
                ft.write(data)
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
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def copy_atomic(src: Path, dst: Path) -> None:
    """Copy ``src``'s bytes to ``dst`` atomically (with the umask's mode, not ``src``'s)."""
    with atomic_target(dst) as tmp:
        shutil.copyfile(src, tmp)
