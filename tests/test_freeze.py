"""The freeze store: what changes a (section, framework) key and what does not; atomic writes."""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path
from typing import IO

import pytest

from tabbook import files
from tabbook.errors import BookError
from tabbook.execute import store as freeze
from tabbook.execute.job import Provenance
from tabbook.execute.store import (
    Entry,
    FreezeStore,
    KeyParts,
    Match,
    cells_hash,
    match,
    public_copy,
    text_hash,
    write_notebook,
)
from tabbook.files import write_atomic
from tabbook.source.read import read_section
from tabbook.source.split import split_section

TABS = ("pytorch", "jax", "tensorflow", "mxnet")
FIXTURES = Path(__file__).parent / "fixtures" / "dialect"
FULL = (FIXTURES / "full.md").read_text(encoding="utf-8")
BRANCHES = (FIXTURES / "branches.md").read_text(encoding="utf-8")


def parts(text: str, fw: str, **env: str) -> KeyParts:
    section = read_section(text, "chapter_x/sec.md", TABS, "pytorch")
    base = {"env": "lock-" + fw, "library": text_hash(f"# d2l/{fw}.py"), "python": "3.11", "kernel": f"tabbook-{fw}"}
    base.update(env)
    return KeyParts(cells=cells_hash(split_section(section, fw)), **base)


def keys(text: str) -> dict[str, str]:
    return {fw: parts(text, fw).key for fw in TABS}


def changed(before: str, after: str) -> set[str]:
    assert before != after, "the edit did not apply"
    k0, k1 = keys(before), keys(after)
    return {fw for fw in TABS if k0[fw] != k1[fw]}


# --- what the key covers ------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("Intro prose with", "Rewritten intro prose with"),  # a typo fix
        ("PyTorch prose.", "PyTorch prose, edited.\n\nWith a new paragraph."),  # a prose tab
        ("JAX and TensorFlow prose.", "Edited JAX/TF prose."),
        ("## Shared Code", "## Shared Code\n\nNew paragraph.\n\n\n\nAnd lines that shift every cell below."),
        (":label:`fig_full`", ":label:`fig_full_renamed`"),
        ("$$y = Ax.$$", "$$y = Bx.$$"),
        ('print("hello")', 'print("literal fences are prose")'),
        ("```{.python .input  n=3}", "```{.python .input  n=42}"),  # notebook attributes of the fence
        ("# Devices (**and Memory**)", "# Devices"),
    ],
)
def test_prose_change_leaves_every_key_unchanged(old: str, new: str) -> None:
    assert changed(FULL, FULL.replace(old, new, 1)) == set()


def test_blank_lines_around_cells_leave_keys_unchanged() -> None:
    after = FULL.replace("```{.python .input}\n%%tab jax\nimport jax\n```", "\n\n```{.python .input}\n%%tab jax\n\nimport jax\n\n```")
    assert changed(FULL, after) == set()


@pytest.mark.parametrize(
    ("text", "old", "new", "expected"),
    [
        # a %%tab jax cell
        (FULL, "import jax\n", "import jax\nimport jax.numpy as jnp\n", {"jax"}),
        # a tab.selected('jax') branch inside a %%tab all cell
        (FULL, "return jax.devices('cpu')[0]", "return jax.devices('cpu')[-1]", {"jax"}),
        (BRANCHES, "return 'jax'", "return 'JAX'", {"jax"}),
        # a branch shared by two frameworks
        (BRANCHES, "a = 'jax or tensorflow'", "a = 'jax/tf'", {"jax", "tensorflow"}),
        # the else branch: every framework not named before
        (BRANCHES, "a = 'mxnet'", "a = 'MXNet'", {"mxnet"}),
        # a comment inside the pytorch branch is code the kernel sees
        (BRANCHES, "# pytorch comment", "# PyTorch comment", {"pytorch"}),
        # a %%tab jax, mxnet cell
        (FULL, "y = 2", "y = 3", {"jax", "mxnet"}),
        # the untagged cell belongs to the default tab only
        (FULL, "x = 1\n", "x = 10\n", {"pytorch"}),
        # code shared by all frameworks
        (FULL, "z = 3", "z = 4", set(TABS)),
        # flags change how outputs are judged or kept
        (FULL, "#@hide_output\ny = 2", "y = 2", {"jax", "mxnet"}),
        (FULL, "#@raises RuntimeError", "#@raises ValueError", set(TABS)),
        (FULL, "#@raises\n1 / 0", "1 / 0", set(TABS)),
        # moving a cell to another framework
        (FULL, "%%tab jax, mxnet", "%%tab jax", {"mxnet"}),
        (FULL, "%%tab jax\nimport jax", "%%tab jax, tensorflow\nimport jax", {"tensorflow"}),
    ],
)
def test_code_change_changes_only_its_frameworks(text: str, old: str, new: str, expected: set[str]) -> None:
    assert changed(text, text.replace(old, new, 1)) == expected


def test_reordering_cells_changes_the_key() -> None:
    every = "```{.python .input}\n%%tab pytorch, jax, tensorflow, mxnet\n```\n\n"  # names the tabs
    a = every + "```{.python .input}\n%%tab all\na = 1\n```\n\n```{.python .input}\n%%tab all\nb = 2\n```\n"
    b = every + "```{.python .input}\n%%tab all\nb = 2\n```\n\n```{.python .input}\n%%tab all\na = 1\n```\n"
    assert changed(a, b) == set(TABS)


def test_splitting_a_cell_changes_the_key() -> None:
    a = "```{.python .input}\na = 1\nb = 2\n```\n"
    b = "```{.python .input}\na = 1\n```\n\n```{.python .input}\nb = 2\n```\n"
    assert changed(a, b) == {"pytorch"}


@pytest.mark.parametrize(
    "field",
    [
        {"env": "lock-other"},  # the framework's lock file (requirements + constraints + python) changed
        {"library": text_hash("# d2l/jax.py, with a new #@save function")},
        {"python": "3.12"},
        {"kernel": "tabbook-jax-gpu"},
    ],
)
def test_environment_parts_change_the_key(field: dict[str, str]) -> None:
    base = parts(FULL, "jax")
    assert replace(base, **field).key != base.key
    assert parts(FULL, "jax", **field).key != base.key


def test_key_is_deterministic_and_parts_are_separated() -> None:
    p = parts(FULL, "jax")
    assert p.key == parts(FULL, "jax").key
    assert len(p.key) == 64 and set(p.key) <= set("0123456789abcdef")
    assert p.as_dict() == {"cells": p.cells, "env": p.env, "library": p.library, "python": p.python, "kernel": p.kernel,
                           "library_file": p.library_file, "library_names": dict(p.library_names)}
    # moving text from one part to the next must not collide
    a = KeyParts(cells="ab", env="c", library="l", python="3.11", kernel="k")
    b = KeyParts(cells="a", env="bc", library="l", python="3.11", kernel="k")
    assert a.key != b.key


def test_cells_hash_ignores_lines_but_not_sources() -> None:
    section = read_section(FULL, "a.md", TABS, "pytorch")
    moved = read_section("\n\n\n" + FULL, "b.md", TABS, "pytorch")
    for fw in TABS:
        assert cells_hash(split_section(section, fw)) == cells_hash(split_section(moved, fw))
    assert cells_hash([]) != cells_hash(split_section(section, "jax"))


def test_text_hash() -> None:
    assert text_hash(None) == text_hash("")
    assert text_hash("a") != text_hash("b")


def test_key_for_uses_lock_files_library_python_and_kernel(tmp_path: Path) -> None:
    """The build's own key function: editing a requirements file or the library changes the key."""
    from tabbook.config import load_config
    from tabbook.execute.plan import unit_key as key_for

    (tmp_path / "envs").mkdir()
    (tmp_path / "envs" / "jax.txt").write_text("jax==0.4.30\n")
    (tmp_path / "envs" / "torch.txt").write_text("torch==2.4.0\n")
    (tmp_path / "config.ini").write_text(
        "[project]\nname = t\ntitle = T\n[build]\ntabs = pytorch, jax\n"
        "[framework:pytorch]\nmodule = torch\nrequirements = envs/torch.txt\n"
        "[framework:jax]\nrequirements = envs/jax.txt\n"
    )
    text = "# S\n\n```{.python .input}\n%%tab all\nx = 1\n```\n\n```{.python .input}\n%%tab jax\ny = d2l.h()\n```\n"
    section = read_section(text, "s.md", ("pytorch", "jax"), "pytorch")
    library = {"d2l/torch.py": "# torch lib", "d2l/jax.py": "# jax lib\ndef h():\n    return 1\n"}

    def key(fw: str, lib: dict[str, str] = library) -> str:
        return key_for(load_config(tmp_path), section, fw, lib)[0].key

    k_torch, k_jax = key("pytorch"), key("jax")
    (tmp_path / "envs" / "jax.txt").write_text("jax==0.4.31\n")
    assert key("jax") != k_jax and key("pytorch") == k_torch
    k_jax = key("jax")
    # The library part covers what the unit reaches (tabbook.library.reach): jax's h, nothing of torch's.
    assert key("jax", {**library, "d2l/jax.py": "def h():\n    return 2\n"}) != k_jax
    assert key("jax", {**library, "d2l/jax.py": library["d2l/jax.py"] + "def g():\n    return 3\n"}) == k_jax
    assert key("jax", {**library, "d2l/jax.py": "# a comment\n" + library["d2l/jax.py"]}) == k_jax
    assert key("pytorch", {**library, "d2l/jax.py": "def h():\n    return 2\n"}) == k_torch


# --- the store ----------------------------------------------------------------------------------

def test_entry_path(tmp_path: Path) -> None:
    store = FreezeStore(tmp_path)
    assert store.path("chapter_gpus/devices.md", "jax") == tmp_path / "chapter_gpus" / "devices" / "jax.ipynb"
    assert store.path("index.md", "pytorch") == tmp_path / "index" / "pytorch.ipynb"
    assert store.path("chapter_gpus/devices", "jax") == store.path("chapter_gpus/devices.md", "jax")  # a docname


def test_store_and_load_round_trip(tmp_path: Path) -> None:
    store = FreezeStore(tmp_path)
    path = store.path("chapter_gpus/devices.md", "jax")
    nb = {"cells": [{"cell_type": "code", "source": "x = 'é'", "outputs": []}], "metadata": {"tabbook": {"key": "abc"}}}
    write_notebook(path, nb)
    assert store.load("chapter_gpus/devices.md", "jax") == Entry(nb)
    assert Entry(nb).key == "abc"
    text = path.read_text(encoding="utf-8")
    assert text.endswith("\n") and "é" in text  # stable, readable diffs
    write_notebook(path, nb)
    assert path.read_text(encoding="utf-8") == text  # deterministic bytes: no spurious git changes
    assert store.entries() == [path]


def test_store_stamps_the_schema_and_an_entry_reads_it(tmp_path: Path) -> None:
    store = FreezeStore(tmp_path / "store")
    parts = KeyParts(cells="c", env="e", library="l", python="3.11", kernel="k")
    nb = {"cells": [], "metadata": {}}
    path = store.store("ch/s.md", "jax", nb, parts, Provenance.from_dict({"device": "CPU only"}), 1.234)
    meta = json.loads(path.read_text(encoding="utf-8"))["metadata"]["tabbook"]
    assert meta == {"key": parts.key, "key_parts": parts.as_dict(), "section": "ch/s.md", "framework": "jax",
                    "provenance": {"device": "CPU only"}, "seconds": 1.23}
    entry = store.load("ch/s.md", "jax")
    assert entry is not None and match(entry, parts) is Match.KEY
    assert (entry.key, entry.provenance.as_dict(), entry.seconds, entry.cells) == (parts.key, {"device": "CPU only"}, 1.23, [])
    assert entry.provenance.device == "CPU only" and not entry.provenance.on_gpu
    assert match(entry, KeyParts(cells="other", env="e", library="l", python="3.11", kernel="k")) is None
    assert store.load("ch/other.md", "jax") is None and match(None, parts) is None
    public = public_copy(entry.notebook)
    assert public["metadata"]["tabbook"] == {"provenance": {"device": "CPU only"}}  # bookkeeping dropped
    assert entry.notebook["metadata"]["tabbook"]["key"] == parts.key  # the store's copy is untouched


def test_load_missing_or_damaged_entry(tmp_path: Path) -> None:
    store = FreezeStore(tmp_path)
    assert store.load("missing.md", "jax") is None
    bad = store.path("bad.md", "jax")
    bad.parent.mkdir(parents=True)
    bad.write_text('{"cells": [')
    # Damaged: a located error saying what to do, not a silent re-execution (issue 33).
    with pytest.raises(BookError, match=r"bad/jax\.ipynb: damaged freeze entry: not JSON .*delete the file"):
        store.load("bad.md", "jax")
    assert FreezeStore(tmp_path, tmp_path).shown(bad) == "bad/jax.ipynb"
    assert Entry({}).key is None and Entry({"metadata": {}}).key is None and not Entry({"metadata": None}).parts
    assert not Entry({}).provenance and Entry({}).provenance.as_dict() == {} and FreezeStore(tmp_path / "nowhere").entries() == []


def _leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


@pytest.fixture
def old_entry(tmp_path: Path) -> Path:
    path = tmp_path / "store" / "sec" / "jax.ipynb"
    write_notebook(path, {"old": True})
    return path


def test_write_atomic_replaces_and_leaves_no_temp(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "er" / "f.json"
    write_atomic(path, "one")
    write_atomic(path, "two")
    assert path.read_text() == "two"
    assert _leftovers(path.parent) == ["f.json"]


def test_failed_serialisation_keeps_old_entry(old_entry: Path) -> None:
    before = old_entry.read_bytes()
    with pytest.raises(TypeError):
        write_notebook(old_entry, {"cells": [object()]})
    assert old_entry.read_bytes() == before
    assert _leftovers(old_entry.parent) == ["jax.ipynb"]


def test_failed_write_keeps_old_entry(old_entry: Path) -> None:
    before = old_entry.read_bytes()
    with pytest.raises(UnicodeEncodeError):
        write_atomic(old_entry, "half written \ud800 then fails while encoding")
    assert old_entry.read_bytes() == before
    assert _leftovers(old_entry.parent) == ["jax.ipynb"]


def test_failed_write_midway_keeps_old_entry(old_entry: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    before = old_entry.read_bytes()
    real_fdopen = os.fdopen

    class Exploding:
        def __init__(self, f: IO[str]) -> None:
            self.f = f

        def __enter__(self) -> Exploding:
            return self

        def __exit__(self, *exc: object) -> None:
            self.f.close()

        def write(self, text: str) -> int:
            self.f.write(text[: len(text) // 2])
            self.f.flush()
            raise OSError(28, "No space left on device")

    monkeypatch.setattr(files.os, "fdopen", lambda fd, *a, **k: Exploding(real_fdopen(fd, *a, **k)))
    with pytest.raises(OSError, match="No space left"):
        write_notebook(old_entry, {"new": True, "cells": ["x" * 1000]})
    assert old_entry.read_bytes() == before
    assert _leftovers(old_entry.parent) == ["jax.ipynb"]


def test_failed_rename_keeps_old_entry(old_entry: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    before = old_entry.read_bytes()

    def refuse(src: str, dst: str) -> None:
        raise PermissionError("read-only store")

    monkeypatch.setattr(files.os, "replace", refuse)
    with pytest.raises(PermissionError):
        write_notebook(old_entry, {"new": True})
    assert old_entry.read_bytes() == before
    assert _leftovers(old_entry.parent) == ["jax.ipynb"]


def test_interrupt_keeps_old_entry(old_entry: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    before = old_entry.read_bytes()

    def interrupted(*args: object, **kwargs: object) -> str:
        raise KeyboardInterrupt

    monkeypatch.setattr(freeze.json, "dumps", interrupted)
    with pytest.raises(KeyboardInterrupt):
        write_notebook(old_entry, {"new": True})
    assert old_entry.read_bytes() == before
    assert json.loads(before) == {"old": True}
    assert _leftovers(old_entry.parent) == ["jax.ipynb"]


def test_atomic_writes_make_files_others_can_read(tmp_path: Path) -> None:
    """mkstemp makes 0600 files; what the builder writes (the site's notebooks and decks, the
    store, d2l/*.py) gets the mode a plain write would: a web server must be able to read it."""

    old = os.umask(0o022)
    try:
        write_atomic(tmp_path / "a.txt", "x")
        os.umask(0o077)
        write_atomic(tmp_path / "b.txt", "x")
    finally:
        os.umask(old)
    assert (tmp_path / "a.txt").stat().st_mode & 0o777 == 0o644
    assert (tmp_path / "b.txt").stat().st_mode & 0o777 == 0o600
