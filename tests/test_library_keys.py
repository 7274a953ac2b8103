"""Issue 32: a unit's freeze key covers only the library definitions its code can reach.

On a copy of this book (never the checkout's own chapter), an edit to a saved definition
makes exactly the units that can reach it stale, as ``build --dry-run --json`` reports;
``tests/test_library_reach.py`` checks the analysis itself on small fixtures and with
Hypothesis.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tabbook import cli
from tabbook.book import read_book
from tabbook.config import load_config
from tabbook.execute import plan as plan_mod
from tabbook.execute.plan import REUSE_WHY
from tabbook.execute.store import LEGACY_KEY_VERSION, META, FreezeStore, Match, _key, text_hash
from tabbook.library.cache import book_library

ROOT = Path(__file__).resolve().parents[1]
BOOK_FILES = ("config.ini", "index.md", "references.bib", "conf.py", "chapter_gpus", "_freeze", "d2l",
              "envs", "img", "static")
FRAMEWORKS = ("pytorch", "jax", "tensorflow", "mxnet")
#: Every (page, framework) unit of the chapter: one committed entry each.
UNITS = len(list((ROOT / "_freeze").rglob("*.ipynb")))


@pytest.fixture
def book(tmp_path: Path) -> Path:
    """A copy of the book with its committed store."""
    dest = tmp_path / "book"
    dest.mkdir()
    for name in BOOK_FILES:
        src = ROOT / name
        if src.is_dir():
            shutil.copytree(src, dest / name)
        elif src.is_file():
            shutil.copy2(src, dest / name)
    return dest


def dry_run(book: Path, capsys: pytest.CaptureFixture[str]) -> dict[tuple[str, str], dict]:
    capsys.readouterr()
    assert cli.main(["-C", str(book), "build", "--dry-run", "--json"]) == 0
    units = json.loads(capsys.readouterr().out)
    return {(u["page"].removeprefix("chapter_gpus/").removesuffix(".md"), u["framework"]): u for u in units}


def stale(plan: dict[tuple[str, str], dict]) -> set[tuple[str, str]]:
    return {unit for unit, u in plan.items() if u["state"] != "reuse"}


def reasons(unit: dict) -> list[str]:
    """A unit's reasons to run, without the note that a GPU entry is kept on this GPU-less host."""
    return [why for why in unit["why"] if not why.startswith("kept: its outputs were computed on")]


def gpu_entry(book: Path, page: str, fw: str) -> bool:
    """Whether the committed entry of (page, fw) was computed on a GPU."""
    nb = json.loads((book / "_freeze" / "chapter_gpus" / page / f"{fw}.ipynb").read_text())
    return bool(nb["metadata"][META].get("provenance", {}).get("gpus"))


def edit(book: Path, page: str, old: str, new: str, occurrence: int = 1) -> None:
    """Replace the ``occurrence``-th ``old`` of ``page`` (so an edit hits one framework's cell)."""
    path = book / "chapter_gpus" / page
    text = path.read_text(encoding="utf-8")
    at = -1
    for _ in range(occurrence):
        at = text.index(old, at + 1)
    path.write_text(text[:at] + new + text[at + len(old):], encoding="utf-8")


def test_the_committed_store_is_current_and_nothing_is_written(book: Path, capsys) -> None:
    before = {p: p.read_bytes() for p in sorted((book / "_freeze").rglob("*")) + sorted((book / "d2l").rglob("*"))
              if p.is_file()}
    plan = dry_run(book, capsys)
    assert len(plan) == UNITS and not stale(plan)
    for (page, fw), u in plan.items():  # a GPU entry stands for the same code on a host without one
        assert u["why"] == [REUSE_WHY[Match.GPU] if gpu_entry(book, page, fw) else "current"], (page, fw)
    assert any(gpu_entry(book, page, fw) for page, fw in plan)
    after = {p: p.read_bytes() for p in before}
    assert after == before
    assert not (book / "build" / "report.json").exists()


#: The pages whose PyTorch code calls `d2l.benchmark` (saved in speed.md).
BENCHMARK_USERS = ("precision", "busy", "compile", "mixed")


def test_benchmark_edit_stales_its_page_and_the_pages_that_call_it(book: Path, capsys) -> None:
    # The PyTorch `benchmark` (saved in speed.md, the first of the four) returns another value.
    edit(book, "speed.md", "    return (time.perf_counter() - start) / repeat",
         "    return (time.perf_counter() - start) / repeat / 1.0")
    plan = dry_run(book, capsys)
    assert stale(plan) == {("speed", "pytorch")} | {(page, "pytorch") for page in BENCHMARK_USERS}
    assert reasons(plan[("speed", "pytorch")]) == ["its code"]
    for page in BENCHMARK_USERS:
        assert reasons(plan[(page, "pytorch")]) == ["library names: benchmark"]
        assert plan[(page, "pytorch")]["library_names"] == ["benchmark"]
    assert sum(u["state"] == "reuse" for u in plan.values()) == UNITS - 1 - len(BENCHMARK_USERS)


def test_trainer_fit_edit_stales_exactly_the_units_that_train(book: Path, capsys) -> None:
    edit(book, "trainer.md", "    self.train_batch_idx = self.val_batch_idx = 0\n",
         "    self.train_batch_idx = self.val_batch_idx = 0 * 1\n")
    plan = dry_run(book, capsys)
    training = ("training", "pitfalls", "busy")  # the later pages that call d2l.Trainer
    assert stale(plan) == {(page, fw) for page in ("trainer", *training) for fw in FRAMEWORKS}
    for page in training:
        for fw in FRAMEWORKS:
            assert "library names: Trainer" in reasons(plan[(page, fw)])[0]


def test_a_header_import_edit_reaches_every_unit_that_imports_the_library(book: Path, capsys) -> None:
    # A top-level import in a saved cell goes into the module header, which every unit that
    # imports the library runs; utilities.md saves code but never imports d2l itself.
    edit(book, "devices.md", "    return torch.cuda.device_count()",
         "    return int(np.int64(torch.cuda.device_count()))")
    edit(book, "devices.md", "import torch\nfrom d2l import torch as d2l", "import torch\nimport numpy as np\n"
         "from d2l import torch as d2l")
    without_library = {"utilities", "why", "setup", "modelparallel"}  # pages whose code never imports d2l
    for page in without_library:
        assert "from d2l import" not in (book / "chapter_gpus" / f"{page}.md").read_text()
    plan = dry_run(book, capsys)
    assert stale(plan) == {(page, "pytorch") for page, fw in plan
                           if fw == "pytorch" and page not in without_library}
    assert all("the library's header (its imports and import-time code)" in plan[(p, "pytorch")]["why"]
               for p in ("toolkit", "speed", "memory", "precision", "training"))


def test_a_comment_only_edit_stales_only_the_page_holding_it(book: Path, capsys) -> None:
    # try_gpu is used by four other pages; a comment in it changes only devices.md's own code.
    edit(book, "devices.md", "    return gpu(i) if i < num_gpus() else cpu()",
         "    # the first GPU is number 0\n    return gpu(i) if i < num_gpus() else cpu()  # or the CPU")
    plan = dry_run(book, capsys)
    assert stale(plan) == {("devices", "pytorch")}
    assert (book / "d2l" / "torch.py").read_text() == (ROOT / "d2l" / "torch.py").read_text()  # not written


def test_dry_run_text_and_selection(book: Path, capsys) -> None:
    edit(book, "speed.md", "    return (time.perf_counter() - start) / repeat",
         "    return (time.perf_counter() - start) / repeat / 1.0")
    capsys.readouterr()
    assert cli.main(["-C", str(book), "build", "--dry-run", "--frameworks", "jax"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert ("skip     chapter_gpus/precision.md [pytorch] (1 GPU, alone): not selected in this build; "
            "library names: benchmark") in out
    skipped = 1 + len(BENCHMARK_USERS)
    assert out[-1] == f"[dry-run] {UNITS - skipped} reuse, {skipped} skip; nothing was run or written"
    assert cli.main(["-C", str(book), "build", "--json"]) == 1
    assert "--json goes with --dry-run" in capsys.readouterr().err


def to_version1(book: Path) -> None:
    """The book's store as the version-1 builder wrote it (whole-library keys) for today's library.

    The whole module's hash is today's, not the one an entry recorded: an entry that stayed
    current through a library edit it cannot reach (version 2's point) recorded the module it
    ran with, which a version-1 builder would have run again."""
    config = load_config(book)
    library = book_library(read_book(config))
    whole = {fw: text_hash(library.get(f"{config.library_dir.name}/{config.framework(fw).module}.py"))
             for fw in config.tabs}
    for path in (book / "_freeze").rglob("*.ipynb"):
        nb = json.loads(path.read_text())
        meta = nb["metadata"][META]
        parts = meta["key_parts"]
        parts.pop("library_file")
        parts["library"] = whole[path.stem]
        for extra in ("library_names", "library_rules", "library_whole", "library_others"):
            parts.pop(extra, None)
        meta["key"] = _key(LEGACY_KEY_VERSION, parts["cells"], parts["env"], parts["library"], parts["python"],
                           parts["kernel"])
        path.write_text(json.dumps(nb))


def test_a_library_edit_before_restamping_stales_the_version1_entries_of_its_framework(book: Path, capsys
                                                                                       ) -> None:
    to_version1(book)
    edit(book, "speed.md", "    return (time.perf_counter() - start) / repeat",
         "    return (time.perf_counter() - start) / repeat / 1.0")
    plan = dry_run(book, capsys)
    assert stale(plan) == {(page, "pytorch") for page, fw in plan if fw == "pytorch"}
    older = "the library (keyed on the whole library by an older tabbook)"
    assert reasons(plan[("speed", "pytorch")]) == ["its code", older]
    assert reasons(plan[("devices", "pytorch")]) == [older]


def test_version1_entries_are_reused_then_restamped(book: Path, capsys) -> None:
    """A store written before per-name keys: reused while its whole-library key matches, and
    re-stamped by a build that may write the store; then a library edit stales it by name."""
    to_version1(book)
    plan = dry_run(book, capsys)
    assert not stale(plan)
    for (page, fw), u in plan.items():  # a GPU entry is compared by code and library alone
        assert ("GPU outputs" if gpu_entry(book, page, fw) else "older whole-library key") in u["why"][0]
    assert cli.main(["-C", str(book), "build", "--frozen", "--no-render"]) == 0
    entry = book / "_freeze" / "chapter_gpus" / "speed" / "pytorch.ipynb"
    assert "library_names" not in entry.read_text()  # --frozen writes nothing
    config = load_config(book)
    store = FreezeStore(config.freeze_dir)
    read = read_book(config)
    the_plan = plan_mod.plan(config, read.sections, book_library(read), store, plan_mod.Selection())
    assert len(the_plan.upgrades) == UNITS
    plan_mod.upgrade_keys(the_plan, store)
    assert "library_names" in entry.read_text()
    for (page, fw), u in dry_run(book, capsys).items():
        assert u["why"] == [REUSE_WHY[Match.GPU] if gpu_entry(book, page, fw) else "current"], (page, fw)


def test_a_version1_gpu_entry_is_restamped_by_library_and_keeps_its_key(book: Path, capsys) -> None:
    """GPU outputs (another environment, so another key) stay current while the code and the
    library are the same; re-stamped, they then survive a library edit they cannot reach."""
    to_version1(book)
    entry = book / "_freeze" / "chapter_gpus" / "speed" / "pytorch.ipynb"
    nb = json.loads(entry.read_text())
    meta = nb["metadata"][META]
    meta["key"], meta["key_parts"]["env"] = "made on a GPU machine", "its own interpreter"
    meta["provenance"]["gpus"] = ["NVIDIA H100"]
    entry.write_text(json.dumps(nb))
    plan = dry_run(book, capsys)
    assert plan[("speed", "pytorch")]["why"] == ["current (GPU outputs of the same code and library)"]
    config = load_config(book)
    store = FreezeStore(config.freeze_dir)
    read = read_book(config)
    plan_mod.upgrade_keys(plan_mod.plan(config, read.sections, book_library(read), store, plan_mod.Selection()), store)
    meta = json.loads(entry.read_text())["metadata"][META]
    assert meta["key"] == "made on a GPU machine" and meta["key_parts"]["env"] == "its own interpreter"
    assert "library_names" in meta["key_parts"]
    # memory_stats (memory.md) is not reached by speed.md: its GPU outputs stay current.
    edit(book, "memory.md", "    return {'in_use': torch.cuda.memory_allocated(device),",
         "    return {'in_use': 0 + torch.cuda.memory_allocated(device),")
    plan = dry_run(book, capsys)
    assert plan[("speed", "pytorch")]["state"] == "reuse"
    assert stale(plan) == {("memory", "pytorch"), ("remat", "pytorch")}  # remat.md reads memory_stats


def test_a_forced_plan_knows_its_current_units_and_lends_a_restricted_copy(book: Path) -> None:
    """What verify-freeze asks of the plan (issue 40): which forced units are current, and a plan
    of some of them to run, leaving the plan it came from as it was."""
    edit(book, "devices.md", "return torch.cuda.device_count()", "return torch.cuda.device_count() + 0")
    config = load_config(book)
    read = read_book(config)
    store = FreezeStore(config.freeze_dir, config.root)
    forced = plan_mod.plan(config, read.sections, book_library(read), store,
                           plan_mod.Selection(force=True, only=("chapter_gpus/devices.md",)))
    current = {(u.section, u.framework) for u, _ in forced.todo if forced.outcomes[(u.section, u.framework)].current}
    assert ("chapter_gpus/devices.md", "pytorch") not in current and len(current) == len(FRAMEWORKS) - 1
    some = forced.restricted(current)
    assert {(u.section, u.framework) for u, _ in some.todo} == current and len(forced.todo) == len(FRAMEWORKS)
    some.outcomes[next(iter(current))].status = "failed"
    assert all(o.status != "failed" for o in forced.units)  # the records are copies
    forced.without_execution()
    assert {o.state for o in forced.units if o.section == "chapter_gpus/devices.md"} == {"stale"}
