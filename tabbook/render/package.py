"""The book's package on the book's own site: what the site tells a reader to ``pip install`` is
this book's library, served from the site itself.

Why: a book whose library is packaged (a ``pyproject.toml`` at its root naming a project, as
this repository's ``d2l``) used to tell readers ``pip install d2l``, and the package index
answered with another project of that name (PyPI's ``d2l`` is d2l.ai's, 1.0.3, without the
extras the site names). The book's wheel existed only in ``build/dist``. So an HTML build
puts the wheel into the site with a PEP 503 "simple" index beside it::

    build/html/simple/index.html              the projects: one link
    build/html/simple/<name>/index.html       the wheel, with its sha256 and Requires-Python
    build/html/simple/<name>/<wheel>

and the front page (:mod:`tabbook.render.front`) tells readers
``pip install --extra-index-url <site>/simple/ '<name>[<extra>]==<version>'``, the site's own
address filled in by the page. Pinning the exact version makes pip take the site's wheel
whatever the other index holds, provided the version is the book's alone: a PEP 440 local
label (``0.1.0+gpus``), which package indexes such as PyPI refuse, guarantees that.

The wheel is built by the book's own build backend (``pip wheel --no-deps``, as ``make dist``
builds it), once per change of the package's files (a memo in ``build/``).
"""

from __future__ import annotations

import hashlib
import html
import re
import subprocess
import sys
import tempfile
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypedDict
from urllib.parse import quote

from tabbook.config import Config
from tabbook.errors import BookError
from tabbook.files import BuildDir, copy_atomic, write_if_changed

#: The index's folder in the site.
INDEX = "simple"


@dataclass(frozen=True)
class Package:
    """The book's distribution as the site offers it."""

    name: str  # the project's name, normalized (PEP 503): what readers type
    version: str
    extras: tuple[str, ...]
    requires_python: str = ""

    @property
    def local(self) -> bool:
        """Whether the version has a local label, so that no public index can hold it."""
        return "+" in self.version

    def requirement(self, extra: str = "") -> str:
        """``name[extra]==version``, quoted for a shell."""
        return f"'{self.name}{f'[{extra}]' if extra else ''}=={self.version}'"


def normalize(name: str) -> str:
    """PEP 503's normal form of a project name: what an index's folder is called."""
    return re.sub(r"[-_.]+", "-", name).lower()


#: The keys of ``pyproject.toml``'s ``[project]`` table (PEP 621) that the book's package is read from.
Project = TypedDict("Project", {"name": str, "version": str, "dynamic": list[str], "requires-python": str,
                               "optional-dependencies": dict[str, list[str]]}, total=False)


def _project(root: Path) -> Project | None:
    try:
        data = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError):
        return None
    project: Project | None = data.get("project")
    return project if isinstance(project, dict) and project.get("name") else None


def book_package(config: Config) -> Package | None:
    """The package the book's ``pyproject.toml`` builds from its library, or None when it has
    none (no ``pyproject.toml`` naming a project, or no generated library to package)."""
    project = _project(config.root)
    if project is None or not any(config.library_dir.glob("*.py")):
        return None
    version = project.get("version") if "version" not in project.get("dynamic", ()) else None
    extras = tuple(sorted(project.get("optional-dependencies", {}) or {}))
    return Package(normalize(str(project["name"])), str(version or config.version), extras,
                   str(project.get("requires-python", "")))


def _inputs_digest(config: Config) -> str:
    """What the wheel is made of: ``pyproject.toml`` and the library's files."""
    h = hashlib.sha256()
    for path in [config.root / "pyproject.toml", *sorted(config.library_dir.rglob("*.py"))]:
        h.update(config.rel(path).encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def build_wheel(config: Config, out: Path) -> Path:
    """The book's wheel, built into ``out`` by its own build backend. pip's own output (which
    may be pages of the machine's configuration warnings) is shown only when it fails."""
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "--disable-pip-version-check", "wheel", str(config.root),
         "--no-deps", "--quiet", "--wheel-dir", str(out)],
        capture_output=True, text=True)
    wheels = sorted(out.glob("*.whl"))
    if proc.returncode != 0 or len(wheels) != 1:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
        raise BookError(f"building the package's wheel for the site failed (pip wheel . --no-deps):\n{tail}",
                        "pyproject.toml")
    return wheels[0]


def _wheel_version(wheel: Path) -> str:
    return wheel.name.split("-")[1]


def _same_version(a: str, b: str) -> bool:
    """Whether two version strings are one version for pip (PEP 440's normal form)."""
    from packaging.version import InvalidVersion, Version

    try:
        return Version(a) == Version(b)
    except InvalidVersion:
        return a == b


def project_page(package: Package, wheel: Path) -> str:
    """PEP 503's page of the project: one link per file, with its hash."""
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    requires = (f' data-requires-python="{html.escape(package.requires_python)}"'
                if package.requires_python else "")
    return ("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">"
            f"<title>Links for {html.escape(package.name)}</title></head><body>\n"
            f"<h1>Links for {html.escape(package.name)}</h1>\n"
            f'<a href="{quote(wheel.name)}#sha256={digest}"{requires}>{html.escape(wheel.name)}</a><br>\n'
            "</body></html>\n")


def root_page(package: Package) -> str:
    """PEP 503's root page: the projects the index holds."""
    return ("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>Simple index</title></head><body>\n"
            f'<a href="{quote(package.name)}/">{html.escape(package.name)}</a><br>\n</body></html>\n')


def publish(config: Config, html_dir: Path, log: Callable[[str], object] = print) -> Path | None:
    """Put the book's wheel and its index into the site (``html_dir``), building the wheel when
    the package's files changed; returns the wheel in the site, or None (no package)."""
    package = book_package(config)
    if package is None:
        return None
    folder = html_dir / INDEX / package.name
    memo = BuildDir(config.build_dir).memo("package", inputs=_inputs_digest(config), project=package.name)
    known = memo.load()
    if isinstance(known, str) and known and (folder / known).is_file() and (folder / "index.html").is_file():
        return folder / known
    with tempfile.TemporaryDirectory(prefix="tabbook-wheel-") as tmp:
        wheel = build_wheel(config, Path(tmp))
        if not _same_version(_wheel_version(wheel), package.version):
            raise BookError(f"the wheel's version is {_wheel_version(wheel)}, but the site would tell readers "
                            f"to install {package.version} ([project] version)", "pyproject.toml")
        folder.mkdir(parents=True, exist_ok=True)
        for old in folder.glob("*.whl"):
            if old.name != wheel.name:
                old.unlink()
        copy_atomic(wheel, folder / wheel.name)
        write_if_changed(folder / "index.html", project_page(package, wheel))
        write_if_changed(html_dir / INDEX / "index.html", root_page(package))
    memo.save(wheel.name)
    log(f"[html] the package: {config.rel(folder / wheel.name)} (its index: {config.rel(html_dir / INDEX)}/)")
    return folder / wheel.name
