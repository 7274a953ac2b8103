"""Execution faults on the fixture book: each one names the cell, fails the build, keeps the rest.

Each test injects one fault into a copy of the two-framework fixture book:
syntax error, timeout, dying kernel, a framework that cannot import, an
interrupted build, a path that cannot be written. None may leave a partial
freeze entry or temp file behind, and the next clean build must succeed.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = Path(__file__).resolve().parent / "fixtures" / "book"
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}
BETA_CELL = "%%tab beta\ndef double(x):  #@save"


def _book(tmp_path: Path, old: str | None = None, new: str | None = None) -> Path:
    book = tmp_path / "book"
    shutil.copytree(FIXTURE, book)
    if old is not None and new is not None:
        sec = book / "sec.md"
        text = sec.read_text()
        assert old in text
        sec.write_text(text.replace(old, new, 1))
    return book


def _run(book: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tabbook", "-C", str(book), "build", "--no-render", *args],
                          cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=300)


def _fence_line(book: Path, marker: str) -> int:
    lines = (book / "sec.md").read_text().splitlines()
    return next(i for i, t in enumerate(lines, 1) if t == marker) - 1


def _no_partial_files(book: Path) -> None:
    leftovers = [p for p in book.rglob("*") if p.name.endswith(".tmp")]
    assert leftovers == []


def _statuses(book: Path) -> dict[str, str]:
    data = json.loads((book / "build" / "report.json").read_text())
    return {u["framework"]: u["status"] for u in data["units"]}


def test_syntax_error_names_cell(tmp_path: Path) -> None:
    book = _book(tmp_path, BETA_CELL, "%%tab beta\nprint('unclosed'\ndef double(x):  #@save")
    proc = _run(book)
    assert proc.returncode == 1
    # The exact line of the unclosed call, not just the cell's fence.
    assert f"sec.md:{_fence_line(book, '%%tab beta') + 2}:" in proc.stderr
    assert "SyntaxError" in proc.stderr or "syntax error" in proc.stderr
    _no_partial_files(book)


def test_timeout_names_cell_and_keeps_other_framework(tmp_path: Path) -> None:
    book = _book(tmp_path, BETA_CELL, "%%tab beta\nimport time; time.sleep(30)\ndef double(x):  #@save")
    cfg = book / "config.ini"
    cfg.write_text(cfg.read_text().replace("cell_timeout = 60", "cell_timeout = 3"))
    proc = _run(book)
    assert proc.returncode == 1
    assert f"sec.md:{_fence_line(book, '%%tab beta')}: [beta] cell exceeded the 3 s timeout" in proc.stderr
    assert _statuses(book) == {"alpha": "executed", "beta": "failed"}
    assert (book / "_freeze" / "sec" / "alpha.ipynb").is_file()
    assert not (book / "_freeze" / "sec" / "beta.ipynb").exists()
    _no_partial_files(book)


def test_dying_kernel_names_cell(tmp_path: Path) -> None:
    book = _book(tmp_path, BETA_CELL, "%%tab beta\nimport os; os._exit(3)\ndef double(x):  #@save")
    proc = _run(book)
    assert proc.returncode == 1
    assert f"sec.md:{_fence_line(book, '%%tab beta')}: [beta] the kernel died" in proc.stderr
    assert _statuses(book)["beta"] == "failed"
    _no_partial_files(book)


def test_framework_that_cannot_import_is_a_clear_error(tmp_path: Path) -> None:
    book = _book(tmp_path)
    cfg = book / "config.ini"
    cfg.write_text(cfg.read_text().replace("import = json\npython = current\n\n[framework:beta]",
                                           "import = no_such_framework_xyz\npython = current\n\n[framework:beta]"))
    proc = _run(book)
    assert proc.returncode == 1
    assert "the alpha environment (" in proc.stderr and "cannot import no_such_framework_xyz" in proc.stderr
    assert "[framework:alpha] import = no_such_framework_xyz, set at config.ini:" in proc.stderr
    assert "ModuleNotFoundError" in proc.stderr


def test_missing_env_without_create_is_reported(tmp_path: Path) -> None:
    from tabbook.config import load_config
    from tabbook.errors import BookError
    from tabbook.execute.envs import ensure_env

    book = _book(tmp_path)
    cfg = book / "config.ini"
    (book / "req.txt").write_text("six==1.16.0\n")
    cfg.write_text(cfg.read_text().replace("import = json\npython = current\n\n[framework:beta]",
                                           "import = six\nrequirements = req.txt\npython = 3.11\n\n[framework:beta]"))
    config = load_config(book)
    os.environ["TABBOOK_CACHE"] = str(tmp_path / "cache")
    try:
        ensure_env(config, config.frameworks["alpha"], create=False)
    except BookError as exc:
        assert exc.path == "req.txt" and "the alpha environment is not installed" in str(exc)
    else:  # pragma: no cover - the assertion below explains
        raise AssertionError("a missing environment must raise BookError")
    finally:
        del os.environ["TABBOOK_CACHE"]


def test_interrupt_leaves_nothing_half_written_and_next_build_recovers(tmp_path: Path) -> None:
    book = _book(tmp_path, BETA_CELL, "%%tab beta\nimport time; time.sleep(60)\ndef double(x):  #@save")
    proc = subprocess.Popen([sys.executable, "-m", "tabbook", "-C", str(book), "build", "--no-render"],
                            cwd=ROOT, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    seen = ""
    assert proc.stdout is not None
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        seen += line
        if "start sec.md [beta]" in line:
            break
    time.sleep(2)  # the kernel is now inside time.sleep(60)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, seen + out + err
    assert "interrupted" in err
    assert not (book / "_freeze" / "sec" / "beta.ipynb").exists()
    _no_partial_files(book)
    sec = book / "sec.md"
    sec.write_text(sec.read_text().replace("import time; time.sleep(60)\n", ""))
    again = _run(book)
    assert again.returncode == 0, again.stderr
    assert (book / "_freeze" / "sec" / "beta.ipynb").is_file()


def test_unwritable_freeze_path_names_the_path(tmp_path: Path) -> None:
    book = _book(tmp_path)
    (book / "_freeze").mkdir()
    (book / "_freeze" / "sec").write_text("a file where a folder must be")
    proc = _run(book)
    assert proc.returncode == 1
    assert "_freeze/sec" in proc.stderr and "cannot write" in proc.stderr
    assert "Traceback" not in proc.stderr
    _no_partial_files(book)
