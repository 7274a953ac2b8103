"""The pipeline, stage by stage: read → library → execute → render. Nothing else happens here.

- **read** (:func:`_read_and_check`): the book is read once (:func:`tabbook.book.read_book`) and checked;
- **library** (:func:`_write_library`): ``#@save`` code → ``d2l/<framework>.py`` (written only when changed);
- **execute** (:func:`_execute`): each (section, framework) unit is looked up in the freeze store and
  only the stale ones run (:mod:`tabbook.execute.plan`), one record per unit;
- **render** (:func:`_render`): merged sources → Sphinx (:mod:`tabbook.render`).

``build/report.json`` (:attr:`tabbook.files.BuildDir.report`) is written even when a stage fails.

d2lbook's contract (:mod:`tabbook.problems`): a problem of a kind is reported where it is found
and built past; it is a warning, or in a strict build an error kept for the end, when the build
fails listing every problem it found, its failed units and Sphinx's included. Only a problem of
no kind (nothing can be made past it) stops the build where it is found.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tabbook.book import Book, read_book
from tabbook.config import Config
from tabbook.errors import BookError, BookErrors, flatten, judge, raise_all, stops, unfiltered
from tabbook.execute.gpus import Devices, detect
from tabbook.execute.job import CPU_ONLY
from tabbook.execute.outcome import Selection, UnitOutcome, UnitStatus
from tabbook.execute.plan import Notebooks, Plan
from tabbook.execute.runner import Runner
from tabbook.execute.store import FreezeStore
from tabbook.files import BuildDir, book_lock, write_atomic
from tabbook.nbjson import Notebook
from tabbook.problems import Problem
from tabbook.render.formats import PDF, format_named

if TYPE_CHECKING:
    from tabbook.execute.spares import Pool
    from tabbook.render.sphinx import Launcher, SphinxRun


@dataclass(frozen=True)
class Options:
    selection: Selection = Selection()
    render: bool = True
    freeze_dir: Path | None = None  # another store (tests execute into a temp store)
    jobs: int = 0  # parallel units; 0 = core count
    builder: str = "html"  # "" = write Sphinx's sources only (the PDF driver renders per framework)
    execute: bool | None = None  # None: the book's setting (d2lbook's [build] eval_notebook)
    # A build of part of a book: Markdown outside the toc is not read, the library is the whole
    # book's; references to pages that are not in it are warnings, shown as text (as in any build).
    partial: bool = False
    scheduler: str | None = None  # a Dask scheduler's address: execute on its cluster (tabbook.execute.cluster)
    # Warnings fail the build too (d2lbook's [build] warning_is_error, Sphinx's -W); None: the book's setting.
    strict: bool | None = None
    # How Sphinx starts (render.sphinx.Launcher); None: a new interpreter. The warm builder passes
    # its fork launcher (tabbook.warm.launch.fork_sphinx), and the report then says "warm".
    sphinx: Launcher | None = None
    # Kernels started ahead by the warm builder (tabbook.execute.spares.Pool), which a unit of
    # their kind takes; the build also says there which kinds the next build should find.
    kernels: Pool | None = None


@dataclass
class BuildResult:
    outcomes: list[UnitOutcome] = field(default_factory=list)  # every unit's record (execute/plan.py)
    seconds: float = 0.0
    sphinx_seconds: float = 0.0
    execute_seconds: float = 0.0  # wall time of the execution stage (units run in parallel)
    library_changed: list[str] = field(default_factory=list)
    warm: bool = False  # it ran in the warm builder (tabbook.warm)
    sphinx_set_up_ahead: bool = False  # its Sphinx run was the warm builder's spare (tabbook.warm.spare)
    # Every problem the build reported, as (severity, problem): the corpus harness counts them
    # by kind from build/report.json.
    problems: list[tuple[str, BookError]] = field(default_factory=list)

    @property
    def units(self) -> list[UnitOutcome]:
        """The units this build dealt with (not those another shard runs)."""
        return [u for u in self.outcomes if u.status is not None]

    def gpu_summary(self) -> str:
        """"GPU outputs in 3 of 20 units (pytorch 3/5, jax 0/5, …)": what the build's last line says.
        "" for a book that has nothing to do with GPUs (no unit asked for one, none ran on one):
        "GPU outputs in 0 of 2 units" on every build of a book of plain Python is noise."""
        shown = {u.id: u.device for u in self.outcomes if u.device}
        asked = any(u.gpu_need for u in self.outcomes)
        if not shown or (not asked and all(device == CPU_ONLY for device in shown.values())):
            return ""
        per: dict[str, list[int]] = {}
        for (_, fw), device in shown.items():
            count = per.setdefault(fw, [0, 0])
            count[0] += device != CPU_ONLY
            count[1] += 1
        gpu = sum(c[0] for c in per.values())
        parts = ", ".join(f"{fw} {c[0]}/{c[1]}" for fw, c in per.items())
        return f"GPU outputs in {gpu} of {len(shown)} units ({parts})"

    def failure_summary(self, errors: int) -> str:
        """The last line of a build that failed on ``errors`` problems, after they are listed:
        "[failed] 12 problems (9 errors, 3 warnings)", the warnings being those logged while it
        ran (a strict build's are errors, so it has none but of kinds that stay warnings)."""
        warnings = sum(severity == "warning" for severity, _ in self.problems)

        def n(count: int, what: str) -> str:
            return f"{count} {what}{'s' * (count != 1)}"

        return f"[failed] {n(errors + warnings, 'problem')} ({n(errors, 'error')}, {n(warnings, 'warning')})"

    def as_report(self) -> dict[str, Any]:
        problems = [{"severity": severity, "kind": p.kind.slug if p.kind else None, "path": p.path,
                     "line": p.line, "message": p.message} for severity, p in self.problems]
        return {"units": [u.as_report() for u in self.units], "seconds": round(self.seconds, 3), "sphinx_seconds": round(self.sphinx_seconds, 3),
                "execute_seconds": round(self.execute_seconds, 3), "library_changed": self.library_changed,
                "warm": self.warm, "sphinx_set_up_ahead": self.sphinx_set_up_ahead, "problems": problems}

    def report(self, problems: list[BookError], strict: bool, log: Callable[[str], Any]) -> list[BookError]:
        """Judge ``problems`` (:func:`tabbook.errors.judge`): log the warnings now, record
        every one; returns the errors, which the caller raises when it should."""
        errors, warnings = judge(problems, strict)
        for warning in warnings:
            log(f"warning: {warning.shown()}")
        self.problems += [("warning", w) for w in warnings] + [("error", e) for e in errors]
        return errors


def locked(config: Config, freeze_dir: Path | None = None) -> AbstractContextManager[None]:
    """The book's build lock (:func:`tabbook.files.book_lock`), taken by every command that
    writes ``build/``, the store or ``d2l/``; a second build waits for the first. It sweeps
    temporary files a killed build left in those folders."""
    return book_lock(config.build_dir, sweep=(config.build_dir, freeze_dir or config.freeze_dir,
                                              config.library_dir))


def build(config: Config, opts: Options, log: Callable[[str], Any] = print) -> BuildResult:
    """Run the whole pipeline under the book's lock; the report is written even when a stage fails."""
    with locked(config, opts.freeze_dir):
        return _build(config, opts, log)


def _build(config: Config, opts: Options, log: Callable[[str], Any]) -> BuildResult:
    from tabbook.render import sphinx

    t0 = time.monotonic()
    result = BuildResult(warm=opts.sphinx is not None)
    execute = config.execute if opts.execute is None else opts.execute
    strict = config.warning_is_error if opts.strict is None else opts.strict
    site: sphinx.SphinxRun | None = None
    runners: list[Runner] = []  # whose workers may still be shutting kernels down (Runner.join)
    try:
        if opts.render and opts.builder:
            site = sphinx.SphinxRun(config, opts.builder, strict=strict,
                                    launch=opts.sphinx or sphinx.new_interpreter)
            if site.likely_to_run():
                # Sphinx sets itself up while the book is read, the library written and
                # stale code run; it reads the sources once they are written.
                site.start()
        book, kept = _read_and_check(config, opts, execute, strict, result, log)
        result.library_changed = _write_library(config, book, log)
        the_plan, notebooks, failures = _execute(config, book, opts, execute, strict, site, result, log, runners)
        kept += failures
        if opts.render:
            from tabbook.render.sanitize import published, published_origins

            # What the site shows of the outputs: cleaned of script unless the book trusts them.
            trusted = config.site.trusted_outputs
            notebooks = published(notebooks, trusted, the_plan.origins,  # type: ignore[assignment]
                                  BuildDir(config.build_dir).clean_outputs)
            # Every page renders even when units failed (they show their code without
            # outputs); the build then fails listing every failure, Sphinx's included.
            try:
                rendered = _render(config, book, opts, notebooks, published_origins(the_plan.origins, trusted),
                                   site, result, log)
            except BookError as exc:
                rendered = flatten([exc])
            kept += result.report(_not_said(rendered, result), strict, log)
        failed = sorted(flatten(kept), key=lambda e: (e.path or "", e.line or 0))
        if failed:
            failure = failed[0] if len(failed) == 1 else BookErrors(failed)
            failure.summary = result.failure_summary(len(failed))  # type: ignore[attr-defined]
            raise failure
    finally:
        if site is not None:
            site.call_off()  # a failed build: the early Sphinx reads and writes nothing
        for runner in runners:
            runner.join()  # no kernel of the build outlives it
        result.seconds = time.monotonic() - t0
        write_atomic(BuildDir(config.build_dir).report, json.dumps(result.as_report(), indent=1) + "\n")
    return result


#: Kinds the check finds on its own: Sphinx's report of one on a page where the check reported
#: that kind is the same problem again (Sphinx places a toc's at the block, a duplicate label's
#: at its heading), said once.
CHECKED = frozenset({Problem.DUPLICATE_LABEL, Problem.TOC_ENTRY, Problem.MISSING_IMAGE, Problem.UNDEFINED_REFERENCE})


#: The label a duplicate-label message names, the check's (``duplicate label 'x' (also at …)``)
#: or Sphinx's (``duplicate label x, other instance in …``, ``… label of equation x, …``).
_DUPLICATE = re.compile(r"duplicate label (?:of equation )?'?([^'\s,]+)")


def _duplicated(problem: BookError) -> str | None:
    found = _DUPLICATE.search(problem.message) if problem.kind is Problem.DUPLICATE_LABEL else None
    return found.group(1) if found else None


def _not_said(rendered: list[BookError], result: BuildResult) -> list[BookError]:
    """Sphinx's problems less those the check reported already. A duplicate label the check
    reported is left out wherever Sphinx placed it: Sphinx warns at the page it read second,
    which in an incremental run is whichever was re-read, not the second in name order."""
    said = {(p.kind, p.path, p.line) for _, p in result.problems}
    pages = {(p.kind, p.path) for _, p in result.problems if p.kind in CHECKED}
    kinds = {p.kind for _, p in result.problems if p.kind in CHECKED}
    labels = {label for _, p in result.problems if (label := _duplicated(p))}
    return [p for p in rendered if (p.kind, p.path, p.line) not in said and (p.kind, p.path) not in pages
            and not (p.path is None and p.kind in kinds)  # Sphinx names no page for an equation's
            and _duplicated(p) not in labels]


def _read_and_check(config: Config, opts: Options, execute: bool, strict: bool, result: BuildResult,
                    log: Callable[[str], Any]) -> tuple[Book, list[BookError]]:
    """The book read once and checked. What stops the build (a problem of no kind) is raised
    here, all of it together; the rest is reported: warnings logged, and the errors of a strict
    build returned, for the build to raise at its end with everything else it finds."""
    from tabbook.check import check_book

    book = read_book(config, extra_files=not opts.partial, whole_library=opts.partial)
    problems = check_book(book, partial=opts.partial, executes=execute)
    raise_all([p for p in problems if stops(p)])
    kept = result.report(problems, strict, log)
    missing = [p for p in opts.selection.only or () if p not in book.toc]
    if missing:
        raise BookError(f"not in the table of contents: {', '.join(missing)}")
    return book, kept


def dry_run(config: Config, opts: Options) -> tuple[Plan, list[Any]]:
    """``build --dry-run``: the plan a build with ``opts`` would follow and this machine's GPUs,
    read, checked and planned as :func:`build` does; no kernel starts, and neither ``d2l/`` nor
    the store nor ``build/report.json`` is written. ``--frozen`` lists its stale units rather
    than stopping at them (the caller's exit status says so)."""
    from dataclasses import replace

    from tabbook.execute import plan
    from tabbook.library.cache import book_library

    execute = config.execute if opts.execute is None else opts.execute
    book, _ = _read_and_check(config, opts, execute, False, BuildResult(), lambda _: None)
    store = FreezeStore(opts.freeze_dir or config.freeze_dir, config.root, config.max_output_bytes)
    gpus = detect()
    the_plan = plan.plan(config, book.rendered, book_library(book), store,
                         replace(opts.selection, frozen_only=False), host_gpus=len(gpus))
    if not execute:
        the_plan.without_execution()
    return the_plan, gpus


def _write_library(config: Config, book: Book, log: Callable[[str], Any]) -> list[str]:
    from tabbook.library.cache import book_library
    from tabbook.library.generate import write_library

    changed = write_library(config, book_library(book))
    for path in changed:
        log(f"[lib] wrote {path}")
    return changed


def _kept_unchanged(store: FreezeStore, kept: dict[tuple[str, str], str], written: list[tuple[str, str]]) -> None:
    """The store entries this build reuses, as they were when it planned, and those it wrote,
    still entries: a cell may write one (``open('_freeze/other/…ipynb', 'w')``), and the page,
    its downloads and Sphinx would then read what no plan checked (Sphinx stopped with its
    "please report" banner). A changed reused entry is an error at its file; a written one is
    read and checked again (:meth:`FreezeStore.load`), a damaged one an error at its file."""
    problems = [BookError("changed while the build ran (a cell that ran wrote it): its page would show "
                          "what no plan checked; restore it (git checkout) or delete it, and build again",
                          store.shown(store.path(section, fw)))
                for (section, fw), sign in sorted(kept.items()) if store.signature(section, fw) != sign]
    for section, fw in written:
        try:
            store.load(section, fw)
        except BookError as exc:
            problems.append(exc)
    raise_all(problems)


def _execute(config: Config, book: Book, opts: Options, execute: bool, strict: bool, site: SphinxRun | None,
             result: BuildResult, log: Callable[[str], Any],
             runners: list[Runner]) -> tuple[Plan, Notebooks, list[BookError]]:
    """Plan every unit, run the stale ones (or show them as code when execution is off);
    returns the plan (every unit's record), the pages' notebooks and the failures."""
    from tabbook.execute import plan
    from tabbook.library.cache import book_library

    t_exec = time.monotonic()
    store = FreezeStore(opts.freeze_dir or config.freeze_dir, config.root, config.max_output_bytes)
    the_plan = plan.plan(config, book.rendered, book_library(book), store, opts.selection, host_gpus=len(detect()))
    result.outcomes = the_plan.units
    # GPU outputs this machine could not re-run (execute/plan.py lesser_host): a warning, which
    # fails a strict build once every page is written, like any other warning.
    failures: list[BookError] = result.report(the_plan.outdated, strict, log)
    runner: Runner | None = None
    try:
        if execute and the_plan.todo and not opts.scheduler:
            # The first units' workers and kernels start now (execute/spares.py), while the
            # plan keys its units and Sphinx sets itself up; a kernel runs nothing until its
            # unit's first cell.
            runner = _runner(config, the_plan, opts, log)
            runner.linger = True  # kernels shut down while the pages render; _build joins them
            runners.append(runner)
            runner.prestart(plan.run_order(the_plan, store))
        if site is not None and not site.started and execute and the_plan.todo:
            site.start()  # code will run, so pages will change: Sphinx sets itself up meanwhile
        if execute:
            made = runner
            # Entries the build itself rewrites: the units it runs, the keys it re-stamps.
            written = {(u.section, u.framework) for u, _ in the_plan.todo} | {(s, f) for s, f, _ in the_plan.upgrades}
            kept = {(u.section, u.framework): store.signature(u.section, u.framework)
                    for u in the_plan.units if (u.section, u.framework) not in written} if the_plan.todo else {}
            notebooks, failed = plan.run(config, the_plan, store,
                                         lambda: made or _runner(config, the_plan, opts, log))
            failures += result.report(failed, strict, log)
            _kept_unchanged(store, kept, sorted(written) if the_plan.todo else [])
        else:
            notebooks = plan.skip_execution(the_plan)
    finally:
        if runner is not None:
            runner.close()  # the spares no unit took (a failed or interrupted build)
        result.execute_seconds = time.monotonic() - t_exec
    return the_plan, notebooks, failures


def _render(config: Config, book: Book, opts: Options, notebooks: Notebooks, origins: dict[tuple[str, str], str],
            site: SphinxRun | None, result: BuildResult, log: Callable[[str], Any]) -> list[BookError]:
    """``build/src``, the decks, then Sphinx (when a source changed); returns Sphinx's warnings,
    each of its kind, for the build to judge."""
    from tabbook.library.cache import book_library
    from tabbook.render import sources

    changed = sources.write_sources(config, book.rendered_sources, notebooks,
                                    sources.extra_pages(config, book_library(book), book.sections),
                                    origins=origins, page_hashes=book.page_hashes,
                                    orphans=set(book.orphans), notebook_pages=book.notebook_pages)
    if format_named(opts.builder).site:
        from tabbook.render import slides

        made = slides.write_decks(config, book.rendered, notebooks, BuildDir(config.build_dir).html)
        if made.written:
            log(f"[slides] wrote {made.written} of {made.decks} decks")
    if hasattr(notebooks, "save"):
        notebooks.save()  # which entries needed no cleaning (render/sanitize.py)
    if format_named(opts.builder).site:
        from tabbook.render.package import publish

        # Before Sphinx writes the downloads: each notebooks zip carries the wheel its
        # notebooks' install line names (render/site.py, execute/readerlock.py).
        publish(config, BuildDir(config.build_dir).html, log)
    if site is not None:
        t1 = time.monotonic()
        # Its progress, live on a terminal, a line now and then in a log (render/progress.py).
        site.log, site.live = log, log is print and sys.stdout.isatty()
        if not site.finish(sources_changed=changed):
            log(f"[{opts.builder}] nothing changed: build/{opts.builder} is current")
        else:
            log(rendered_line(opts.builder, site.rendered_pages({s.path for s in book.sections})))
        result.sphinx_seconds = time.monotonic() - t1
        result.sphinx_set_up_ahead = site.set_up_ahead
    if format_named(opts.builder).site:
        from tabbook.render.context import render_context
        from tabbook.render.llms import write_llms
        from tabbook.render.site import available_pdfs

        # llms.txt and llms-full.txt: the pages as plain Markdown per framework (render/llms.py),
        # from the same pages and published notebooks as the site.
        write_llms(config, book.sections, notebooks, origins, BuildDir(config.build_dir).html)

        if not available_pdfs(render_context(config)):
            log("[html] the site has no PDFs (none in build/pdf): its pages say \"PDF: not in "
                "this build\"; `tabbook site` builds the site with its PDFs")
    return site.problems if site is not None else []


def rendered_line(builder: str, pages: list[str], shown: int = 5) -> str:
    """"[html] rendered 2 pages: a.md, b.md": which pages a Sphinx run read again (the first
    ``shown`` of them, then how many more)."""
    if not pages:
        return f"[{builder}] rendered: no page read again (the site's other files changed)"
    names = ", ".join(pages[:shown]) + (f" and {len(pages) - shown} more" if len(pages) > shown else "")
    return f"[{builder}] rendered {len(pages)} page{'s' * (len(pages) != 1)}: {names}"


def build_pdfs(config: Config, frameworks: tuple[str, ...] | None = None, *, frozen: bool = False,
               force: bool = False, jobs: int = 0, log: Callable[[str], Any] = print,
               sphinx: Launcher | None = None) -> dict[str, Path]:
    """The whole of ``make pdf``: execute what is stale, merge ``build/src`` and fill the LaTeX
    doctree cache (a ``latex`` build, started by ``sphinx``: :attr:`Options.sphinx`), then one
    LaTeX build and typesetting per framework (:mod:`tabbook.render.pdf`); returns framework →
    PDF for those built."""
    with locked(config):
        return _build_pdfs(config, frameworks, frozen=frozen, force=force, jobs=jobs, log=log, sphinx=sphinx)


def _build_pdfs(config: Config, frameworks: tuple[str, ...] | None, *, frozen: bool, force: bool, jobs: int,
                log: Callable[[str], Any], sphinx: Launcher | None) -> dict[str, Path]:
    from tabbook.render import pdf

    wanted = pdf.pdf_frameworks(config, frameworks)
    if (no_tex := pdf.missing_tools_error()) is not None:
        # A problem in the book (``file.md:LINE``, a stale entry under --frozen) is worth more
        # than a missing tool: read, check and plan first, without executing or rendering
        # anything, so that a machine without TeX reports what an author can fix right away.
        build(config, Options(Selection(frozen_only=frozen, force=force), render=False, execute=False,
                              jobs=jobs), log=log)
        raise no_tex
    result = build(config, Options(Selection(frozen_only=frozen, force=force), builder=PDF.builder, jobs=jobs,
                                   sphinx=sphinx), log=log)
    return pdf.write_pdfs(config, wanted, jobs=jobs, log=log, unsaid=lambda found: _not_said(found, result))


def _runner(config: Config, the_plan: Plan, opts: Options, log: Callable[[str], Any]) -> Runner:
    """Where the plan's units run: this machine's cores (kernels prepared first), or the
    workers of a Dask cluster (``--scheduler``), which prepare their own."""
    if opts.scheduler:
        from tabbook.execute.cluster import ClusterRunner

        # The worker checks its d2l/<module>.py against the whole file's hash.
        keys = {(u.section, u.framework): (parts.env, parts.library_file) for u, parts in the_plan.todo}
        return ClusterRunner(opts.scheduler, config, keys, progress=log)
    from tabbook.execute.envs import kernel_env, prepare_kernels

    prepare_kernels(config, {u.framework for u, _ in the_plan.todo}, log=log)
    env = kernel_env(config)
    gpus = detect(env)
    if gpus:
        log(f"[exec] {len(gpus)} GPU(s): " + "; ".join(g.describe() for g in gpus))
    from tabbook.execute.progress import LiveStatus

    # A long cell is not silence: its file.md:LINE and time so far, live on a terminal, every 30 s in a log.
    # Its own redrawing (a carriage return, erase-line) goes to the terminal itself; every line
    # it logs goes through the command line's filter (errors.TerminalStream).
    stream = unfiltered(sys.stdout)
    live = LiveStatus(log, stream, interactive=log is print and stream.isatty())
    runner = Runner(opts.jobs or os.cpu_count() or 1, env, progress=log,
                    devices=Devices(gpus, per_gpu=config.units_per_gpu), live=live, lent=opts.kernels)
    if opts.kernels is not None:
        # At a terminal: the warm builder keeps a kernel of each framework this build ran
        # ready for the next build (tabbook.warm.server), where the last unit of it ran.
        for unit, _ in the_plan.todo:
            if (kind := runner.kind(unit)) is not None:
                opts.kernels.want(kind)
    return runner


def clean(config: Config) -> tuple[int, int]:
    """Remove ``build/``, once no build of the book is running (a waiting build then locks
    the lock file created anew); returns how many files and bytes it held (0, 0: there was none)."""
    if not config.build_dir.is_dir():
        return 0, 0
    with locked(config):
        files = [p for p in config.build_dir.rglob("*") if p.is_file() and not p.is_symlink()]
        size = sum(p.stat().st_size for p in files)
        shutil.rmtree(config.build_dir, ignore_errors=True)
    return len(files), size


def verify_freeze(config: Config, selection: Selection, *, jobs: int = 0, scheduler: str | None = None,
                  log: Callable[[str], Any] = print) -> list[Any]:
    """``tabbook verify-freeze``: re-execute the store's current CPU entries (those ``selection``
    names) into a throw-away store and compare what a reader would see
    (:mod:`tabbook.execute.verify`); the book's store is only read."""
    import tempfile

    from tabbook.execute import plan, verify
    from tabbook.execute.store import Entry
    from tabbook.library.cache import book_library
    from tabbook.library.generate import write_library

    with locked(config):  # the kernels import d2l/, which must be the book's current library
        book = read_book(config)
        library = book_library(book)
        write_library(config, library)
        store = FreezeStore(config.freeze_dir, config.root, config.max_output_bytes)
        forced = Selection(force=True, frameworks=selection.frameworks, only=selection.only, execute_here=True)
        the_plan = plan.plan(config, book.rendered, library, store, forced)
        current = [(u, p) for u, p in the_plan.todo if the_plan.outcomes[(u.section, u.framework)].current]
        stale = [u for u, _ in the_plan.todo if not the_plan.outcomes[(u.section, u.framework)].current]

        def run(todo: list[tuple[Any, Any]]) -> dict[tuple[str, str], Notebook | str]:
            some = the_plan.restricted({(u.section, u.framework) for u, _ in todo})
            with tempfile.TemporaryDirectory(prefix="tabbook-verify-") as tmp:
                notebooks, _ = plan.run(config, some, FreezeStore(Path(tmp), config.root),
                                        lambda: _runner(config, some, Options(jobs=jobs, scheduler=scheduler), log))
            failed = {s.id: s.error.location_message() if s.error else "failed" for s in some.units
                      if s.status == UnitStatus.FAILED}
            return {k: failed.get(k) or notebooks[k] for k in ((u.section, u.framework) for u, _ in todo)}

        def rel(section: str, fw: str) -> str:
            return config.rel(store.path(section, fw))

        def stored(section: str, fw: str) -> Notebook | None:
            entry = store.load(section, fw)
            return entry.notebook if entry is not None else None

        verdicts = verify.verify(current, stored, rel, lambda nb: bool(Entry(nb).gpus), run)
        verdicts += [verify.Verdict(rel(u.section, u.framework), u.section, u.framework, verify.VerdictState.STALE,
                                    ["the entry is missing or stale: `tabbook build` first"]) for u in stale]
    return verdicts
