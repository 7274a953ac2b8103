"""Builds that stay in their book and units that stay in their unit (issue 33, items 4 and 5):
a toc entry that leaves the book writes nothing there; a cell's daemonized child is gone when
its unit ends; a flood of output is capped while the cell runs; a memory cap fails the cell
that exceeds it, at its line."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest
from procs import processes
from test_d2lbook_build import make_book, tabbook

from tabbook.config import OVERLAY_ENV, load_config
from tabbook.errors import BookError


def _files(folder: Path) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*"))


def test_a_toc_entry_to_an_existing_page_outside_the_book_writes_nothing_there(tmp_path: Path) -> None:
    book, overlay = make_book(tmp_path, eval_notebook=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "page.md").write_text("# Outside\n\n```{.python .input}\n%%tab all\nprint('out')\n```\n")
    chapter = book / "chapter_a" / "index.md"
    chapter.write_text(chapter.read_text().replace("second\n", "second\n../../outside/page\n", 1))
    proc = tabbook(book, overlay, "build")
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    line = chapter.read_text().splitlines().index("../../outside/page") + 1
    assert f"chapter_a/index.md:{line}: toc entry '../../outside/page': ../outside/page.md leaves the " \
           "book's folder" in out, out
    assert _files(outside) == ["page.md"]  # no store entry, no page, no notebook beside it
    assert not (tmp_path / "_freeze").exists() and not (book / "build" / "outside").exists()
    assert not (book / "_freeze").exists()  # the build stopped before executing anything
    check = tabbook(book, overlay, "check")
    assert check.returncode != 0 and f"chapter_a/index.md:{line}:" in check.stdout + check.stderr


def test_an_rst_image_outside_the_book_is_neither_copied_nor_published(tmp_path: Path) -> None:
    """``check`` sees Markdown images only; Sphinx would copy any file an ``.. image::`` names
    into ``_images/``. The extension drops it first and fails the build at its line."""
    book, overlay = make_book(tmp_path)
    secret = tmp_path / "secret-outside.png"
    secret.write_bytes(b"\x89PNG\r\n\x1a\n not for the site")
    first = book / "chapter_a" / "first.md"
    first.write_text(first.read_text() + "\n```eval_rst\n.. image:: ../../../../secret-outside.png\n```\n")
    proc = tabbook(book, overlay, "build")
    out = proc.stdout + proc.stderr
    line = first.read_text().splitlines().index(".. image:: ../../../../secret-outside.png") + 1
    assert proc.returncode != 0
    assert f"chapter_a/first.md:{line}: image file ../../../../secret-outside.png is outside the book's " \
           "folder" in out, out
    published = [p for p in (book / "build").rglob("*") if p.is_file() and p.read_bytes() == secret.read_bytes()]
    assert published == []


def _code_page(*cells: str) -> str:
    body = "".join(f"\n```{{.python .input}}\n%%tab pytorch\n{code}\n```\n" for code in cells)
    return "# Limits\n\nWords.\n" + body


def _book_with(tmp_path: Path, page: str, build_keys: str = "") -> tuple[Path, Path, Path]:
    book, overlay = make_book(tmp_path, eval_notebook=True)
    ini = book / "config.ini"
    ini.write_text(ini.read_text().replace("[build]\n", "[build]\n" + build_keys, 1))
    chapter = book / "chapter_a" / "index.md"
    chapter.write_text(chapter.read_text().replace("second\n", "second\nlimits\n", 1))
    (book / "chapter_a" / "limits.md").write_text(page)
    return book, overlay, book / "chapter_a" / "limits.md"


def test_a_daemon_a_cell_starts_is_gone_when_its_unit_ends(tmp_path: Path) -> None:
    """A double fork with setsid leaves the kernel's process group and session: only a
    subreaper (the worker) still finds it; it must not outlive the build."""
    marker = f"tabbook-daemon-{os.getpid()}-{tmp_path.name}"
    daemon = ("import os, time\nif os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n"
              "        time.sleep(600)\n")
    book, overlay, _ = _book_with(tmp_path, _code_page(
        f"import subprocess, sys\nsubprocess.run([sys.executable, '-c', {daemon!r}, {marker!r}], check=True)\n"
        "print('daemon started')"))
    try:
        proc = tabbook(book, overlay, "build", "--builder", "")
        assert proc.returncode == 0, proc.stdout + proc.stderr
        entry = json.loads((book / "_freeze" / "chapter_a" / "limits" / "pytorch.ipynb").read_text())
        assert "daemon started" in json.dumps(entry)  # the daemon was started
        assert processes(lambda args, _: marker.encode() in args) == []
    finally:
        for pid in processes(lambda args, _: marker.encode() in args):
            os.kill(int(pid), signal.SIGKILL)


def test_a_100_mb_print_is_cut_while_it_runs_with_a_visible_note(tmp_path: Path) -> None:
    book, overlay, _ = _book_with(tmp_path, _code_page(
        "for _ in range(100):\n    print('z' * 999_999)\nprint('after the flood')"),
        "max_output_bytes = 20000\n")
    proc = tabbook(book, overlay, "build", "--builder", "")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    entry = book / "_freeze" / "chapter_a" / "limits" / "pytorch.ipynb"
    assert entry.stat().st_size < 40_000
    cell = next(c for c in json.loads(entry.read_text())["cells"] if c["cell_type"] == "code")
    text = "".join(o["text"] if isinstance(o["text"], str) else "".join(o["text"]) for o in cell["outputs"])
    assert text.startswith("z" * 19_000) and "after the flood" not in text
    assert "[tabbook] output truncated: this cell produced 100,000,016 bytes of output; [build] " \
           "max_output_bytes keeps 20,000" in text
    # What the run kept is read back under the same cap (the store checks every entry it reads).
    again = tabbook(book, overlay, "build", "--frozen", "--builder", "")
    assert again.returncode == 0, again.stdout + again.stderr


def test_a_cell_over_the_memory_limit_fails_at_its_line_and_the_fix_builds(tmp_path: Path) -> None:
    book, overlay, page = _book_with(tmp_path, _code_page(
        "small = bytearray(10 * 1024**2)\nprint(len(small))", "big = bytearray(4 * 1024**3)\nprint(len(big))"),
        "memory_limit = 2G\n")
    proc = tabbook(book, overlay, "build", "--builder", "")
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    line = page.read_text().splitlines().index("big = bytearray(4 * 1024**3)") + 1
    assert f"chapter_a/limits.md:{line}: [pytorch] MemoryError: the cell needed more memory than [build] " \
           "memory_limit = 2G allows" in out, out
    assert not (book / "_freeze" / "chapter_a" / "limits").exists()  # nothing stored for the failed unit
    page.write_text(page.read_text().replace("4 * 1024**3", "20 * 1024**2"))
    proc = tabbook(book, overlay, "build", "--builder", "")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_output_past_the_cap_is_dropped_as_it_arrives() -> None:
    """The worker holds at most the cap of a flood, not the flood: 50 messages of 1 MB reach
    nbclient's ``output`` and the cell's outputs stay at the cap; errors always pass."""
    import nbformat

    from tabbook.execute.capped import capped_client
    from tabbook.execute.shape import cap_outputs

    produced: dict[int, int] = {}
    client = capped_client(10_000, produced)(nbformat.v4.new_notebook())
    client.clear_before_next_output = False  # what nbclient sets when a cell starts
    cell = nbformat.v4.new_code_cell("print")
    header = {"msg_id": "m", "msg_type": "stream"}
    for _ in range(50):
        msg = {"msg_type": "stream", "header": header, "parent_header": {"msg_id": "p"}, "metadata": {},
               "content": {"name": "stdout", "text": "q" * 1_000_000}}
        client.output(cell.outputs, msg, None, 0)
    error = {"msg_type": "error", "header": {**header, "msg_type": "error"}, "parent_header": {"msg_id": "p"},
             "metadata": {}, "content": {"ename": "E", "evalue": "v", "traceback": ["t"]}}
    client.output(cell.outputs, error, None, 0)
    assert sum(len(o.get("text", "")) for o in cell.outputs) == 10_000
    assert produced == {0: 50_000_000} and cell.outputs[-1]["output_type"] == "error"
    cap_outputs(cell, 10_000, produced[0])
    assert "this cell produced 50,000,000 bytes of output" in cell.outputs[-1]["text"]


def test_book_paths_in_an_overlay_are_the_books_and_stay_inside_it(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """An overlay's environment paths are relative to the overlay and may lie anywhere; a book
    path it sets (freeze_dir) is relative to the book's root and must stay inside the book,
    located at the overlay's line."""
    monkeypatch.delenv(OVERLAY_ENV, raising=False)
    book, overlay = make_book(tmp_path)
    lock = overlay.parent / "locks" / "pt.txt"
    lock.parent.mkdir()
    lock.write_text("ipykernel\n")
    overlay.write_text(overlay.read_text().replace("[framework:pytorch]\npython = current\n",
                                                   "[framework:pytorch]\nrequirements = locks/pt.txt\n")
                       + "\n[build]\nfreeze_dir = store\n")
    config = load_config(book, overlay)
    assert config.framework("pytorch").requirements == lock.resolve()  # outside the book: allowed
    assert config.freeze_dir == book.resolve() / "store"  # the book's root, not the overlay's folder
    overlay.write_text(overlay.read_text().replace("freeze_dir = store", "freeze_dir = ../store"))
    line = overlay.read_text().splitlines().index("freeze_dir = ../store") + 1
    with pytest.raises(BookError) as err:
        load_config(book, overlay)
    assert err.value.location_message() == (
        f"{overlay.resolve()}:{line}: [build] freeze_dir names ../store, which is outside the book's folder "
        "(book paths are relative to the book's root and stay inside it)")


def test_an_interrupted_build_leaves_no_daemon_either(tmp_path: Path) -> None:
    """Ctrl-C while a unit runs: the worker ends its kernel and everything below it before it
    exits, the daemon its cell detached included."""
    import subprocess
    import sys
    import time

    marker = f"tabbook-daemon-int-{os.getpid()}-{tmp_path.name}"
    daemon = ("import os, time\nif os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n"
              "        time.sleep(600)\n")
    book, overlay, _ = _book_with(tmp_path, _code_page(
        f"import subprocess, sys, time\nsubprocess.run([sys.executable, '-c', {daemon!r}, {marker!r}], check=True)\n"
        "time.sleep(600)"))
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent),
           "TABBOOK_CACHE": str(tmp_path / ".cache"), "TABBOOK_WARM": "0"}
    env.pop(OVERLAY_ENV, None)
    build = subprocess.Popen([sys.executable, "-m", "tabbook", "-C", str(book), "--overlay", str(overlay), "build",
                              "--builder", ""], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 120
        while not processes(lambda args, _: marker.encode() in args):
            assert time.monotonic() < deadline and build.poll() is None, build.communicate()[0]
            time.sleep(0.2)
        build.send_signal(signal.SIGINT)
        out, _ = build.communicate(timeout=60)
        assert build.returncode != 0, out
        time.sleep(0.5)
        assert processes(lambda args, _: marker.encode() in args) == [], out
    finally:
        if build.poll() is None:
            build.kill()
        for pid in processes(lambda args, _: marker.encode() in args):
            os.kill(int(pid), signal.SIGKILL)


@pytest.mark.parametrize(("value", "want"), [("8G", 8 * 1024**3), ("1536M", 1536 * 1024**2), ("2 GiB", 2 * 1024**3),
                                             ("", 0), ("512M", "must be at least 1G"),
                                             ("lots", "must be a size such as 4G")])
def test_memory_limit_is_a_size_checked_at_its_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                    value: str, want: int | str) -> None:
    monkeypatch.delenv(OVERLAY_ENV, raising=False)
    book, _ = make_book(tmp_path)
    ini = book / "config.ini"
    ini.write_text(ini.read_text().replace("[build]\n", f"[build]\nmemory_limit = {value}\n", 1))
    if isinstance(want, int):
        assert load_config(book).memory_limit == want
        return
    with pytest.raises(BookError) as err:
        load_config(book)
    assert err.value.location_message().startswith(f"config.ini:8: [build] memory_limit {want}")
