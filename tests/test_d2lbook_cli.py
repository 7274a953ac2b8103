"""d2lbook's command line on tabbook: ``tabbook build TARGET [--tab T]``, ``tabbook clear`` and
``tabbook new``, each doing what its d2lbook namesake does (README's d2lbook → tabbook table)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def tabbook(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TABBOOK_CACHE": str(cwd.parent / ".cache"), "TABBOOK_WARM": "0"}
    env.pop("TABBOOK_OVERLAY", None)
    return subprocess.run([sys.executable, "-m", "tabbook", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=600)


def statuses(book: Path) -> dict[tuple[str, str], str]:
    data = json.loads((book / "build" / "report.json").read_text())
    return {(u["section"], u["framework"]): u["status"] for u in data["units"]}


@pytest.fixture
def book(tmp_path: Path) -> Path:
    proc = tabbook(tmp_path, "new", "mybook")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[:3] == ["[new] wrote mybook/config.ini", "[new] wrote mybook/index.md",
                                            "[new] wrote mybook/averages.md"]
    return tmp_path / "mybook"


def test_new_refuses_a_folder_with_files(tmp_path: Path) -> None:
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.md").write_text("# Mine\n")
    proc = tabbook(tmp_path, "new", "mine")
    assert proc.returncode == 1 and "mine exists and is not an empty folder" in proc.stderr
    assert sorted(p.name for p in (tmp_path / "mine").iterdir()) == ["notes.md"]


def test_eval_runs_one_tab_and_renders_nothing_then_rst_lib_linkcheck_clear(book: Path) -> None:
    proc = tabbook(book, "build", "eval", "--tab", "stdlib")
    assert proc.returncode == 0, proc.stderr
    assert statuses(book)[("averages.md", "stdlib")] == "executed"
    assert statuses(book).get(("averages.md", "plain")) != "executed"
    assert not (book / "build" / "html").exists() and not (book / "build" / "src").exists()

    proc = tabbook(book, "build", "rst")  # Sphinx's sources, no site
    assert proc.returncode == 0, proc.stderr
    assert (book / "build" / "src" / "averages.ipynb").is_file()
    assert proc.stdout.splitlines()[-1] == "[rst] Sphinx's sources: build/src"
    assert not (book / "build" / "html").exists()

    proc = tabbook(book, "build", "lib")
    assert proc.returncode == 0 and proc.stdout.strip() == "[library] d2l/ is current", proc.stdout

    proc = tabbook(book, "build", "linkcheck")
    assert proc.returncode == 0, proc.stderr
    assert "0 broken internal links" in proc.stdout and (book / "build" / "html" / "averages.html").is_file()

    proc = tabbook(book, "clear")
    assert proc.returncode == 0 and not (book / "build").exists() and (book / "_freeze").is_dir()
    said = proc.stdout.strip()
    assert re.fullmatch(r"removed build/ \(\d+ files, [\d.]+ MB\); kept the outputs in _freeze/ and the "
                        r"library in d2l/ \(commit them\)", said), said
    proc = tabbook(book, "clear")
    assert proc.stdout.strip() == ("nothing to remove: there is no build/; kept the outputs in _freeze/ and "
                                   "the library in d2l/ (commit them)")


def test_a_new_books_build_says_where_its_site_is_and_no_make_target(book: Path) -> None:
    """An author's book has no Makefile: messages name tabbook's commands, never a make target of
    this repository, and the last line says where the site is (relative to where tabbook ran)."""
    proc = tabbook(book.parent, "-C", "mybook", "build")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout + proc.stderr
    assert not re.search(r"\bmake [a-z]", out), out
    assert "`tabbook site` builds the site with its PDFs" in out
    assert proc.stdout.splitlines()[-1] == "[html] the site: mybook/build/html/index.html"
    assert (book / "build" / "html" / "index.html").is_file()


def test_help_is_plain_text(tmp_path: Path) -> None:
    """``tabbook --help`` and each command's: no reStructuredText markup (the docstrings' ``x``)."""
    commands = ["--help"] + [f"{c} --help" for c in ("build", "serve", "new", "clear", "check", "lib", "site")]
    for command in commands:
        proc = tabbook(tmp_path, *command.split())
        assert proc.returncode == 0 and proc.stdout.startswith("usage: tabbook"), proc.stderr
        assert "``" not in proc.stdout and not re.search(r":[a-z]+:`", proc.stdout), (command, proc.stdout)


def test_bad_targets_and_tabs_are_errors(book: Path) -> None:
    proc = tabbook(book, "build", "deploy")
    assert proc.returncode == 2 and "'deploy' is not a build target (eval, rst, html" in proc.stderr
    proc = tabbook(book, "build", "html", "--tab", "rust")
    assert proc.returncode == 1 and "--tab: unknown tab 'rust' (tabs: plain, stdlib, or all)" in proc.stderr
    proc = tabbook(book, "build", "--tab", "plain", "--frameworks", "plain")
    assert proc.returncode == 1 and "--tab and --frameworks say the same thing" in proc.stderr


def test_make_d2lbook_book_applies_no_overlay_unless_given() -> None:
    """d2l-en's overlay is for d2l-en: any other book is built with its own config.ini alone."""
    def recipe(*args: str) -> str:
        proc = subprocess.run(["make", "-n", "-W", "envs/builder.txt", "d2lbook-book", "BOOK=/books/other", *args],
                              cwd=ROOT, capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, proc.stderr
        return next(" ".join(line.split()) for line in proc.stdout.splitlines() if "tabbook -C /books/other" in line)

    assert "--overlay" not in recipe() and recipe().endswith("build --no-execute")
    assert "--overlay books/d2l-en/tabbook.ini build --execute" in recipe("OVERLAY=books/d2l-en/tabbook.ini", "EXECUTE=1")
