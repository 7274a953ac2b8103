"""Stage 4b, render: run Sphinx on the merged sources, one builder at a time.

Sphinx runs in a subprocess with the book's ``conf.py`` (``-c ROOT``) and a doctree
cache per builder under ``build/doctrees``, so HTML and the per-framework LaTeX
builds each reuse their own. Its messages pass through to the user's terminal.

A book written for d2lbook has no ``conf.py`` (d2lbook generates its own): such a
book gets one written under ``build/`` that applies the same defaults
(:func:`tabbook.render.sphinx_conf.sphinx_settings`), with the overlay in effect
when it was written, so ``serve``'s Sphinx runs see the same configuration.

**A no-op build runs no Sphinx.** When the sources step wrote nothing and the
inputs Sphinx reads besides them are the same as at its last successful run
(:func:`site_stamp`: its command line, ``conf.py``, the builder's own render code,
``config.ini`` and the overlay, the resources' sizes and times, the versions of
Sphinx and its extensions, the built PDFs and which slide decks exist), the output is current; Sphinx's own incremental
check costs seconds on a book of hundreds of pages.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from functools import cache
from importlib import metadata
from pathlib import Path

from tabbook.config import Config
from tabbook.errors import BookError
from tabbook.render.sources import source_dir


def conf_dir(config: Config) -> Path:
    """The folder of the ``conf.py`` Sphinx reads: the book's own, or one written for it."""
    if (config.root / "conf.py").is_file():
        return config.root
    from tabbook.config import OVERLAY_ENV
    from tabbook.render.sources import write_if_changed

    folder = config.build_dir / "sphinx-conf"
    folder.mkdir(parents=True, exist_ok=True)
    overlay = f"os.environ.setdefault({OVERLAY_ENV!r}, {str(config.overlay)!r})\n" if config.overlay else ""
    write_if_changed(folder / "conf.py", (
        "# Written by tabbook for a book without a conf.py of its own: its defaults, nothing else.\n"
        "import os\nfrom pathlib import Path\n\n"
        f"{overlay}"
        "from tabbook.render.sphinx_conf import sphinx_settings\n\n"
        f"globals().update(sphinx_settings(Path({str(config.root)!r})))\n"))
    return folder


def sphinx_command(config: Config, builder: str = "html", out: Path | None = None,
                   overrides: dict[str, str] | None = None, jobs: int = 1) -> list[str]:
    """The ``sphinx-build`` command line tabbook runs (also what ``serve`` hands to sphinx-autobuild)."""
    out = out or config.build_dir / builder
    cmd = [
        sys.executable, "-m", "sphinx", "-b", builder, "-c", str(conf_dir(config)),
        str(source_dir(config)), str(out), "-d", str(config.build_dir / "doctrees" / builder),
        "-q", "--keep-going",
    ]
    if jobs != 1:
        cmd += ["-j", str(jobs) if jobs > 1 else "auto"]
    for k, v in (overrides or {}).items():
        cmd += ["-D", f"{k}={v}"]
    return cmd


def sphinx_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2])
    return env


STAMP = ".tabbook-stamp"
#: Distributions whose version decides what Sphinx makes of the same sources.
SPHINX_DISTS = ("sphinx", "myst-nb", "myst-parser", "sphinx-design", "furo", "sphinxcontrib-bibtex")


@cache
def _render_code_hash() -> str:
    """The builder's own rendering code (extensions, static files, settings): one hash per process."""
    h = hashlib.sha256()
    here = Path(__file__).resolve().parent
    for path in sorted(here.rglob("*")):
        if path.is_file() and "node_modules" not in path.parts and path.suffix != ".pyc":
            h.update(str(path.relative_to(here)).encode() + b"\0" + path.read_bytes() + b"\0")
    for dist in SPHINX_DISTS:
        try:
            h.update(f"{dist}={metadata.version(dist)}".encode())
        except metadata.PackageNotFoundError:
            h.update(f"{dist}=-".encode())
    return h.hexdigest()


def _tree_stat(path: Path) -> list[tuple[str, int, int]]:
    if path.is_file():
        st = path.stat()
        return [(str(path), st.st_size, st.st_mtime_ns)]
    out = []
    for root, _, files in os.walk(path):
        for name in files:
            st = Path(root, name).stat()
            out.append((os.path.join(root, name), st.st_size, st.st_mtime_ns))
    return sorted(out)


def site_stamp(config: Config, cmd: list[str]) -> str:
    """Everything besides ``build/src`` that decides Sphinx's output, as one hash."""
    h = hashlib.sha256(json.dumps(cmd).encode())
    h.update(_render_code_hash().encode())
    files = [conf_dir(config) / "conf.py", config.root / "config.ini"]
    if config.overlay:
        files.append(config.overlay)
    for path in files:
        h.update(path.read_bytes() if path.is_file() else b"-")
    for name in config.resources:
        h.update(json.dumps(_tree_stat(config.root / name)).encode())
    # API pages read the generated library (tabbook.render.ext.apidoc); it is rewritten only
    # when its text changes, so its stat is stable across no-op builds.
    if config.library_dir.is_dir():
        h.update(json.dumps(_tree_stat(config.library_dir)).encode())
    # Pages link the PDFs (copied into the site when they change) and the slide decks that exist.
    pdfs = config.build_dir / "pdf"
    h.update(json.dumps([s for s in _tree_stat(pdfs) if s[0].endswith(".pdf")] if pdfs.is_dir() else []).encode())
    decks = config.build_dir / "html" / "_slides"
    h.update(json.dumps(sorted(p.relative_to(decks).as_posix() for p in decks.rglob("*.html"))
                        if decks.is_dir() else []).encode())
    return h.hexdigest()


def render(config: Config, builder: str = "html", out: Path | None = None,
           overrides: dict[str, str] | None = None, jobs: int = 1, partial: bool = False,
           sources_changed: int | None = None) -> bool:
    """Run Sphinx; returns False when it was skipped because its output is current.

    ``sources_changed``: how many files the sources step wrote (None: unknown, always run).
    """
    overrides = {**(overrides or {}), **({"tabbook_partial": "1"} if partial else {})}
    cmd = sphinx_command(config, builder, out, overrides, jobs)
    stamp_file = (out or config.build_dir / builder) / STAMP
    stamp = site_stamp(config, cmd)
    if sources_changed == 0 and stamp_file.is_file() and stamp_file.read_text() == stamp:
        return False
    stamp_file.unlink(missing_ok=True)
    from tabbook.errors import BookErrors
    from tabbook.render.diagnostics import collect
    from tabbook.render.ext.diagnostics import ENV_VAR

    records = config.build_dir / "warnings" / f"{builder}-{hashlib.sha256(str(out).encode()).hexdigest()[:8]}.json"
    records.unlink(missing_ok=True)
    proc = subprocess.run(cmd, env={**sphinx_env(), ENV_VAR: str(records)}, capture_output=True, text=True)
    # Every warning is an error at the Markdown line it is about (tabbook.render.diagnostics);
    # Sphinx's own rendering of them names generated files, so it is not shown.
    errors = collect(config, records)
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr)
        errors.append(BookError(f"Sphinx failed (exit {proc.returncode}); see the messages above"))
    elif not records.is_file():
        sys.stderr.write(proc.stderr)
        errors.append(BookError("Sphinx ran without tabbook's extensions: its warnings cannot be checked"))
    if errors:
        raise errors[0] if len(errors) == 1 else BookErrors(errors)
    stamp_file.write_text(stamp)
    return True
