"""The pipeline, stage by stage: read → library → execute → render. Nothing else happens here.

1. **source**: the book is read once (:func:`tabbook.book.read_book`) and checked;
2. **library**: ``#@save`` code → ``d2l/<framework>.py`` (written only when changed);
3. **execute**: each (section, framework) unit is looked up in the freeze store and
   only the stale ones run (:mod:`tabbook.execute.plan`);
4. **render**: merged sources → Sphinx (:mod:`tabbook.render`).
``build/report.json`` is written even when a stage fails.
"""

from __future__ import annotations

import json
import shutil
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tabbook.book import read_book
from tabbook.config import Config
from tabbook.errors import BookError, BookErrors
from tabbook.execute.plan import Selection, UnitStatus
from tabbook.execute.store import FreezeStore, write_atomic
from tabbook.execute.store import provenance as store_provenance


@dataclass(frozen=True)
class Options:
    selection: Selection = Selection()
    render: bool = True
    freeze_dir: Path | None = None  # another store (tests execute into a temp store)
    jobs: int = 0  # parallel units; 0 = core count
    builder: str = "html"  # "" = write Sphinx's sources only (the PDF driver renders per framework)
    execute: bool | None = None  # None: the book's setting (d2lbook's [build] eval_notebook)
    # A build of part of a book: references to pages that are not in it are warnings, shown as
    # text (d2lbook's behaviour), and Markdown outside the toc is not read. Full builds stay strict.
    partial: bool = False
    scheduler: str | None = None  # a Dask scheduler's address: execute on its cluster (tabbook.execute.cluster)
    # Warnings fail the build too (d2lbook's [build] warning_is_error, Sphinx's -W); None: the book's setting.
    strict: bool | None = None


@dataclass
class BuildResult:
    units: list[UnitStatus] = field(default_factory=list)
    seconds: float = 0.0
    sphinx_seconds: float = 0.0
    execute_seconds: float = 0.0  # wall time of the execution stage (units run in parallel)
    library_changed: list[str] = field(default_factory=list)
    # (section, framework) -> where its outputs were computed ("1× NVIDIA H100…", "CPU only",
    # "" when it shows no outputs), read from the entries the pages show.
    devices: dict[tuple[str, str], str] = field(default_factory=dict)

    def gpu_summary(self) -> str:
        """"GPU outputs in 3 of 20 units (pytorch 3/5, jax 0/5, …)": what the build's last line says."""
        shown = {k: v for k, v in self.devices.items() if v}
        if not shown:
            return ""
        per: dict[str, list[int]] = {}
        for (_, fw), device in shown.items():
            count = per.setdefault(fw, [0, 0])
            count[0] += device != "CPU only"
            count[1] += 1
        gpu = sum(c[0] for c in per.values())
        parts = ", ".join(f"{fw} {c[0]}/{c[1]}" for fw, c in per.items())
        return f"GPU outputs in {gpu} of {len(shown)} units ({parts})"

    def as_report(self) -> dict[str, Any]:
        units = [{"section": u.section, "framework": u.framework, "status": u.status,
                  "seconds": round(u.seconds, 3), **({"error": u.error} if u.error else {}),
                  **({"device": self.devices[(u.section, u.framework)]}
                     if self.devices.get((u.section, u.framework)) else {})} for u in self.units]
        return {"units": units, "seconds": round(self.seconds, 3), "sphinx_seconds": round(self.sphinx_seconds, 3),
                "execute_seconds": round(self.execute_seconds, 3), "library_changed": self.library_changed,
                "warm": _in_a_warm_builder()}


def _in_a_warm_builder() -> bool:
    """Whether this build runs in a warm builder (:mod:`tabbook.warm`), for the report."""
    warm = sys.modules.get("tabbook.warm")
    return bool(warm is not None and getattr(warm, "_INSIDE", False))


def build(config: Config, opts: Options, log: Callable[[str], Any] = print) -> BuildResult:
    """Run the whole pipeline; the report is written even when a stage fails."""
    from tabbook.execute import plan
    from tabbook.library.generate import write_library
    from tabbook.render import sources, sphinx
    from tabbook.source.check import check_book

    t0 = time.monotonic()
    result = BuildResult()
    execute = config.execute if opts.execute is None else opts.execute
    strict = config.warning_is_error if opts.strict is None else opts.strict
    site: sphinx.SphinxRun | None = None
    try:
        if opts.render and opts.builder:
            site = sphinx.SphinxRun(config, opts.builder, partial=opts.partial, strict=strict)
            if site.likely_to_run():
                # Sphinx sets itself up while the book is read, the library written and
                # stale code run; it reads the sources once they are written.
                site.start()
        book = read_book(config, extra_files=not opts.partial, whole_library=opts.partial)
        warnings: list[BookError] = []
        problems = check_book(book, partial=opts.partial, warnings=warnings, executes=execute)
        if strict:
            problems, warnings = problems + warnings, []
        for warning in warnings:
            log(f"warning: {warning.location_message()}")
        if problems:
            raise problems[0] if len(problems) == 1 else BookErrors(problems)
        missing = [p for p in opts.selection.only or () if p not in book.toc]
        if missing:
            raise BookError(f"not in the table of contents: {', '.join(missing)}")
        result.library_changed = write_library(config, book.library)
        for path in result.library_changed:
            log(f"[lib] wrote {path}")
        t_exec = time.monotonic()
        store = FreezeStore(opts.freeze_dir or config.freeze_dir)
        the_plan = plan.plan(config, book.rendered, book.library, store, opts.selection)
        result.units = the_plan.statuses
        failures: list[BookError] = []
        if site is not None and not site.started and execute and the_plan.todo:
            site.start()  # code will run, so pages will change: Sphinx sets itself up meanwhile
        try:
            if execute:
                notebooks, failures = plan.run(config, the_plan, store, opts.jobs, log=log,
                                                     scheduler=opts.scheduler)
            else:
                notebooks = plan.skip_execution(the_plan)
        finally:
            result.execute_seconds = time.monotonic() - t_exec
        for unit_id, nb in notebooks.items():
            prov = store_provenance(nb)
            result.devices[unit_id] = "" if not prov or prov.get("not_executed") else str(prov.get("device", ""))
        if opts.render:
            # Every page renders even when units failed (they show their code without
            # outputs); the build then fails listing every failure.
            changed = sources.write_sources(config, book.rendered, notebooks,
                                            sources.extra_pages(config, book.library, book.sections),
                                            origins=the_plan.origins, page_hashes=book.page_hashes,
                                            orphans=set(book.orphans))
            if opts.builder == "html":
                from tabbook.render import slides

                made = slides.write_decks(config, book.rendered, notebooks, config.build_dir / "html")
                if made.written:
                    log(f"[slides] wrote {made.written} of {made.decks} decks")
            if site is not None:
                t1 = time.monotonic()
                if not site.finish(sources_changed=changed):
                    log(f"[{opts.builder}] nothing changed: build/{opts.builder} is current")
                result.sphinx_seconds = time.monotonic() - t1
            if opts.builder == "html":
                from tabbook.render.site import available_pdfs, load_site_options

                if not available_pdfs(load_site_options(config)):
                    log("[html] the site has no PDFs (none in build/pdf): its pages say \"PDF: not in "
                        "this build\"; `make site` builds the site with its PDFs")
        if failures:
            raise failures[0] if len(failures) == 1 else BookErrors(failures)
    finally:
        if site is not None:
            site.call_off()  # a failed build: the early Sphinx reads and writes nothing
        result.seconds = time.monotonic() - t0
        write_atomic(config.build_dir / "report.json", json.dumps(result.as_report(), indent=1) + "\n")
    return result


def clean(config: Config) -> None:
    shutil.rmtree(config.build_dir, ignore_errors=True)
