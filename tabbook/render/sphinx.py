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


class SphinxRun:
    """One Sphinx run of a builder, which may be started before its sources are written.

    :meth:`start` launches Sphinx gated (:mod:`tabbook.render.ext.gate`): it imports itself
    and the extensions, loads its pickled environment and then waits, so that second overlaps
    the execution of the stale units. :meth:`finish` either lets it read the sources (or runs
    it now, if it was never started) or, when the output is current after all, calls it off.
    """

    def __init__(self, config: Config, builder: str = "html", out: Path | None = None,
                 overrides: dict[str, str] | None = None, jobs: int = 1, partial: bool = False) -> None:
        self.config = config
        self.builder = builder
        overrides = {**(overrides or {}), **({"tabbook_partial": "1"} if partial else {})}
        self.cmd = sphinx_command(config, builder, out, overrides, jobs)
        self.stamp_file = (out or config.build_dir / builder) / STAMP
        self.records = (config.build_dir / "warnings" /
                        f"{builder}-{hashlib.sha256(str(out).encode()).hexdigest()[:8]}.json")
        self.proc: subprocess.Popen[str] | None = None

    @property
    def started(self) -> bool:
        return self.proc is not None

    def likely_to_run(self) -> bool:
        """Whether this run will probably have to render: never rendered, or a page or the
        configuration is newer than the last render. Only ``stat`` calls, so that a no-op
        build, which starts no Sphinx, pays nothing for the guess; a wrong guess costs the
        CPU of a Sphinx start-up called off, never a wrong site (:meth:`finish` decides)."""
        from tabbook.book import book_markdown_files

        try:
            rendered = self.stamp_file.stat().st_mtime_ns
        except OSError:
            return True
        inputs = [self.config.root / "config.ini", *([self.config.overlay] if self.config.overlay else []),
                  *book_markdown_files(self.config)]
        for path in inputs:
            try:
                if path.stat().st_mtime_ns > rendered:
                    return True
            except OSError:
                return True
        return False

    def _env(self) -> dict[str, str]:
        from tabbook.render.ext.diagnostics import ENV_VAR
        return {**sphinx_env(), ENV_VAR: str(self.records)}

    def start(self) -> None:
        """Start Sphinx now; it waits at ``builder-inited`` until :meth:`finish`."""
        from tabbook.render.ext import gate

        source_dir(self.config).mkdir(parents=True, exist_ok=True)  # Sphinx checks it exists
        self.records.unlink(missing_ok=True)
        self.proc = subprocess.Popen(self.cmd, env={**self._env(), gate.ENV_VAR: "1"}, text=True,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)

    def call_off(self) -> None:
        """End a started run that must not read anything (nothing changed, or the build failed)."""
        if self.proc is None:
            return
        proc, self.proc = self.proc, None
        try:
            proc.communicate("", timeout=30)  # end of input: the gate ends the process
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()

    def finish(self, sources_changed: int | None = None) -> bool:
        """Render; returns False when it was skipped because its output is current.

        ``sources_changed``: how many files the sources step wrote (None: unknown, always run).
        """
        stamp = site_stamp(self.config, self.cmd)
        if sources_changed == 0 and self.stamp_file.is_file() and self.stamp_file.read_text() == stamp:
            self.call_off()
            return False
        self.stamp_file.unlink(missing_ok=True)
        from tabbook.errors import BookErrors
        from tabbook.render.diagnostics import collect
        from tabbook.render.ext import gate

        if self.proc is None:
            self.records.unlink(missing_ok=True)
            done = subprocess.run(self.cmd, env=self._env(), capture_output=True, text=True)
            returncode, stderr = done.returncode, done.stderr
        else:
            proc, self.proc = self.proc, None
            _, stderr = proc.communicate(gate.GO + "\n")
            returncode = proc.returncode
        # Every warning is an error at the Markdown line it is about (tabbook.render.diagnostics);
        # Sphinx's own rendering of them names generated files, so it is not shown.
        errors = collect(self.config, self.records)
        if returncode != 0:
            sys.stderr.write(stderr)
            errors.append(BookError(f"Sphinx failed (exit {returncode}); see the messages above"))
        elif not self.records.is_file():
            sys.stderr.write(stderr)
            errors.append(BookError("Sphinx ran without tabbook's extensions: its warnings cannot be checked"))
        if errors:
            raise errors[0] if len(errors) == 1 else BookErrors(errors)
        self.stamp_file.write_text(stamp)
        return True


def render(config: Config, builder: str = "html", out: Path | None = None,
           overrides: dict[str, str] | None = None, jobs: int = 1, partial: bool = False,
           sources_changed: int | None = None) -> bool:
    """Run Sphinx now; returns False when it was skipped because its output is current.

    ``sources_changed``: how many files the sources step wrote (None: unknown, always run).
    """
    return SphinxRun(config, builder, out, overrides, jobs, partial).finish(sources_changed)
