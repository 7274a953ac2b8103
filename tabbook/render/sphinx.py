"""Render: run Sphinx on the merged sources, one builder at a time.

Sphinx runs in a subprocess with the book's ``conf.py`` (``-c ROOT``) and a doctree
cache per builder under ``build/doctrees``, so HTML and the per-framework LaTeX
builds each reuse their own. Its messages pass through to the user's terminal.

A book written for d2lbook has no ``conf.py`` (d2lbook generates its own): such a
book gets one written under ``build/`` that applies the same defaults
(:func:`tabbook.render.sphinx_conf.sphinx_settings`); the configuration reaches it, as it reaches a
book's own ``conf.py``, as the render context named in the environment each run is given
(:func:`sphinx_env`).

**A no-op build runs no Sphinx.** When the sources step wrote nothing and the
inputs Sphinx reads besides them are the same as at its last successful run
(:func:`site_stamp`: its command line, ``conf.py``, the builder's own render code,
``config.ini`` and the overlay, the render context, the resources' sizes and times, the versions of
Sphinx and its extensions, the built PDFs and which slide decks exist), the output is current; Sphinx's own incremental
check costs seconds on a book of hundreds of pages.

**How Sphinx starts is the caller's** (:data:`Launcher`): a new interpreter by default; in the
warm builder (:mod:`tabbook.warm`), which has Sphinx and the extensions imported already, a fork
of that process (``build.Options.sphinx``): the same command line, environment, gate and
diagnostics, without the second of imports. Either way an interrupted build ends its Sphinx
before it returns.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Protocol

from tabbook.config import Config
from tabbook.errors import BookError
from tabbook.files import BuildDir, builder_fingerprint
from tabbook.lifetime import SPHINX_PARENT_ENV
from tabbook.render.context import hand_off, render_context
from tabbook.render.formats import format_named
from tabbook.render.sources import source_dir


def conf_dir(config: Config) -> Path:
    """The folder of the ``conf.py`` Sphinx reads: the book's own, or one written for it."""
    if (config.root / "conf.py").is_file():
        return config.root
    from tabbook.files import write_if_changed

    folder = BuildDir(config.build_dir).sphinx_conf
    folder.mkdir(parents=True, exist_ok=True)
    write_if_changed(folder / "conf.py", (
        "# Written by tabbook for a book without a conf.py of its own: its defaults, nothing else.\n"
        "from pathlib import Path\n\n"
        "from tabbook.render.sphinx_conf import sphinx_settings\n\n"
        f"globals().update(sphinx_settings(Path({str(config.root)!r})))\n"))
    return folder


def sphinx_command(config: Config, builder: str = "html", out: Path | None = None,
                   overrides: dict[str, str] | None = None, jobs: int = 1) -> list[str]:
    """The command line tabbook runs Sphinx with: ``python -m tabbook.render.sphinx_main`` and
    ``sphinx-build``'s arguments (``[3:]``, also what ``serve`` hands to sphinx-autobuild and what
    the warm builder's forks run); :mod:`tabbook.render.sphinx_main` says why not ``-m sphinx``."""
    build = BuildDir(config.build_dir)
    out = out or build.out(builder)
    cmd = [
        sys.executable, "-m", "tabbook.render.sphinx_main", "-b", builder, "-c", str(conf_dir(config)),
        str(build.src), str(out), "-d", str(build.doctrees(builder)),
        "-q", "--keep-going",
    ]
    if jobs != 1:
        cmd += ["-j", str(jobs) if jobs > 1 else "auto"]
    for k, v in (overrides or {}).items():
        cmd += ["-D", f"{k}={v}"]
    return cmd


def sphinx_env(config: Config) -> dict[str, str]:
    """A Sphinx run's environment, built for it (by the process that starts it): this one, with
    tabbook importable from this checkout, the configuration's render context for its ``conf.py``
    (:func:`tabbook.render.context.hand_off`: written now, read there instead of ``config.ini``),
    and this process's id, which the run must not outlive."""
    # The run ends with the process that starts it, even one killed outright (lifetime.end_with_parent).
    return {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2]), **hand_off(config),
            SPHINX_PARENT_ENV: str(os.getpid())}


STAMP = ".tabbook-stamp"
#: A located error tabbook's settings raised while Sphinx evaluated conf.py, in Sphinx's report.
CONF_ERROR = re.compile(r"^\s*tabbook\.errors\.BookError: (.+)$", re.M)
#: Where a Sphinx run records the modules it imported (:mod:`tabbook.render.ext.learn`).
LEARN_ENV = "TABBOOK_LEARN_MODULES"
#: Where a Sphinx run records its warnings (:mod:`tabbook.render.ext.diagnostics`).
WARNINGS_ENV = "TABBOOK_WARNINGS"
#: Where a Sphinx run says what it reads and writes as it goes (:mod:`tabbook.render.ext.progress`).
PROGRESS_ENV = "TABBOOK_RENDER_PROGRESS"
#: Set to "1": the run waits at ``builder-inited`` for :data:`GATE_GO` (:mod:`tabbook.render.ext.gate`).
GATE_ENV = "TABBOOK_SPHINX_GATE"
GATE_GO = "go"
# The names a Sphinx run is handed live here, on the builder's side, and the extensions read them
# from here: the builder never imports an extension (each imports Sphinx, a third of a second that
# a no-op build, which runs no Sphinx, must not pay).


def learned_modules(config: Config) -> Path:
    return BuildDir(config.build_dir).warm_modules


def learn_env(config: Config) -> dict[str, str]:
    """The environment that asks an HTML run to record what it imported."""
    return {LEARN_ENV: str(learned_modules(config))}


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
    h.update(builder_fingerprint().encode())
    h.update(render_context(config).to_json().encode())  # what --set or the environment changed too
    files = [conf_dir(config) / "conf.py", config.root / "config.ini"]
    if config.overlay:
        files.append(config.overlay)
    for path in files:
        h.update(path.read_bytes() if path.is_file() else b"-")
    for name in config.resources:
        h.update(json.dumps(_tree_stat(config.root / name)).encode())
    for path in config.named_files():  # favicon, logos, include_css/js, the book's own extensions
        h.update(json.dumps(_tree_stat(path)).encode())
    # API pages read the generated library (tabbook.render.ext.apidoc); it is rewritten only
    # when its text changes, so its stat is stable across no-op builds.
    if config.library_dir.is_dir():
        h.update(json.dumps(_tree_stat(config.library_dir)).encode())
    # Pages link the PDFs (copied into the site when they change) and the slide decks that exist.
    pdfs = BuildDir(config.build_dir).pdf
    h.update(json.dumps([s for s in _tree_stat(pdfs) if s[0].endswith(".pdf")] if pdfs.is_dir() else []).encode())
    decks = BuildDir(config.build_dir).html / "_slides"
    h.update(json.dumps(sorted(p.relative_to(decks).as_posix() for p in decks.rglob("*.html"))
                        if decks.is_dir() else []).encode())
    return h.hexdigest()


#: An operating system error in Sphinx's report: ``[Errno 28] No space left on device: 'PATH'``.
#: A copy's error names both files (``'src' -> 'dst'``, the one written last), and an extension's
#: handler's is wrapped in Sphinx's ``ExtensionError(... (exception: …))``.
OS_ERROR = re.compile(r"\[Errno (\d+)\] ([^:\n]+?)(?:: '([^'\n]+)'(?: -> '([^'\n]+)')?)?\)?$", re.M)
#: Where Sphinx saved the traceback of a crash.
CRASH_LOG = re.compile(r"traceback has been saved in:\s*(\S+)")


#: Sphinx's theme error gives the errno without a file, and the page it was writing.
OS_ERROR_OF_PAGE = re.compile(r"rendering the page (\S+?)\.?\n\s*Reason: OSError\((\d+), '([^'\n]+)'\)")


def os_error_of(stderr: str, root: Path, out: Path | None = None) -> BookError | None:
    """The one-line error for a Sphinx run that an operating system error stopped (a full disk,
    a folder it may not write), naming the file; None when its report shows none. Why: Sphinx
    reports these as its own crash ("please open an issue"), traceback and all; the user's
    problem is the disk, and the file tells which."""
    found = OS_ERROR.search(stderr)
    page = OS_ERROR_OF_PAGE.search(stderr)
    if found is not None:
        number, why, source, target = found.groups()
        where = target or source
    elif page is not None:  # writing a page (``out``: the builder's folder; the HTML builder's suffix)
        number, why = page.group(2), page.group(3)
        where = str((out or root / "build") / f"{page.group(1)}.html")
    else:
        return None
    if where and Path(where).is_relative_to(root):
        where = Path(where).relative_to(root).as_posix()
    crash = CRASH_LOG.search(stderr)
    log = f"; Sphinx's report: {crash.group(1)}" if crash else ""
    return BookError(f"cannot write: {why} (errno {number}): Sphinx stopped{log}", where or "build")


class SphinxProcess(Protocol):
    """A running Sphinx, as :class:`SphinxRun` uses it: :class:`subprocess.Popen`'s parts."""

    returncode: int | None

    def communicate(self, input: str = ..., timeout: float | None = ...) -> tuple[str, str]: ...  # noqa: A002

    def kill(self) -> None: ...

    def poll(self) -> int | None: ...

    def wait(self, timeout: float | None = ...) -> int: ...


#: How a build starts Sphinx: ``(command line, environment) -> a running Sphinx`` reading its
#: standard input (the gate) and keeping its standard error. :func:`new_interpreter` by default;
#: the warm builder passes :data:`tabbook.warm.launch.fork_sphinx` (``build.Options.sphinx``).
#: A running Sphinx with a ``set_up_for`` attribute was set up before this build (a spare,
#: :mod:`tabbook.warm.spare`): it is let go only if :meth:`SphinxRun.inputs` still says that.
#: A launcher with a ``rendered(cmd, env, inputs)`` method is told of every successful run.
Launcher = Callable[[list[str], Mapping[str, str]], SphinxProcess]


def new_interpreter(cmd: list[str], env: Mapping[str, str]) -> subprocess.Popen[str]:
    """Sphinx in a new interpreter: ``cmd`` as it is."""
    return subprocess.Popen(cmd, env=dict(env), text=True, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)


def _communicate(proc: SphinxProcess, input: str) -> str:  # noqa: A002
    """Send ``input``, wait, return its standard error. Interrupted (Ctrl-C, SIGTERM), it ends
    the run before passing the interrupt on: no Sphinx outlives the build that started it,
    writing ``build/`` after the command has said it stopped."""
    try:
        return proc.communicate(input)[1]
    except BaseException:
        proc.kill()
        proc.wait()
        raise


class SphinxRun:
    """One Sphinx run of a builder, which may be started before its sources are written.

    :meth:`start` launches Sphinx gated (:mod:`tabbook.render.ext.gate`): it imports itself
    and the extensions, loads its pickled environment and then waits, so that second overlaps
    the execution of the stale units. :meth:`finish` either lets it read the sources (or runs
    it now, if it was never started) or, when the output is current after all, calls it off.
    """

    def __init__(self, config: Config, builder: str = "html", out: Path | None = None,
                 overrides: dict[str, str] | None = None, jobs: int = 1,
                 strict: bool | None = None, launch: Launcher = new_interpreter) -> None:
        self.config = config
        self.launch = launch
        self.builder = builder
        # Warnings (a bib entry's data) fail the run too: --strict, or [build] warning_is_error.
        self.strict = config.warning_is_error if strict is None else strict
        self.cmd = sphinx_command(config, builder, out, overrides, jobs)
        build = BuildDir(config.build_dir)
        self.stamp_file = (out or build.out(builder)) / STAMP
        self.records = (build.warnings /
                        f"{builder}-{hashlib.sha256(str(out).encode()).hexdigest()[:8]}.json")
        # What the run reads and writes, as it goes (tabbook.render.progress); shown while it
        # runs when ``log`` is set (``live``: as a live line on ``stream``, a terminal).
        self.progress = build.warnings / f"{builder}-{hashlib.sha256(str(out).encode()).hexdigest()[:8]}.progress"
        self.log: Callable[[str], object] | None = None
        self.live = False
        self.proc: SphinxProcess | None = None
        self.problems: list[BookError] = []  # the last finish's Sphinx warnings, each of its kind
        self.set_up_ahead = False  # the last finish let go a run set up before the build (a spare)

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
        learn = learn_env(self.config) if format_named(self.builder).site else {}
        return {**sphinx_env(self.config), WARNINGS_ENV: str(self.records), PROGRESS_ENV: str(self.progress), **learn}

    def start(self) -> None:
        """Start Sphinx now; it waits at ``builder-inited`` until :meth:`finish`."""
        source_dir(self.config).mkdir(parents=True, exist_ok=True)  # Sphinx checks it exists
        # The last run's record stays until this one reads: called off, it is still the record.
        self.proc = self.launch(self.cmd, {**self._env(), GATE_ENV: "1"})

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
        except BaseException:
            proc.kill()
            proc.wait()
            raise

    def _showing_progress(self) -> AbstractContextManager[object]:
        """The run's progress shown while it runs (:class:`tabbook.render.progress.RenderProgress`),
        when the build gave a ``log``."""
        if self.log is None:
            return nullcontext()
        from tabbook.render.progress import RenderProgress

        return RenderProgress(self.progress, self.builder, self.log, sys.stdout, interactive=self.live)

    def rendered_pages(self, pages: set[str]) -> list[str]:
        """The pages the last run read again (:func:`tabbook.render.progress.read_pages`)."""
        from tabbook.render.progress import read_pages

        return read_pages(self.progress, pages)

    def finish(self, sources_changed: int | None = None) -> bool:
        """Render; returns False when it was skipped because its output is current.

        ``sources_changed``: how many files the sources step wrote (None: unknown, always run).
        Sphinx's warnings, each at the Markdown line it is about and of its kind
        (:mod:`tabbook.render.diagnostics`), are left in :attr:`problems` for the build to judge
        (a skipped run's are the last run's: its output is the last run's); only a Sphinx that
        failed is raised here. Sphinx's own rendering of them names generated files, so it is
        not shown.
        """
        from tabbook.render.diagnostics import collect

        stamp = site_stamp(self.config, self.cmd)
        if sources_changed == 0 and self.stamp_file.is_file() and self.stamp_file.read_text() == stamp:
            self.call_off()
            last = collect(self.config, self.records, strict=self.strict, mark=False)
            self.problems = [*last.errors, *last.warnings]
            return False
        set_up_for = getattr(self.proc, "set_up_for", None)
        if set_up_for is not None and (set_up_for != self.inputs(stamp) or (self.proc is not None and self.proc.poll() is not None)):
            # Set up ahead from inputs that changed since (or it ended): a run of its own instead.
            self.call_off()
        self.set_up_ahead = set_up_for is not None and self.proc is not None
        self.stamp_file.unlink(missing_ok=True)

        self.progress.parent.mkdir(parents=True, exist_ok=True)
        self.progress.unlink(missing_ok=True)  # opened by the run once it passes its gate
        with self._showing_progress():
            if self.proc is None:
                self.records.unlink(missing_ok=True)
                stderr = _communicate(proc := self.launch(self.cmd, self._env()), "")
            else:
                proc, self.proc = self.proc, None
                self.records.unlink(missing_ok=True)  # written at the end of the run it lets go
                stderr = _communicate(proc, GATE_GO + "\n")
        returncode = proc.returncode
        found = collect(self.config, self.records, strict=self.strict)
        self.problems = [*found.errors, *found.warnings]
        conf_error = CONF_ERROR.search(stderr) if returncode != 0 else None
        os_error = os_error_of(stderr, self.config.root, self.stamp_file.parent) if returncode != 0 else None
        if conf_error:
            # A key's value failed while conf.py ran (sphinx_configs, an include_css name): the
            # located message alone, not Sphinx's crash report around it.
            raise BookError(conf_error.group(1))
        if os_error is not None:
            raise os_error  # the machine's problem (a full disk), not Sphinx's: one line
        if returncode != 0:
            sys.stderr.write(stderr)
            raise BookError(f"Sphinx failed (exit {returncode}); see the messages above")
        if not self.records.is_file():
            sys.stderr.write(stderr)
            raise BookError("Sphinx ran without tabbook's extensions: its warnings cannot be checked")
        self.stamp_file.write_text(stamp)
        rendered = getattr(self.launch, "rendered", None)
        if rendered is not None:
            rendered(self.cmd, self._env(), self.inputs(stamp))
        return True

    def inputs(self, stamp: str) -> str:
        """What a run of this builder reads besides ``build/src`` before its gate, as one text:
        the site stamp (:func:`site_stamp`), and the size and time of the pickled environment and
        of each bibliography (read by sphinxcontrib-bibtex at ``builder-inited``). Two equal texts
        mean a run set up at the one would have set itself up alike at the other."""
        env_pickle = BuildDir(self.config.build_dir).doctrees(self.builder) / "environment.pickle"
        files = [env_pickle, *(Path(b) for b in render_context(self.config).bibfiles)]
        seen = []
        for path in files:
            try:
                st = path.stat()
                seen.append([str(path), st.st_size, st.st_mtime_ns])
            except OSError:
                seen.append([str(path), -1, -1])
        return json.dumps([stamp, seen])


