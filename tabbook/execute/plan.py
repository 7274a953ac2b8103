"""Stage 3, execute: decide which (section, framework) units run, run them, store what they made.

:func:`plan` looks every unit up in the freeze store by its key (what the kernel
would run, the environment's lock files, the generated library, Python, kernel)
and sorts it into reused, to run, or skipped (not selected); a ``--frozen``
build turns every unit to run into a located error instead. :func:`run` starts
only the kernels the plan needs, runs the units in parallel (:mod:`.runner`)
and writes each successful result into the store (:class:`.store.FreezeStore`).
A failed unit is reported and never stored; the others are kept.

A unit that does not run (execution off, d2lbook's ``eval_notebook = False``; or
it failed) still has a notebook for the page: its code without outputs
(:func:`code_only_notebook`), so every tab shows its code whatever happened.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tabbook.config import Config
from tabbook.errors import BookError, BookErrors
from tabbook.execute.runner import Runner, Unit, build_notebook
from tabbook.execute.store import META, FreezeStore, KeyParts, cells_hash, text_hash
from tabbook.source.read import Section
from tabbook.source.split import FrameworkCell, split_section

Notebooks = dict[tuple[str, str], dict[str, Any]]


@dataclass(frozen=True)
class Selection:
    """Which units a build may execute (the command line's ``--force``, ``--only``, …)."""

    force: bool = False  # re-execute the selected units even when current
    frameworks: tuple[str, ...] | None = None  # execute only these
    only: tuple[str, ...] | None = None  # sections (paths) to execute
    shard: tuple[int, int] | None = None  # (i, n): execute units i, i+n, ...
    frozen_only: bool = False  # never execute: a unit that would run is an error

    def selects(self, section: str, framework: str) -> bool:
        return (self.frameworks is None or framework in self.frameworks) and (
            self.only is None or section in self.only)


@dataclass
class UnitStatus:
    section: str
    framework: str
    status: str  # executed | reused | failed | skipped | not-executed
    seconds: float = 0.0
    error: str | None = None


@dataclass
class Plan:
    notebooks: Notebooks = field(default_factory=dict)  # current entries, reused as they are
    # Where each notebook came from, for units whose notebook is not new in this build: the
    # store file's size and time, or why it shows code only. The sources step skips merging
    # a page whose notebooks and text are what they were (render/sources.py).
    origins: dict[tuple[str, str], str] = field(default_factory=dict)
    todo: list[tuple[Unit, KeyParts]] = field(default_factory=list)
    statuses: list[UnitStatus] = field(default_factory=list)


def unit_key(config: Config, section: Section, fw: str, library: dict[str, str]) -> tuple[KeyParts, list[FrameworkCell]]:
    """The freeze key of (section, framework), and the cells it hashes."""
    from tabbook.execute.envs import lock_hash

    framework = config.framework(fw)
    cells = split_section(section, fw, framework.library)  # aliases rewritten, as d2lbook runs the tab
    lib_text = library.get(f"{config.library_dir.name}/{framework.module}.py")
    parts = KeyParts(
        cells=cells_hash(cells), env=lock_hash(framework), library=text_hash(lib_text),
        python=framework.python, kernel=framework.kernel_name,
    )
    return parts, cells


def plan(config: Config, sections: list[Section], library: dict[str, str], store: FreezeStore,
         selection: Selection) -> Plan:
    """Sort every unit of the book into reused / to run / skipped; ``--frozen`` stale units raise."""
    out = Plan()
    stale: list[BookError] = []
    for section in sections:
        for fw in config.tabs:
            parts, cells = unit_key(config, section, fw, library)
            if not cells:
                continue
            entry, current = store.lookup(section.path, fw, parts.key, parts)
            selected = selection.selects(section.path, fw)
            if current and not (selection.force and selected):
                out.notebooks[(section.path, fw)] = entry  # type: ignore[assignment]
                out.origins[(section.path, fw)] = store.signature(section.path, fw)
                out.statuses.append(UnitStatus(section.path, fw, "reused"))
            elif selection.frozen_only:
                why = "missing" if entry is None else "stale (its code, environment or library changed)"
                rel = config.rel(store.path(section.path, fw))
                # At the unit's first code cell: the store keeps no finer record of what changed.
                stale.append(BookError(f"[{fw}] freeze entry {rel} is {why}", section.path, cells[0].cell.line))
            else:
                framework = config.framework(fw)
                unit = Unit(
                    section=section.path, framework=fw, cells=tuple(cells),
                    kernel_name=framework.kernel_name, import_name=framework.import_name,
                    cwd=(config.root / section.path).parent, timeout=config.cell_timeout,
                    stderr_filters=config.stderr_filters,
                    gpu_probe=framework.gpu_probe,
                )
                if selected:
                    out.todo.append((unit, parts))
                else:
                    out.statuses.append(UnitStatus(section.path, fw, "skipped"))
                    out.notebooks[(section.path, fw)] = code_only_notebook(unit, "not run in this build")
                    out.origins[(section.path, fw)] = "code only: not run in this build"
    if stale:
        raise BookErrors(stale)
    if selection.shard:
        i, n = selection.shard
        for unit, _ in out.todo[:i] + [t for k, t in enumerate(out.todo[i:]) if k % n]:
            out.notebooks[(unit.section, unit.framework)] = code_only_notebook(unit, "run by another shard")
            out.origins[(unit.section, unit.framework)] = "code only: run by another shard"
        out.todo = out.todo[i::n]
    return out


def kernel_env(config: Config) -> dict[str, str]:
    """The environment kernels start in: project-local kernelspecs, the repo's ``d2l`` importable."""
    from tabbook.execute.envs import jupyter_dir

    env = dict(os.environ)
    env["JUPYTER_PATH"] = str(jupyter_dir(config).resolve())
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2])
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    return env


def prepare_kernels(config: Config, frameworks: set[str], log: Callable[[str], Any] = print) -> None:
    """Create (if needed), check and register the kernel of each framework about to run."""
    from tabbook.execute.envs import checked_env, ensure_env, write_kernelspec

    for fw in sorted(frameworks, key=config.tabs.index):
        framework = config.framework(fw)
        env = ensure_env(config, framework, create=True, log=log)
        version = checked_env(config, framework, env)  # imports the framework once per venv, not per build
        if framework.interpreter is not None:
            log(f"[env] {fw}: existing interpreter {framework.interpreter} ({framework.import_name} {version})")
        write_kernelspec(config, framework, env)


def code_only_notebook(unit: Unit, why: str) -> dict[str, Any]:
    """The unit's code cells without outputs, for a page whose unit did not run; ``why`` says so."""
    nb = build_notebook(unit)
    nb["metadata"][META] = {"provenance": {"not_executed": why}}
    return nb


def skip_execution(the_plan: Plan) -> Notebooks:
    """Execution off: every unit to run is shown as code without outputs instead."""
    notebooks = dict(the_plan.notebooks)
    for unit, _ in the_plan.todo:
        notebooks[(unit.section, unit.framework)] = code_only_notebook(unit, "execution is off")
        the_plan.origins[(unit.section, unit.framework)] = "code only: execution is off"
        the_plan.statuses.append(UnitStatus(unit.section, unit.framework, "not-executed"))
    return notebooks


def run(config: Config, the_plan: Plan, store: FreezeStore, jobs: int = 0,
        log: Callable[[str], Any] = print, scheduler: str | None = None) -> tuple[Notebooks, list[BookError]]:
    """Execute the plan's units and store each result.

    Returns the notebooks of every unit (a failed one as code without outputs) and
    the failures, so the caller can still render every page before it reports them.
    With ``scheduler`` (a Dask scheduler's address) the units run on that cluster's
    workers, which prepare their own kernels; the results are stored here all the same.
    """
    notebooks = dict(the_plan.notebooks)
    if not the_plan.todo:
        return notebooks, []
    runner: Runner
    if scheduler:
        from tabbook.execute.cluster import ClusterRunner

        keys = {(u.section, u.framework): (parts.env, parts.library) for u, parts in the_plan.todo}
        runner = ClusterRunner(scheduler, config, keys, progress=log)
    else:
        prepare_kernels(config, {u.framework for u, _ in the_plan.todo}, log=log)
        runner = Runner(jobs or os.cpu_count() or 1, kernel_env(config), progress=log)
    # Longest first (the time each took when last run; never run: first of all), so the
    # build does not end waiting on one long unit started last while the other cores idle.
    last = [store.last_seconds(u.section, u.framework) for u, _ in the_plan.todo]
    order = sorted(range(len(last)), key=lambda i: -(last[i] if last[i] is not None else float("inf")))
    ran = runner.run([the_plan.todo[i][0] for i in order])
    results = [res for _, res in sorted(zip(order, ran, strict=True))]
    failures: list[BookError] = []
    statuses = the_plan.statuses
    for (unit, parts), res in zip(the_plan.todo, results, strict=False):
        if not res.ok or res.notebook is None:
            statuses.append(UnitStatus(unit.section, unit.framework, "failed", res.seconds, res.error))
            failures.append(BookError(res.error or "failed"))
            notebooks[(unit.section, unit.framework)] = code_only_notebook(unit, "execution failed")
            the_plan.origins[(unit.section, unit.framework)] = "code only: execution failed"
            continue
        nb = res.notebook
        for cell in nb["cells"]:
            cell["metadata"].pop("tabbook", None)  # the runner's per-cell job data
        try:
            store.store(unit.section, unit.framework, nb, parts, res.provenance, res.seconds)
        except OSError as exc:
            statuses.append(UnitStatus(unit.section, unit.framework, "failed", res.seconds, str(exc)))
            target = config.rel(store.path(unit.section, unit.framework))
            failures.append(BookError(f"cannot write {target}: {exc.strerror or exc}", unit.section))
            continue
        notebooks[(unit.section, unit.framework)] = nb
        the_plan.origins[(unit.section, unit.framework)] = store.signature(unit.section, unit.framework)
        statuses.append(UnitStatus(unit.section, unit.framework, "executed", res.seconds))
    return notebooks, failures
