"""``tabbook merge-stores``: shard runs into separate stores, merged, equal one local build.

A generated book of four sections in two tabs (eight units, all in the builder's Python) is
executed once locally and once as three shards (``build --shard i/3 --freeze-dir D_i``), each
into its own empty store; merging the three stores gives exactly the local build's entries.
Merging is not a copy: only entries current for the book are taken, and a bad entry stops the
merge before anything is written.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from scale_book import comparable, entries, make_book, tabbook

SHARDS = 3


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("merge")
    book = make_book(tmp, sections=4)
    out = {"book": book, "local": tmp / "local"}
    proc = tabbook(book, "build", "--no-render", "--jobs", "2", "--freeze-dir", str(out["local"]))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for i in range(SHARDS):
        out[f"shard{i}"] = tmp / f"shard{i}"
        proc = tabbook(book, "build", "--no-render", "--jobs", "2", "--shard", f"{i}/{SHARDS}",
                       "--freeze-dir", str(out[f"shard{i}"]))
        assert proc.returncode == 0, proc.stdout + proc.stderr
    return out


def test_shards_execute_disjoint_parts_of_the_book(runs: dict[str, Path]) -> None:
    parts = [set(entries(runs[f"shard{i}"])) for i in range(SHARDS)]
    assert all(parts)  # every shard ran something
    assert sum(len(p) for p in parts) == len(set().union(*parts)) == 8  # no unit twice, none left out


def test_merged_shards_equal_one_local_build(runs: dict[str, Path], tmp_path: Path) -> None:
    merged = tmp_path / "merged"
    proc = tabbook(runs["book"], "merge-stores", *(str(runs[f"shard{i}"]) for i in range(SHARDS)),
                   "--into", str(merged))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "[merge] 8 written, 0 unchanged, 0 stale left out" in proc.stdout
    got, local = entries(merged), entries(runs["local"])
    assert sorted(got) == sorted(local)
    shard_bytes = {}
    for i in range(SHARDS):
        shard_bytes.update(entries(runs[f"shard{i}"]))
    assert got == shard_bytes  # byte for byte what the shards wrote
    for name, data in got.items():
        # and byte for byte the local build's entry, but for the unit's seconds and date
        assert comparable(data) == comparable(local[name]), name
        assert json.loads(data)["metadata"]["tabbook"]["key"] == json.loads(local[name])["metadata"]["tabbook"]["key"]
    # The merged store is current for the book: a frozen build executes nothing.
    proc = tabbook(runs["book"], "build", "--frozen", "--no-render", "--freeze-dir", str(merged))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # Merging again changes nothing.
    proc = tabbook(runs["book"], "merge-stores", *(str(runs[f"shard{i}"]) for i in range(SHARDS)),
                   "--into", str(merged))
    assert "[merge] 0 written, 8 unchanged" in proc.stdout, proc.stdout + proc.stderr


def test_a_stale_entry_never_replaces_a_current_one(runs: dict[str, Path], tmp_path: Path) -> None:
    book = tmp_path / "book"
    shutil.copytree(runs["book"], book, ignore=shutil.ignore_patterns("build"))
    old = tmp_path / "old"
    shutil.copytree(runs["local"], old)
    sec = book / "s1.md"
    sec.write_text(sec.read_text().replace("print('alpha', 1,", "print('alpha edited', 1,"))
    new = tmp_path / "new"
    proc = tabbook(book, "build", "--no-render", "--only", "s1.md", "--frameworks", "alpha",
                   "--freeze-dir", str(new))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert sorted(entries(new)) == ["s1/alpha.ipynb"]
    # The old store first: its s1 [alpha] is stale for the edited book and is left out.
    merged = tmp_path / "merged"
    proc = tabbook(book, "merge-stores", str(old), str(new), "--into", str(merged))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "8 written, 0 unchanged, 1 stale left out" in proc.stdout
    assert entries(merged)["s1/alpha.ipynb"] == entries(new)["s1/alpha.ipynb"]
    assert b"alpha edited" in entries(merged)["s1/alpha.ipynb"]


def test_a_damaged_entry_stops_the_merge_before_anything_is_written(runs: dict[str, Path],
                                                                   tmp_path: Path) -> None:
    bad = tmp_path / "bad"
    shutil.copytree(runs["shard0"], bad)
    victim = sorted(bad.rglob("*.ipynb"))[0]
    victim.write_text('{"cells": [\n  oops\n')
    moved = tmp_path / "moved"
    shutil.copytree(runs["shard1"], moved)
    first = sorted(moved.rglob("*.ipynb"))[0]
    wrong = moved / "elsewhere" / first.name
    wrong.parent.mkdir()
    first.rename(wrong)
    merged = tmp_path / "merged"
    proc = tabbook(runs["book"], "merge-stores", str(bad), str(moved), "--into", str(merged))
    assert proc.returncode == 1
    assert f"{victim}:2: not a freeze entry: invalid JSON" in proc.stderr
    assert f"{wrong}:1: entry of " in proc.stderr and "filed under the wrong path" in proc.stderr
    assert not merged.exists() or not list(merged.rglob("*"))


def test_merge_needs_existing_stores(runs: dict[str, Path], tmp_path: Path) -> None:
    proc = tabbook(runs["book"], "merge-stores", str(tmp_path / "nope"))
    assert proc.returncode == 1
    assert f"merge-stores: {tmp_path / 'nope'} is not a directory" in proc.stderr
