"""A damaged freeze entry (issue 33, item 2), in the fault catalog's style.

An entry that is not JSON, or JSON of the wrong shape, must stop the build at the plan with
``_freeze/<section>/<fw>.ipynb: damaged freeze entry: …`` saying how to recover (no traceback),
change nothing (the damaged file included: the author decides what to do with it), and the
build after the fix (the file deleted, or ``--force --only`` on its section) must pass. The same
entry in a shard store is a located error of ``merge-stores``, which merges nothing.
"""

from __future__ import annotations

import base64
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from test_d2lbook_build import make_book, tabbook
from test_fault_catalog import tree

from tabbook.execute.entrycheck import CAP_NOTE_BYTES, entry_problem
from tabbook.execute.outputs import BINARY_IMAGES
from tabbook.execute.shape import cap_error, cap_outputs

ENTRY = "_freeze/chapter_a/second/pytorch.ipynb"


def _outputs_not_a_list(nb: dict[str, Any]) -> dict[str, Any]:
    code = next(c for c in nb["cells"] if c["cell_type"] == "code")
    code["outputs"] = {"text": "second says 42"}
    return nb


def _mime_value_not_text(nb: dict[str, Any]) -> dict[str, Any]:
    code = next(c for c in nb["cells"] if c["cell_type"] == "code")
    code["outputs"] = [{"output_type": "display_data", "metadata": {}, "data": {"text/html": 42}}]
    return nb


def _cells_not_a_list(nb: dict[str, Any]) -> dict[str, Any]:
    nb["cells"] = "no cells"
    return nb


def _huge_stream(nb: dict[str, Any]) -> dict[str, Any]:
    """One stream past the fixture's cap (the default [build] max_output_bytes, 4,000,000): what a
    hand edit can store and no run does."""
    code = next(c for c in nb["cells"] if c["cell_type"] == "code")
    code["outputs"] = [{"output_type": "stream", "name": "stdout", "text": "x" * 4_100_000}]
    return nb


def _nbformat(version: int, minor: int) -> Callable[[str], str]:
    return lambda t: json.dumps({**json.loads(t), "nbformat": version, "nbformat_minor": minor})


#: id -> (how the entry's text is damaged, a part of the message)
DAMAGE: dict[str, tuple[Callable[[str], str], str]] = {
    "metadata-null": (lambda _: json.dumps({"metadata": None}), "its metadata is null, not an object"),
    "a-list": (lambda _: "[1]", "the entry is a list, not a notebook"),
    "outputs-not-a-list": (lambda t: json.dumps(_outputs_not_a_list(json.loads(t))),
                           "cell 0: its outputs are an object, not a list"),
    "mime-value-not-text": (lambda t: json.dumps(_mime_value_not_text(json.loads(t))),
                            "cell 0, output 0: mime type 'text/html' holds a number"),
    "not-json": (lambda t: t[: len(t) // 2], "not JSON"),
    "cells-not-a-list": (lambda t: json.dumps(_cells_not_a_list(json.loads(t))), "its cells are a string, not a list"),
    "output-past-the-cap": (lambda t: json.dumps(_huge_stream(json.loads(t))),
                            "cell 0: its output holds 4,100,000 bytes, more than a run keeps ([build] "
                            "max_output_bytes = 4,000,000)"),
    "nbformat-99": (_nbformat(99, 0), "it declares notebook format 99.0, which the builder does not read (4.0 to 4.5)"),
    "nbformat-4.99": (_nbformat(4, 99), "it declares notebook format 4.99"),
}


@pytest.fixture(scope="module")
def built_book(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    base = tmp_path_factory.mktemp("damage")
    book, overlay = make_book(base, eval_notebook=True)
    proc = tabbook(book, overlay, "build", "--builder", "")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (book / ENTRY).is_file()
    return book, overlay


def _copy(built_book: tuple[Path, Path], tmp_path: Path) -> tuple[Path, Path]:
    src, overlay = built_book
    book = tmp_path / "book"
    shutil.copytree(src, book, symlinks=True)
    return book, overlay


def _located(out: str, message: str) -> bool:
    return any(line.startswith(f"{ENTRY}: damaged freeze entry: ") and message in line
               and "delete the file and build again" in line for line in out.splitlines())


@pytest.mark.parametrize("damage", list(DAMAGE), ids=list(DAMAGE))
def test_a_damaged_entry_is_located_changes_nothing_and_recovers(damage: str, built_book: tuple[Path, Path],
                                                                 tmp_path: Path) -> None:
    book, overlay = _copy(built_book, tmp_path)
    inject, message = DAMAGE[damage]
    entry = book / ENTRY
    entry.write_text(inject(entry.read_text()))
    before = tree(book)
    for args in (("build", "--builder", ""), ("build", "--frozen", "--builder", "")):
        proc = tabbook(book, overlay, *args)
        out = proc.stdout + proc.stderr
        assert proc.returncode != 0, out
        assert _located(out, message), f"want {ENTRY}: damaged freeze entry: … {message}\n{out}"
        assert "Traceback" not in out, out
        assert tree(book) == before

    entry.unlink()
    proc = tabbook(book, overlay, "build", "--builder", "")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert entry_problem(json.loads(entry.read_text())) is None
    assert "second says 42" in entry.read_text()


def test_force_on_the_section_replaces_a_damaged_entry(built_book: tuple[Path, Path], tmp_path: Path) -> None:
    book, overlay = _copy(built_book, tmp_path)
    entry = book / ENTRY
    entry.write_text("[1]")
    proc = tabbook(book, overlay, "build", "--builder", "", "--force", "--only", "chapter_a/second.md")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "second says 42" in entry.read_text()
    assert tabbook(book, overlay, "build", "--builder", "").returncode == 0


@pytest.mark.parametrize("damage", ["metadata-null", "a-list", "mime-value-not-text", "output-past-the-cap",
                                    "nbformat-99"])
def test_merge_stores_names_a_damaged_shard_entry_and_merges_nothing(damage: str, built_book: tuple[Path, Path],
                                                                     tmp_path: Path) -> None:
    book, overlay = _copy(built_book, tmp_path)
    shard = tmp_path / "shard"
    shutil.copytree(book / "_freeze", shard)
    bad = shard / "chapter_a" / "second" / "pytorch.ipynb"
    inject, message = DAMAGE[damage]
    bad.write_text(inject(bad.read_text()))
    target = tmp_path / "merged"
    proc = tabbook(book, overlay, "merge-stores", str(shard), "--into", str(target))
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out
    assert any(line.startswith(f"{bad}: not a freeze entry: ") and message in line for line in out.splitlines()), out
    assert "Traceback" not in out, out
    assert not target.exists() or not any(target.rglob("*.ipynb"))

    bad.unlink()
    proc = tabbook(book, overlay, "merge-stores", str(shard), "--into", str(target))
    assert proc.returncode == 0, proc.stdout + proc.stderr


#: A 1×1 PNG, base64: what an image output holds.
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="


def test_outputs_readers_need_pass_the_check() -> None:
    """The check rejects only what no notebook writer makes: these shapes are all valid."""
    nb = {"metadata": {"tabbook": {"key": "k", "seconds": 1.5}}, "nbformat": 4, "cells": [
        {"cell_type": "markdown", "metadata": {}, "source": ["# A", "b"]},
        {"cell_type": "code", "metadata": {}, "source": "x", "execution_count": 1, "outputs": [
            {"output_type": "stream", "name": "stdout", "text": ["a\n", "b\n"]},
            {"output_type": "execute_result", "execution_count": 1, "metadata": {},
             "data": {"text/plain": "1", "application/json": {"a": [1]}, "image/png": PNG}},
            {"output_type": "error", "ename": "E", "evalue": "v", "traceback": ["t"]}]}]}
    assert entry_problem(nb) is None


def _cell(*outputs: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {}, "nbformat": 4, "nbformat_minor": 5,
            "cells": [{"cell_type": "code", "metadata": {}, "source": "x", "outputs": list(outputs)}]}


def test_a_cell_is_held_to_the_cap_a_run_keeps() -> None:
    """What a run's cap keeps passes the store's check with the same cap, and a byte more than
    the cap and its note does not: streams and displays count together, an error apart."""
    limit = 10_000
    for produced in (limit - 1, limit, limit + 1, 5 * limit):
        cell = {"cell_type": "code", "outputs": [
            {"output_type": "stream", "name": "stdout", "text": "é" * (produced // 4)},
            {"output_type": "display_data", "metadata": {}, "data": {"text/plain": "y" * (produced // 2)}},
            {"output_type": "stream", "name": "stderr", "text": "z" * (produced // 4)}]}
        cap_outputs(cell, limit)
        error = {"output_type": "error", "ename": "E", **cap_error({"evalue": "v" * produced,
                                                                     "traceback": ["t" * 300] * 100}, limit)}
        assert entry_problem(_cell(*cell["outputs"], error), limit) is None, produced
    over = limit + CAP_NOTE_BYTES + 1
    stream = {"output_type": "stream", "name": "stdout", "text": "x" * over}
    assert entry_problem(_cell(stream), limit) == (f"cell 0: its output holds {over:,} bytes, more than a run "
                                                   f"keeps ([build] max_output_bytes = {limit:,})")
    half = {"output_type": "display_data", "metadata": {}, "data": {"text/html": "h" * (over // 2 + 1)}}
    assert "its output holds" in (entry_problem(_cell(half, {**half}), limit) or "")
    error = {"output_type": "error", "ename": "E", "evalue": "v" * over, "traceback": []}
    assert "its error output holds" in (entry_problem(_cell(error), limit) or "")
    assert entry_problem(_cell(stream), 0) is None  # no cap: [build] max_output_bytes = 0 keeps all


@pytest.mark.parametrize(("version", "minor", "known"), [(4, 0, True), (4, 5, True), (4, 6, False), (3, 0, False),
                                                         (5, 0, False), (99, 0, False), ("4", 5, False),
                                                         (True, 5, False)])
def test_only_the_notebook_formats_the_builder_reads_pass(version: Any, minor: Any, known: bool) -> None:
    problem = entry_problem({**_cell(), "nbformat": version, "nbformat_minor": minor})
    assert (problem is None) == known, problem
    assert known or "which the builder does not read" in (problem or "")


@pytest.mark.parametrize("mime", sorted(BINARY_IMAGES))
def test_every_image_kind_stored_base64_is_checked_as_its_kind_declares(mime: str) -> None:
    """The image types the store checks are the output kinds that declare their first bytes
    (tabbook/execute/outputs.py): a BMP is checked as a PNG is, with no list of the store's own."""
    def entry(value: str) -> dict[str, Any]:
        return {"metadata": {}, "nbformat": 4, "cells": [{"cell_type": "code", "metadata": {}, "source": "x",
                "outputs": [{"output_type": "display_data", "metadata": {}, "data": {mime: value}}]}]}

    assert entry_problem(entry(base64.b64encode(BINARY_IMAGES[mime][0] + bytes(8)).decode())) is None
    assert f"its {mime} is not base64" in (entry_problem(entry("not base64!")) or "")
    assert "does not hold a" in (entry_problem(entry(base64.b64encode(b"<svg/>").decode())) or "")


def test_a_result_that_is_not_a_notebook_is_a_failure_and_nothing_is_stored(tmp_path: Path,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """A runner's result (a Dask worker's reply) is checked like a stored entry before it is stored."""
    from tabbook.book import read_book
    from tabbook.config import OVERLAY_ENV, load_config
    from tabbook.execute import plan
    from tabbook.execute.runner import UnitResult
    from tabbook.execute.store import FreezeStore
    from tabbook.library.cache import book_library

    monkeypatch.delenv(OVERLAY_ENV, raising=False)
    book, overlay = make_book(tmp_path, eval_notebook=True)
    config = load_config(book, overlay)
    pages = read_book(config, extra_files=False)
    store = FreezeStore(tmp_path / "store", book)
    the_plan = plan.plan(config, pages.sections, book_library(pages), store, plan.Selection())
    assert the_plan.todo

    class Forged:
        def run(self, units: list[Any], on_result: Any = None) -> list[UnitResult]:
            results = [UnitResult(unit=u, notebook={"cells": [{"cell_type": "code", "source": "", "outputs": "x"}]})
                       for u in units]
            for result in results:
                on_result(result)
            return results

    notebooks, failures = plan.run(config, the_plan, store, lambda: Forged())  # type: ignore[arg-type, return-value]
    assert len(failures) == len(the_plan.todo)
    assert "the result is not a notebook (cell 0: its outputs are a string, not a list); nothing was stored" \
        in failures[0].message
    assert store.entries() == []


def test_an_interrupted_build_keeps_the_units_that_ended_before_it(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C (or a GPU machine's time running out: scripts/gpu-build.sh's BUILD_SECONDS) after
    one unit ended: that unit's entry is in the store, whole; the others are not."""
    from tabbook.book import read_book
    from tabbook.config import OVERLAY_ENV, load_config
    from tabbook.execute import plan
    from tabbook.execute.runner import UnitResult, build_notebook
    from tabbook.execute.store import FreezeStore
    from tabbook.library.cache import book_library

    monkeypatch.delenv(OVERLAY_ENV, raising=False)
    book, overlay = make_book(tmp_path, eval_notebook=True)
    config = load_config(book, overlay)
    pages = read_book(config, extra_files=False)
    store = FreezeStore(tmp_path / "store", book)
    the_plan = plan.plan(config, pages.sections, book_library(pages), store, plan.Selection())
    assert len(the_plan.todo) >= 2

    class StoppedAfterOne:
        def run(self, units: list[Any], on_result: Any = None) -> list[UnitResult]:
            nb = build_notebook(units[0])
            for cell in nb["cells"]:
                if cell["cell_type"] == "code":
                    cell["outputs"], cell["execution_count"] = [], 1
            on_result(UnitResult(unit=units[0], notebook=nb, seconds=1.0))
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        plan.run(config, the_plan, store, lambda: StoppedAfterOne())  # type: ignore[arg-type, return-value]
    assert len(store.entries()) == 1
    assert not list((tmp_path / "store").rglob("*.tmp"))
