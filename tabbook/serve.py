"""``make serve``: a live preview, served by sphinx-autobuild. Rebuilds on save, reloads the page.

Usage: ``python -m tabbook [-C BOOK] serve [--port 8000] [--host 127.0.0.1] [--no-build]``.

`sphinx-autobuild <https://github.com/sphinx-doc/sphinx-autobuild>`_ (pinned in
``envs/builder.txt``) serves ``build/html`` on localhost, watches files and reloads open pages after
each build. This module computes its command line (:func:`autobuild_args`), gives it tabbook's
builder and runs it:

- Sphinx runs on ``build/src`` with the render stage's options (``-c BOOK``, doctrees in
  ``build/doctrees/html``, ``-q --keep-going``).
- Each rebuild runs in the worker process sphinx-autobuild forks from the server, and the
  server has imported beforehand what a rebuild imports (:func:`tabbook.warm.preload.preload`:
  Sphinx, myst-nb, the theme, tabbook's extensions, and whatever the last rebuild loaded). The
  worker runs tabbook's source, execute and merge stages in-process (:func:`run_stages`, what
  ``python -m tabbook build --builder ''`` does), which reuse the freeze store: a prose edit
  re-renders that page and starts no kernel, a code edit executes only that (section, framework);
  then Sphinx, in a fork of the worker with its own environment (:class:`PreviewRebuild`). No
  interpreter starts and nothing is imported again, so a prose edit shows in the browser in well
  under a second (``bench/serve_latency.py``).
- It watches the book's Markdown (as ``tabbook check`` finds it), ``config.ini``, ``conf.py``,
  ``references.bib``, ``img/``, ``static/`` and the builder's ``tabbook/render/static``, and ignores
  everything else, so the build writing ``build/``, the freeze store or the library starts no
  rebuild loop.
- A failed build is shown, not hidden behind stale pages: each rebuild writes
  ``build/html/_preview-status.json``, and the pages Sphinx renders for the preview (config value
  ``tabbook_preview_status``, :mod:`tabbook.render.ext.preview`) read it after each reload and show
  the error (``file.md:LINE: ...``) in a banner. Pages built by ``make html`` have no such script;
  the status file is removed when the server stops.
- It answers only a browser that is on this machine and asked for it by a local name
  (:class:`LocalOnly`): a request whose ``Host`` is not ``localhost``, ``127.0.0.1`` or ``[::1]``
  (or the address given to ``--host``) with the server's port is refused (DNS rebinding: a
  foreign page whose name has been pointed at 127.0.0.1 would otherwise read the draft site and
  its status file), and so is a request or websocket whose ``Origin`` is another site's.
"""

from __future__ import annotations

import argparse
import collections
import html
import json
import os
import re
import signal
import socket
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tabbook.config import Config, load_config
from tabbook.errors import BookError
from tabbook.files import BuildDir, write_atomic
from tabbook.render.sources import source_dir
from tabbook.render.sphinx import PROGRESS_ENV, WARNINGS_ENV, learn_env, sphinx_command, sphinx_env

if TYPE_CHECKING:  # ASGI's own names, as sphinx-autobuild's server (Starlette) spells them
    from starlette.types import ASGIApp, Receive, Scope, Send

BUILDER_STATIC = Path(__file__).resolve().parent / "render" / "static"
STATUS_NAME = "_preview-status.json"
STATUS_URL = "/" + STATUS_NAME  # build/html is served at the server's root
ROOT_FILES = ("config.ini", "conf.py", "references.bib")
ROOT_DIRS = ("img", "static")
SPHINX_UNFINISHED = ("Sphinx is still rendering, or it failed: see the terminal running `tabbook serve`.")


#: The names a browser on this machine reaches the preview by. DNS can point any other name at
#: 127.0.0.1, so another name in ``Host`` is a foreign page's request (DNS rebinding).
LOCAL_NAMES = ("localhost", "127.0.0.1", "[::1]")
#: Bind addresses that name no one host: binding one still answers only :data:`LOCAL_NAMES`.
WILDCARDS = ("", "0.0.0.0", "::", "[::]")


def allowed_hosts(host: str, port: int) -> frozenset[str]:
    """The ``Host`` values the preview answers, lower case: a local name with the server's port
    (without it only on port 80), and the address ``--host`` bound when it names one."""
    names = list(LOCAL_NAMES)
    bound = host.strip().lower()
    if bound not in WILDCARDS:
        names.append(f"[{bound}]" if ":" in bound and not bound.startswith("[") else bound)
    hosts = {f"{name}:{port}" for name in names}
    if port == 80:
        hosts.update(names)
    return frozenset(hosts)


class LocalOnly:
    """ASGI middleware around the preview's app (sphinx-autobuild's Starlette app): a request or
    websocket handshake is passed on only when its ``Host`` is one of :func:`allowed_hosts` and
    its ``Origin``, when it has one, is ``http://`` one of them. Anything else gets 403 (a
    websocket: the handshake is refused, which a browser also sees as 403) before the app sees it.

    Why both: ``Host`` stops DNS rebinding (the attacker's name resolves to 127.0.0.1, so the
    browser sends its own name); ``Origin`` stops a foreign page that connects to
    ``ws://127.0.0.1:PORT`` directly, which browsers allow for websockets whatever the server
    says, and a cross-site form post. A request without ``Origin`` is a navigation or a program
    on this machine, not a foreign page's script."""

    def __init__(self, app: ASGIApp, host: str, port: int) -> None:
        self.app = app
        self.hosts = allowed_hosts(host, port)
        self.origins = frozenset(f"http://{h}" for h in self.hosts)

    def refusal(self, scope: Scope) -> str:
        """Why the request is refused ("" if it is not)."""
        headers: dict[bytes, list[bytes]] = {}
        for name, value in scope.get("headers") or ():
            headers.setdefault(name.lower(), []).append(value)
        hosts = headers.get(b"host", [])
        if len(hosts) != 1 or hosts[0].decode("latin-1").lower() not in self.hosts:
            return "this preview answers only localhost, 127.0.0.1 or [::1] with its port in Host"
        origins = headers.get(b"origin", [])
        if len(origins) > 1 or (origins and origins[0].decode("latin-1").lower() not in self.origins):
            return "this preview answers no other site's pages (Origin)"
        return ""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope.get("type")
        why = self.refusal(scope) if kind in ("http", "websocket") else ""
        if not why:
            await self.app(scope, receive, send)
        elif kind == "http":
            body = (why + "\n").encode()
            await send({"type": "http.response.start", "status": 403,
                        "headers": [(b"content-type", b"text/plain; charset=utf-8"),
                                    (b"content-length", str(len(body)).encode())]})
            await send({"type": "http.response.body", "body": body})
        else:
            await receive()  # websocket.connect
            await send({"type": "websocket.close", "code": 1008})  # before accept: HTTP 403


def local_only_apps(autobuild_main: Any, host: str, port: int) -> None:
    """Make sphinx-autobuild's app (its ``_create_app``) come wrapped in :class:`LocalOnly`."""
    create = autobuild_main._create_app

    def guarded(*args: object, **kwargs: object) -> LocalOnly:
        return LocalOnly(create(*args, **kwargs), host, port)

    autobuild_main._create_app = guarded


def html_dir(config: Config) -> Path:
    return BuildDir(config.build_dir).html


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
    # README.md, ... that are not pages (d2lbook's default makes them pages: watched then)
    docs = [name for name in sorted(REPO_DOCS) if config.excluded(name[:-3] + ".md")]
    repo_docs = rf"^{r}/(?i:{'|'.join(map(re.escape, docs))})$" if docs else r"(?!)"
    sources = "|".join([
        re.escape(_posix(builder_static)) + "/",
        rf"{r}/(?:[^/]+/)*[^/]+\.md$",
        rf"{r}/(?:{'|'.join(map(re.escape, ROOT_FILES))})$",
        rf"{r}/(?:{'|'.join(map(re.escape, ROOT_DIRS))})/",
    ])
    return watch, ignore, [hidden, repo_docs, rf"^(?!(?:{sources}))"]


def autobuild_args(config: Config, host: str = "127.0.0.1", port: int = 8000, initial_build: bool = True) -> list[str]:
    """The arguments of ``sphinx-autobuild`` (after the program name) that serve ``config``'s book."""
    # The render stage's own Sphinx options (less its "python -m MODULE"), plus the status URL.
    sphinx = sphinx_command(config, "html", html_dir(config), {"tabbook_preview_status": STATUS_URL})[3:]
    watch, ignore, re_ignore = watch_rules(config)
    args = [*sphinx, "--host", host, "--port", str(port)]
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


#: The last line of a rebuild that failed: the server goes on serving what it had.
BUILD_FAILED = "[serve] build failed; serving the last good site (the pages show the error too)"


def run_stages(config: Config, said: list[BookError] | None = None) -> int:
    """tabbook's stages up to ``build/src`` in this process (no Sphinx); record how it went.

    :class:`PreviewRebuild` calls it in a process forked from the server, which has tabbook
    imported already, instead of starting an interpreter. ``said``: filled with the problems
    the stages reported (warnings logged), so that Sphinx's report of the same is not said again.
    """
    from tabbook.build import BuildResult, Options, build

    lines: collections.deque[str] = collections.deque(maxlen=60)

    def log(line: str) -> None:
        print(line, flush=True)
        lines.append(line)

    try:
        result: BuildResult = build(config, Options(builder=""), log=log)
    except BookError as err:
        error = err.location_message()
    except OSError as exc:
        error = f"{exc.filename or 'tabbook'}: cannot write or read: {exc.strerror or exc}"
    else:
        if said is not None:
            said.extend(p for _, p in result.problems)
        write_status(config, SPHINX_UNFINISHED)  # cleared once Sphinx succeeds
        return 0
    print(error, file=sys.stderr, flush=True)
    error = error[-4000:]
    write_status(config, error)
    error_page(config, error)
    return 1


def sphinx_records(config: Config) -> Path:
    """Where the preview's Sphinx records its warnings (:mod:`tabbook.render.ext.diagnostics`)."""
    return BuildDir(config.build_dir).warnings / "html-preview.json"


def say_sphinx_problems(config: Config, said: list[BookError], stderr: Path, rc: int) -> None:
    """After the preview's Sphinx: its warnings, located at the Markdown line as a build says
    them, less those the stages said already (``build._not_said``); Sphinx's own stream (lines
    naming ``build/src/…ipynb:100003``, each warning a second time) is shown only when it
    ran without recording them (it crashed before its end)."""
    from tabbook.build import BuildResult, _not_said
    from tabbook.render.diagnostics import collect

    records = sphinx_records(config)
    if records.is_file():
        found = collect(config, records)
        for problem in _not_said([*found.errors, *found.warnings], BuildResult(problems=[("warning", p) for p in said])):
            print(f"warning: {problem.shown()}", flush=True)
    if rc != 0 or not records.is_file():
        text = stderr.read_text(encoding="utf-8", errors="replace") if stderr.is_file() else ""
        sys.stderr.write(text[-8000:])
        sys.stderr.flush()


def say_rendered(config: Config, progress: Path) -> None:
    """Which pages the rebuild rendered (``[serve] rendered 1 page: chapter/a.md``)."""
    from tabbook.book import book_markdown_files
    from tabbook.build import rendered_line
    from tabbook.render.progress import read_pages

    pages = {config.rel(p) for p in book_markdown_files(config)}
    print(rendered_line("serve", read_pages(progress, pages)), flush=True)


def quiet_autobuild(autobuild_main: object) -> None:
    """sphinx-autobuild's own chatter off: its banner lines ("Waiting to detect changes…") and
    the file watcher's log; the server says what happens in its ``[serve]`` lines."""
    import logging

    for name in ("watchfiles", "watchfiles.main"):
        logging.getLogger(name).setLevel(logging.WARNING)
    autobuild_main.show_message = lambda *args, **kwargs: None  # type: ignore[attr-defined]


class PreviewRebuild:
    """sphinx-autobuild's builder for a tabbook book (put in place of
    ``sphinx_autobuild.build.Builder``, whose constructor arguments it takes after the book's
    configuration): each rebuild runs tabbook's stages and then Sphinx in the worker process
    sphinx-autobuild forks from the preloaded server, with no interpreter started and nothing
    imported again. sphinx-autobuild's pre- and post-build commands are not used: the status
    file is written here."""

    def __init__(self, config: Config, sphinx_args: list[str], *, url_host: str,
                 pre_build_commands: list[list[str]] = (), post_build_commands: list[list[str]] = ()) -> None:
        self.config = config
        self.sphinx_args = list(sphinx_args)
        self.url_host = url_host

    def __call__(self, *, changed_paths: Sequence[Path]) -> None:
        from tabbook.build import locked
        from tabbook.warm.fork import run_in_fork, wait

        config = self.config
        names = ", ".join(p.name for p in list(changed_paths)[:5])
        print(f"[serve] {'changed: ' + names + '; ' if names else ''}rebuilding", flush=True)
        # Sphinx's environment, built for it: the configuration's hand-off, the request to
        # record what it imported (render/ext/learn.py), for the server to import next, and
        # where it records its warnings.
        records = sphinx_records(config)
        progress = records.with_suffix(".progress")  # the pages it reads (render/ext/progress.py)
        env = {**sphinx_env(config), **learn_env(config), WARNINGS_ENV: str(records), PROGRESS_ENV: str(progress)}

        def sphinx() -> int:
            from sphinx.cmd.build import build_main

            return build_main(self.sphinx_args)

        said: list[BookError] = []
        try:
            with locked(config):  # tabbook's stages and Sphinx's, as one build of the book
                if run_stages(config, said) != 0:
                    print(BUILD_FAILED, flush=True)
                    return
                records.unlink(missing_ok=True)
                progress.unlink(missing_ok=True)
                errors = BuildDir(config.build_dir).warnings / "html-preview.stderr"
                errors.parent.mkdir(parents=True, exist_ok=True)
                with open(errors, "w", encoding="utf-8") as err:
                    rc = wait(run_in_fork(sphinx, env=env, stdio=(0, 1, err.fileno())))
                say_sphinx_problems(config, said, errors, rc)
                if rc == 0:
                    say_rendered(config, progress)
        except Exception as exc:  # a bug, not the book's: said in a line, and the server goes on
            print(f"tabbook: internal error: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
            print(BUILD_FAILED, flush=True)
            return
        if rc == 0:
            write_status(config)
            print(f"[serve] done; serving http://{self.url_host}/", flush=True)
        else:
            print(f"[serve] Sphinx exited with {rc}; {BUILD_FAILED.removeprefix('[serve] ')}", flush=True)


def free_port(host: str) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def _stop(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def serve(config: Config, host: str, port: int, build_first: bool = True) -> int:
    import functools

    import sphinx_autobuild.__main__ as autobuild_main

    from tabbook.warm.fork import run_in_fork, wait
    from tabbook.warm.preload import preload

    port = port or free_port(host)
    initial = build_first or not (html_dir(config) / "index.html").is_file()
    args = autobuild_args(config, host, port, initial_build=False)
    preload(config)
    # sphinx-autobuild makes its builder from this name: ours, for this book. Its rebuilds run in
    # its forked workers.
    autobuild_main.Builder = functools.partial(PreviewRebuild, config)  # type: ignore[misc]
    local_only_apps(autobuild_main, host, port)
    quiet_autobuild(autobuild_main)
    source_dir(config).mkdir(parents=True, exist_ok=True)  # sphinx-autobuild needs it to exist
    write_status(config)
    os.chdir(config.root)  # sphinx-autobuild resolves its default ignores (.git, .venv, ...) here
    print(f"[serve] http://{host}:{port}/  (sphinx-autobuild; Ctrl-C stops)", flush=True)
    signal.signal(signal.SIGTERM, _stop)  # uvicorn re-raises it after shutting down: clean up as for Ctrl-C
    try:
        if initial:  # in a fork like every later build: Sphinx never runs in the server
            first = PreviewRebuild(config, sphinx_command(config, "html", html_dir(config),
                                                          {"tabbook_preview_status": STATUS_URL})[3:],
                                   url_host=f"{host}:{port}")
            wait(run_in_fork(lambda: first(changed_paths=())))
            preload(config)  # what the first build imported: every rebuild starts with it loaded
        autobuild_main.main(args)
    finally:
        status_file(config).unlink(missing_ok=True)
    return 0


def main(argv: list[str] | None = None, overlay: Path | None = None, interpreters: Sequence[str] = (),
         settings: Sequence[str] = ()) -> int:
    """``serve``'s command line; ``overlay``, ``interpreters`` and ``settings``: the main command
    line's ``--overlay``, ``--python`` and ``--set``."""
    p = argparse.ArgumentParser(prog="tabbook serve", description="A live preview of the site: rebuilds on "
                                "save (a prose edit starts no kernel) and reloads the page.")
    p.add_argument("-C", "--root", type=Path, default=Path.cwd(), help="book root (holds config.ini)")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default: localhost only)")
    p.add_argument("--port", type=int, default=8000, help="0 picks a free port")
    p.add_argument("--no-build", action="store_true", help="serve the existing build/html first")
    args = p.parse_args(argv)
    config = load_config(args.root.resolve(), overlay, interpreters, settings)
    return serve(config, args.host, args.port, build_first=not args.no_build)
