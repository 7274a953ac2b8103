"""``make serve``: a live preview, served by sphinx-autobuild. Rebuilds on save, reloads the page.

Usage: ``python -m tabbook [-C BOOK] serve [--port 8000] [--host 127.0.0.1] [--no-build]``.

`sphinx-autobuild <https://github.com/sphinx-doc/sphinx-autobuild>`_ (pinned in
``envs/builder.txt``) serves ``build/html`` on localhost, watches files and reloads open pages after
each build. This module computes its command line (:func:`autobuild_args`), gives it tabbook's
builder and runs it:

- Sphinx runs on ``build/src`` with the render stage's options (``-c BOOK``, doctrees in
  ``build/doctrees/html``, ``-q --keep-going``).
- Each rebuild runs in the worker process sphinx-autobuild forks from the server, and the
  server has imported beforehand what a rebuild imports (Sphinx, myst-nb, the theme, tabbook's
  extensions, and whatever the last rebuild loaded: :func:`warm_up`). The worker runs tabbook's
  source, execute and merge stages in-process (:func:`run_stages`, what ``python -m tabbook build
  --builder ''`` does), which reuse the freeze store: a prose edit re-renders that page and starts
  no kernel, a code edit executes only that (section, framework); then Sphinx, in-process
  (:class:`WarmBuilder`). No interpreter starts and nothing is imported again, so a prose edit
  shows in the browser in well under a second (``bench/serve_latency.py``). The ``--pre-build``
  and ``--post-build`` commands remain for a plain sphinx-autobuild.
- It watches the book's Markdown (as ``tabbook check`` finds it), ``config.ini``, ``conf.py``,
  ``references.bib``, ``img/``, ``static/`` and the builder's ``tabbook/render/static``, and ignores
  everything else, so the build writing ``build/``, the freeze store or the library starts no
  rebuild loop.
- A failed build is shown, not hidden behind stale pages: the pre- and post-build steps write
  ``build/html/_preview-status.json``, and the pages Sphinx renders for the preview (config value
  ``tabbook_preview_status``, :mod:`tabbook.render.ext.preview`) read it after each reload and show
  the error (``file.md:LINE: ...``) in a banner. Pages built by ``make html`` have no such script;
  the status file is removed when the server stops.
"""

from __future__ import annotations

import argparse
import collections
import html
import json
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from tabbook.config import Config, load_config
from tabbook.errors import BookError
from tabbook.files import write_atomic
from tabbook.render.sources import source_dir
from tabbook.render.sphinx import learn_env, learned_modules, sphinx_command

PACKAGE_PARENT = Path(__file__).resolve().parent.parent
BUILDER_STATIC = Path(__file__).resolve().parent / "render" / "static"
STATUS_NAME = "_preview-status.json"
STATUS_URL = "/" + STATUS_NAME  # build/html is served at the server's root
ROOT_FILES = ("config.ini", "conf.py", "references.bib")
ROOT_DIRS = ("img", "static")
SPHINX_UNFINISHED = ("Sphinx is still rendering, or it failed: see the terminal running `make serve`.")


def html_dir(config: Config) -> Path:
    return config.build_dir / "html"


def status_file(config: Config) -> Path:
    return html_dir(config) / STATUS_NAME


def _posix(path: Path) -> str:
    return path.resolve().as_posix()


def watch_rules(config: Config, builder_static: Path = BUILDER_STATIC) -> tuple[list[Path], list[str], list[str]]:
    """What sphinx-autobuild watches: ``(--watch folders, --ignore globs, --re-ignore regexes)``.

    Its watcher is recursive, so the book root is watched whole and everything that is not a
    source is ignored: the folders ``tabbook check`` skips (``build/``, the freeze store, the
    library, ``tests/``, ...), hidden files and folders, the repository's own documents, and (one
    regular expression) any path that is not a page, a root file, ``img/``, ``static/`` or the
    builder's static files. Paths are matched resolved, as sphinx-autobuild matches them.
    """
    from tabbook.book import IGNORED_DIRS, REPO_DOCS

    root = _posix(config.root)
    watch = [config.root]
    if not _posix(builder_static).startswith(root + "/"):
        watch.append(builder_static)
    skipped = [config.root / name for name in sorted(IGNORED_DIRS)]
    skipped += [config.build_dir, config.freeze_dir, config.library_dir]
    ignore = list(dict.fromkeys(_posix(p) for p in skipped))
    r = re.escape(root)
    hidden = rf"^{r}/(?:[^/]+/)*[.#~]"  # .git/, .other.md.swp, .#other.md (editor locks)
    repo_docs = rf"^{r}/(?i:{'|'.join(map(re.escape, sorted(REPO_DOCS)))})$"  # README.md, ...
    sources = "|".join([
        re.escape(_posix(builder_static)) + "/",
        rf"{r}/(?:[^/]+/)*[^/]+\.md$",
        rf"{r}/(?:{'|'.join(map(re.escape, ROOT_FILES))})$",
        rf"{r}/(?:{'|'.join(map(re.escape, ROOT_DIRS))})/",
    ])
    return watch, ignore, [hidden, repo_docs, rf"^(?!(?:{sources}))"]


def autobuild_args(config: Config, host: str = "127.0.0.1", port: int = 8000, initial_build: bool = True,
                   python: str = sys.executable) -> list[str]:
    """The arguments of ``sphinx-autobuild`` (after the program name) that serve ``config``'s book."""
    root = config.root
    # The render stage's own Sphinx options (less its "python -m sphinx"), plus the status URL.
    sphinx = sphinx_command(config, "html", html_dir(config), {"tabbook_preview_status": STATUS_URL})[3:]
    step = [python, "-m", "tabbook", "-C", str(root), "serve"]
    watch, ignore, re_ignore = watch_rules(config)
    args = [*sphinx, "--host", host, "--port", str(port),
            "--pre-build", shlex.join([*step, "--pre-build"]),
            "--post-build", shlex.join([*step, "--post-build"])]
    for path in watch:
        args += ["--watch", str(path)]
    for pattern in ignore:
        args += ["--ignore", pattern]
    for pattern in re_ignore:
        args += ["--re-ignore", pattern]
    if not initial_build:
        args.append("--no-initial")
    return args


def write_status(config: Config, error: str = "") -> None:
    write_atomic(status_file(config), json.dumps({"ok": not error, "error": error}) + "\n")


def error_page(config: Config, error: str) -> None:
    """Before the first good build there is no page to show a banner on: write a bare index.html.

    Its modification time is set to 1970 so that Sphinx, seeing it older than index.md, replaces it
    on the next successful build.
    """
    index = html_dir(config) / "index.html"
    if index.exists():
        return
    index.parent.mkdir(parents=True, exist_ok=True)
    index.write_text(f"<!doctype html><html><head><meta charset='utf-8'><title>build failed</title></head>"
                     f"<body><h1>build failed</h1><pre role='alert'>{html.escape(error)}</pre></body></html>\n")
    os.utime(index, (0, 0))


def pre_build(config: Config) -> int:
    """``--pre-build``: tabbook's stages up to ``build/src`` (no Sphinx); record how it went."""
    cmd = [sys.executable, "-m", "tabbook", "-C", str(config.root), "build", "--builder", ""]
    tail: collections.deque[str] = collections.deque(maxlen=60)
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            sys.stdout.write(line)
            sys.stdout.flush()
            tail.append(line)
    if proc.returncode == 0:
        write_status(config, SPHINX_UNFINISHED)  # cleared by --post-build once Sphinx succeeds
        return 0
    error = "".join(tail).strip()[-4000:] or f"tabbook build exited with {proc.returncode}"
    write_status(config, error)
    error_page(config, error)
    return proc.returncode


def run_stages(config: Config) -> int:
    """tabbook's stages up to ``build/src`` in this process (no Sphinx); record how it went.

    The in-process twin of :func:`pre_build`: :class:`WarmBuilder` calls it in a process forked
    from the server, which has tabbook imported already, instead of starting two interpreters.
    """
    from tabbook.build import Options, build

    lines: collections.deque[str] = collections.deque(maxlen=60)

    def log(line: str) -> None:
        print(line, flush=True)
        lines.append(line)

    try:
        build(config, Options(builder=""), log=log)
    except BookError as err:
        error = err.location_message()
    except OSError as exc:
        error = f"{exc.filename or 'tabbook'}: cannot write or read: {exc.strerror or exc}"
    else:
        write_status(config, SPHINX_UNFINISHED)  # cleared once Sphinx succeeds
        return 0
    print(error, file=sys.stderr, flush=True)
    error = error[-4000:]
    write_status(config, error)
    error_page(config, error)
    return 1


#: The book a :class:`WarmBuilder` builds (set by :func:`serve` before sphinx-autobuild starts;
#: a forked worker inherits it).
_SERVED: Config | None = None


def warm_up(config: Config) -> None:
    """Import, in the server process, what every Sphinx run of the book imports.

    sphinx-autobuild runs each rebuild in a worker process forked from the server; with Sphinx,
    myst-nb, sphinx-design, the theme and tabbook's extensions imported here first, a worker
    starts with all of them loaded, and a prose edit costs Sphinx's own work on one page rather
    than a second of imports (issue 18: the browser shows a prose edit within a second).
    """
    import importlib

    from tabbook.render.sphinx_conf import leave_out_myst_nb_execution, sphinx_settings

    leave_out_myst_nb_execution()
    settings = sphinx_settings(config.root)
    names = ["sphinx.cmd.build", "sphinx.builders.html", "myst_nb.sphinx_ext", *settings["extensions"],
             settings["html_theme"]]
    try:
        names += json.loads(learned_modules(config).read_text())
    except (OSError, ValueError):
        pass
    for name in names:
        if name in sys.modules:
            continue
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - a module that cannot be imported alone is left to the build
            pass


class WarmBuilder:
    """sphinx-autobuild's builder for a tabbook book: each rebuild runs tabbook's stages and then
    Sphinx in the worker process sphinx-autobuild forks from the warm server (:func:`warm_up`),
    with no interpreter started and nothing imported again. Its constructor takes the
    arguments of ``sphinx_autobuild.build.Builder``, which it replaces; the pre- and post-build
    commands are its own steps, done in-process."""

    def __init__(self, sphinx_args: list[str], *, url_host: str, pre_build_commands: list[list[str]],
                 post_build_commands: list[list[str]]) -> None:
        self.sphinx_args = list(sphinx_args)
        self.url_host = url_host

    def __call__(self, *, changed_paths: Sequence[Path]) -> None:
        from sphinx.cmd.build import build_main

        config = _SERVED
        assert config is not None, "WarmBuilder needs tabbook.serve.serve() to name the book"
        names = ", ".join(p.name for p in list(changed_paths)[:5])
        print(f"[serve] {'changed: ' + names + '; ' if names else ''}rebuilding", flush=True)
        from tabbook.build import locked

        with locked(config):  # tabbook's stages and Sphinx's, as one build of the book
            if run_stages(config) != 0:
                return
            rc = build_main(self.sphinx_args)
        if rc == 0:  # (its build-finished recorded what it imported: learn_env in serve())
            write_status(config)
            print(f"[serve] done; serving http://{self.url_host}/", flush=True)
        else:
            print(f"[serve] Sphinx exited with {rc}; still serving the last good pages", flush=True)


def _in_a_fork(builder: WarmBuilder) -> None:
    """The first build, in a forked process like every later one: Sphinx never runs in the server."""
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            builder(changed_paths=())
            code = 0
        finally:
            os._exit(code)
    os.waitpid(pid, 0)


def free_port(host: str) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def _stop(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def serve(config: Config, host: str, port: int, build_first: bool = True) -> int:
    import sphinx_autobuild.__main__ as autobuild_main

    global _SERVED
    port = port or free_port(host)
    initial = build_first or not (html_dir(config) / "index.html").is_file()
    args = autobuild_args(config, host, port, initial_build=False)
    _SERVED = config
    os.environ.update(learn_env(config))  # each rebuild's Sphinx records what it imported
    warm_up(config)
    autobuild_main.Builder = WarmBuilder  # type: ignore[misc]  # its rebuilds, run in its forked workers
    source_dir(config).mkdir(parents=True, exist_ok=True)  # sphinx-autobuild needs it to exist
    write_status(config)
    # The pre-build step, Sphinx and the book's conf.py import tabbook from this checkout.
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(PACKAGE_PARENT), os.environ.get("PYTHONPATH")) if p)
    os.chdir(config.root)  # sphinx-autobuild resolves its default ignores (.git, .venv, ...) here
    print(f"[serve] http://{host}:{port}/  (sphinx-autobuild; Ctrl-C stops)", flush=True)
    print(f"[serve] sphinx-autobuild {shlex.join(args)}", flush=True)
    signal.signal(signal.SIGTERM, _stop)  # uvicorn re-raises it after shutting down: clean up as for Ctrl-C
    try:
        if initial:
            sphinx_args = sphinx_command(config, "html", html_dir(config),
                                         {"tabbook_preview_status": STATUS_URL})[3:]
            _in_a_fork(WarmBuilder(sphinx_args, url_host=f"{host}:{port}", pre_build_commands=[],
                                   post_build_commands=[]))
            warm_up(config)  # what the first build imported: every rebuild starts with it loaded
        autobuild_main.main(args)
    finally:
        status_file(config).unlink(missing_ok=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tabbook serve", description=__doc__.split("\n\n")[0])
    p.add_argument("-C", "--root", type=Path, default=Path.cwd(), help="book root (holds config.ini)")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default: localhost only)")
    p.add_argument("--port", type=int, default=8000, help="0 picks a free port")
    p.add_argument("--no-build", action="store_true", help="serve the existing build/html first")
    step = p.add_mutually_exclusive_group()
    step.add_argument("--pre-build", action="store_true", help=argparse.SUPPRESS)  # sphinx-autobuild's steps
    step.add_argument("--post-build", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    config = load_config(args.root.resolve())
    if args.pre_build:
        return pre_build(config)
    if args.post_build:
        write_status(config)
        return 0
    return serve(config, args.host, args.port, build_first=not args.no_build)


