"""The fault catalog (issue 13): faults a user can make, injected one at a time into a small book.

For each fault the build (or the command named) must exit non-zero with the exact
``file.md:LINE`` (``file.md:LINE:COL`` for a bad byte) and message, leave the book's tree as
it was (sources but the faulty one, the freeze store, the generated ``d2l/``; no temporary
file anywhere, ``build/`` included), and the next build after the fault is undone must pass.

The book is ``test_d2lbook_build.make_book``'s two-tab fixture with execution on; both tabs run
in the builder's own Python, so a build takes seconds. One clean build is made once and copied
for every fault, so each fault costs one failing and one recovering incremental build.

A fault of a kind d2lbook builds past (issue 44, ``tabbook.problems``) fails only a ``--strict``
build, which still goes on to the end (so the store and ``d2l/`` may gain whole entries); a plain
build says the same as a ``warning:`` and exits 0.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from test_d2lbook_build import make_book, tabbook


@dataclass(frozen=True)
class Fault:
    id: str
    page: str  # the file the fault is put in (relative to the book)
    inject: Callable[[str], str]  # old text -> faulty text
    where: str  # the text on the line the error must name (first line that contains it)
    message: str  # a part of the message
    args: tuple[str, ...] = ("build",)
    column: int | None = None
    # Faults outside the book's pages: the exact location expected (file:LINE:), and what
    # undoing the fault means is restoring that file (the overlay is outside the book).
    at: str | None = None
    # The kind of a problem d2lbook builds past (tabbook.problems): a plain build reports it as a
    # ``warning:`` at the same place and exits 0; the fault's own run is ``--strict``.
    kind: str | None = None


def append(text: str) -> Callable[[str], str]:
    return lambda old: old + text


def replace(old_part: str, new_part: str) -> Callable[[str], str]:
    def inject(old: str) -> str:
        assert old_part in old, old_part
        return old.replace(old_part, new_part, 1)
    return inject


FIRST = "chapter_a/first.md"
SECOND = "chapter_a/second.md"
CHAPTER = "chapter_a/index.md"
CELL = "\n```{.python .input}\n%%tab pytorch\n"

FAULTS = [
    # --- the dialect -----------------------------------------------------------------------------
    Fault("tab-line-unknown-framework", SECOND, append(CELL.replace("pytorch", "pytroch") + "x = 1\n```\n"),
          "%%tab pytroch", "unknown framework 'pytroch'",
          args=("build", "--strict"), kind="unknown-tab"),
    Fault("legacy-tab-line-unknown-framework", SECOND,
          append("\n```{.python .input}\n#@tab mxnet, jaxx\nx = 1\n```\n"), "#@tab mxnet, jaxx",
          "unknown framework 'jaxx'",
          args=("build", "--strict"), kind="unknown-tab"),
    Fault("tab-selected-misspelt", FIRST, replace("if tab.selected('pytorch'):", "if tab.selected('pytroch'):"),
          "tab.selected('pytroch')", "tab.selected names unknown framework 'pytroch'"),
    Fault("tab-selected-misspelt-in-elif", SECOND,
          append(CELL.replace("pytorch", "pytorch, mxnet") + "if tab.selected('pytorch'):\n    a = 1\n"
                 "elif tab.selected('mxnet', 'tensorfow'):\n    a = 2\n```\n"),
          "elif tab.selected('mxnet', 'tensorfow')", "unknown framework 'tensorfow'"),
    Fault("begin-tab-unknown-framework", FIRST, append("\n:begin_tab:`jax`\nJAX words.\n:end_tab:\n"),
          ":begin_tab:`jax`", "unknown framework 'jax'",
          args=("build", "--strict"), kind="unknown-tab"),
    Fault("end-tab-without-begin", FIRST, append("\nSome words.\n:end_tab:\n"), ":end_tab:",
          ":end_tab: without a matching :begin_tab:",
          args=("build", "--strict"), kind="stray-end-tab"),
    Fault("code-fence-never-closed", SECOND, append(CELL + "x = 1\n"), "```{.python .input}\n%%tab pytorch\nx = 1",
          "code fence is never closed"),
    Fault("tab-line-not-first", SECOND, append("\n```{.python .input}\nx = 1\n%%tab mxnet\n```\n"), "%%tab mxnet\n```",
          "%%tab must be the first line",
          args=("build", "--strict"), kind="tab-not-first"),
    Fault("code-cell-inside-prose-tab", FIRST,
          append("\n:begin_tab:`pytorch`\nWords.\n" + CELL + "x = 1\n```\n:end_tab:\n"),
          "```{.python .input}\n%%tab pytorch\nx = 1", "code cell inside the prose tab",
          args=("build", "--strict"), kind="code-in-prose-tab"),
    Fault("mixed-tabs-and-spaces", SECOND, append(CELL + "if True:\n    a = 1\n\tb = 2\n```\n"), "\tb = 2",
          "both tabs and spaces"),
    Fault("toc-maxdepth-not-integer", CHAPTER, replace(":maxdepth: 2", ":maxdepth: two"), ":maxdepth: two",
          ":maxdepth: needs an integer",
          args=("build", "--strict"), kind="toc-option"),
    # --- references, images, the table of contents ----------------------------------------------
    Fault("duplicate-label", SECOND, append("\n## Again\n:label:`sec_first`\n"), ":label:`sec_first`",
          "duplicate label 'sec_first'",
          args=("build", "--strict"), kind="duplicate-label"),
    Fault("undefined-label", FIRST, append("\nSee :numref:`sec_nowhere`.\n"), ":numref:`sec_nowhere`",
          "to undefined label 'sec_nowhere'",
          args=("build", "--strict"), kind="undefined-reference"),
    Fault("missing-image", FIRST, append("\n![A plot](../img/missing.svg)\n"), "![A plot]",
          "image file ../img/missing.svg does not exist",
          args=("build", "--strict"), kind="missing-image"),
    Fault("toc-entry-missing", CHAPTER, replace("second\n", "second\nthird\n"), "third",
          "toc entry 'third': chapter_a/third.md does not exist",
          args=("build", "--strict"), kind="toc-entry"),
    Fault("toc-entry-is-a-directory", CHAPTER, replace("second\n", "second\nparts\n"), "parts",
          "chapter_a/parts.md does not exist (parts is a directory: list its page, e.g. parts/index)",
          args=("build", "--strict"), kind="toc-entry"),
    Fault("toc-entry-names-a-directory-ending-in-md", CHAPTER, replace("second\n", "second\nnotes.md\n"),
          "notes.md", "chapter_a/notes.md is a directory, not a Markdown file",
          args=("build", "--strict"), kind="toc-entry"),
    # A warning (the page builds as an orphan, as in d2lbook): an error in a strict build.
    Fault("page-not-in-any-toc", "chapter_a/orphan.md", lambda _: "# Orphan\n\nNobody lists me.\n", "# Orphan",
          "section is not listed in any ```toc block", args=("build", "--strict"), kind="orphan-page"),
    # --- paths that leave the book (issue 33, item 4): nothing is written or published there -------
    Fault("toc-entry-outside-the-book", CHAPTER, replace("second\n", "second\n../../outside/page\n"),
          "../../outside/page", "toc entry '../../outside/page': ../outside/page.md leaves the book's folder"),
    Fault("toc-entry-absolute", CHAPTER, replace("second\n", "second\n/etc/page\n"), "/etc/page",
          "toc entry '/etc/page': /etc/page.md leaves the book's folder"),
    Fault("image-outside-the-book", FIRST, append("\n![Secret](../../outside.png)\n"), "![Secret]",
          "image file ../../outside.png is outside the book's folder"),
    Fault("eval-rst-image-outside-the-book", FIRST,
          append("\nText.\n\n```eval_rst\n.. image:: ../../../../outside.png\n```\n"),
          ".. image:: ../../../../outside.png", "image file ../../../../outside.png is outside the book's folder"),
    Fault("index-outside-the-book", "config.ini", replace("[build]\n", "[build]\nindex = ../index\n"),
          "index = ../index", "[build] index '../index' is outside the book's folder"),
    Fault("freeze-dir-outside-the-book", "config.ini", replace("[build]\n", "[build]\nfreeze_dir = ../store\n"),
          "freeze_dir = ../store", "[build] freeze_dir names ../store, which is outside the book's folder"),
    Fault("freeze-dir-inside-build", "config.ini", replace("[build]\n", "[build]\nfreeze_dir = build/store\n"),
          "freeze_dir = build/store", "[build] freeze_dir names build/store, inside build/"),
    Fault("library-dir-absolute", "config.ini", replace("[build]\n", "[build]\nlibrary_dir = /tmp/d2l\n"),
          "library_dir = /tmp/d2l", "[build] library_dir names /tmp/d2l, which is outside the book's folder"),
    Fault("library-dir-is-the-root", "config.ini", replace("[build]\n", "[build]\nlibrary_dir = .\n"),
          "library_dir = .", "[build] library_dir names ., the book's root itself"),
    Fault("root-files-outside-the-book", "config.ini", replace("[build]\n", "[build]\nroot_files = ../secret.txt\n"),
          "root_files = ../secret.txt", "[build] root_files names ../secret.txt, which is outside the book's folder"),
    Fault("resources-outside-the-book", "config.ini", replace("resources = img/ data.txt", "resources = img/ ../data"),
          "resources = img/ ../data", "[build] resources names ../data, which is outside the book's folder"),
    Fault("offline-requirements-outside-the-book", "config.ini",
          replace("[build]\n", "[build]\noffline_requirements = ../reqs.txt\n"), "offline_requirements = ",
          "[build] offline_requirements names ../reqs.txt, which is outside the book's folder"),
    Fault("bibfile-outside-the-book", "config.ini", replace("bibfile = mini.bib", "bibfile = ../mini.bib"),
          "bibfile = ../mini.bib", "[pdf] bibfile names ../mini.bib, which is outside the book's folder"),
    Fault("lib-file-outside-the-book", "config.ini", replace("lib_file = d2l/torch.py", "lib_file = ../torch.py"),
          "lib_file = ../torch.py", "[library-pytorch] lib_file names ../torch.py, which is outside the book's folder"),
    # --- bytes -------------------------------------------------------------------------------------
    Fault("not-utf8", FIRST, append("\nCaf\udce9 au lait.\n"), "Caf", "not UTF-8 text: byte 0xe9", column=4),
    Fault("empty-page", SECOND, lambda _: "\n\n", "", "the file is empty"),
    # --- the library -------------------------------------------------------------------------------
    Fault("save-not-top-level", SECOND, append(CELL + "if True:\n    def f():  #@save\n        return 1\n```\n"),
          "def f():  #@save", "#@save marks a statement that is not top-level"),
    Fault("save-cell-syntax-error", SECOND, append(CELL + "#@save\ndef f(:\n    return 1\n```\n"), "def f(:",
          "syntax error in a #@save cell"),
    Fault("saved-code-uses-a-name-nothing-saves", SECOND,
          append(CELL + "#@save\ndef g():\n    return d2l.nothing_saves_this()\n```\n"),
          "return d2l.nothing_saves_this()", "nothing_saves_this"),
    # --- execution -----------------------------------------------------------------------------------
    Fault("cell-raises", SECOND, append(CELL + "a = 1\nraise ValueError('broken on purpose')\n```\n"),
          "raise ValueError('broken on purpose')", "[pytorch] unexpected error"),
    Fault("raises-mark-but-no-error", SECOND, append(CELL + "#@raises ValueError\nx = 1\n```\n"),
          "```{.python .input}\n%%tab pytorch\n#@raises ValueError", "did not raise"),
    # --- rendering (Sphinx's warnings, at the Markdown line) -----------------------------------------
    Fault("cite-key-missing", FIRST, append("\nAs :cite:`nobody2020` showed.\n"), ":cite:`nobody2020`",
          'could not find bibtex key "nobody2020"',
          args=("build", "--strict"), kind="missing-citation"),
    Fault("cite-key-missing-after-code", SECOND, append("\nThen :cite:`nobody2021` said.\n"),
          ":cite:`nobody2021`", 'could not find bibtex key "nobody2021"',
          args=("build", "--strict"), kind="missing-citation"),
    Fault("unknown-document", CHAPTER, append("\nRead {doc}`nothing-here` too.\n"), "{doc}`nothing-here`",
          "unknown document",
          args=("build", "--strict"), kind="sphinx"),
    Fault("eval-rst-unknown-directive", FIRST, append("\n```eval_rst\n.. notadirective:: x\n```\n"),
          ".. notadirective::", 'Unknown directive type "notadirective"',
          args=("build", "--strict"), kind="sphinx"),
    Fault("eval-rst-image-missing", FIRST, append("\nText.\n\n```eval_rst\n.. image:: ../img/nothere.png\n```\n"),
          ".. image:: ../img/nothere.png", "nothere.png",
          args=("build", "--strict"), kind="missing-image"),
    # --- environments (the overlay, outside the book; its path is given relative to it) --------------
    Fault("tab-without-environment", "OVERLAY", replace("[framework:mxnet]\npython = current\n", "[framework:mxnet]\n"),
          "", "tab 'mxnet' has no environment to run its code", at="config.ini:12:"),
    Fault("lock-file-missing", "OVERLAY",
          replace("[framework:mxnet]\npython = current\n", "[framework:mxnet]\nrequirements = mx-lock.txt\n"),
          "", "[framework:mxnet] requirements names mx-lock.txt, which does not exist", at="OVERLAY:6:"),
    Fault("lock-names-a-missing-local-package", "OVERLAY",
          replace("[framework:mxnet]\npython = current\n", "[framework:mxnet]\nrequirements = ok-lock.txt\n"),
          "", "the mxnet lock names", at="LOCK:1:"),
    # --- the PDF command -----------------------------------------------------------------------------
    Fault("pdf-from-a-stale-store", SECOND, replace("print('second says', {value})".format(value="6 * 7"),
                                                    "print('second says', 7 * 6)"),
          "```{.python .input}\n%%tab pytorch\nprint('second says'", "freeze entry", args=("pdf", "--frozen")),
]


def tree(book: Path, outputs: bool = True) -> dict[str, str]:
    """Every file of the book outside build/ (hash), and any temporary file anywhere.
    ``outputs=False``: not the freeze store's entries nor the generated library, which a build
    that goes on past a problem of a kind (a strict one included) writes whole, as any build does."""
    out = {}
    for path in sorted(book.rglob("*")):
        rel = path.relative_to(book).as_posix()
        if path.name.endswith(".tmp") or ".tmp" in path.name:
            out[rel] = "TEMPORARY FILE"
        elif path.is_file() and not rel.startswith("build/") and (outputs or not rel.startswith(("_freeze/", "d2l/"))):
            out[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


@pytest.fixture(scope="module")
def clean_book(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    base = tmp_path_factory.mktemp("catalog")
    book, overlay = make_book(base, eval_notebook=True)
    (book / "chapter_a" / "parts").mkdir()
    (book / "chapter_a" / "notes.md").mkdir()
    proc = tabbook(book, overlay, "build")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return book, overlay


def expected_line(text: str, where: str) -> int:
    """The line of the last occurrence of ``where`` (faults are mostly appended); 1 for ""."""
    return text.count("\n", 0, text.rindex(where)) + 1 if where else 1


@pytest.mark.parametrize("fault", FAULTS, ids=[f.id for f in FAULTS])
def test_fault_is_located_leaves_the_tree_and_recovers(fault: Fault, clean_book: tuple[Path, Path],
                                                       tmp_path: Path) -> None:
    src, overlay = clean_book
    book = tmp_path / "book"
    shutil.copytree(src, book, symlinks=True)
    (tmp_path / ".cache").mkdir(exist_ok=True)
    page = overlay if fault.page == "OVERLAY" else book / fault.page
    if fault.page == "OVERLAY":  # a copy of the overlay of our own, with a lock beside it
        page = tmp_path / "overlay" / "tabbook.ini"
        page.parent.mkdir()
        page.write_text(overlay.read_text())
        (page.parent / "ok-lock.txt").write_text("./no-such-package\n")
        overlay = page
    old = page.read_text(encoding="utf-8") if page.is_file() else None
    new = fault.inject(old or "")
    page.write_bytes(new.encode("utf-8", errors="surrogateescape"))
    before = tree(book, outputs=fault.kind is None)

    proc = tabbook(book, overlay, *fault.args)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out
    line = expected_line(new, fault.where)
    where = f"{fault.page}:{line}" + (f":{fault.column}" if fault.column else "") + ":"
    if fault.at:
        where = fault.at.replace("OVERLAY", str(overlay)).replace("LOCK", str(overlay.parent / "ok-lock.txt"))
    located = [x for x in out.splitlines() if x.startswith(where)]
    assert located and any(fault.message in x for x in located), f"want {where} … {fault.message}\n{out}"
    if fault.kind is not None:
        # d2lbook's contract: the strict build listed it with its kind; a plain one builds past it,
        # saying the same as a warning, and exits 0.
        assert any(x.endswith(f"[{fault.kind}]") for x in located), out
        plain = tabbook(book, overlay, *(a for a in fault.args if a != "--strict"))
        assert plain.returncode == 0, plain.stdout + plain.stderr
        assert any(x.startswith(f"warning: {where}") and fault.message in x and x.endswith(f"[{fault.kind}]")
                   for x in plain.stdout.splitlines()), plain.stdout + plain.stderr
    if fault.id == "cell-raises":  # the only traceback a user sees is the one their code raised
        assert "ValueError: broken on purpose" in out
    else:
        assert "Traceback (most recent call last)" not in out, out
    assert tree(book, outputs=fault.kind is None) == before  # nothing half-written, nothing from the faulty source

    if old is None:
        page.unlink()
    else:
        page.write_text(old, encoding="utf-8")
    proc = tabbook(book, overlay, "build")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    if fault.args[0] == "pdf":
        return
    assert os.path.isfile(book / "build" / "html" / "index.html")


def test_a_rendering_problem_is_reported_again_until_it_is_fixed(clean_book: tuple[Path, Path],
                                                                  tmp_path: Path) -> None:
    """Sphinx reads a page again only when it changed; the warning must not vanish on the next build."""
    src, overlay = clean_book
    book = tmp_path / "book"
    shutil.copytree(src, book, symlinks=True)
    first = book / FIRST
    first.write_text(first.read_text() + "\nAs :cite:`nobody2022` showed.\n")
    line = first.read_text().count("\n")  # the appended line
    want = f'{FIRST}:{line}: could not find bibtex key "nobody2022"'
    for _ in range(2):  # the second build changes nothing, and still fails the same way
        proc = tabbook(book, overlay, "build", "--strict")
        assert proc.returncode == 1 and want in proc.stdout + proc.stderr, proc.stdout + proc.stderr
    proc = tabbook(book, overlay, "build")  # and a plain one still says it, as a warning
    assert proc.returncode == 0 and f"warning: {want}" in proc.stdout, proc.stdout + proc.stderr
