"""Execute: decide which (section, framework) units run, run them, store what they made.

:func:`plan` looks every unit up in the freeze store by its key (what the kernel
would run, the environment's lock files, the library definitions it can reach,
Python, kernel) and sorts it into reused, to run, or skipped (not selected),
recording for each why in its one record (:class:`UnitOutcome`, what ``build --dry-run``
prints and, once run, what ``build/report.json`` says of it); a
``--frozen`` build turns every unit to run into a located error instead. :func:`run` starts
only the kernels the plan needs, runs the units in parallel (:mod:`.runner`)
and writes each successful result into the store (:class:`.store.FreezeStore`).
A failed unit is reported and never stored; the others are kept.

A unit that does not run (execution off, d2lbook's ``eval_notebook = False``; or
it failed) still has a notebook for the page: its code without outputs
(:func:`code_only_notebook`), so every tab shows its code whatever happened.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import cast

from tabbook.config import Config
from tabbook.errors import BookError, raise_all
from tabbook.execute.entrycheck import META, entry_problem, provenance_problem
from tabbook.execute.gpus import ALL, guess_need
from tabbook.execute.job import ErrorKind, Failure, Provenance, Result
from tabbook.execute.outcome import Selection, UnitOutcome, UnitState, UnitStatus, explain
from tabbook.execute.runner import Runner, Unit, UnitResult, build_notebook
from tabbook.execute.store import (
    Entry,
    FreezeStore,
    KeyParts,
    Match,
    StoredParts,
    cells_hash,
    match,
    text,
    text_hash,
)
from tabbook.nbjson import Notebook
from tabbook.problems import Problem
from tabbook.source.model import Section
from tabbook.source.split import FrameworkCell, split_section

Notebooks = dict[tuple[str, str], Notebook]


@dataclass
class Plan:
    outcomes: dict[tuple[str, str], UnitOutcome] = field(default_factory=dict)  # every unit, in book order
    todo: list[tuple[Unit, KeyParts]] = field(default_factory=list)
    # Stale units whose entries are kept because this machine cannot stand in for the one that
    # computed them (:func:`lesser_host`): warnings, errors in a strict build.
    outdated: list[BookError] = field(default_factory=list)
    # Current entries stored under their version-1 key: re-stamped with the new key by a build
    # that may write the store (:func:`upgrade_keys`), never by --frozen or --dry-run.
    upgrades: list[tuple[str, str, KeyParts]] = field(default_factory=list)
    # Units with no entry, whose key's library part is computed only if they run (keys_for_todo).
    deferred: dict[tuple[str, str], Section] = field(default_factory=dict)
    library: dict[str, str] = field(default_factory=dict)  # the generated files the keys were made from

    @property
    def units(self) -> list[UnitOutcome]:
        """Every unit's record, in book order."""
        return list(self.outcomes.values())

    @property
    def notebooks(self) -> Notebooks:
        """What each unit's page shows (so far: the reused entries before :func:`run`)."""
        return {k: o.notebook for k, o in self.outcomes.items() if o.notebook is not None}

    @property
    def origins(self) -> dict[tuple[str, str], str]:
        """Where each notebook not new in this build came from (the sources step skips merging
        a page whose notebooks and text are what they were: render/sources.py)."""
        return {k: o.origin for k, o in self.outcomes.items() if o.origin is not None}

    def restricted(self, ids: set[tuple[str, str]]) -> Plan:
        """A plan of only these of its units to run (their records copied, the library shared):
        what ``verify-freeze`` runs, leaving this plan as it was."""
        return Plan(outcomes={k: replace(o) for k, o in self.outcomes.items() if k in ids},
                    todo=[(u, p) for u, p in self.todo if (u.section, u.framework) in ids],
                    deferred={k: s for k, s in self.deferred.items() if k in ids}, library=self.library)

    def without_execution(self) -> None:
        """Execution off: a unit that would run is ``stale``, shown as code only (what a build
        with execution off then shows, :func:`skip_execution`)."""
        for unit, _ in self.todo:
            record = self.outcomes[(unit.section, unit.framework)]
            record.state = UnitState.STALE
            record.why = [*record.why, "execution is off: shown as code only"]

    def keys_for_todo(self, config: Config) -> None:
        """Complete the keys of the units about to run and be stored (see :func:`unit_key`)."""
        for i, (unit, _) in enumerate(self.todo):
            section = self.deferred.pop((unit.section, unit.framework), None)
            if section is not None:
                self.todo[i] = (unit, unit_key(config, section, unit.framework, self.library)[0])


def dependencies_hash(config: Config) -> str:
    """The contents of the files ``[build] dependencies`` names ("" when it names none): part of
    every unit's key, so changing one re-runs the book, as d2lbook rebuilds everything then."""
    if not config.dependencies:
        return ""
    parts = []
    for path in config.files(config.dependencies):
        parts += [config.rel(path), hashlib.sha256(path.read_bytes()).hexdigest()]
    return text_hash("\0".join(parts))


def unit_key(config: Config, section: Section, fw: str, library: dict[str, str],
             entry: Entry | None = None, analyse: bool = True) -> tuple[KeyParts, list[FrameworkCell]]:
    """The freeze key of (section, framework), and the cells it hashes.

    The library part covers only the definitions of ``d2l/<module>.py`` the cells can
    reach, and the module's header (:func:`tabbook.library.reach.unit_reach`); a generated
    module of another framework that the cells import counts whole. ``entry``: the unit's
    stored entry, whose library part is reused when it was computed from the same cells,
    the same library files and the same rules (the analysis is a pure function of those),
    so a build where neither code nor library changed analyses nothing. ``analyse=False``
    (a unit with no entry: stale whatever its key) leaves the library part empty; the plan
    computes it only if the unit runs and is stored (:meth:`Plan.keys_for_todo`)."""
    from tabbook.execute.envs import lock_hash
    from tabbook.library.reach import RULES, unit_reach

    framework = config.framework(fw)
    cells = split_section(section, fw, framework.library)  # aliases rewritten, as d2lbook runs the tab
    package = config.library_dir.name
    lib_text = library.get(f"{package}/{framework.module}.py")
    cells_part, file_part = cells_hash(cells), text_hash(lib_text)
    stored = entry.parts if entry is not None else StoredParts()
    others = stored.library_others or {}
    if (stored.cells == cells_part and stored.library_file == file_part
            and stored.library_rules == RULES and isinstance(stored.library_names, dict)
            and isinstance(stored.library, str) and isinstance(others, dict)
            and all(text_hash(library.get(f"{package}/{m}.py")) == h for m, h in others.items())):
        library_part, names = stored.library, tuple(sorted(stored.library_names.items()))
        # kept as the entry recorded it (its other parts matched: this tabbook wrote it)
        whole, other_parts = cast(str | None, stored.library_whole), tuple(sorted(others.items()))
    elif not analyse:
        library_part, names, whole, other_parts = "", (), None, ()
    else:
        reached = unit_reach([c.source for c in cells], lib_text or "", package, framework.module)
        library_part, names, whole = reached.key, tuple(sorted(reached.names.items())), reached.whole
        other_parts = tuple((m, text_hash(library.get(f"{package}/{m}.py"))) for m in reached.other_modules)
        if other_parts:
            library_part = text_hash("\0".join([library_part, *(h for _, h in other_parts)]))
    parts = KeyParts(
        cells=cells_part, env=lock_hash(framework), library=library_part,
        python=framework.python, kernel=framework.kernel_name,
        library_file=file_part, library_names=names, library_whole=whole,
        library_others=other_parts, library_rules=RULES, depends=dependencies_hash(config),
    )
    return parts, cells


def lesser_host(entry: Entry | None, declared: int | None, host_gpus: int | None) -> str | None:
    """Why this machine cannot stand in for the one that computed ``entry`` (None: it can).

    An entry computed on GPUs, re-run on a machine with fewer, would swap the book's GPU outputs
    for other ones without a word; a page declared to need more GPUs (``[build] gpus``) than
    there are cannot show what it is about. A need guessed from the code holds nothing back:
    such code falls back to the CPU (``try_gpu()``). ``host_gpus`` None: not known."""
    if entry is None or host_gpus is None:
        return None
    gpus = entry.gpus
    if len(gpus) > host_gpus:
        return f"its outputs were computed on {len(gpus)}× {gpus[0]} and this machine has " + (
            f"{host_gpus} GPU(s)" if host_gpus else "no GPU")
    if declared is not None and declared > host_gpus:
        return f"[build] gpus says it needs {declared} GPUs and this machine has {host_gpus}"
    return None


def plan(config: Config, sections: list[Section], library: dict[str, str], store: FreezeStore,
         selection: Selection, host_gpus: int | None = None) -> Plan:
    """Sort every unit of the book into reused / to run / skipped; ``--frozen`` stale units raise.

    ``host_gpus``: how many GPUs this machine has (:func:`tabbook.execute.gpus.detect`); a stale
    unit this machine cannot stand in for keeps its entry, marked outdated (:func:`lesser_host`),
    unless ``selection.execute_here``."""
    out = Plan(library=library)
    stale: list[BookError] = []
    damaged: list[BookError] = []
    for section in sections:
        for fw in config.tabs:
            try:
                entry = store.load(section.path, fw)
            except BookError as err:
                if not (selection.force and selection.selects(section.path, fw)):
                    damaged.append(err)  # all of them reported together, before anything runs
                    continue
                entry = None  # --force on it: executed anew, the damaged file replaced
            stale += _plan_unit(out, config, section, fw, entry, store, selection, host_gpus)
    if damaged or stale:
        raise_all(damaged + stale)
    if selection.shard:
        _keep_shard(out, *selection.shard)
    return out


def with_book_code(entry: Notebook, cells: list[FrameworkCell]) -> tuple[Notebook, int | None]:
    """``entry`` showing the code its key was computed from, and the first cell whose code it
    replaced (None: the entry showed that code already, and is returned as it is).

    The key hashes the book's code, never the entry's copy of it, so a hand-edited ``_freeze``
    entry could show readers other code beside outputs keyed as this code's."""
    stored = entry.get("cells", [])
    first = None
    for k, (cell, fc) in enumerate(zip(stored, cells, strict=False)):
        tags = (cell.get("metadata") or {}).get("tags", [])
        if text(cell.get("source", "")) != fc.source or tags != list(fc.tags):
            first = k
            break
    if first is None:
        return entry, None
    out = dict(entry)
    # The book's code and tags (a tag hides a cell or its input): both are what the key covers.
    out["cells"] = [{**cell, "source": cells[k].source, "metadata": {**cell.get("metadata", {}),
                                                                    "tags": list(cells[k].tags)}}
                    if k < len(cells) else cell for k, cell in enumerate(stored)]
    return out, first


def _plan_unit(out: Plan, config: Config, section: Section, fw: str, entry: Entry | None,
               store: FreezeStore, selection: Selection, host_gpus: int | None) -> list[BookError]:
    """Decide one unit (its record goes into ``out``); returns its ``--frozen`` error, if any."""
    parts, cells = unit_key(config, section, fw, library=out.library, entry=entry, analyse=entry is not None)
    if not cells:
        return []
    matched = match(entry, parts)
    # An entry holds one cell per code cell the unit runs: one with more or fewer cannot be
    # paired with the page (its outputs would land beside other code, or cells would vanish).
    miscounted = None
    if entry is not None and len(entry.cells) != len(cells):
        held, want = len(entry.cells), len(cells)
        miscounted = f"it holds {held} cell{'s' * (held != 1)}, the page has {want} code cell{'s' * (want != 1)} here"
        matched = None
    selected = selection.selects(section.path, fw)
    record = out.outcomes[(section.path, fw)] = UnitOutcome(section.path, fw, library_whole=parts.library_whole,
                                                            current=bool(matched))
    declared = config.declared_gpus(section.path)
    need = declared if declared is not None else guess_need("\n".join(c.source for c in cells))
    record.gpu_need = need
    alone = config.runs_alone(section.path)
    record.placement = describe_need(need, alone)
    if matched and entry is not None and not (selection.force and selected):
        _reuse(out, config, store, record, entry, matched, cells)
        if needs_upgrade(entry, matched) and not selection.frozen_only:
            out.upgrades.append((section.path, fw, parts))
        return []
    record.state = UnitState.RUN
    if matched:
        record.why = ["forced (--force)"]
    elif miscounted:
        record.why = [f"its cells ({miscounted})"]
    else:
        record.why, record.library_names = explain(entry, parts)
    held_back = None if selection.execute_here or not selected else lesser_host(entry, declared, host_gpus)
    if held_back and entry is not None:
        _hold_back(out, store, record, entry, held_back, first_edited_line(entry, cells))
        if not selection.frozen_only:
            return []
    if selection.frozen_only:
        why = ("missing" if entry is None else f"not this page's ({miscounted})" if miscounted
               else f"stale ({', '.join(record.why)} changed)")
        rel = config.rel(store.path(section.path, fw))
        # At the first cell whose code differs from the entry's (its first cell when none does).
        line = first_edited_line(entry, cells) if entry is not None else cells[0].cell.line
        return [BookError(f"[{fw}] freeze entry {rel} is {why}", section.path, line)]
    framework = config.framework(fw)
    unit = Unit(section=section.path, framework=fw, cells=tuple(cells), kernel_name=framework.kernel_name,
                import_name=framework.import_name, cwd=(config.root / section.path).parent,
                timeout=config.cell_timeout, stderr_filters=config.stderr_filters,
                max_output_bytes=config.max_output_bytes, memory_limit=config.memory_limit,
                gpu_probe=framework.gpu_probe, gpus=need, alone=alone)
    if selected:
        out.todo.append((unit, parts))
        if not parts.library:
            out.deferred[(section.path, fw)] = section
    else:
        record.state = UnitState.SKIP
        record.why = ["not selected in this build", *record.why]
        record.show(code_only_notebook(unit, "not run in this build"), "code only: not run in this build",
                    UnitStatus.SKIPPED)
    return []


def _reuse(out: Plan, config: Config, store: FreezeStore, record: UnitOutcome, entry: Entry, matched: Match,
           cells: list[FrameworkCell]) -> None:
    """A current entry: its page shows it (with the book's code, when its copy was edited)."""
    shown = entry.notebook
    if matched in (Match.KEY, Match.LEGACY):  # this very code ran: the entry must show it
        shown, foreign = with_book_code(entry.notebook, cells)
        if foreign is not None:
            rel, page = config.rel(store.path(record.section, record.framework)), record.section
            out.outdated.append(BookError(
                f"[{record.framework}] freeze entry {rel} shows code other than the book's here (edited by "
                f"hand?): the page shows the book's code with the entry's outputs; `tabbook "
                f"verify-freeze --only {page}` compares them with a new run, `tabbook "
                f"build --force --only {page}` stores them anew", page, cells[foreign].cell.line,
                kind=Problem.FREEZE_CODE))
    record.show(shown, store.signature(record.section, record.framework), UnitStatus.REUSED)
    record.why = [REUSE_WHY[matched]]


def first_edited_line(entry: Entry, cells: list[FrameworkCell]) -> int:
    """The Markdown line of the first code cell whose code differs from the one the entry ran:
    where an author looks for what they changed (a cell added after the stored ones: the first
    new one; a cell removed, or only the library or environment changed: the nearest cell)."""
    stored = len(entry.cells)
    _, first = with_book_code(entry.notebook, cells)
    if first is None:
        first = min(stored, len(cells) - 1) if stored != len(cells) else 0
    return cells[first].cell.line


def refresh_hint(section: str, fw: str) -> str:
    """What a contributor without the GPUs can do about outputs kept from earlier code."""
    return (f"to refresh them, open a pull request (the GPU run refreshes them), or run it on a GPU "
            f"machine (`make gpu-bundle`, then scripts/gpu-build.sh there), or here on the CPU: "
            f"`tabbook build --execute-here --only {section} --frameworks {fw}`")


def _hold_back(out: Plan, store: FreezeStore, record: UnitOutcome, entry: Entry, held_back: str, line: int) -> None:
    """A stale entry this machine cannot stand in for: kept as it is, marked on the page and in
    the report (a warning; ``--frozen`` fails on it). Located at the first edited cell, with
    what to do about it (:func:`refresh_hint`)."""
    record.state = UnitState.OUTDATED
    record.why = [*record.why, f"kept: {held_back} (--execute-here runs it anyway)"]
    kept = BookError(f"[{record.framework}] outputs kept from an earlier version of the code: {held_back}; "
                     f"{refresh_hint(record.section, record.framework)}",
                     record.section, line, kind=Problem.OUTDATED_OUTPUTS)
    record.show(mark_outdated(entry, f"{', '.join(record.why[:-1])} changed; {held_back}"),
                "outdated: " + store.signature(record.section, record.framework), UnitStatus.OUTDATED)
    record.error = kept
    out.outdated.append(kept)


def _keep_shard(out: Plan, i: int, n: int) -> None:
    """``--shard i/n``: this build runs units i, i+n, …; the others show code only."""
    for unit, _ in out.todo[:i] + [t for k, t in enumerate(out.todo[i:]) if k % n]:
        record = out.outcomes[(unit.section, unit.framework)]
        record.show(code_only_notebook(unit, "run by another shard"), "code only: run by another shard")
        record.state = UnitState.SKIP
        record.why.insert(0, "run by another shard")
    out.todo = out.todo[i::n]


def describe_need(need: int, alone: bool) -> str:
    """What a unit asks of the machine, for the plan: ``CPU``, ``1 GPU``, ``all GPUs``, ``…, alone``."""
    where = "CPU" if need == 0 else "all GPUs" if need == ALL else f"{need} GPU" + ("s" if need > 1 else "")
    return where + (", alone" if alone else "")


def mark_outdated(entry: Entry, why: str) -> Notebook:
    """The entry as the page shows it: its provenance says the outputs are from older code, and why.
    A copy: the store keeps its entry as it is."""
    nb = dict(entry.notebook)
    meta = dict(nb.get("metadata") or {})
    tabbook = dict(meta.get(META) or {})
    tabbook["provenance"] = entry.provenance.with_(outdated=why).as_dict()
    meta[META] = tabbook
    nb["metadata"] = meta
    return nb


REUSE_WHY = {
    Match.KEY: "current",
    Match.LEGACY: "current (stored under the older whole-library key, which still matches)",
    Match.GPU: "current (GPU outputs of the same code and library)",
}


def needs_upgrade(entry: Entry | None, matched: Match | None) -> bool:
    """A current entry with version-1 key parts: under its version-1 key, or a GPU entry whose
    library part is still the whole module's hash."""
    return matched is Match.LEGACY or (matched is Match.GPU and entry is not None and not entry.parts.versioned)


def upgrade_keys(the_plan: Plan, store: FreezeStore) -> None:
    """Re-stamp the plan's current version-1 entries with version-2 key parts, so that a later
    library edit invalidates them by name, not wholesale. Outputs are not touched."""
    for section, fw, parts in the_plan.upgrades:
        entry = store.load(section, fw)
        if entry is not None and needs_upgrade(entry, match(entry, parts)):
            store.upgrade(section, fw, entry, parts)
            the_plan.outcomes[(section, fw)].origin = store.signature(section, fw)
    the_plan.upgrades = []


def code_only_notebook(unit: Unit, why: str) -> Notebook:
    """The unit's code cells without outputs, for a page whose unit did not run; ``why`` says so."""
    nb = build_notebook(unit)
    nb["metadata"][META] = {"provenance": Provenance(not_executed=why, keys=("not_executed",)).as_dict()}
    return nb


def skip_execution(the_plan: Plan) -> Notebooks:
    """Execution off: every unit to run is shown as code without outputs instead."""
    for unit, _ in the_plan.todo:
        the_plan.outcomes[(unit.section, unit.framework)].show(
            code_only_notebook(unit, "execution is off"), "code only: execution is off", UnitStatus.NOT_EXECUTED)
    return the_plan.notebooks


def run_order(the_plan: Plan, store: FreezeStore) -> list[Unit]:
    """The units to run, in the order they start: longest first (the time each took when last
    run; never run: first of all), so the build does not end waiting on one long unit started
    last while the other cores idle."""
    last = [store.last_seconds(u.section, u.framework) for u, _ in the_plan.todo]
    order = sorted(range(len(last)), key=lambda i: -(s if (s := last[i]) is not None else float("inf")))
    return [the_plan.todo[i][0] for i in order]


def run(config: Config, the_plan: Plan, store: FreezeStore,
        make_runner: Callable[[], Runner]) -> tuple[Notebooks, list[BookError]]:
    """Execute the plan's units and store each result.

    Returns the notebooks of every unit (a failed one as code without outputs) and
    the failures, so the caller can still render every page before it reports them.
    ``make_runner`` is the caller's choice of where units run (local worker processes, or
    a Dask cluster's workers: :mod:`.cluster`), called only when a unit is to run, since
    preparing kernels costs time; the results are stored here all the same.
    """
    upgrade_keys(the_plan, store)
    if not the_plan.todo:
        return the_plan.notebooks, []
    the_plan.keys_for_todo(config)
    runner = make_runner()
    parts_of = {(u.section, u.framework): parts for u, parts in the_plan.todo}
    failed: dict[tuple[str, str], BookError] = {}
    lock = threading.Lock()

    def keep(res: UnitResult) -> None:
        """Store one unit's result as soon as it ends: a build stopped later (Ctrl-C, a GPU
        machine's time running out) keeps every unit that finished."""
        unit = res.unit
        record = the_plan.outcomes[(unit.section, unit.framework)]
        with lock:
            record.seconds, record.phases = res.seconds, res.phases
            failure = _store_result(config, store, unit, parts_of[(unit.section, unit.framework)], res, record)
            if failure is not None:
                failed[(unit.section, unit.framework)] = failure

    runner.run(run_order(the_plan, store), on_result=keep)
    failures = [failed[(u.section, u.framework)] for u, _ in the_plan.todo if (u.section, u.framework) in failed]
    return the_plan.notebooks, failures


def _store_result(config: Config, store: FreezeStore, unit: Unit, parts: KeyParts, res: Result,
                  record: UnitOutcome) -> BookError | None:
    """One unit's result: stored and shown, or a failure (shown as code only when it ran and failed)."""
    failure = res.failure
    if failure is None and (problem := entry_problem(res.notebook, config.max_output_bytes)) is not None:  # a Dask worker's reply, a broken kernel
        failure = Failure(ErrorKind.RESULT, f"[{unit.framework}] the result is not a notebook ({problem}); "
                          "nothing was stored", unit.section)
    if failure is None and (problem := provenance_problem(res.provenance.as_dict(), "its provenance")) is not None:
        failure = Failure(ErrorKind.RESULT, f"[{unit.framework}] the result's {problem}; nothing was stored",
                          unit.section)
    if failure is not None or res.notebook is None:
        error = (failure or Failure(ErrorKind.RESULT, f"[{unit.framework}] no notebook came back", unit.section)).error()
        record.status, record.error = UnitStatus.FAILED, error
        record.show(code_only_notebook(unit, "execution failed"), "code only: execution failed")
        return error
    nb = res.notebook
    for cell in nb["cells"]:
        cell.get("metadata", {}).pop("tabbook", None)  # the runner's per-cell job data
    try:
        store.store(unit.section, unit.framework, nb, parts, res.provenance, res.seconds)
    except OSError as exc:
        target = config.rel(store.path(unit.section, unit.framework))
        stored_error = BookError(f"cannot write {target}: {exc.strerror or exc}", unit.section)
        record.status, record.error = UnitStatus.FAILED, BookError(str(exc))  # the report says what the OS said
        return stored_error
    record.show(nb, store.signature(unit.section, unit.framework), UnitStatus.EXECUTED)
    return None
