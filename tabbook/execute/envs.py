"""Per-framework virtual environments and their project-local Jupyter kernels.

Each framework's venv lives in a per-user cache keyed by a hash of its lock
files and Python version (as pre-commit and uv do), so fresh clones and CI
runs on the same machine reuse gigabytes of installs. A venv is usable only
once its completion marker exists: an interrupted install is wiped and redone.
Kernelspecs are written under ``build/jupyter`` and found through
``JUPYTER_PATH``; nothing is ever registered in the user's Jupyter dirs.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tabbook.config import Config, Framework
from tabbook.errors import BookError, Log
from tabbook.files import BuildDir, cache_dir, exclusive, write_atomic

MARKER = ".tabbook-complete"


@dataclass(frozen=True)
class Env:
    framework: str
    python: Path  # interpreter that runs the kernel
    lock_hash: str  # what the freeze key records about the environment


def find_python(version: str) -> Path:
    """The interpreter for ``version`` ("3.11"), or the builder's own for "current"."""
    if version == "current":
        return Path(sys.executable)
    found = shutil.which(f"python{version}")
    if found:
        return Path(found)
    pyenv = sorted(glob.glob(f"{Path.home()}/.pyenv/versions/{version}.*/bin/python{version}"))
    if pyenv:
        return Path(pyenv[-1])
    raise BookError(f"Python {version} is not installed (needed by config.ini)", "config.ini")


def _python_version(python: Path) -> str:
    out = subprocess.run(
        [str(python), "-c", "import sys; print('%d.%d.%d' % sys.version_info[:3])"],
        check=True, capture_output=True, text=True,
    )
    return out.stdout.strip()


def local_requirements(lock: Path) -> list[tuple[int, Path]]:
    """Folders and files a lock names by a relative path (``./pkg``, ``../wheels/x.whl``).

    pip reads such paths against its working directory; the builder runs pip in the lock's
    folder, so a book's overlay can ship a small local package beside its lock and the path
    means the same from any directory the build starts in.
    """
    found = []
    for number, line in enumerate(lock.read_text(encoding="utf-8").splitlines(), 1):
        word = line.split("#", 1)[0].strip()
        if word.startswith(("./", "../")):
            found.append((number, (lock.parent / word).resolve()))
    return found


def _tree_bytes(path: Path) -> bytes:
    """The content of a local requirement, so that editing it makes a new environment."""
    if path.is_file():
        return path.read_bytes()
    if not path.is_dir():
        return b"missing"
    h = hashlib.sha256()
    for item in sorted(p for p in path.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        h.update(item.relative_to(path).as_posix().encode() + b"\0" + item.read_bytes())
    return h.hexdigest().encode()


def lock_hash(fw: Framework) -> str:
    """Hash of everything that decides what the venv contains.

    An existing interpreter is named by its path: what is installed there is its owner's
    business, and the versions actually used are recorded in each entry's provenance.
    """
    if fw.interpreter is not None:
        return hashlib.sha256(f"interpreter:{fw.interpreter}".encode()).hexdigest()[:16]
    h = hashlib.sha256()
    for path in (fw.requirements, fw.constraints):
        h.update(path.read_bytes() if path else b"-")
        h.update(b"\0")
    if fw.requirements:
        for _, local in local_requirements(fw.requirements):
            h.update(_tree_bytes(local))
    h.update(fw.python.encode())
    return h.hexdigest()[:16]


def venv_dir(config: Config, fw: Framework) -> Path:
    """``[build] venvs`` (``$TABBOOK_VENVS``; else the cache's ``venvs/``) / ``<framework>-<lock hash>``."""
    return (config.venvs or cache_dir() / "venvs") / f"{fw.name}-{lock_hash(fw)}"


def ensure_env(config: Config, fw: Framework, create: bool = True, log: Log = print, hashes: bool = True) -> Env:
    """Return the framework's env, creating and installing it when missing (``hashes=False``:
    from the requirements file even where a hashed lock lies beside it, as ``tabbook lock`` does)."""
    if fw.interpreter is not None:  # someone else's environment: used as it is, never installed into
        if not os.access(fw.interpreter, os.X_OK) or fw.interpreter.is_dir():
            raise BookError(f"the {fw.name} interpreter {fw.interpreter} is not an executable file")
        return Env(fw.name, fw.interpreter, lock_hash(fw))
    if fw.builder_python:
        if not fw.has_env:  # d2lbook runs every tab in the current kernel: so do we, and say how to pin one
            where = config.overlay.name if config.overlay else "tabbook.ini"
            log(f"[env] {fw.name}: no environment given: its code runs in the builder's Python "
                f"({sys.executable}), as under d2lbook; to pin one, give [framework:{fw.name}] a requirements "
                f"lock file in config.ini or the overlay ({where}), or --python {fw.name}=PATH")
        return Env(fw.name, Path(sys.executable), lock_hash(fw))
    assert fw.requirements is not None  # builder_python covers a tab with neither lock nor interpreter
    target = venv_dir(config, fw)
    python = target / "bin" / "python"
    if not _complete(target, fw, config, hashes):
        if not create:
            raise BookError(
                f"the {fw.name} environment is not installed; run `tabbook envs` (a build makes it too)",
                config.rel(fw.requirements) if fw.requirements else "config.ini",
            )
        for number, local in local_requirements(fw.requirements):  # before anything is made
            if not local.exists():
                raise BookError(f"the {fw.name} lock names {local}, which does not exist",
                                config.rel(fw.requirements), number)
        base = find_python(fw.python)
        # Venvs are shared by every book and process of this user: one creates it while the
        # others wait, and find it complete (else a second would remove the first's half venv).
        target.parent.mkdir(parents=True, exist_ok=True)
        with exclusive(target.parent / f".{target.name}.lock", f"another process creating the {fw.name} "
                       f"environment {target}", log=log):
            if not _complete(target, fw, config, hashes):
                _create_env(config, fw, target, base, log, hashes)
    return Env(fw.name, python, lock_hash(fw))


def _hashes_line(config: Config, fw: Framework, hashes: bool = True) -> str | None:
    """What the marker records of the hashed lock installed (None: there is none)."""
    from tabbook.execute.installer import hashed_lock

    assert fw.requirements is not None
    hashed = hashed_lock(fw.requirements, config.rel) if hashes else None
    if hashed is None:
        return None
    return f"hashes sha256:{hashlib.sha256(hashed.read_bytes()).hexdigest()[:16]}"


def _complete(target: Path, fw: Framework, config: Config, hashes: bool = True) -> bool:
    """The venv is installed, from the hashed lock there is now when its marker names one.

    The venv's name comes from the requirements file alone (so adding hashes to a lock keeps
    every venv and freeze key); a marker that records another hashed lock than today's means
    ``tabbook lock`` pinned something else since, and the venv is made again. A marker from
    before hashed locks (the Python version alone) is taken as it is.
    """
    try:
        recorded = (target / MARKER).read_text(encoding="utf-8").split("\n")
    except OSError:
        return False
    recorded_hashes = [line for line in recorded if line.startswith("hashes ")]
    return not hashes or not recorded_hashes or recorded_hashes[0] == _hashes_line(config, fw)


def _create_env(config: Config, fw: Framework, target: Path, base: Path, log: Callable[[str], object],
                hashes: bool = True) -> None:
    """Create ``target`` with the interpreter ``base`` and install ``fw``'s lock into it (the
    caller holds its lock): with uv when it is available, else pip (:mod:`.installer`), from
    the hashed lock beside the requirements when there is one."""
    import time

    from tabbook.execute.installer import chosen_installer, hashed_lock, install_command

    assert fw.requirements is not None
    python = target / "bin" / "python"
    installer = chosen_installer(config.installer)
    hashed = hashed_lock(fw.requirements, config.rel) if hashes else None
    lock = hashed or fw.requirements
    if target.exists():
        log(f"[env] {fw.name}: removing incomplete environment {target}")
        shutil.rmtree(target)
    log(f"[env] {fw.name}: creating {target} (Python {_python_version(base)}, {installer}, "
        f"{config.rel(lock)}{', hashes checked' if hashed else ''})")
    started = time.monotonic()
    target.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run([str(base), "-m", "venv", str(target)], check=True)
    cmd = install_command(installer, python, lock, fw.constraints, hashed is not None)
    try:
        # In the lock's folder: its relative paths (a local package) mean what they say.
        subprocess.run(cmd, check=True, cwd=lock.parent)
    except subprocess.CalledProcessError as exc:
        raise BookError(
            f"installing the {fw.name} environment failed ({installer} exit {exc.returncode})",
            config.rel(lock),
        ) from exc
    record = _hashes_line(config, fw, hashes)
    (target / MARKER).write_text(_python_version(python) + "\n" + (record + "\n" if record else ""))
    log(f"[env] {fw.name}: installed with {installer} in {time.monotonic() - started:.1f} s")


CHECKED = ".tabbook-checked"


def checked_env(config: Config, fw: Framework, env: Env) -> str:
    """:func:`check_env` once per environment: its result is kept in the venv.

    A locked venv does not change after it is installed (a new lock is a new venv), so
    importing the framework in a subprocess before every build that runs code (seconds per
    framework, one after another) only repeats the first answer. Should the venv break
    later, the kernel's own import fails and the unit reports it.
    """
    if fw.builder_python:
        return check_env(config, fw, env)
    if fw.interpreter is not None:  # not ours to write into: the record lives in build/
        stat = fw.interpreter.resolve().stat()
        tag = hashlib.sha256(f"{fw.interpreter}:{stat.st_mtime_ns}:{stat.st_size}".encode()).hexdigest()[:16]
        record = BuildDir(config.build_dir).checked(f"{fw.name}-{tag}")
        record.parent.mkdir(parents=True, exist_ok=True)
    else:
        record = env.python.parent.parent / CHECKED
    try:
        recorded = record.read_text(encoding="utf-8").strip()
        if recorded:
            return recorded
    except OSError:
        pass
    version = check_env(config, fw, env)
    try:
        record.write_text(version + "\n", encoding="utf-8")
    except OSError:
        pass  # a read-only environment is checked every time
    return version


def check_env(config: Config, fw: Framework, env: Env) -> str:
    """Import the framework in its env; return its version or raise a clear error.

    An existing interpreter must also run a kernel (``ipykernel``): a CUDA image often has
    the frameworks and no Jupyter, and that should be said before any unit starts.
    """
    if fw.interpreter is not None:
        probe = subprocess.run([str(env.python), "-c", "import ipykernel"], capture_output=True, text=True)
        if probe.returncode != 0:
            raise BookError(
                f"the {fw.name} interpreter {env.python} cannot run a kernel (no ipykernel): install it "
                "there, or make a venv beside it with `python -m venv --system-site-packages DIR` and "
                "install ipykernel into that (README: Executing on a GPU machine)")
    code = f"import {fw.import_name} as m; print(getattr(m, '__version__', '?'))"
    proc = subprocess.run(
        [str(env.python), "-c", code], capture_output=True, text=True,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"},
    )
    if proc.returncode != 0:
        # The import's own words, not the probe's traceback (its one frame is ``<string>``).
        said = [line for line in proc.stderr.strip().splitlines()
                if not line.startswith("Traceback (most recent call last)") and not line.startswith('  File "<string>"')]
        tail = "\n".join(said[-5:])
        where: str = config.rel(fw.requirements) if fw.requirements else "config.ini"
        line: int | None = None
        if fw.interpreter is not None:
            where = str(fw.interpreter)
        named = import_key(config, fw.name)
        if named is not None:  # the book chose the import name: say where
            why = f"[framework:{fw.name}] import = {fw.import_name}, set at {named[0]}:{named[1]}"
        else:
            why = (f"what tab {fw.name!r} imports by default: set [framework:{fw.name}] import = PACKAGE in "
                   f"config.ini or the overlay ({config.overlay.name if config.overlay else 'tabbook.ini'}) "
                   "when its package is another")
        if fw.builder_python and not fw.has_env:
            where, line = named or ("config.ini", _tabs_line(config))
        raise BookError(f"the {fw.name} environment ({env.python}) cannot import {fw.import_name} ({why}):\n{tail}",
                        where, line)
    return proc.stdout.strip().splitlines()[-1]


def _tabs_line(config: Config) -> int | None:
    """The line of ``[build] tabs`` in config.ini (None: not there)."""
    from tabbook.settings import key_line

    ini = config.root / "config.ini"
    return key_line(ini.read_text(encoding="utf-8"), "build", "tabs") if ini.is_file() else None


def import_key(config: Config, tab: str) -> tuple[str, int] | None:
    """Where ``[framework:TAB] import`` is set: the overlay (which wins) or config.ini, as
    (file, line); None when neither sets it (the import name is the tab's default)."""
    from tabbook.settings import key_line

    ini = config.root / "config.ini"
    for path in (config.overlay, ini):
        if path is not None and path.is_file():
            line = key_line(path.read_text(encoding="utf-8"), f"framework:{tab}", "import")
            if line is not None:
                return config.rel(path), line
    return None


def jupyter_dir(config: Config) -> Path:
    return BuildDir(config.build_dir).jupyter


def pylib_dir(config: Config) -> Path:
    """A folder holding only a link to the generated ``d2l`` package, put on PYTHONPATH."""
    return BuildDir(config.build_dir).pylib


def ensure_pylib(config: Config) -> Path:
    """``build/pylib`` with its link to the book's library folder, made when missing."""
    lib = pylib_dir(config)
    lib.mkdir(parents=True, exist_ok=True)
    link = lib / config.library_dir.name
    if not link.exists():
        try:
            link.symlink_to(config.library_dir.resolve(), target_is_directory=True)
        except FileExistsError:  # another process on this host (a Dask worker) made it first
            pass
    return lib


def write_kernelspec(config: Config, fw: Framework, env: Env) -> None:
    """Write the project-local kernelspec for ``fw`` (never into ~/.local)."""
    lib = ensure_pylib(config)
    spec_dir = jupyter_dir(config) / "kernels" / fw.kernel_name
    spec_dir.mkdir(parents=True, exist_ok=True)
    spec = {
        "argv": [str(env.python), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": f"{fw.label} (tabbook)",
        "language": "python",
        "env": {
            "PYTHONPATH": str(lib.resolve()),
            "TF_CPP_MIN_LOG_LEVEL": "2",
            "MPLBACKEND": "module://matplotlib_inline.backend_inline",
            "PYDEVD_DISABLE_FILE_VALIDATION": "1",
        },
        "metadata": {"tabbook": {"framework": fw.name}},
    }

    # A temp file of its own: Dask workers on one host may write the same spec at once.
    write_atomic(spec_dir / "kernel.json", json.dumps(spec, indent=1))


def create_envs(config: Config, names: list[str]) -> None:
    """``python -m tabbook envs [fw ...]``: create (and check) the environments (``make envs``)."""
    for name in names:
        if name not in config.tabs:
            raise BookError(f"unknown framework {name!r} (tabs: {', '.join(config.tabs)})")
        fw = config.framework(name)
        env = ensure_env(config, fw)
        print(f"[env] {name}: {fw.import_name} {check_env(config, fw, env)} at {env.python}")


def lock_envs(config: Config, names: list[str]) -> None:
    """``tabbook lock [fw ...]``: write each framework's hashed lock from its environment
    (created first when missing)."""
    from tabbook.execute.installer import write_hashed_lock

    for name in names:
        if name not in config.tabs:
            raise BookError(f"unknown framework {name!r} (tabs: {', '.join(config.tabs)})")
        fw = config.framework(name)
        if fw.requirements is None or fw.interpreter is not None or fw.python == "current":
            raise BookError(f"tab {name!r} has no requirements file of its own to lock")
        for number, _ in local_requirements(fw.requirements):
            raise BookError("a lock in hash-checking mode cannot name a local folder", config.rel(fw.requirements),
                            number)
        env = ensure_env(config, fw, hashes=False)  # a stale hashed lock is what is being replaced
        write_hashed_lock(fw.requirements, env.python)  # its pins are this venv's: it stays as it is


#: Variables kernels get from the builder's environment: what a process needs to run (paths,
#: user, locale, temporary folder, certificates and proxies for downloads), what the frameworks
#: and the GPU stack read, and tabbook's own. Anything else (a CI job's tokens, cloud keys)
#: stays with the builder unless the book names it in ``[build] kernel_env``.
KERNEL_ENV_NAMES = frozenset({
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TZ", "TERM", "TMPDIR", "TEMP", "TMP",
    "PYTHONHASHSEED", "PYTHONWARNINGS", "PYTHONUNBUFFERED", "LD_LIBRARY_PATH",
    "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_RUNTIME_DIR",
    "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE",
    "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy",
    "OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MPLBACKEND", "MPLCONFIGDIR",
    "HF_HOME", "DISPLAY",
})
#: Prefixes of variables kernels get: locale, the GPU stack, the frameworks, tabbook, Jupyter.
KERNEL_ENV_PREFIXES = ("LC_", "CUDA_", "NVIDIA_", "NCCL_", "CUDNN_", "XLA_", "TF_", "JAX_", "TORCH_",
                       "PYTORCH_", "MXNET_", "KERAS_", "HIP_", "ROCM_", "ROCR_", "HSA_", "TABBOOK_",
                       "JUPYTER_", "IPYTHON", "OMP_", "MKL_", "KMP_")


def kernel_env(config: Config, environ: dict[str, str] | None = None) -> dict[str, str]:
    """The environment kernels start in: the builder's variables on the allow-list
    (:data:`KERNEL_ENV_NAMES`, :data:`KERNEL_ENV_PREFIXES`) and those ``[build] kernel_env``
    names, project-local kernelspecs, the book's own ``d2l`` importable, and tabbook importable by
    the workers: the book's root comes first; the folder tabbook was imported from is added only
    for a checkout run as ``python -m tabbook`` (an installed tabbook lives in the builder's
    site-packages, which the workers have anyway and which must not leak into a framework's
    environment)."""
    source = os.environ if environ is None else environ
    extra = set(config.kernel_env)
    env = {name: value for name, value in source.items()
           if name in KERNEL_ENV_NAMES or name in extra or name.startswith(KERNEL_ENV_PREFIXES)}
    env["JUPYTER_PATH"] = str(jupyter_dir(config).resolve())
    builder = Path(__file__).resolve().parents[2]
    paths = [str(config.root)]
    if builder.name not in ("site-packages", "dist-packages") and builder != config.root:
        paths.append(str(builder))
    env["PYTHONPATH"] = os.pathsep.join(paths)
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    return env


def prepare_kernels(config: Config, frameworks: set[str], log: Callable[[str], object] = print) -> None:
    """Create (if needed), check and register the kernel of each framework about to run."""
    for fw in sorted(frameworks, key=config.tabs.index):
        framework = config.framework(fw)
        env = ensure_env(config, framework, create=True, log=log)
        version = checked_env(config, framework, env)  # imports the framework once per venv, not per build
        if framework.interpreter is not None:
            log(f"[env] {fw}: existing interpreter {framework.interpreter} ({framework.import_name} {version})")
        write_kernelspec(config, framework, env)
