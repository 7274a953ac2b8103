"""tabbook.files: the one way the builder writes a file (atomic, unique temporary, umask's mode)."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from tabbook import files


def _others(folder: Path, name: str) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name != name)


def test_temporary_names_are_unique_so_two_writers_never_share_one(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Two builds writing one file at once: each writes its own temporary file (a fixed
    ``.<name>.tmp`` let one rename the other's half-written file into place)."""
    target = tmp_path / "page.html"
    seen: list[str] = []
    both = threading.Barrier(2)
    real = os.replace

    def replace(src: str, dst: str) -> None:
        seen.append(str(src))
        both.wait(timeout=10)  # both temporaries exist at once
        real(src, dst)

    monkeypatch.setattr(files.os, "replace", replace)
    texts = ["a" * 100_000, "b" * 100_000]
    threads = [threading.Thread(target=files.write_atomic, args=(target, t)) for t in texts]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(seen)) == 2 and all(Path(s).parent == tmp_path for s in seen)
    assert target.read_text() in texts  # one whole text, never a mix
    assert _others(tmp_path, "page.html") == []


def test_write_if_changed_keeps_an_unchanged_file_untouched(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "f.txt"
    assert files.write_if_changed(path, "one") is True
    os.utime(path, (1, 1))
    assert files.write_if_changed(path, "one") is False
    assert path.stat().st_mtime == 1
    assert files.write_if_changed(path, b"two") is True and path.read_bytes() == b"two"
    assert files.write_if_changed(path, b"two") is False


def test_copy_and_atomic_target_take_the_umask_mode_and_clean_up(tmp_path: Path) -> None:
    src = tmp_path / "src.bin"
    src.write_bytes(b"\0pdf")
    src.chmod(0o600)
    old = os.umask(0o022)
    try:
        files.copy_atomic(src, tmp_path / "out" / "dst.bin")
    finally:
        os.umask(old)
    dst = tmp_path / "out" / "dst.bin"
    assert dst.read_bytes() == b"\0pdf" and dst.stat().st_mode & 0o777 == 0o644
    with pytest.raises(RuntimeError), files.atomic_target(dst) as tmp:
        tmp.write_bytes(b"half")
        raise RuntimeError("the writer failed")
    assert dst.read_bytes() == b"\0pdf" and _others(dst.parent, "dst.bin") == []


def test_the_cache_folder_follows_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(files.CACHE_ENV, str(tmp_path / "c"))
    assert files.cache_dir() == tmp_path / "c"
    monkeypatch.delenv(files.CACHE_ENV)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert files.cache_dir() == tmp_path / "xdg" / "tabbook"


def test_a_memo_is_read_back_only_under_its_own_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One helper for every cache of build/: the same named parts and builder read the value
    back; other parts, another builder, or a damaged file read as nothing, and a value that
    did not change is not written again."""
    from tabbook import files

    build = files.BuildDir(tmp_path / "build")
    made: list[int] = []

    def make() -> dict[str, int]:
        made.append(1)
        return {"a": 1}

    assert build.memo("apiref", library="x").get(make) == {"a": 1}
    assert build.memo("apiref", library="x").get(make) == {"a": 1}
    assert len(made) == 1
    assert build.memo("apiref", library="y").load() is None
    memo = build.memo("apiref", library="x")
    assert memo.load() == {"a": 1}
    before = memo.path.stat().st_mtime_ns
    memo.save({"a": 1})
    assert memo.path.stat().st_mtime_ns == before  # unchanged: not written
    monkeypatch.setattr(files, "builder_fingerprint", lambda: "another builder")
    assert build.memo("apiref", library="x").load() is None
    monkeypatch.undo()
    memo.path.write_text("{not json")
    assert build.memo("apiref", library="x").load() is None
    pages = build.memo("pages", tabs=["a"])  # a .pickle memo holds Python objects
    pages.save({"p.md": ("digest", Path("x"))})
    assert build.memo("pages", tabs=["a"]).load() == {"p.md": ("digest", Path("x"))}
    assert not list(build.path.glob(".*.tmp"))


def test_a_write_is_synced_before_its_rename_and_its_folder_after(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Durability: the data reaches the disk before the rename publishes it, and the rename
    itself (the folder's entry) after; ``FSYNC`` off (the benchmark's baseline) does neither."""
    events: list[str] = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd: int) -> None:
        events.append("fsync folder" if os.path.isdir(f"/proc/self/fd/{fd}") else "fsync file")
        real_fsync(fd)

    def replace(src: str, dst: str) -> None:
        events.append("rename")
        real_replace(src, dst)

    monkeypatch.setattr(files.os, "fsync", fsync)
    monkeypatch.setattr(files.os, "replace", replace)
    files.write_atomic(tmp_path / "a.json", "{}")
    assert events == ["fsync file", "rename", "fsync folder"]
    events.clear()
    files.copy_atomic(tmp_path / "a.json", tmp_path / "b.json")
    assert events == ["fsync file", "rename", "fsync folder"]
    events.clear()
    monkeypatch.setattr(files, "FSYNC", False)
    files.write_atomic(tmp_path / "c.json", "{}")
    assert events == ["rename"]
    assert (tmp_path / "c.json").read_text() == "{}"
