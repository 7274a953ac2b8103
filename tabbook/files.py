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
And it owns ``build/`` (:class:`BuildDir`: its folders, records and memos) and the one way
something is kept there between commands (:class:`Memo`, keyed by named parts and the
:func:`builder_fingerprint`). It imports nothing of tabbook but :mod:`tabbook.lifetime` (which
imports nothing): every stage may use it.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import Any, Generic, TypeVar

# Named here too for tabbook.render.ext, which imported them from here before they moved to lifetime.
from tabbook.lifetime import SPHINX_PARENT_ENV as SPHINX_PARENT_ENV
from tabbook.lifetime import end_with_parent as end_with_parent

T = TypeVar("T")
#: What a :class:`Memo` keeps (each memo its own: parsed pages, a library, a digest).
V = TypeVar("V")

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
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        if exc.filename is None:  # a write's error names no file (a full disk): name the target
            raise OSError(exc.errno, exc.strerror or str(exc), str(path)) from exc
        raise
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


# --- the builder's fingerprint, and what is kept in build/ ---------------------------------------

#: Distributions whose version decides what the builder makes of the same inputs (the parser,
#: Sphinx and its extensions): a new one invalidates every memo, as new builder code does.
FINGERPRINT_DISTS = ("markdown-it-py", "nbformat", "sphinx", "myst-nb", "myst-parser", "sphinx-design", "furo",
                     "sphinxcontrib-bibtex")


@cache
def builder_fingerprint() -> str:
    """The builder itself, as one hash: every file of the ``tabbook`` package (code, templates,
    static files; not ``node_modules``, not bytecode) and the versions of
    :data:`FINGERPRINT_DISTS`. Computed once per process.

    Why one: what a memo in ``build/`` holds (parsed pages, the generated library, merged
    pages, decks, the reader's notebooks, Sphinx's settings) was made by this code; there used
    to be three hashes of it (all ``.py``, ``render/`` only, two files), each a different
    answer to "is this the builder that made it". A change to any file costs one cold build,
    never a wrong one. Freeze keys (``_freeze/``) do not include it: the store holds what the
    kernel computed, which the builder's code does not change."""
    h = hashlib.sha256()
    package = Path(__file__).resolve().parent
    for folder, dirs, names in os.walk(package):
        dirs[:] = sorted(d for d in dirs if d not in ("__pycache__", "node_modules"))
        for name in sorted(names):
            if not name.endswith(".pyc"):
                path = Path(folder, name)
                h.update(path.relative_to(package).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    for installed in _installed(FINGERPRINT_DISTS):
        h.update(installed.encode() + b"\0")
    return h.hexdigest()


def _installed(dists: Iterable[str]) -> list[str]:
    """``name-version`` of each of ``dists`` installed on ``sys.path``, read from the names of
    their ``.dist-info`` folders: one listing per path entry, where ``importlib.metadata``
    scans every entry once per distribution (a tenth of a second, on every command)."""
    wanted = {re.sub(r"[-_.]+", "_", d).lower() for d in dists}
    found = []
    for entry in sys.path:
        try:
            names = os.listdir(entry or ".")
        except OSError:
            continue
        for name in names:
            if name.endswith(".dist-info"):
                dist, _, version = name[:-len(".dist-info")].partition("-")
                if dist.lower() in wanted:
                    found.append(f"{dist.lower()}-{version}")
    return sorted(found)


def memo_key(parts: Mapping[str, object]) -> str:
    """One hash of named parts (JSON-able; ``Path`` and other values by their ``str``) and the
    builder's fingerprint."""
    data = json.dumps([builder_fingerprint(), parts], sort_keys=True, default=str)
    return hashlib.sha256(data.encode()).hexdigest()


class Memo(Generic[V]):
    """One value kept in a file between commands, valid while its key (named parts and the
    builder's fingerprint, :func:`memo_key`) is the one it was saved under.

    Why one helper: every cache of ``build/`` did its own load, validate and save, each with
    its own idea of which errors mean "make it again". Here a file that is missing, damaged,
    from another key or of another format reads as nothing (:meth:`load` returns ``None``); a
    file that cannot be written is not written; either only costs time. A ``.pickle`` file
    holds any picklable value, any other a JSON one. Saving is atomic and skipped when the
    value is what was loaded. Made by :meth:`BuildDir.memo`, which names the file.
    """

    def __init__(self, path: Path, parts: Mapping[str, object]) -> None:
        self.path = path
        self.key = memo_key(parts)
        self._loaded: V | None = None

    def load(self) -> V | None:
        """The value saved under this key, or None."""
        try:
            if self.path.suffix == ".pickle":
                import pickle

                key, value = pickle.loads(self.path.read_bytes())
            else:
                stored = json.loads(self.path.read_text(encoding="utf-8"))
                key, value = stored["key"], stored["value"]
        except Exception:  # missing, damaged, another format or another builder's classes
            return None
        if key != self.key:
            return None
        self._loaded = value
        return value  # type: ignore[no-any-return]  # what was saved under this key: a V

    def save(self, value: V) -> None:
        """Keep ``value`` under this key (atomically), unless it is what :meth:`load` read."""
        if value is None or value == self._loaded:
            return
        try:
            if self.path.suffix == ".pickle":
                import pickle

                data: str | bytes = pickle.dumps((self.key, value), protocol=pickle.HIGHEST_PROTOCOL)
            else:
                data = json.dumps({"key": self.key, "value": value}, sort_keys=True)
            write_atomic(self.path, data)
        except (OSError, TypeError, ValueError, AttributeError, RecursionError):
            return  # a memo that cannot be written only costs time
        except Exception as exc:  # pickle.PicklingError and kin, without importing pickle here
            if type(exc).__module__ not in ("pickle", "_pickle"):
                raise
            return
        self._loaded = value

    def get(self, make: Callable[[], V]) -> V:
        """The saved value, or ``make()``'s, saved for next time."""
        value = self.load()
        if value is None:
            value = make()
            self.save(value)
        return value


class BuildDir:
    """``build/``: every folder and file a build keeps there, named here and nowhere else.

    Why an object: the layout used to be spelled out in nine modules (``build_dir / "src"``,
    ``"linemaps"``, ``"sources-memo.json"``, …), so moving or clearing one part meant finding
    them all. As :class:`tabbook.execute.store.FreezeStore` owns ``_freeze/``, this owns
    ``build/``: the stages ask it for a folder, a file, or a :class:`Memo`.
    """

    #: The memos kept in ``build/``, by name: each is one file (``.pickle`` holds Python objects).
    MEMOS = {
        "pages": "pages-cache.pickle",  # parsed pages by their bytes (tabbook.book.PageCache)
        "library": "library-cache.json",  # the generated library (tabbook.library.cache)
        "apiref": "apiref-cache.json",  # the API page (tabbook.render.sources)
        "sources": "sources-memo.json",  # what each page of build/src was made from
        "slides": "slides-cache.json",  # what each deck was made from (tabbook.render.slides)
        "package": "package-memo.json",  # the wheel the site serves (tabbook.render.package)
        "llms": "llms-memo.json",  # what each page of llms-full.txt was made from (tabbook.render.llms)
        "languages": "languages-memo.json",  # commit dates of this book and its [site] languages siblings
    }

    def __init__(self, path: Path) -> None:
        self.path = path

    def memo(self, name: str, **parts: object) -> Memo[Any]:
        """The memo ``name`` (one of :data:`MEMOS`) under the key of ``parts``."""
        return Memo(self.path / self.MEMOS[name], parts)

    # What Sphinx reads and writes.
    @property
    def src(self) -> Path:
        """Sphinx's sources: merged notebooks and MyST pages (:mod:`tabbook.render.sources`)."""
        return self.path / "src"

    def out(self, builder: str) -> Path:
        """A Sphinx builder's output: ``build/html``, ``build/latex``…"""
        return self.path / builder

    @property
    def html(self) -> Path:
        return self.out("html")

    def doctrees(self, builder: str = "") -> Path:
        """Sphinx's pickled environments, one folder per builder (all of them without one)."""
        return self.path / "doctrees" / builder

    @property
    def sphinx_conf(self) -> Path:
        """The generated ``conf.py`` folder."""
        return self.path / "sphinx-conf"

    @property
    def render_context(self) -> Path:
        """What a Sphinx run knows of the configuration (:mod:`tabbook.render.context`)."""
        return self.path / "render-context.json"

    @property
    def warnings(self) -> Path:
        """Per run, the warnings Sphinx recorded (:mod:`tabbook.render.diagnostics`)."""
        return self.path / "warnings"

    def line_map(self, stem: str) -> Path:
        """The line map of the generated page ``<stem>.ipynb``/``<stem>.md`` (beside the
        sources, not among them: Sphinx reads ``src/``, the warnings step this)."""
        return self.path / "linemaps" / f"{stem}.json"

    # What the PDFs are made in.
    @property
    def pdf(self) -> Path:
        return self.path / "pdf"

    def latex(self, framework: str) -> Path:
        return self.path / "latex" / framework

    # What execution needs.
    @property
    def jupyter(self) -> Path:
        """Project-local kernelspecs (:mod:`tabbook.execute.envs`)."""
        return self.path / "jupyter"

    @property
    def pylib(self) -> Path:
        """A folder holding only a link to the generated package, put on kernels' PYTHONPATH."""
        return self.path / "pylib"

    def checked(self, name: str) -> Path:
        """The record that an existing interpreter imports its framework."""
        return self.path / "checked" / name

    @property
    def dist(self) -> Path:
        """The library's wheel (``make libtest``)."""
        return self.path / "dist"

    @property
    def wheelhouse(self) -> Path:
        return self.path / "wheelhouse"

    # Records of the last run.
    @property
    def report(self) -> Path:
        """``report.json``: every unit's outcome and the stages' times."""
        return self.path / "report.json"

    @property
    def warm_modules(self) -> Path:
        """The modules the last HTML run imported, which a warm process imports first."""
        return self.path / "warm-modules.json"

    @property
    def warm_log(self) -> Path:
        return self.path / "warm.log"

    @property
    def clean_outputs(self) -> Path:
        """The store entries found to need no cleaning (:mod:`tabbook.render.sanitize`)."""
        return self.path / "clean-outputs.json"

    @property
    def lock(self) -> Path:
        return self.path / LOCK_NAME
