"""Which program installs a framework's lock into its venv: uv when it is available, pip otherwise.

Both install the same lock with the same constraints into the same ``python -m venv`` folder,
so an environment's content, and the lock hash that names it and enters the freeze keys,
do not depend on the installer; uv only does it several times faster (``make bench``:
``bench/env_create.py``). uv is found beside the builder's interpreter (``envs/builder.txt``
installs it there) or on the PATH; ``[build] installer`` (``$TABBOOK_INSTALLER``, ``--set
build.installer=``) = ``pip`` or ``uv`` chooses.

uv does not read pip's configuration, and a machine's pip configuration may be what makes an
install possible at all (a wheel folder on disk: ``find-links``; a local mirror: an index; a
site-wide constraints file). :func:`pip_sources` asks pip for it and hands uv the same
sources: without them a pinned ``torch`` that pip takes from a local CPU wheel would be a
multi-gigabyte CUDA download for uv. uv also takes the best match over all of them, as pip
does (uv's own default stops at the first index that has the package).

A lock with hashes (``envs/NAME.hashes.txt``, written by ``tabbook lock``) is installed in
hash-checking mode by either program: every package pinned, every file checked.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Callable
from pathlib import Path

from tabbook.errors import BookError, Log
from tabbook.files import write_atomic


def uv_binary() -> Path | None:
    """uv installed beside the builder's interpreter (its scripts folder), else on the PATH."""
    here = Path(sysconfig.get_path("scripts")) / "uv"
    if here.is_file() and os.access(here, os.X_OK):
        return here
    found = shutil.which("uv")
    return Path(found) if found else None


def chosen_installer(wanted: str = "") -> str:
    """``uv`` or ``pip``: ``wanted`` (``[build] installer``, ``$TABBOOK_INSTALLER``), else what is available."""
    if wanted == "pip":
        return "pip"
    if uv_binary() is None:
        if wanted == "uv":
            raise BookError("[build] installer is uv, but uv is not installed beside "
                            f"{sys.executable} nor on the PATH (pip install uv)")
        return "pip"
    return "uv"


def parse_pip_config(text: str) -> dict[str, list[str]]:
    """``pip config list`` output → the sources an install uses, by option name.

    A variable (``:env:.``) overrides the ``install.`` section, which overrides ``global.``,
    as pip itself ranks them; list-valued options hold several words.
    """
    rank = {"global": 0, "user": 0, "site": 0, "install": 1, ":env:": 2}
    best: dict[str, tuple[int, str]] = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if not sep or "." not in key:
            continue
        section, option = key.rsplit(".", 1)
        level = rank.get(section)
        if level is None or option not in ("index-url", "extra-index-url", "find-links", "constraint", "no-index"):
            continue
        value = value.strip().strip("'\"")
        if option not in best or level >= best[option][0]:
            best[option] = (level, value)
    return {option: value.split() for option, (_, value) in best.items()}


def pip_sources(python: Path | None = None) -> list[str]:
    """uv's options for the package sources pip is configured with on this machine."""
    proc = subprocess.run([str(python or sys.executable), "-m", "pip", "config", "list"],
                          capture_output=True, text=True)
    config = parse_pip_config(proc.stdout if proc.returncode == 0 else "")
    options: list[str] = []
    if config.get("no-index", ["false"])[0].lower() in ("1", "true", "yes", "on"):
        options.append("--no-index")
    for url in config.get("index-url", [])[:1]:
        options += ["--index-url", url]
    for url in config.get("extra-index-url", []):
        options += ["--extra-index-url", url]
    for place in config.get("find-links", []):
        options += ["--find-links", place]
    for path in config.get("constraint", []):
        if Path(path).is_file():
            options += ["--constraint", path]
    if options:
        options += ["--index-strategy", "unsafe-best-match"]  # pip's rule: the best version anywhere
    return options


def install_command(installer: str, python: Path, lock: Path, constraints: Path | None,
                    hashed: bool) -> list[str]:
    """The command that installs ``lock`` (and ``constraints``) into the venv of ``python``."""
    if installer == "uv":
        uv = uv_binary()
        assert uv is not None
        # Bytecode compiled as pip does, so the first kernel start is not slower after uv.
        cmd = [str(uv), "pip", "install", "--quiet", "--python", str(python), "--compile-bytecode",
               *pip_sources()]
    else:
        cmd = [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    if hashed and installer == "uv":
        # uv's --require-hashes also wants every constraint pinned with ==, and a site's cap or
        # MXNet's `ipython<9` is a range. The same guarantee instead: hashed_lock() has checked
        # that every package of the lock is pinned with its hashes, uv checks each file against
        # them, and installs nothing the lock does not list; the constraints still apply.
        cmd += ["--no-deps", "--verify-hashes"]
    elif hashed:
        cmd.append("--require-hashes")
    if constraints is not None:
        cmd += ["-c", str(constraints.resolve())]
    return cmd + ["-r", str(lock.resolve())]



# --- hashed locks ---------------------------------------------------------------------------------
#: The first line of a hashed lock: which requirements file, at which content, it pins.
HEADER = "# tabbook lock of {name} sha256:{digest}: every package pinned with its hashes (tabbook lock)"


def hashed_path(requirements: Path) -> Path:
    """``envs/jax.txt`` → ``envs/jax.hashes.txt``: the same environment, every package hashed."""
    return requirements.with_name(f"{requirements.stem}.hashes{requirements.suffix or '.txt'}")


def requirements_digest(requirements: Path) -> str:
    import hashlib

    return hashlib.sha256(requirements.read_bytes()).hexdigest()[:16]


def hashed_lock(requirements: Path, rel: Callable[[Path], str] = str) -> Path | None:
    """The hashed lock beside ``requirements`` when there is one, checked to be made from it.

    The requirements file stays what names the environment (its hash is the venv's name and
    the freeze keys' ``env``); the hashed lock is what ``tabbook lock`` wrote from it, so one
    made from an earlier version of it is refused rather than installed.
    """
    path = hashed_path(requirements)
    if not path.is_file():
        return None
    first = path.read_text(encoding="utf-8").split("\n", 1)[0]
    want = HEADER.format(name=requirements.name, digest=requirements_digest(requirements))
    if first.strip() != want:
        raise BookError(f"this hashed lock was not made from the current {requirements.name}: "
                        f"run `tabbook lock` (its first line must read {want!r})", rel(path), 1)
    _check_hashed(path, rel)
    return path


def _check_hashed(path: Path, rel: Callable[[Path], str]) -> None:
    """Every requirement of a hashed lock is one package pinned with ``==`` and given hashes,
    as pip's ``--require-hashes`` demands (and uv's install relies on, see install_command)."""
    import re

    logical, start = "", 0
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines() + [""], 1):
        if not logical:
            start = number
        text = line.split(" #", 1)[0].strip() if not line.lstrip().startswith("#") else ""
        if text.endswith("\\"):
            logical += text[:-1] + " "
            continue
        logical = (logical + text).strip()
        if logical:
            words = logical.split()
            if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*==[^=;\s]+", words[0]) or not any(
                    w.startswith("--hash=sha256:") for w in words[1:]):
                raise BookError(f"every package of a hashed lock is pinned with == and its --hash: {words[0]}",
                                rel(path), start)
        logical = ""


def _local_hashes(name: str, version: str, places: list[str]) -> list[str]:
    """sha256 of the files in pip's wheel folders (``find-links``) for ``name==version``: uv
    lists no hash for those, and a lock in hash-checking mode needs one for every package."""
    import hashlib
    import re

    stem = re.sub(r"[-_.]+", "_", name).lower()
    found = []
    for place in places:
        folder = Path(place.removeprefix("file://"))
        if not folder.is_dir():
            continue
        for path in sorted(folder.iterdir()):
            parts = path.name.split("-")
            if len(parts) >= 2 and re.sub(r"[-_.]+", "_", parts[0]).lower() == stem and parts[1] == version:
                found.append(hashlib.sha256(path.read_bytes()).hexdigest())
    return found


def _venv_seed(python: Path) -> set[str]:
    """``name==version`` of what ``python -m venv`` itself installs (ensurepip's bundled pip and
    setuptools): part of every venv, not of its lock; a newer release the lock asks for stays."""
    code = ("import ensurepip, os; d = os.path.join(os.path.dirname(ensurepip.__file__), '_bundled'); "
            "print(' '.join(os.listdir(d)) if os.path.isdir(d) else '')")
    proc = subprocess.run([str(python), "-c", code], capture_output=True, text=True)
    seed: set[str] = set()
    for name in proc.stdout.split():
        parts = name.split("-")
        if name.endswith(".whl") and len(parts) >= 2:
            seed.add(f"{parts[0].lower()}=={parts[1]}")
    return seed


def write_hashed_lock(requirements: Path, python: Path, log: Log = print) -> Path:
    """``tabbook lock``: pin every package installed in the venv of ``python`` (made from
    ``requirements``) with the hashes of its files, into ``hashed_path(requirements)``.

    The pins are the environment's own (``pip freeze``), not a fresh resolution, so the lock
    records the environment the outputs were computed in. uv looks the hashes up in the
    package indexes (every file of each version, so other platforms can install it too) and
    they are read off the files for what pip takes from a wheel folder on disk.
    """
    uv = uv_binary()
    if uv is None:
        raise BookError("tabbook lock needs uv (pip install uv) to look up the packages' hashes")
    frozen = subprocess.run([str(python), "-m", "pip", "freeze", "--all", "--disable-pip-version-check"],
                            check=True, capture_output=True, text=True).stdout
    seed = _venv_seed(python)
    pins = [line for line in frozen.splitlines()
            if line and line.lower() not in seed and not line.lower().startswith("pip==")]
    bad = [line for line in pins if "==" not in line]
    if bad:
        raise BookError(f"{python}: cannot lock what is not installed from an index: {', '.join(bad)}")
    import tempfile

    sources = pip_sources()
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "pins.txt"
        source.write_text("\n".join(pins) + "\n", encoding="utf-8")
        out = Path(tmp) / "hashed.txt"
        subprocess.run([str(uv), "pip", "compile", "--quiet", "--generate-hashes", "--no-deps", "--no-header",
                        "--no-annotate", "--python", str(python), *sources, str(source), "-o", str(out)],
                       check=True)
        blocks = [b for b in out.read_text(encoding="utf-8").replace("\\\n", "").splitlines() if b.strip()]
    places = [sources[i + 1] for i, word in enumerate(sources) if word == "--find-links"]
    lines = [HEADER.format(name=requirements.name, digest=requirements_digest(requirements)),
             f"# {len(blocks)} packages as installed in the venv {python.parent.parent.name}; pip install --require-hashes -r "
             f"{hashed_path(requirements).name}"]
    for block in blocks:
        words = block.split()
        pin, hashes = words[0], [w.removeprefix("--hash=sha256:") for w in words[1:] if w.startswith("--hash=")]
        if not hashes:
            name, _, version = pin.partition("==")
            hashes = _local_hashes(name, version, places)
        if not hashes:
            raise BookError(f"{pin}: no index nor wheel folder lists a file to hash", str(requirements))
        lines.append(" \\\n".join([pin] + [f"    --hash=sha256:{h}" for h in hashes]))
    target = hashed_path(requirements)
    write_atomic(target, "\n".join(lines) + "\n")
    log(f"[lock] {target}: {len(blocks)} packages, every one hashed")
    return target
