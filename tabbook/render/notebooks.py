"""``tabbook notebooks``: every notebook of the site's notebooks zips runs as a reader downloads it.

What a reader of the site gets is a zip per framework (:func:`tabbook.render.site.zip_target`):
the sections' notebooks, the book's wheel beside them, and in each notebook a first cell that
installs what it needs (:mod:`tabbook.execute.readerlock`, generated from the locks). Nothing
used to run those files. This command does, for each framework, the way a reader would:

1. **Set-up** (``--fetch``; the package registries are used here and only here): the wheels a
   fresh venv needs to run the zip's notebooks are downloaded into a wheel cache
   (``~/.cache/tabbook/notebook-wheels/py<X.Y>``): the kernel a notebook front end brings
   (the lock's ``ipykernel`` pin) and what the install line names, with their dependencies for
   that interpreter. A stamp per (interpreter, line) makes a second set-up free.
2. **Run**, offline: the zip is unpacked into a temporary folder; a fresh venv of the chosen
   Python gets the kernel only (``pip install --no-index``); each notebook then runs top to
   bottom in a kernel of its own in that venv, its own first cell installing everything else
   (the kernel's pip is told ``PIP_NO_INDEX`` and the wheel cache, and no configuration file
   of the machine: what the cell names must be there, or it fails). The notebooks of one
   framework share its venv, so the packages are installed once, by the first notebook. No GPU
   is visible (``CUDA_VISIBLE_DEVICES`` empty): the run is the CPU-only one, and each
   notebook's line says how many of its cells ask for a GPU (the build's own guess,
   :func:`tabbook.execute.gpus.guess_need`) and ran on their CPU fallback; a cell that cannot
   run without a GPU fails the run (none of this chapter's does: ``make exec-check`` runs every
   cell on the CPU).

Before running, each notebook's install line is compared with what the locks give now: a
notebook published from older locks is a located error at the lock. A failure names the file
the user wrote: the lock line of a package the install line cannot install, or the page's line
of the failing cell, with the notebook in the zip and the error.

A framework the book's package declares unusable on the interpreter (its extra's requirements
all marked for other Pythons: ``d2l[mxnet]`` on 3.12) is skipped, saying so: its notebooks
cannot run as downloaded there. The last line reads ``notebooks: N passed, N failed, N skipped``.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import tempfile
import time
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING

from tabbook.config import Config, Framework
from tabbook.errors import BookError
from tabbook.files import BuildDir, cache_dir
from tabbook.nbjson import NotebookCell

if TYPE_CHECKING:
    from nbclient import NotebookClient
    from nbformat import NotebookNode

Log = Callable[[str], object]

#: Colab's Python (since 2025), the one a downloaded notebook must run on.
DEFAULT_PYTHON = "3.12"
#: The lines pip writes when it cannot install a requirement.
_PIP_MISSING = re.compile(r"(?:No matching distribution found for|Could not find a version that satisfies "
                          r"the requirement)\s+(\S+)")


@dataclass
class Outcome:
    name: str
    status: str  # "passed" | "failed" | "skipped"
    detail: str = ""
    lines: list[str] = field(default_factory=list)


def wheel_cache(python_version: str) -> Path:
    return cache_dir() / "notebook-wheels" / f"py{python_version}"


def offline_env(house: Path, base: dict[str, str] | None = None) -> dict[str, str]:
    """An environment whose pip installs from ``house`` alone: no index, no configuration file of
    the machine (its indexes, find-links and constraints), none of its ``PIP_*`` variables."""
    env = {k: v for k, v in (os.environ if base is None else base).items() if not k.startswith("PIP_")}
    env.update(PIP_CONFIG_FILE=os.devnull, PIP_NO_INDEX="1", PIP_FIND_LINKS=str(house),
               PIP_DISABLE_PIP_VERSION_CHECK="1")
    return env


def kernel_pin(fw: Framework) -> str:
    """The lock's ``ipykernel`` line: the kernel the fresh venv starts with (what a front end has)."""
    from tabbook.execute.readerlock import _lock_lines, normalize

    for path in (fw.requirements, fw.constraints):
        for _, word in _lock_lines(path) if path is not None else ():
            if normalize(re.split(r"[<>=!~;\[ ]", word, maxsplit=1)[0]) == "ipykernel":
                return word.replace(" ", "")
    return "ipykernel"


def unsupported(config: Config, fw: Framework, python: Path) -> str:
    """Why the book's package says this framework does not install on ``python`` ("" when it does):
    every requirement of its extra (``d2l[<module>]``) is marked for other interpreters."""
    import tomllib

    from packaging.requirements import Requirement

    try:
        project = tomllib.loads((config.root / "pyproject.toml").read_text(encoding="utf-8")).get("project", {})
    except (OSError, tomllib.TOMLDecodeError):
        return ""
    extra = (project.get("optional-dependencies") or {}).get(fw.module) or []
    version = subprocess.run([str(python), "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    reqs = [Requirement(r) for r in extra]
    if reqs and all(r.marker is not None and not r.marker.evaluate({"python_version": version}) for r in reqs):
        return (f"pyproject.toml: {project.get('name', 'the package')}[{fw.module}] installs nothing on "
                f"Python {version} ({reqs[0]}): its notebooks cannot run as downloaded there")
    return ""


def find_python(version: str) -> Path:
    """An interpreter of ``version`` that runs (pyenv's shims on the PATH may name one that is
    not selected, so pyenv's own installs are tried first)."""
    import glob
    import shutil

    found = sorted(glob.glob(f"{Path.home()}/.pyenv/versions/{version}.*/bin/python{version}"))
    for candidate in [*reversed(found), shutil.which(f"python{version}")]:
        if candidate and subprocess.run([candidate, "-c", ""], capture_output=True).returncode == 0:
            return Path(candidate)
    raise BookError(f"Python {version} is not installed: the notebooks run on it (--python TAB=X.Y for another)")


def _python_version(python: Path) -> str:
    return subprocess.run([str(python), "-c", "import sys; print('%d.%d.%d' % sys.version_info[:3])"],
                          capture_output=True, text=True, check=True).stdout.strip()


def _venv(python: Path, where: Path, env: dict[str, str]) -> Path:
    subprocess.run([str(python), "-m", "venv", str(where)], check=True, env=env, capture_output=True)
    return where / "bin" / "python"


def fetch(config: Config, fw: Framework, python: Path, wheel: Path, log: Log = print) -> Path:
    """Set-up: the wheels a fresh venv of ``python`` needs for this framework's notebooks, into
    the wheel cache (the registries as pip is configured); returns the cache. Done once per
    (interpreter, kernel pin, install line, wheel)."""
    from tabbook.execute.readerlock import reader_pins

    specs = [p.spec for p in reader_pins(fw, config.rel)]
    version = _python_version(python)
    house = wheel_cache(version.rsplit(".", 1)[0])
    kernel = kernel_pin(fw)
    digest = hashlib.sha256(json.dumps([version, kernel, specs, wheel.read_bytes().hex()]).encode()).hexdigest()[:16]
    stamp = house / f".fetched-{fw.name}-{digest}"
    if stamp.is_file():
        return house
    house.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="tabbook-nbfetch-") as tmp:
        py = _venv(python, Path(tmp) / "venv", dict(os.environ))
        cmd = [str(py), "-m", "pip", "download", "--quiet", "--disable-pip-version-check", "--only-binary=:all:",
               "--dest", tmp + "/wheels", str(wheel), kernel, *specs]
        log(f"[notebooks] {fw.name}: fetching the wheels for Python {version} ({kernel} {' '.join(specs)})")
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise BookError(f"[{fw.name}] set-up: pip download of the notebooks' install line failed:\n"
                            + "\n".join(proc.stderr.strip().splitlines()[-15:]),
                            config.rel(fw.requirements) if fw.requirements else "config.ini")
        for got in Path(tmp, "wheels").iterdir():
            if got.name != wheel.name:  # the book's own wheel comes from the zip, never from the cache
                os.replace(got, house / got.name)
    stamp.write_text(" ".join([kernel, *specs]) + "\n")
    return house


def _md_line(config: Config, docname: str, source: str) -> tuple[str, int]:
    """The page a notebook cell comes from and the line of the cell's first code line there."""
    page = config.root / f"{docname}.md"
    rel = config.rel(page) if page.is_file() else f"{docname}.md"
    first = next((line.strip() for line in source.splitlines() if line.strip()), "")
    if page.is_file() and first:
        for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
            if line.strip() == first:
                return rel, number
    return rel, 1


def _stream_text(cell: NotebookCell) -> str:
    return "".join("".join(o.get("text", "")) for o in cell.get("outputs", []) if o.get("output_type") == "stream")


#: How pip starts the lines that say it failed. Not any "ERROR": the kernel's own loggers write
#: lines such as ``ERROR:tornado.general:Uncaught exception in ZMQStream callback`` into the
#: same stream while pip runs, which are not pip's and did not stop the install.
PIP_ERROR = "ERROR: "


_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _pip_failed(output: str) -> bool:
    plain = _ANSI.sub("", output)
    return _PIP_MISSING.search(plain) is not None or any(
        line.lstrip().startswith(PIP_ERROR) for line in plain.splitlines())


def _install_failure(config: Config, fw: Framework, where: str, output: str) -> BookError:
    """pip's failure in a notebook's install cell, at the lock line of the package it could not
    install (the lock is what the line is generated from)."""
    from tabbook.execute.readerlock import normalize, reader_pins

    errors = [line for line in _ANSI.sub("", output).splitlines() if line.lstrip().startswith(PIP_ERROR)]
    said = "; ".join(errors[-2:]) or output.strip()[-300:]
    missing = _PIP_MISSING.search(output)
    if missing is not None:
        name = normalize(re.split(r"[<>=!~;\[]", missing.group(1), maxsplit=1)[0])
        for pin in reader_pins(fw, config.rel):
            if pin.name == name:
                return BookError(f"[{fw.name}] the downloaded notebooks' install line cannot install {pin.spec} "
                                 f"on a reader's machine ({where}: {said})", config.rel(pin.path), pin.line)
    lock = fw.requirements
    return BookError(f"[{fw.name}] the downloaded notebooks' install line fails ({where}: {said})",
                     config.rel(lock) if lock is not None else "config.ini")


def run_notebook(config: Config, fw: Framework, nb_path: Path, inside: str, docname: str, venv_python: Path,
                 house: Path, expected_install: str, log: Log = print) -> str:
    """Run one unpacked notebook top to bottom in a new kernel of ``venv_python``; returns its
    report line. Raises a located :class:`BookError` on drift or failure."""
    import nbformat
    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_client.manager import KernelManager
    from nbclient import NotebookClient

    from tabbook.execute.gpus import guess_need
    from tabbook.render.site import INSTALL_CELL

    nb = nbformat.read(str(nb_path), as_version=4)
    cells = nb.cells
    first = cells[0] if cells else None
    if expected_install and (first is None or first.get("id") != INSTALL_CELL or first.source != expected_install):
        lock = fw.requirements
        raise BookError(f"[{fw.name}] {inside}: its install line is not what the locks give now (the site was "
                        "built from other locks: build it again)", config.rel(lock) if lock else "config.ini")
    kernels = nb_path.parent / ".tabbook-kernels"
    spec_dir = kernels / "kernels" / f"reader-{fw.name}"
    spec_dir.mkdir(parents=True, exist_ok=True)
    (spec_dir / "kernel.json").write_text(json.dumps({
        "argv": [str(venv_python), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": f"reader {fw.name}", "language": "python"}))
    env = offline_env(house)
    env["PATH"] = f"{venv_python.parent}{os.pathsep}{env.get('PATH', '')}"
    env["CUDA_VISIBLE_DEVICES"] = ""  # the CPU-only run, on any machine
    env.pop("PYTHONPATH", None)
    env.pop("VIRTUAL_ENV", None)
    km = KernelManager(kernel_name=f"reader-{fw.name}",
                       kernel_spec_manager=KernelSpecManager(kernel_dirs=[str(kernels / "kernels")]))
    client = NotebookClient(nb, km=km, timeout=config.cell_timeout, allow_errors=False,
                            resources={"metadata": {"path": str(nb_path.parent)}})
    gpu_cells = [i for i, c in enumerate(cells) if c.cell_type == "code" and guess_need(c.source)]
    start = time.monotonic()
    # The kernel's own output (start-up noise of the frameworks) goes to a file beside the notebook.
    with (nb_path.parent / f".{nb_path.stem}.kernel.log").open("wb") as kernel_log:
        try:
            _run_cells(config, fw, client, env, cells, inside, docname, venv_python, expected_install, kernel_log)
        finally:
            km.shutdown_kernel(now=True)  # the client shuts down only kernels it made itself
    gpu = (f"; {len(gpu_cells)} ask for a GPU (cells {', '.join(str(i + 1) for i in gpu_cells)}) and ran on the "
           "CPU, no GPU visible" if gpu_cells else "")
    ran = sum(1 for c in cells if c.cell_type == "code")
    return f"{inside}: {ran} code cells ran, none skipped{gpu} ({time.monotonic() - start:.1f} s)"


def _run_cells(config: Config, fw: Framework, client: NotebookClient, env: dict[str, str], cells: list[NotebookNode], inside: str,
               docname: str, venv_python: Path, expected_install: str, kernel_log: IO[bytes]) -> None:
    """Each code cell in order, in the client's kernel; the first failure as a located error."""
    from nbclient.exceptions import CellExecutionError

    from tabbook.render.site import INSTALL_CELL

    with client.setup_kernel(env=env, stdout=kernel_log, stderr=kernel_log):
        for index, cell in enumerate(cells):
            if cell.cell_type != "code":
                continue
            try:
                client.execute_cell(cell, index)
            except CellExecutionError as exc:
                if index == 0 and expected_install:
                    raise _install_failure(config, fw, f"{inside}, cell 1", str(exc)) from None
                page, line = _md_line(config, docname, cell.source)
                summary = f"{exc.ename}: {exc.evalue}".strip()
                raise BookError(f"[{fw.name}] the downloaded notebook {inside} fails at cell {index + 1} on "
                                f"Python {_python_version(venv_python)} ({summary})", page, line) from None
            if index == 0 and cell.get("id") == INSTALL_CELL and _pip_failed(_stream_text(cell)):
                raise _install_failure(config, fw, f"{inside}, cell 1", _stream_text(cell))


def run_zip(config: Config, fw: Framework, zip_path: Path, python: Path, house: Path, work: Path,
            expected: Callable[[str], str], log: Log = print) -> Outcome:
    """Every notebook of one framework's zip, in one fresh venv of ``python``."""
    with zipfile.ZipFile(zip_path) as zf:
        names = sorted(n for n in zf.namelist() if n.endswith(".ipynb"))
        zf.extractall(work / "zip")
    env = offline_env(house)
    venv_python = _venv(python, work / "venv", env)
    kernel = kernel_pin(fw)
    proc = subprocess.run([str(venv_python), "-m", "pip", "install", "--quiet", kernel], env=env,
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise BookError(f"[{fw.name}] the fresh venv cannot install its kernel ({kernel}) offline; run "
                        f"`tabbook notebooks --fetch` first:\n{proc.stderr.strip()[-800:]}",
                        config.rel(fw.requirements) if fw.requirements else "config.ini")
    lines = []
    for name in names:
        top, _, rel = name.partition("/")
        docname = rel.removesuffix(".ipynb")
        line = run_notebook(config, fw, work / "zip" / name, name, docname, venv_python, house,
                            expected(docname), log)
        log(f"[notebooks] {fw.name}: {line}")
        lines.append(line)
    return Outcome(fw.name, "passed", f"{len(names)} notebooks on Python {_python_version(venv_python)}", lines)


def check_notebooks(config: Config, frameworks: list[str] | None = None, *, fetch_wheels: bool = False,
                    pythons: dict[str, str] | None = None, run: bool = True, log: Log = print) -> int:
    """``tabbook notebooks``: exit status 1 when a framework's notebooks do not all run."""
    from tabbook.render.context import render_context
    from tabbook.render.site import lock_install_cell, site_wheel, zip_target

    pythons = pythons or {}
    html = BuildDir(config.build_dir).html
    opts = render_context(config)
    outcomes: list[Outcome] = []
    wheel = site_wheel(opts, html)
    for tab in frameworks or list(config.tabs):
        fw = config.framework(tab)
        zip_path = html / zip_target(config.name, tab)
        if wheel is None or not zip_path.is_file():
            raise BookError(f"no {config.rel(zip_path)} with the book's wheel beside it: build the site first "
                            "(make html)", "config.ini")
        python = find_python(pythons.get(tab, DEFAULT_PYTHON))
        if why := unsupported(config, fw, python):
            outcomes.append(Outcome(tab, "skipped", why))
            log(f"[notebooks] {tab}: skipped: {why}")
            continue
        house = fetch(config, fw, python, wheel, log) if fetch_wheels else wheel_cache(
            _python_version(python).rsplit(".", 1)[0])
        if not run:
            outcomes.append(Outcome(tab, "passed", f"wheels for Python {_python_version(python)} in {house}"))
            continue
        def expected(docname: str, tab: str = tab) -> str:
            return lock_install_cell(opts, tab, docname)

        with tempfile.TemporaryDirectory(prefix=f"tabbook-notebooks-{tab}-") as tmp:
            try:
                outcome = run_zip(config, fw, zip_path, python, house, Path(tmp), expected, log)
            except BookError as exc:
                log(exc.location_message())
                outcome = Outcome(tab, "failed", exc.message)
        outcomes.append(outcome)
    for o in outcomes:
        log(f"[notebooks] {o.name:<12} {o.status:<8} {o.detail}")
    counts = {s: sum(o.status == s for o in outcomes) for s in ("passed", "failed", "skipped")}
    log(f"notebooks: {counts['passed']} passed, {counts['failed']} failed, {counts['skipped']} skipped")
    return 1 if counts["failed"] else 0
