"""Command line: ``python -m tabbook [-C ROOT] COMMAND``, one entry for everything the builder does.

Commands: ``build``, ``new``, ``clear``, ``check``, ``lib``, ``libtest``, ``pdf``, ``site``,
``serve``, ``linkcheck``, ``envs``, ``lock``, ``wheelhouse``, ``notebooks``, ``merge-stores``, ``verify-freeze``, ``katex``, ``clean``,
``warm`` (``python -m tabbook COMMAND --help`` for each). ``build`` also takes d2lbook's targets
(``tabbook build html``, ``tabbook build pdf --tab pytorch``). Library code raises :class:`BookError`; only this edge turns errors
into ``file.md:LINE: message`` lines on stderr and a non-zero exit status.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from tabbook.arguments import parser
from tabbook.errors import (
    BookError,
    BookErrors,
    TerminalStream,
    interrupted_status,
    judge,
    raise_interrupted,
)
from tabbook.files import BuildDir
from tabbook.render.formats import format_named

if TYPE_CHECKING:
    from tabbook.execute.spares import Pool
    from tabbook.render.sphinx import Launcher


def _names(text: str | None) -> tuple[str, ...] | None:
    return tuple(v.strip() for v in text.split(",") if v.strip()) if text else None


def _d2lbook_build(config, args: argparse.Namespace) -> int:  # noqa: ANN001 - Config
    """``build TARGET ...``: what each of d2lbook's targets means here. ``eval`` executes what is
    stale without rendering; ``rst`` writes Sphinx's sources (build/src); ``html`` is today's
    build; ``pkg`` and ``slides`` are parts of the HTML build (the notebook zips, the decks);
    ``lib`` writes the library; ``pdf`` typesets one PDF per tab; ``linkcheck`` builds the
    HTML, then checks its internal links and anchors; ``all``: lib, the PDFs, the HTML with
    them, the link check."""
    targets = list(dict.fromkeys(args.targets))
    if "all" in targets:
        targets = ["lib", "pdf", "html", "linkcheck"]
    code = 0
    if "lib" in targets:
        code |= _lib(config, argparse.Namespace(no_generate=False, check=False, import_=False))
    if "pdf" in targets:
        code |= _pdf(config, argparse.Namespace(frameworks=args.frameworks, frozen=args.frozen,
                                                force=args.force, jobs=args.jobs, sphinx=getattr(args, "sphinx", None)))
    renders = [t for t in targets if t in ("html", "pkg", "slides", "linkcheck")]
    if renders or "rst" in targets:
        builder = args.builder if renders else ""
        code |= _build(config, argparse.Namespace(**{**vars(args), "targets": [], "tab": None, "builder": builder}))
        where = config.rel(BuildDir(config.build_dir).out("html" if renders else "src"))
        if not renders:
            print(f"[rst] Sphinx's sources: {where}")
        if "pkg" in targets:
            print(f"[pkg] the notebooks of every section, one zip per tab: {where}/_downloads/notebooks/")
        if "slides" in targets:
            print(f"[slides] one deck per section with slide marks and tab: {where}/_slides/")
        if "linkcheck" in targets:
            from tabbook.render.linkcheck import report_broken_links

            code |= report_broken_links(BuildDir(config.build_dir).html, external=args.external)
    elif "eval" in targets:
        code |= _build(config, argparse.Namespace(**{**vars(args), "targets": [], "tab": None, "no_render": True}))
    return code


def _build(config, args: argparse.Namespace) -> int:  # noqa: ANN001 - Config
    from tabbook.build import Options, build
    from tabbook.execute.outcome import Selection

    if args.tab is not None:  # d2lbook's --tab T: this tab only (all: every tab, the default here)
        if args.frameworks:
            raise BookError("--tab and --frameworks say the same thing: give one")
        if args.tab != "all" and args.tab not in config.tabs:
            raise BookError(f"--tab: unknown tab {args.tab!r} (tabs: {', '.join(config.tabs)}, or all)")
        args.frameworks = None if args.tab == "all" else args.tab
    if args.targets:
        return _d2lbook_build(config, args)
    frameworks = _names(args.frameworks)
    for fw in frameworks or ():
        if fw not in config.tabs:
            raise BookError(f"--frameworks: unknown framework {fw!r} (tabs: {', '.join(config.tabs)})")
    if args.scheduler is not None and "://" not in args.scheduler:
        raise BookError(f"--scheduler wants a Dask scheduler address such as tcp://HOST:8786, not {args.scheduler!r}")
    if args.scheduler:
        from tabbook.execute.cluster import require_distributed

        require_distributed()  # say at once, before reading the book, that Dask is missing
    selection = Selection(
        force=args.force, frameworks=frameworks, shard=args.shard, frozen_only=args.frozen,
        execute_here=args.execute_here, only=tuple(os.path.normpath(p) for p in args.only) if args.only else None,
    )
    if args.json and not args.dry_run:
        raise BookError("--json goes with --dry-run")
    opts = Options(selection, render=not args.no_render, freeze_dir=args.freeze_dir, jobs=args.jobs,
                   builder=args.builder, execute=args.execute, partial=args.partial,
                   scheduler=args.scheduler, strict=args.strict, sphinx=getattr(args, "sphinx", None),
                   kernels=getattr(args, "kernels", None))
    if args.dry_run:
        return _dry_run(config, args, opts)
    result = build(config, opts)
    counts: dict[str, int] = {}
    for u in result.units:
        counts[u.status] = counts.get(u.status, 0) + 1
    summary = ", ".join(f"{v} {k}" for k, v in sorted(counts.items())) or "no code units"
    gpu = result.gpu_summary()
    warm = " (warm builder)" if result.warm else ""
    print(f"[done] {summary} in {result.seconds:.1f}s{warm}{'; ' + gpu if gpu else ''}; report: build/report.json")
    if opts.render and format_named(opts.builder).site:
        print(f"[html] the site: {openable(BuildDir(config.build_dir).html / 'index.html')}")
    return 0


def openable(path: Path) -> str:
    """A path as the user can open it from here: relative to the current folder when it is
    below it, else absolute (``tabbook -C BOOK`` run from elsewhere)."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path.resolve())


def _dry_run(config, args: argparse.Namespace, opts) -> int:  # noqa: ANN001 - Config, build.Options
    """``build --dry-run``: print the plan :func:`tabbook.build.dry_run` makes, each unit with why
    it would run; nothing is run or written."""
    import json

    from tabbook.build import dry_run
    from tabbook.execute.outcome import UnitState

    the_plan, gpus = dry_run(config, opts)
    units = the_plan.units
    failed = 1 if args.frozen and any(u.state in (UnitState.RUN, UnitState.STALE, UnitState.OUTDATED) for u in units) else 0
    if args.json:
        print(json.dumps([u.as_json() for u in units], indent=1))
        return failed
    print("[dry-run] this machine: " + ("; ".join(g.describe() for g in gpus) if gpus else "no GPU")
          + f", {os.cpu_count()} cores")
    for u in units:
        print(f"{u.state:<8} {u.section} [{u.framework}] ({u.placement}): {'; '.join(u.why)}")
    counts: dict[str, int] = {}
    for u in units:
        counts[u.state] = counts.get(u.state, 0) + 1
    print(f"[dry-run] {', '.join(f'{v} {k}' for k, v in sorted(counts.items())) or 'no code units'}; "
          "nothing was run or written")
    return failed


def _check(config, args: argparse.Namespace) -> int:  # noqa: ANN001 - Config
    from tabbook.check import check_book

    errors, warnings = judge(check_book(config, partial=args.partial), config.warning_is_error or args.strict)
    for w in warnings:
        print(f"warning: {w.shown()}", file=sys.stderr)
    for p in errors:
        print(p.shown(), file=sys.stderr)
    if errors:
        return 1
    if warnings:  # not "no problems": they were just printed, and --strict would fail on them
        n = len(warnings)
        print(f"[check] no errors; {n} warning{'s' if n != 1 else ''} (--strict makes warnings errors)")
    else:
        print("[check] no problems found")
    return 0


def _lib(config, args: argparse.Namespace) -> int:  # noqa: ANN001 - Config
    from tabbook.book import read_book
    from tabbook.library.cache import book_library
    from tabbook.library.generate import stale_library, write_library

    if args.no_generate:
        if not args.import_:
            raise BookError("lib --no-generate does nothing without --import")
        from tabbook.execute.wheeltest import import_modules

        return 1 if any(o.status == "failed" for o in import_modules(config)) else 0
    book = read_book(config, extra_files=False)
    files = book_library(book)
    if book.library_problems:
        raise BookErrors(book.library_problems)
    if args.check:
        stale = stale_library(config, files)
        for rel in stale:
            print(f"stale: {rel}", file=sys.stderr)
        if stale:
            print("run `tabbook lib` and commit the result", file=sys.stderr)
        return 1 if stale else 0
    written = write_library(config, files)
    for rel in written:
        print(f"[library] wrote {rel}")
    if not written:
        print(f"[library] {config.rel(config.library_dir)}/ is current" if files
              else "[library] the book saves nothing (no #@save): no library")
    if args.import_:
        from tabbook.execute.wheeltest import import_modules

        outcomes = import_modules(config)
        if any(o.status == "failed" for o in outcomes):
            return 1
    return 0


def _pdf(config, args: argparse.Namespace) -> int:  # noqa: ANN001 - Config
    from tabbook.build import build_pdfs

    done = build_pdfs(config, _names(args.frameworks), frozen=args.frozen, force=args.force, jobs=args.jobs,
                      sphinx=getattr(args, "sphinx", None))
    print("[pdf] done: " + ", ".join(config.rel(p) for p in done.values()))
    return 0


def _merge_stores(config, args: argparse.Namespace) -> int:  # noqa: ANN001 - Config
    from tabbook.build import locked
    from tabbook.execute.merge import merge_stores

    target = args.into or config.freeze_dir
    with locked(config, target):
        result = merge_stores(config, list(args.stores), target)
    print(f"[merge] {len(result.written)} written, {result.unchanged} unchanged, "
          f"{len(result.stale)} stale left out, {len(result.foreign)} not in the book left out "
          f"→ {target}")
    return 0


def _site(config, args: argparse.Namespace) -> int:  # noqa: ANN001 - Config
    """The published site: every framework's PDF first (``pdf``), then the HTML build, which
    copies them into the site and links them from every page. Fails without TeX: a complete
    site is what this command promises (``--no-pdfs``: the HTML alone, said so on every page).
    With ``[site] versions``, every edition, each built from its commit (:mod:`tabbook.editions`)."""
    from tabbook.build import Options, build, build_pdfs, locked
    from tabbook.execute.outcome import Selection

    if config.site.versions:  # [site] versions: every edition, from its commit (tabbook/editions.py)
        from tabbook.editions import build_editions

        if args.force:
            raise BookError("site --force: an edition is built from its commit's _freeze/, never executed")
        with locked(config):
            built = build_editions(config, pdfs=not args.no_pdfs, jobs=args.jobs)
        print(f"[site] {openable(BuildDir(config.build_dir).html / 'index.html')}: " + ", ".join(
            f"{label} ({commit[:12]}) at {folder or 'the root'}" for label, commit, folder in built))
        return 0
    with locked(config):  # the PDFs and the site they are copied into, one build's
        done: dict[str, Path] = {}
        if not args.no_pdfs:
            done = build_pdfs(config, None, frozen=args.frozen, force=args.force, jobs=args.jobs)
            print("[pdf] done: " + ", ".join(config.rel(p) for p in done.values()))
        result = build(config, Options(Selection(frozen_only=args.frozen), jobs=args.jobs))
    print(f"[site] {openable(BuildDir(config.build_dir).html / 'index.html')} with {len(done)} PDFs "
          f"in {result.seconds:.1f}s")
    return 0


def main(argv: list[str] | None = None, *, sphinx: Launcher | None = None, kernels: Pool | None = None) -> int:
    """The command line. ``sphinx``: how builds start Sphinx, given only by the warm builder
    (:mod:`tabbook.warm.server`), whose forks run this: such a build neither hands itself over
    nor starts another warm builder. ``kernels``: the warm builder's kernels started ahead
    (:class:`tabbook.execute.spares.Pool`)."""
    p = parser()
    args, rest = p.parse_known_args(argv)
    if rest and args.command != "serve":  # serve's own options are parsed by tabbook.serve
        p.error(f"unrecognized arguments: {' '.join(rest)}")
    for sig in (signal.SIGTERM, signal.SIGHUP):  # unwind as Ctrl-C does; exit 128 + N
        signal.signal(sig, raise_interrupted)
    args.sphinx = sphinx
    args.kernels = kernels
    warm = None
    if args.command == "build" and not args.scheduler and not args.dry_run and sphinx is None:
        from tabbook.warm import client as warm

        if warm.enabled():
            handed = warm.hand_over(sys.argv[1:] if argv is None else list(argv), args.root)
            if handed is not None:
                return handed
        else:
            warm = None
    try:
        with _plain_text_streams():
            return _dispatch(args, rest)
    finally:
        if warm is not None:  # the next build of this book finds tabbook and Sphinx loaded
            try:
                warm.start(args.root)
            except OSError:
                pass


@contextlib.contextmanager
def _plain_text_streams() -> Iterator[None]:
    """Standard output and error as :class:`~tabbook.errors.TerminalStream`\\ s while a command
    runs: whatever it prints that came from a cell, a store entry or a book file reaches the
    terminal or the CI log as text, with no control sequence (README: Security model)."""
    out, err = sys.stdout, sys.stderr
    if not isinstance(out, TerminalStream):
        sys.stdout = TerminalStream(out)  # type: ignore[assignment]
    if not isinstance(err, TerminalStream):
        sys.stderr = TerminalStream(err)  # type: ignore[assignment]
    try:
        yield
    finally:
        sys.stdout, sys.stderr = out, err


def _dispatch(args: argparse.Namespace, rest: list[str]) -> int:
    """Run the command its entry of :data:`WITHOUT_BOOK` or :data:`WITH_BOOK` names; the one
    error edge: a :class:`BookError` becomes ``file.md:LINE: message`` and exit status 1."""
    from tabbook.config import load_config

    try:
        if args.command in WITHOUT_BOOK:
            return WITHOUT_BOOK[args.command](args, rest)
        return WITH_BOOK[args.command](load_config(args.root, args.overlay, args.interpreters, args.settings), args)
    except BookError as err:
        print(err.shown(), file=sys.stderr)
        summary = getattr(err, "summary", "")  # a build's count of what it found (build.failure_summary)
        if summary:
            print(summary, file=sys.stderr)
        return 1
    except OSError as exc:
        _debug(args)
        where = exc.filename or "tabbook"
        print(f"{where}: cannot write or read: {exc.strerror or exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM / SIGHUP (errors.Interrupted)
        try:
            print("[tabbook] interrupted; nothing half-written was kept", file=sys.stderr)
        except OSError:  # the terminal is gone (SIGHUP)
            pass
        return interrupted_status(exc)
    except Exception as exc:  # noqa: BLE001 - the one catch-all: a bug is one line, not a traceback
        _debug(args)
        said = " ".join(str(exc).split())
        said = said if len(said) <= 300 else said[:299] + "…"
        print(f"tabbook: internal error: {type(exc).__name__}{': ' + said if said else ''} (a bug in tabbook, "
              f"not in your book; {'the traceback is above' if getattr(args, 'debug', False) else 'run again with --debug for the traceback'})",
              file=sys.stderr)
        return 1


def _debug(args: argparse.Namespace) -> None:
    """With ``--debug``, the traceback of the error being handled, before its one line."""
    if getattr(args, "debug", False):
        import traceback

        traceback.print_exc()


# --- commands that need no book ------------------------------------------------------------------

def _linkcheck(args: argparse.Namespace, rest: list[str]) -> int:
    """Works on any built site, with or without a book."""
    from tabbook.render.linkcheck import report_broken_links

    return report_broken_links(args.site or BuildDir(args.root / "build").html, external=args.external)


def _warm(args: argparse.Namespace, rest: list[str]) -> int:
    from tabbook.warm import client as warm

    if args.serve is not None:
        from tabbook.warm.server import serve_forever

        return serve_forever(args.serve, args.root.resolve(), command=main)
    if args.stop:
        print("[warm] stopped" if warm.stop(args.root) else "[warm] none was running")
    elif args.wait is not None:
        ready = warm.wait_ready(args.root, timeout=args.wait)
        print(f"[warm] {'running' if ready else f'not running after {args.wait:g}s'}")
        return 0 if ready else 1
    else:
        running = warm.running(args.root)
        print(f"[warm] {'running' if running else 'not running'} for {args.root.resolve()} "
              f"({'on' if warm.enabled() else 'off'} for builds from here; ${warm.ENV}=0/1 sets it)")
    return 0


def _katex(args: argparse.Namespace, rest: list[str]) -> int:
    from tabbook.render.katex import MathUnavailable, ensure_katex

    try:
        print(ensure_katex())
    except MathUnavailable as exc:
        raise BookError(f"math: {exc}") from exc
    return 0


def _serve(args: argparse.Namespace, rest: list[str]) -> int:
    from tabbook.serve import main as serve_main

    return serve_main(["-C", str(args.root), *rest], overlay=args.overlay, interpreters=args.interpreters,
                      settings=args.settings)


def _new(args: argparse.Namespace, rest: list[str]) -> int:
    from tabbook.new import new_book

    for rel in new_book(args.dir):
        print(f"[new] wrote {args.dir / rel}")
    print(f"[new] build it: cd {args.dir} && tabbook build html")
    return 0


# --- commands of the book at --root (its config.ini read first) ----------------------------------

def _lib_locked(config, args: argparse.Namespace) -> int:  # noqa: ANN001 - Config
    """``lib`` writes d2l/ and build/'s caches: one at a time, like a build."""
    from tabbook.build import locked

    with locked(config):
        return _lib(config, args)


def _libtest(config, args: argparse.Namespace) -> int:  # noqa: ANN001 - Config
    from tabbook.build import locked
    from tabbook.execute.wheeltest import libtest

    with locked(config):  # it may write d2l/ and builds the wheel under build/
        return libtest(config, args.frameworks, generate=not args.no_generate,
                       overrides=dict(item.split("=", 1) for item in args.python),
                       any_env=args.any_env, venv_check=not args.no_venv_check)


def _notebooks(config, args: argparse.Namespace) -> int:  # noqa: ANN001 - Config
    from tabbook.render.notebooks import check_notebooks

    return check_notebooks(config, args.frameworks, fetch_wheels=args.fetch or args.fetch_only,
                           pythons=dict(item.split("=", 1) for item in args.python), run=not args.fetch_only)


def _wheelhouse(config, args: argparse.Namespace) -> int:  # noqa: ANN001 - Config
    from tabbook.execute.wheelhouse import REQUIREMENTS, gather

    dest = args.dest or BuildDir(config.build_dir).wheelhouse
    count, size, own = gather(dest, args.python_version, config.offline_requirements)
    sources = ", ".join([REQUIREMENTS.name, *(str(p.relative_to(config.root)) if p.is_relative_to(config.root)
                                              else str(p) for p in config.offline_requirements)])
    print(f"[wheelhouse] {count} wheels, {size / 1e6:.1f} MB in {dest} (the kernel and builder: "
          f"{own / 1e6:.1f} MB; CPython {args.python_version}, manylinux x86-64; from {sources}); "
          f"install there with -r {dest / 'requirements.txt'}")
    return 0


def _envs(config, args: argparse.Namespace) -> int:  # noqa: ANN001 - Config
    from tabbook.execute.envs import create_envs

    create_envs(config, args.frameworks or list(config.tabs))
    return 0


def _verify_freeze(config, args: argparse.Namespace) -> int:  # noqa: ANN001 - Config
    """Exit 1 when an entry's outputs differ from a new run's (volatile parts aside), an entry is
    stale, or a unit fails; entries computed on GPUs are listed as not verified."""
    from tabbook.build import verify_freeze
    from tabbook.execute.outcome import Selection

    selection = Selection(frameworks=_names(args.frameworks), only=tuple(args.only) if args.only else None)
    verdicts = verify_freeze(config, selection, jobs=args.jobs, scheduler=args.scheduler)
    from tabbook.execute.verify import VerdictState as V

    counts: dict[V, int] = {}
    for v in sorted(verdicts, key=lambda v: v.entry):
        counts[v.state] = counts.get(v.state, 0) + 1
        if v.state is V.DIFFERS:
            for detail in v.details:
                print(f"{v.entry}: differs from a new run: {detail}")
        elif v.state is V.GPU:
            print(f"{v.entry}: not verified: {v.details[0]}")
        elif v.state is not V.SAME:
            print(f"{v.entry}: {v.state}: {'; '.join(v.details)}")
    print(f"[verify] {counts.get(V.SAME, 0)} entries as a new run gives them (timings, addresses, dates aside), "
          f"{counts.get(V.DIFFERS, 0)} differ, {counts.get(V.GPU, 0)} computed on GPUs not verified, "
          f"{counts.get(V.STALE, 0)} stale, {counts.get(V.FAILED, 0)} failed")
    return 1 if any(v.state in (V.DIFFERS, V.STALE, V.FAILED) for v in verdicts) else 0


def _lock(config, args: argparse.Namespace) -> int:  # noqa: ANN001 - Config
    from tabbook.execute.envs import lock_envs

    lock_envs(config, args.frameworks or [t for t in config.tabs if config.framework(t).requirements])
    return 0


def _clean(config, args: argparse.Namespace) -> int:  # noqa: ANN001 - Config
    """``clean`` / ``clear``: says what went and what stays (the outputs, the library)."""
    from tabbook.build import clean

    build = config.rel(config.build_dir)
    files, size = clean(config)
    kept = [f"the outputs in {config.rel(config.freeze_dir)}/" if config.freeze_dir.is_dir() else "",
            f"the library in {config.rel(config.library_dir)}/" if config.library_dir.is_dir() else ""]
    stays = " and ".join(k for k in kept if k)
    said = (f"removed {build}/ ({files} file{'s' * (files != 1)}, {size / 1e6:.1f} MB)" if files
            else f"nothing to remove: there is no {build}/")
    print(said + (f"; kept {stays} (commit them)" if stays else ""))
    return 0


#: Each subcommand's function; those of :data:`WITH_BOOK` get the book's configuration.
WITHOUT_BOOK: dict[str, Callable[[argparse.Namespace, list[str]], int]] = {
    "linkcheck": _linkcheck, "warm": _warm, "katex": _katex, "serve": _serve, "new": _new,
}
WITH_BOOK: dict[str, Callable[..., int]] = {
    "build": _build, "check": _check, "lib": _lib_locked, "libtest": _libtest, "pdf": _pdf,
    "merge-stores": _merge_stores, "site": _site, "wheelhouse": _wheelhouse, "notebooks": _notebooks, "envs": _envs, "lock": _lock, "verify-freeze": _verify_freeze,
    "clean": _clean, "clear": _clean,
}
