"""The install line of a reader's notebook, generated from the framework's locks.

A notebook a reader downloads (one page, or the framework's zip) must run where it lands: a
fresh Python, Colab. Its first cell installs what the book's own run had: the book's package
(this site's ``d2l``, a version no public index holds, from the wheel the zip carries) and
every package the framework's requirement file pins (``envs/<tab>.txt``, then its
constraints), at the versions pinned there. Nothing of it is written by hand: an edit of a lock
changes the line of every notebook of that framework at the next build, and
``tabbook notebooks`` fails when a published notebook's line is not what the locks give now.

Left out are the packages the builder puts into a framework's environment for itself
(:data:`BUILDER_ONLY`): the kernel a reader's Jupyter or Colab already runs, and the test runner
of ``make libtest``. The hashed lock (``envs/<tab>.hashes.txt``, ``tabbook lock``) pins what the
environment that computed the outputs had installed; where it pins one of these packages at
another public version (its local label apart: ``2.13.0+cpu`` is the CPU build of 2.13.0, and
a reader's machine picks its own build), the locks disagree, a located error.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tabbook.config import Framework
from tabbook.errors import BookError

#: What the builder adds to every framework environment for itself, never for the book's code:
#: the kernel (``ipykernel``: every notebook front end brings its own) and ``make libtest``'s
#: runner (``pytest``).
BUILDER_ONLY = frozenset({"ipykernel", "pytest"})

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_EXACT = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*==\s*([^\s;\\]+)")


@dataclass(frozen=True)
class Pin:
    """One requirement of the install line, and the lock line it comes from."""

    name: str  # normalized (PEP 503)
    spec: str  # as the lock writes it, without its comment: "torch==2.13.0", "ipython<9"
    path: Path
    line: int


def normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _lock_lines(path: Path) -> list[tuple[int, str]]:
    out = []
    for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        word = raw.split("#", 1)[0].strip()
        if word:
            out.append((number, word))
    return out


def reader_pins(fw: Framework, rel: Callable[[Path], str] = str) -> tuple[Pin, ...]:
    """The framework's requirements then constraints as the reader's line installs them: one
    pin per package (the first file naming it wins), the builder's own tools left out. A line
    the install line cannot carry (an option, a path) is a located error."""
    pins: dict[str, Pin] = {}
    for path in (fw.requirements, fw.constraints):
        if path is None:
            continue
        for number, word in _lock_lines(path):
            m = _NAME.match(word)
            if word.startswith(("-", ".", "/")) or m is None:
                raise BookError(f"{word!r}: a reader's notebook installs its framework by name and version; "
                                "this lock line is not a requirement its install line can carry", rel(path), number)
            name = normalize(m.group(0).split("[", 1)[0])
            if name not in BUILDER_ONLY and name not in pins:
                pins[name] = Pin(name, word.replace(" ", ""), path, number)
    if fw.requirements is not None:
        _check_hashed(fw.requirements, pins, rel)
    return tuple(pins.values())


def _public(version: str) -> str:
    return version.split("+", 1)[0]


def _check_hashed(requirements: Path, pins: dict[str, Pin], rel: Callable[[Path], str]) -> None:
    """The hashed lock beside ``requirements`` pins each exact pin at the same public version."""
    from tabbook.execute.installer import hashed_path

    hashed = hashed_path(requirements)
    if not hashed.is_file():
        return
    for number, raw in enumerate(hashed.read_text(encoding="utf-8").splitlines(), 1):
        m = _EXACT.match(raw)
        if m is None:
            continue
        pin = pins.get(normalize(m.group(1)))
        exact = _EXACT.match(pin.spec) if pin is not None else None
        if pin is not None and exact is not None and _public(exact.group(2)) != _public(m.group(2)):
            raise BookError(f"pins {m.group(1)}=={m.group(2)}, but {rel(pin.path)}:{pin.line} pins {pin.spec}: "
                            "the install line of the reader's notebooks would name a version the book did not run "
                            f"with (run `tabbook lock {requirements.stem}`)", rel(hashed), number)


#: The comment line above the install command (what the cell says it is for).
HEADER = "# This book's {package} (the wheel beside the notebooks, in the notebooks zip) and the packages its outputs were computed with ({locks})"


def install_source(requirement: str, specs: tuple[str, ...], find_links: str, locks: str, package: str) -> str:
    """The first cell's source: ``%pip install`` of the book's package (``requirement``, e.g.
    ``d2l==0.1.0+gpus``), found in ``find_links`` (the zip's folder, relative to the
    notebook), and every pin (:func:`reader_pins`' specs)."""
    words = [shlex.quote(requirement), *(shlex.quote(spec) for spec in specs)]
    return (HEADER.format(package=package, locks=locks) + "\n"
            f"%pip install --quiet --find-links {shlex.quote(find_links)} {' '.join(words)}\n")


def find_links_for(docname: str) -> str:
    """From a notebook's folder inside the zip (``chapter/sec``) back to the zip's top folder."""
    depth = docname.count("/")
    return "/".join([".."] * depth) if depth else "."
