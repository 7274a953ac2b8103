"""``tabbook verify-freeze``: how a reviewer checks a change that touches only ``_freeze/``
(issue 33, item 3), in the fault catalog's style.

On the fixture book (two tabs run in the builder's own Python), with a cell whose output holds a
duration, an address and a date: honest entries verify (exit 0) though those differ between
runs; a hand-edited entry (it passes ``build --frozen``) is reported at its store path and the
cell's Markdown line, exit 1, and the store is left as it was; ``--only`` / ``--frameworks``
narrow what is run.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from trust_book import FIXTURE, tabbook

from tabbook.execute.verify import cell_differences, mask

ENTRY = "_freeze/sec/alpha.ipynb"
TIMING_CELL = """
```{.python .input}
%%tab all
import datetime, time
t = time.perf_counter()
print(f"took {time.perf_counter() - t:.9f} s, {time.perf_counter_ns()} ns at 0x{id(t):x} on {datetime.datetime.now()}")
```
"""


def test_volatile_parts_are_masked_and_results_are_not() -> None:
    assert mask("took 0.53 ms, 12.1s, 3 µs, 1.2e-05 sec, 850 examples/sec") == \
        "took <duration>, <duration>, <duration>, <duration>, <duration>"
    assert mask("<Foo object at 0x7f3a2c1b9e50> on 2026-11-27 15:04:20.123456") == \
        "<Foo object at <address>> on <datetime>"
    assert mask("loss 0.125, accuracy 0.97, 10 epochs") == "loss 0.125, accuracy 0.97, 10 epochs"
    same = {"source": "x", "outputs": [{"output_type": "stream", "name": "stdout", "text": "a\n"},
                                        {"output_type": "stream", "name": "stdout", "text": "b 3 ms\n"}]}
    merged = {"source": "x", "outputs": [{"output_type": "stream", "name": "stdout", "text": "a\nb 9 ms\n"}]}
    assert cell_differences(same, merged) == []  # streams compared as the page shows them: merged
    other = {"source": "x", "outputs": [{"output_type": "stream", "name": "stdout", "text": "a\nc 9 ms\n"}]}
    assert cell_differences(same, other)
    assert cell_differences(same, {**same, "source": "y"}) == ["its code differs from the book's"]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    book = tmp_path_factory.mktemp("verify") / "book"
    shutil.copytree(FIXTURE, book)
    (book / "sec.md").write_text((book / "sec.md").read_text(encoding="utf-8") + TIMING_CELL, encoding="utf-8")
    proc = tabbook(book, "build", "--builder", "")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return book


def _copy(built: Path, tmp_path: Path) -> Path:
    book = tmp_path / "book"
    shutil.copytree(built, book, symlinks=True)
    return book


def test_honest_entries_verify_though_timings_differ(built: Path, tmp_path: Path) -> None:
    book = _copy(built, tmp_path)
    stored = json.loads((book / ENTRY).read_text(encoding="utf-8"))
    assert re.search(r"took \d\.\d+ s", json.dumps(stored))  # the volatile cell is there
    proc = tabbook(book, "verify-freeze")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "[verify] 2 entries as a new run gives them" in proc.stdout and "0 differ" in proc.stdout


def test_a_hand_edited_entry_is_reported_at_its_cell_and_nothing_changes(built: Path, tmp_path: Path) -> None:
    book = _copy(built, tmp_path)
    entry = book / ENTRY
    nb = json.loads(entry.read_text(encoding="utf-8"))
    out = nb["cells"][0]["outputs"][0]
    assert out["text"] == "framework: alpha\n"
    out["text"] = "framework: forged\n"
    nb["cells"][1]["outputs"].append({"output_type": "display_data", "metadata": {},
                                      "data": {"text/html": "<script>alert(1)</script>", "text/plain": "x"}})
    entry.write_text(json.dumps(nb, indent=1), encoding="utf-8")
    frozen = tabbook(book, "build", "--frozen", "--builder", "")
    assert frozen.returncode == 0, frozen.stdout + frozen.stderr  # the key cannot see it
    before = {p: p.read_bytes() for p in (book / "_freeze").rglob("*") if p.is_file()}
    proc = tabbook(book, "verify-freeze")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    lines = [line for line in proc.stdout.splitlines() if line.startswith(f"{ENTRY}: differs from a new run: ")]
    fence = (book / "sec.md").read_text(encoding="utf-8").splitlines().index("```{.python .input}") + 1
    assert any(f"sec.md:{fence}: output 0 (stream stdout): stored 'framework: forged⏎', run again "
               f"'framework: alpha⏎'" in line for line in lines), proc.stdout
    assert any("outputs stored" in line for line in lines), proc.stdout  # the added output
    assert "1 differ" in proc.stdout
    assert not any(line.startswith("_freeze/sec/beta.ipynb") for line in proc.stdout.splitlines())
    assert {p: p.read_bytes() for p in (book / "_freeze").rglob("*") if p.is_file()} == before  # nothing written
    # Narrowed to the other framework, the forged entry is not run: exit 0.
    beta = tabbook(book, "verify-freeze", "--frameworks", "beta")
    assert beta.returncode == 0, beta.stdout + beta.stderr
    assert "[verify] 1 entries as a new run gives them" in beta.stdout
    # The fix (re-executing the section) makes it verify again.
    fixed = tabbook(book, "build", "--force", "--only", "sec.md", "--builder", "")
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert tabbook(book, "verify-freeze", "--only", "sec.md").returncode == 0
