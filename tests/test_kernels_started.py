"""Kernels started ahead (tabbook.execute.spares, issue 43): every kernel a build starts is
counted, with the cells each ran. Nothing runs that the plan did not ask for: a kernel runs
exactly one unit's cells (and the provenance probe after them), a kernel started ahead runs
nothing before its unit's first cell, and one that no unit took runs nothing at all.

Each kernel says what it runs through an IPython startup file (``$IPYTHONDIR``, which kernels
inherit): ``start PID`` when it starts, ``cell PID SOURCE`` before each cell it is sent.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "tests" / "fixtures" / "book"

STARTUP = '''
import json, os
_log = os.environ["TABBOOK_TEST_KERNEL_LOG"]
def _say(*words):
    with open(_log, "a") as f:
        f.write(json.dumps([os.getpid(), *words]) + "\\n")
_say("start", os.getcwd())
get_ipython().events.register("pre_run_cell", lambda info: _say("cell", info.raw_cell))
'''


def _counting(tmp_path: Path) -> dict[str, str]:
    """The environment whose kernels record what they run, in ``tmp_path/kernels.log``."""
    startup = tmp_path / "ipython" / "profile_default" / "startup"
    startup.mkdir(parents=True)
    (startup / "00-count.py").write_text(STARTUP)
    return {"IPYTHONDIR": str(tmp_path / "ipython"), "TABBOOK_TEST_KERNEL_LOG": str(tmp_path / "kernels.log")}


def _kernels(tmp_path: Path) -> dict[int, list[str]]:
    """Each kernel's pid → the cells it ran, in order (a kernel that ran none: an empty list)."""
    log = tmp_path / "kernels.log"
    ran: dict[int, list[str]] = {}
    for line in (log.read_text().splitlines() if log.exists() else []):
        pid, what, *rest = json.loads(line)
        if what == "start":
            assert pid not in ran, "a kernel started twice"
            ran[pid] = []
        else:
            ran[pid].append(rest[0])
    return ran


def _unit_cells(book: Path, section: str, fw: str) -> list[str]:
    from tabbook.config import load_config
    from tabbook.execute.store import FreezeStore

    config = load_config(book)
    entry = FreezeStore(config.freeze_dir, config.root).load(section, fw)
    assert entry is not None
    return ["".join(c["source"]) for c in entry.notebook["cells"] if c["cell_type"] == "code"]


def _ran_exactly_its_unit(cells: list[str], units: dict[tuple[str, str], list[str]]) -> tuple[str, str]:
    """The unit whose cells ``cells`` are, followed by the probe and nothing else."""
    assert cells and "TABBOOK-PROBE" in cells[-1], cells  # the provenance probe ends every unit
    found = [u for u, want in units.items() if cells[:-1] == want]
    assert found, f"a kernel ran cells of no unit: {cells[:-1]}"
    return found[0]


def _build(book: Path, env: dict[str, str], *args: str) -> dict:
    proc = subprocess.run([sys.executable, "-m", "tabbook", "-C", str(book), "build", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(ROOT), "TABBOOK_CACHE": str(book / ".cache"),
                               "TABBOOK_WARM": "0", **env})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads((book / "build" / "report.json").read_text())


def test_a_build_starts_one_kernel_per_unit_it_runs_and_each_runs_its_units_cells(tmp_path: Path) -> None:
    """Cold, every unit runs (the first ones in kernels started while the build plans): as many
    kernels as units, each running one unit's cells. A code edit of one framework's cell: one
    kernel, that unit's cells. Nothing changed: no kernel."""
    book = tmp_path / "book"
    shutil.copytree(FIXTURE, book)
    env = _counting(tmp_path)
    report = _build(book, env)
    executed = [(u["section"], u["framework"]) for u in report["units"] if u["status"] == "executed"]
    assert len(executed) == 2  # the fixture: sec.md in alpha and in beta
    units = {u: _unit_cells(book, *u) for u in executed}
    kernels = _kernels(tmp_path)
    assert len(kernels) == len(executed)
    assert sorted(_ran_exactly_its_unit(cells, units) for cells in kernels.values()) == sorted(executed)

    (tmp_path / "kernels.log").unlink()
    sec = book / "sec.md"
    sec.write_text(sec.read_text().replace("def double(x):  #@save", "def double(x):  #@save\n    # edited"))
    report = _build(book, env)
    executed = [(u["section"], u["framework"]) for u in report["units"] if u["status"] == "executed"]
    assert executed == [("sec.md", "beta")]
    kernels = _kernels(tmp_path)
    assert len(kernels) == 1
    assert _ran_exactly_its_unit(next(iter(kernels.values())), {executed[0]: _unit_cells(book, *executed[0])})

    (tmp_path / "kernels.log").unlink()
    _build(book, env)
    assert _kernels(tmp_path) == {}


def _wait(predicate, seconds: float = 120) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return False


def test_a_kernel_started_ahead_runs_only_its_units_cells_and_an_unused_one_runs_none(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The warm builder's pool (spares.Pool): a kernel started before the edit is known, taken by
    the unit that fits it, runs that unit's cells and nothing before them; the pool then starts
    a fresh one (a kernel is used once), which, discarded, has run nothing."""
    from tabbook.book import read_book
    from tabbook.config import load_config
    from tabbook.execute import spares
    from tabbook.execute.envs import kernel_env, prepare_kernels
    from tabbook.execute.plan import Selection, plan
    from tabbook.execute.runner import Runner
    from tabbook.execute.store import FreezeStore
    from tabbook.library.cache import book_library
    from tabbook.library.generate import write_library

    book = tmp_path / "book"
    shutil.copytree(FIXTURE, book)
    for key, value in {**_counting(tmp_path), "TABBOOK_CACHE": str(book / ".cache")}.items():
        monkeypatch.setenv(key, value)
    config = load_config(book)
    the_book = read_book(config)
    write_library(config, book_library(the_book))
    the_plan = plan(config, the_book.rendered, book_library(the_book), FreezeStore(config.freeze_dir, config.root),
                    Selection(force=True, only=("sec.md",), frameworks=("alpha",)))
    unit = the_plan.todo[0][0]
    prepare_kernels(config, {"alpha"}, log=lambda line: None)
    pool = spares.Pool()
    runner = Runner(1, kernel_env(config), progress=lambda line: None, lent=pool)
    kind = runner.kind(unit)
    assert kind is not None
    pool.want(kind)
    assert pool.top_up() == 1
    first = pool.spares[0]
    assert _wait(lambda: len(_kernels(tmp_path)) == 1)  # started, before the unit is handed over
    assert runner.prestart([unit]) == 0  # the lent one fits: the runner starts none of its own
    [result] = runner.run([unit])
    assert result.ok, result.failure
    assert not first.folder.exists()  # the used spare's files went with its unit
    assert pool.top_up() == 1 and pool.spares[0] is not first  # a fresh one for the next edit
    assert _wait(lambda: len(_kernels(tmp_path)) == 2)
    pool.close()
    kernels = _kernels(tmp_path)
    used, fresh = kernels.values()
    assert _ran_exactly_its_unit(used, {(unit.section, unit.framework): [c.source for c in unit.cells]})
    assert fresh == []
    assert first.proc.poll() is not None and pool.spares == []


def test_at_a_terminal_a_code_edit_finds_its_kernel_started_and_it_runs_only_that_unit(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The warm builder (TABBOOK_WARM=1) keeps a kernel of the framework its last build ran:
    the next code edit's unit runs in a kernel that started before that build did (its fork
    took it from the builder's pool), which ran that unit's cells and nothing before them; the
    builder then starts a fresh one, which has run nothing."""
    from tabbook.warm import client as warm

    book = tmp_path / "book"
    shutil.copytree(FIXTURE, book)
    env = {**_counting(tmp_path), "TABBOOK_WARM": "1"}
    # The builder's address hashes PYTHONPATH: this process must ask with the builds' own.
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    monkeypatch.setenv("TABBOOK_CACHE", str(book / ".cache"))
    sec = book / "sec.md"

    def edit(words: str) -> None:
        sec.write_text(sec.read_text().replace("def double(x):  #@save", f"def double(x):  #@save\n    # {words}", 1))

    try:
        _build(book, env)  # finds no warm builder: builds by itself (2 units, 2 kernels) and starts one
        assert warm.wait_ready(book, timeout=120)
        edit("first")
        assert _build(book, env)["warm"]  # in the warm builder (1 kernel), which now keeps a beta kernel
        assert _wait(lambda: len(_kernels(tmp_path)) == 4)
        before = _kernels(tmp_path)
        assert sum(cells == [] for cells in before.values()) == 1  # the one kept ready has run nothing
        edit("second")
        report = _build(book, env)
        [unit] = [u for u in report["units"] if u["status"] == "executed"]
        assert (unit["section"], unit["framework"]) == ("sec.md", "beta")
        assert unit["started_ahead"] and unit["phases"]["imports"] < 0  # its worker was up before the hand-over
        assert _wait(lambda: len(_kernels(tmp_path)) == 5)  # a fresh one, once the build ended
        after = _kernels(tmp_path)
        [used] = [pid for pid, cells in after.items() if any("# second" in c for c in cells)]
        assert used in before and before[used] == []  # started before this build; idle until its unit
        assert _ran_exactly_its_unit(after[used], {("sec.md", "beta"): _unit_cells(book, "sec.md", "beta")})
        [fresh] = set(after) - set(before)
        assert after[fresh] == []
    finally:
        warm.stop(book)
