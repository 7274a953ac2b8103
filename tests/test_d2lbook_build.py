"""A book written for d2lbook builds as it is (issue 12, items 5, 7 and 8): fixture books of our own.

The fixture is laid out the way d2lbook books are: no ``conf.py``, a ``config.ini``
with d2lbook's keys only (``release``, ``eval_notebook``, ``notebooks``,
``exclusions``, ``resources``, ``[pdf] bibfile``, ``[library-<tab>] lib_file``) and
no ``[framework:<tab>]`` section; what tabbook alone needs (where each tab's code
runs) comes from an overlay kept outside the book. Both tabs run in the
builder's own Python (``python = current``), so real kernels and a real Sphinx
run take seconds.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from prerequisites import require

from tabbook.config import OVERLAY_ENV, load_config
from tabbook.errors import BookError

ROOT = Path(__file__).resolve().parent.parent

CONFIG = """\
[project]
name = mini-d2l
title = A Mini Book
author = Tests
release = 2.5.0

[build]
notebooks = *.md */*.md
exclusions = README.md notes/*md
resources = img/ data.txt
eval_notebook = {eval}
tabs = pytorch, mxnet

[pdf]
bibfile = mini.bib

[library-pytorch]
lib_file = d2l/torch.py
lib_name = torch

[library-mxnet]
lib_file = d2l/mxnet.py
lib_name = np
"""

OVERLAY = """\
[framework:pytorch]
python = current
import = json

[framework:mxnet]
python = current
import = json
"""

INDEX = """\
Mini Book
=========

```toc
:maxdepth: 2
:numbered:

chapter_a/index
```
"""

CHAPTER = """\
# Chapter A
:label:`chap_a`

```toc
:maxdepth: 2

first
second
```
"""

FIRST = """\
# First
:label:`sec_first`

Read :numref:`sec_second` next; the next chapter is :numref:`{ref}`.

```{{.python .input}}
%%tab all
if tab.selected('pytorch'):
    lib = 'pt'
else:
    lib = 'mx'
print('running', lib)
```

:begin_tab:`pytorch`
PyTorch words.
:end_tab:

:begin_tab:`mxnet`
MXNet words.
:end_tab:
"""

SECOND = """\
# Second
:label:`sec_second`

```{{.python .input}}
%%tab pytorch
print('second says', {value})
```

```{{.python .input}}
%%tab mxnet
print('mxnet second')
```
"""


def make_book(tmp: Path, *, eval_notebook: bool = False, ref: str = "chap_a",
              second_value: str = "6 * 7") -> tuple[Path, Path]:
    """A d2lbook-style book under ``tmp/book`` and its overlay under ``tmp/overlay``."""
    book = tmp / "book"
    (book / "chapter_a").mkdir(parents=True)
    (book / "notes").mkdir()
    (book / "img").mkdir()
    (book / "config.ini").write_text(CONFIG.format(eval=eval_notebook))
    (book / "index.md").write_text(INDEX)
    (book / "chapter_a" / "index.md").write_text(CHAPTER)
    (book / "chapter_a" / "first.md").write_text(FIRST.format(ref=ref))
    (book / "chapter_a" / "second.md").write_text(SECOND.format(value=second_value))
    # Markdown that is not a page: excluded by name, excluded by glob, or deeper than `notebooks`.
    (book / "README.md").write_text("# Readme\n\n:numref:`nowhere`\n")
    (book / "notes" / "draft.md").write_text("# Draft\n\n:numref:`nowhere`\n")
    (book / "img" / "deep").mkdir()
    (book / "img" / "deep" / "x.md").write_text("# Deep\n\n:numref:`nowhere`\n")
    (book / "data.txt").write_text("a resource\n")
    (book / "mini.bib").write_text("@book{knuth84, title={The TeXbook}, author={Knuth, D.}, publisher={AW}, year={1984}}\n")
    overlay = tmp / "overlay" / "tabbook.ini"
    overlay.parent.mkdir()
    overlay.write_text(OVERLAY)
    return book, overlay


def tabbook(book: Path, overlay: Path | None, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TABBOOK_CACHE": str(book.parent / ".cache")}
    env.pop(OVERLAY_ENV, None)
    cmd = [sys.executable, "-m", "tabbook", "-C", str(book)]
    if overlay is not None:
        cmd += ["--overlay", str(overlay)]
    return subprocess.run([*cmd, *args], cwd=ROOT, capture_output=True, text=True, env=env, timeout=600)


def statuses(book: Path) -> dict[tuple[str, str], str]:
    data = json.loads((book / "build" / "report.json").read_text())
    return {(u["section"], u["framework"]): u["status"] for u in data["units"]}


# --- item 7: d2lbook's config.ini as it is, plus an overlay ------------------------------------

def test_d2lbook_config_is_read_with_d2lbook_meaning(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    book, _ = make_book(tmp_path)
    monkeypatch.delenv(OVERLAY_ENV, raising=False)
    config = load_config(book)
    assert config.version == "2.5.0"  # [project] release
    assert config.execute is False  # [build] eval_notebook = False
    assert config.bibfile == book / "mini.bib"  # [pdf] bibfile
    assert config.resources == ("img", "data.txt")
    pt, mx = config.framework("pytorch"), config.framework("mxnet")
    assert (pt.label, pt.module, pt.import_name) == ("PyTorch", "torch", "torch")
    assert (mx.label, mx.module, mx.import_name) == ("MXNet", "mxnet", "mxnet")
    assert not pt.has_env and not mx.has_env  # nothing says where their code runs
    assert config.excluded("README.md") and config.excluded("notes/draft.md")
    assert config.excluded("img/deep/x.md")  # `*/*.md` is two levels, as in d2lbook
    assert not config.excluded("chapter_a/first.md") and not config.excluded("index.md")


def test_overlay_supplies_environments_relative_to_itself(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    book, overlay = make_book(tmp_path)
    lock = overlay.parent / "locks" / "pt.txt"
    lock.parent.mkdir()
    lock.write_text("numpy==2.1.0\n")
    overlay.write_text("[framework:pytorch]\nrequirements = locks/pt.txt\nlabel = Torch\n")
    monkeypatch.setenv(OVERLAY_ENV, str(overlay))
    config = load_config(book)
    assert config.framework("pytorch").requirements == lock.resolve()
    assert config.framework("pytorch").label == "Torch"
    assert config.framework("pytorch").module == "torch"  # still from [library-pytorch] lib_file
    assert config.overlay == overlay.resolve()
    # an overlay's mistake names the overlay file and line
    overlay.write_text("[framework:pytorch]\n\nrequirements = locks/none.txt\n")
    with pytest.raises(BookError) as err:
        load_config(book)
    assert str(err.value).startswith(f"{overlay.resolve()}:3: [framework:pytorch] requirements names locks/none.txt")


def test_tabbook_ini_at_the_root_is_the_default_overlay(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    book, overlay = make_book(tmp_path)
    monkeypatch.delenv(OVERLAY_ENV, raising=False)
    (book / "tabbook.ini").write_text(overlay.read_text())
    config = load_config(book)
    assert config.framework("pytorch").has_env and config.framework("pytorch").python == "current"


def test_a_tab_without_environment_runs_in_the_builder_s_python_as_under_d2lbook(tmp_path: Path) -> None:
    """d2lbook runs every tab's code in the current kernel: a tab the book gives no environment
    runs in the builder's Python, with one line saying how to pin one (issue 52)."""
    book, overlay = make_book(tmp_path, eval_notebook=True)
    overlay.write_text("[framework:pytorch]\nimport = json\n\n[framework:mxnet]\nimport = json\n")
    proc = tabbook(book, overlay, "build", "--no-render")
    assert proc.returncode == 0, proc.stderr
    notes = [line for line in (proc.stdout + proc.stderr).splitlines() if "no environment given" in line]
    assert [n.split(":")[0] for n in notes] == ["[env] pytorch", "[env] mxnet"], notes
    assert f"the builder's Python ({sys.executable})" in notes[0] and "[framework:pytorch] a requirements" in notes[0]
    assert set(statuses(book).values()) == {"executed"}


def test_a_tab_whose_package_the_builder_s_python_lacks_names_the_import_key(tmp_path: Path) -> None:
    book, overlay = make_book(tmp_path, eval_notebook=True)
    proc = tabbook(book, None, "build", "--no-render")  # pytorch imports torch by default
    assert proc.returncode == 1
    first = proc.stderr.splitlines()[0]
    assert first.startswith("config.ini:12: the pytorch environment") and "cannot import torch" in first  # tabs
    assert "what tab 'pytorch' imports by default: set [framework:pytorch] import = PACKAGE" in first
    assert not (book / "_freeze").exists()
    overlay.write_text("[framework:pytorch]\nimport = json\n\n[framework:mxnet]\nimport = no_such_package\n")
    proc = tabbook(book, overlay, "build", "--no-render")
    assert proc.returncode == 1
    first = proc.stderr.splitlines()[0]
    assert first.startswith(f"{overlay}:5: the mxnet environment"), first  # the key's own line
    assert "cannot import no_such_package ([framework:mxnet] import = no_such_package, set at" in first


# --- item 5: execution off, and failures that do not stop the other pages ----------------------

def test_execution_off_renders_every_tab_code_without_outputs(tmp_path: Path) -> None:
    book, overlay = make_book(tmp_path, eval_notebook=False)
    proc = tabbook(book, overlay, "build")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert set(statuses(book).values()) == {"not-executed"}
    assert not (book / "_freeze").exists()  # nothing ran, nothing stored
    second = (book / "build" / "html" / "chapter_a" / "second.html").read_text()
    assert "second says" in second and "mxnet second" in second  # both tabs' code is there
    assert "second says 42" not in second  # and no output
    assert "Code shown without outputs (execution is off)" in second
    first = (book / "build" / "html" / "chapter_a" / "first.html").read_text()
    assert "running" in first and "PyTorch words." in first and "MXNet words." in first
    assert "tab.selected" not in first  # each tab shows its own resolved code
    # the book has no conf.py: tabbook wrote one under build/, not into the book
    assert not (book / "conf.py").exists() and (book / "build" / "sphinx-conf" / "conf.py").is_file()
    # d2lbook's [build] resources are visible beside the pages
    assert (book / "build" / "src" / "data.txt").resolve() == (book / "data.txt").resolve()
    # --execute overrides eval_notebook = False; a tab not selected still shows its code
    proc = tabbook(book, overlay, "build", "--execute", "--frameworks", "pytorch")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert statuses(book)[("chapter_a/second.md", "mxnet")] == "skipped"
    second = (book / "build" / "html" / "chapter_a" / "second.html").read_text()
    assert "second says 42" in second and "mxnet second" in second
    assert "MXNet: code shown without outputs (not run in this build)" in second
    proc = tabbook(book, overlay, "build", "--execute")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert {fw: st for (_, fw), st in statuses(book).items()} == {"pytorch": "reused", "mxnet": "executed"}
    assert "second says 42" in (book / "build" / "html" / "chapter_a" / "second.html").read_text()


def test_a_failed_unit_does_not_stop_the_other_pages(tmp_path: Path) -> None:
    book, overlay = make_book(tmp_path, eval_notebook=True, second_value="1 / 0")
    proc = tabbook(book, overlay, "build")
    assert proc.returncode == 1
    # item 11: the line that raised (the fence is line 4, %%tab line 5)
    assert "chapter_a/second.md:6: [pytorch] unexpected error" in proc.stderr
    assert "ZeroDivisionError" in proc.stderr
    got = statuses(book)
    assert got[("chapter_a/second.md", "pytorch")] == "failed"
    assert got[("chapter_a/second.md", "mxnet")] == "executed"
    assert got[("chapter_a/first.md", "pytorch")] == "executed"
    html = book / "build" / "html" / "chapter_a"
    assert "running pt" in (html / "first.html").read_text()  # the other page rendered, with outputs
    second = (html / "second.html").read_text()
    assert "second says" in second and "mxnet second" in second  # failed tab: its code, no outputs
    assert "execution failed" in second
    # fixed, the next build recovers and runs only what failed
    (book / "chapter_a" / "second.md").write_text(SECOND.format(value="6 * 7"))
    proc = tabbook(book, overlay, "build")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert statuses(book)[("chapter_a/second.md", "pytorch")] == "executed"
    assert statuses(book)[("chapter_a/first.md", "pytorch")] == "reused"


# --- item 8: partial builds warn about references to the rest of the book ----------------------

def test_partial_build_renders_references_out_of_the_book_as_text(tmp_path: Path) -> None:
    book, overlay = make_book(tmp_path, ref="chap_elsewhere")
    proc = tabbook(book, overlay, "build", "--strict")
    assert proc.returncode == 1  # a strict build fails on it
    assert "chapter_a/first.md:4: :numref: to undefined label 'chap_elsewhere'" in proc.stderr
    proc = tabbook(book, overlay, "check", "--partial")
    assert proc.returncode == 0
    assert "warning: chapter_a/first.md:4: :numref: to undefined label 'chap_elsewhere'" in proc.stderr
    proc = tabbook(book, overlay, "build", "--partial")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "warning: chapter_a/first.md:4: :numref: to undefined label 'chap_elsewhere'" in proc.stdout
    first = (book / "build" / "html" / "chapter_a" / "first.html").read_text()
    assert 'class="tabbook-unresolved">chap_elsewhere<' in first
    assert 'href="second.html' in first  # references inside the partial book still link


# A prose tab left open (closed by the next one, with a warning at its line, both tabs' prose
# kept): tests/snapshots/constructs/prose_tab_unclosed.md, without a build.


def test_a_run_time_error_names_the_line_that_raised(tmp_path: Path) -> None:
    book, overlay = make_book(tmp_path, eval_notebook=True)
    (book / "chapter_a" / "second.md").write_text(
        "# Second\n:label:`sec_second`\n\n"
        "```{.python .input}\n%%tab all\ndef ratio(a, b):\n    scale = 2\n\n"
        "    return scale * a / b\n```\n\n"
        "Prose between.\n\n"
        "```{.python .input}\n%%tab all\nx = ratio(1, 2)\nif tab.selected('mxnet'):\n    y = 1\n"
        "else:\n    y = 0\nz = ratio(1, y)\nprint(z)\n```\n")
    proc = tabbook(book, overlay, "build", "--no-render")
    assert proc.returncode == 1
    # line 21 calls ratio(1, 0) in the PyTorch tab, not the cell's fence (line 14) or the def (line 6)
    assert "chapter_a/second.md:21: [pytorch] unexpected error" in proc.stderr, proc.stderr
    assert "[mxnet]" not in proc.stderr


def test_a_no_op_build_runs_no_sphinx_and_any_input_change_does(tmp_path: Path) -> None:
    book, overlay = make_book(tmp_path)
    assert tabbook(book, overlay, "build").returncode == 0
    page = book / "build" / "html" / "chapter_a" / "second.html"
    before = page.stat().st_mtime_ns
    proc = tabbook(book, overlay, "build")
    assert proc.returncode == 0 and "nothing changed: build/html is current" in proc.stdout
    assert page.stat().st_mtime_ns == before
    # a resource the pages may use (d2lbook's [build] resources) changed: Sphinx runs
    (book / "data.txt").write_text("another resource\n")
    proc = tabbook(book, overlay, "build")
    assert proc.returncode == 0 and "nothing changed" not in proc.stdout
    # a prose edit: Sphinx runs and the page shows it
    first = book / "chapter_a" / "first.md"
    first.write_text(first.read_text().replace("Read ", "Now read "))
    proc = tabbook(book, overlay, "build")
    assert proc.returncode == 0 and "nothing changed" not in proc.stdout
    assert "Now read" in (book / "build" / "html" / "chapter_a" / "first.html").read_text()
    # the same sources in a partial build render the same site (a reference that cannot resolve
    # is its text in every build, d2lbook's contract): nothing to do
    proc = tabbook(book, overlay, "build", "--partial")
    assert proc.returncode == 0 and "nothing changed" in proc.stdout


APIDOC = """\
# The API
:label:`sec_api`

```{.python .input}
%%tab pytorch
import torch  # not installed beside the builder: autodoc mocks it

#@save
def device_count():
    \"\"\"How many devices torch sees.\"\"\"
    return torch.cuda.device_count()

#@save
class Thing(torch.nn.Module):
    \"\"\"A thing the API page documents.\"\"\"

    # Evaluated when d2l.torch is imported: with torch mocked, int() of a mock fails, so
    # importing the module for autodoc would lose the whole page.
    def __init__(self, sizes, gpus=int(device_count())):
        super().__init__()

    def grow(self, by):
        \"\"\"Grow it by some amount.\"\"\"
        return by

    def _hidden(self):
        \"\"\"Private: not listed.\"\"\"

    def quiet(self):
        return 0

@d2l.add_to_class(Thing)  #@save
def shrink(self, by, *, floor=0):
    \"\"\"Shrink it, added to the class in a later cell.\"\"\"
    return max(by, floor)
```

```eval_rst
.. currentmodule:: d2l.torch
```

```eval_rst
.. autoclass:: Thing
   :members:

.. autofunction:: device_count
```

:bibliography:`../mini.bib`
"""


def test_api_page_with_autodoc_and_the_bibliography_where_the_book_puts_it(tmp_path: Path) -> None:
    book, overlay = make_book(tmp_path)
    (book / "chapter_a" / "api.md").write_text(APIDOC)
    (book / "chapter_a" / "index.md").write_text(CHAPTER.replace("second\n", "second\napi\n"))
    first = book / "chapter_a" / "first.md"
    first.write_text(first.read_text() + "\nAs :citet:`knuth84` wrote.\n")
    proc = tabbook(book, overlay, "build")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "WARNING" not in proc.stderr and "ERROR" not in proc.stderr, proc.stderr
    api = (book / "build" / "html" / "chapter_a" / "api.html").read_text()
    assert "A thing the API page documents." in api and "Grow it by some amount." in api
    # Read from the generated source (tabbook.render.ext.apidoc), not by importing it: the class
    # signature is __init__'s without self, methods added with add_to_class are members,
    # private and undocumented methods are not (autodoc's defaults).
    text = re.sub(r"<[^>]+>", "", api[api.index('<dl class="py class">'):])  # the entries, not the cell
    assert "Thing(sizes, gpus=int(device_count()))" in text
    assert "shrink(by, *, floor=0)" in text and "added to the class in a later cell" in api
    assert "_hidden" not in text and "quiet" not in text
    assert "device_count()" in text and "How many devices torch sees." in api
    assert 'id="d2l.torch.Thing.grow"' in api and 'id="d2l.torch.device_count"' in api
    assert 'href="api.html"' in api or 'href="#"' in api  # "Defined in" links to its section
    assert "The TeXbook" in api  # the bibliography, on the page that places it
    assert not (book / "build" / "src" / "references.md").exists()  # and no second one
    assert "api.html#id" in (book / "build" / "html" / "chapter_a" / "first.html").read_text() or \
        "api.html#knuth84" in (book / "build" / "html" / "chapter_a" / "first.html").read_text()


def test_the_library_is_generated_again_only_when_its_inputs_change(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import tabbook.library.generate as generate
    from tabbook.book import read_book
    from tabbook.library.cache import book_library

    book, overlay = make_book(tmp_path)
    monkeypatch.setenv(OVERLAY_ENV, str(overlay))
    first = book_library(read_book(load_config(book)))
    calls: list[int] = []
    real = generate.generate_library
    monkeypatch.setattr(generate, "generate_library", lambda *a, **k: calls.append(1) or real(*a, **k))
    assert book_library(read_book(load_config(book))) == first and calls == []  # from the cache
    page = book / "chapter_a" / "second.md"
    page.write_text(page.read_text().replace("print('mxnet second')", "def twice(x):  #@save\n    return 2 * x"))
    again = book_library(read_book(load_config(book)))
    assert calls == [1] and "def twice(x):" in again["d2l/mxnet.py"]
    (book / "build" / "library-cache.json").write_text("{not json")  # a broken cache is only slower
    assert book_library(read_book(load_config(book))) == again and calls == [1, 1]
    # Prose saves nothing: a prose edit, even one that moves every line below it, reuses it.
    page.write_text(page.read_text().replace("\n\n", "\n\nA new sentence,\non two lines.\n\n", 1))
    assert book_library(read_book(load_config(book))) == again and calls == [1, 1]
    # A title is part of the saved code's "Defined in" line.
    page.write_text(page.read_text().replace("# ", "# Renamed: ", 1))
    renamed = book_library(read_book(load_config(book)))
    assert calls == [1, 1, 1] and "Renamed: " in renamed["d2l/mxnet.py"]


def test_library_problems_from_the_cache_keep_their_markdown_lines(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A library with problems is generated again after any page edit, so the lines it names
    are where the problem now is (a cached problem would name the line before the edit)."""
    from tabbook.book import read_book
    from tabbook.library.cache import book_library

    book, overlay = make_book(tmp_path)
    monkeypatch.setenv(OVERLAY_ENV, str(overlay))
    page = book / "chapter_a" / "second.md"
    page.write_text(page.read_text().replace("print('mxnet second')",
                                             "def calls():  #@save\n    return d2l.nowhere()"))
    first = read_book(load_config(book))
    _ = book_library(first)
    [problem] = [p for p in first.library_problems if "nowhere" in p.message]
    page.write_text(page.read_text().replace("\n\n", "\n\nTwo more\nlines.\n\n", 1))
    again = read_book(load_config(book))
    _ = book_library(again)
    [moved] = [p for p in again.library_problems if "nowhere" in p.message]
    assert moved.line == problem.line + 3


# --- an environment's lock may name a local package beside it (books/d2l-en's torchvision shim) ---

def test_a_lock_names_a_local_package_relative_to_itself(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tabbook.config import Framework
    from tabbook.execute.envs import ensure_env, local_requirements, lock_hash

    locks = tmp_path / "locks"
    (locks / "shim").mkdir(parents=True)
    (locks / "shim" / "mod.py").write_text("X = 1\n")
    lock = locks / "fw.txt"
    lock.write_text("numpy==2.3.5\n./shim  # beside this file\n../elsewhere.whl\n")
    assert local_requirements(lock) == [(2, locks / "shim"), (3, tmp_path / "elsewhere.whl")]
    fw = Framework("fw", "FW", "fw", "fw", lock, None, "3.11")
    before = lock_hash(fw)
    (locks / "shim" / "mod.py").write_text("X = 2\n")  # the package changed: a new environment
    assert lock_hash(fw) != before
    # A path that is not there is a located error before any venv is made.
    config = load_config(make_book(tmp_path)[0])
    monkeypatch.setenv("TABBOOK_VENVS", str(tmp_path / "venvs"))
    with pytest.raises(BookError) as err:
        ensure_env(config, fw)
    assert err.value.line == 3 and "elsewhere.whl, which does not exist" in err.value.message
    assert not (tmp_path / "venvs").exists()


LIBRARY_SECTION = """\
# Library

```{.python .input}
%%tab pytorch
import json  #@save

#@save
def dumps(x):
    return json.dumps(x)
```

```{.python .input}
%%tab mxnet
import not_a_module_anywhere  #@save

#@save
def dumps(x):
    return not_a_module_anywhere.dumps(x)
```
"""


def test_lib_import_imports_each_generated_module_in_its_environment(tmp_path: Path) -> None:
    book, overlay = make_book(tmp_path)
    (book / "chapter_a" / "second.md").write_text(LIBRARY_SECTION)
    proc = tabbook(book, overlay, "lib", "--import")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    lines = {line.split()[1]: line for line in proc.stdout.splitlines() if line.startswith("[lib] ")}
    assert "passed" in lines["pytorch"] and "import d2l.torch" in lines["pytorch"]
    assert "failed" in lines["mxnet"] and "d2l/mxnet.py" in lines["mxnet"]
    assert "No module named 'not_a_module_anywhere'" in lines["mxnet"]


def test_an_environment_is_checked_once_not_before_every_build(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """The subprocess import of the framework runs once per venv; later builds read its record."""
    import tabbook.execute.envs as envs
    from tabbook.config import Framework

    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    env = envs.Env("fw", venv / "bin" / "python", "hash")
    fw = Framework("fw", "FW", "fw", "fw", tmp_path / "lock.txt", None, "3.11")
    calls: list[str] = []
    monkeypatch.setattr(envs, "check_env", lambda config, fw, env: calls.append(fw.name) or "1.2.3")
    config = load_config(make_book(tmp_path)[0])
    assert [envs.checked_env(config, fw, env) for _ in range(3)] == ["1.2.3"] * 3
    assert calls == ["fw"] and (venv / envs.CHECKED).read_text() == "1.2.3\n"


# --- an existing interpreter instead of a locked venv (issue 17, item 1) ------------------------

def test_a_tab_runs_in_an_existing_interpreter_given_on_the_command_line(tmp_path: Path) -> None:
    """``--python mxnet=PATH``: the builder's own venv plays the foreign environment (it has
    ipykernel, as a CUDA image with Jupyter would); nothing is installed, the kernel runs there."""
    book, overlay = make_book(tmp_path, eval_notebook=True)
    overlay.write_text(overlay.read_text().replace("[framework:mxnet]\npython = current\n", "[framework:mxnet]\n"))
    foreign = Path(sys.executable)
    proc = tabbook(book, overlay, "--python", f"mxnet={foreign}", "build")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"[env] mxnet: existing interpreter {foreign} (json " in proc.stdout
    assert statuses(book)[("chapter_a/second.md", "mxnet")] == "executed"
    assert "mxnet second" in (book / "build" / "html" / "chapter_a" / "second.html").read_text()
    assert not (tmp_path / ".cache" / "venvs").exists()  # no venv was made for it
    # the same through the environment variable, and through the overlay's `interpreter` key
    env_proc = subprocess.run(
        [sys.executable, "-m", "tabbook", "-C", str(book), "--overlay", str(overlay), "build"],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
        env={**os.environ, "PYTHONPATH": str(ROOT), "TABBOOK_CACHE": str(tmp_path / ".cache"),
             "TABBOOK_PYTHON": f"mxnet={foreign}"})
    assert env_proc.returncode == 0, env_proc.stdout + env_proc.stderr
    overlay.write_text(overlay.read_text().replace("[framework:mxnet]\n", f"[framework:mxnet]\ninterpreter = {foreign}\n"))
    assert tabbook(book, overlay, "build").returncode == 0


def test_an_existing_interpreter_without_a_kernel_is_a_clear_error(tmp_path: Path) -> None:
    import glob

    bare = sorted(glob.glob(str(Path.home() / ".pyenv" / "versions" / "3.1[23]*" / "bin" / "python3.1[23]")))
    require(bare, "no bare Python 3.12/3.13 under ~/.pyenv")
    book, overlay = make_book(tmp_path, eval_notebook=True)
    overlay.write_text(overlay.read_text().replace("[framework:mxnet]\npython = current\n", "[framework:mxnet]\n"))
    proc = tabbook(book, overlay, "--python", f"mxnet={bare[0]}", "build")
    assert proc.returncode == 1
    assert f"the mxnet interpreter {bare[0]} cannot run a kernel (no ipykernel)" in proc.stderr
    proc = tabbook(book, overlay, "--python", "mxnet=/no/such/python", "build")
    assert proc.returncode == 1 and "mxnet=/no/such/python: no such interpreter" in proc.stderr
    proc = tabbook(book, overlay, "--python", "gluon=/usr/bin/python3", "build")
    assert proc.returncode == 1 and "unknown framework 'gluon'" in proc.stderr


# --- GPU outputs survive CPU builds (issue 17, item 3) -------------------------------------------

def test_a_gpu_entry_survives_a_cpu_build_until_its_code_changes(tmp_path: Path) -> None:
    book, overlay = make_book(tmp_path, eval_notebook=True)
    cpu_overlay = overlay.read_text()
    # "The GPU machine": another interpreter (another environment in the key) whose probe finds a GPU.
    overlay.write_text(cpu_overlay.replace("[framework:mxnet]\npython = current\nimport = json\n",
                                           "[framework:mxnet]\nimport = json\ngpu_probe = ['Fake GPU 0']\n"))
    proc = tabbook(book, overlay, "--python", f"mxnet={sys.executable}", "build")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "GPU outputs in 2 of 4 units (pytorch 0/2, mxnet 2/2)" in proc.stdout
    entry = book / "_freeze" / "chapter_a" / "second" / "mxnet.ipynb"
    gpu_entry = entry.read_bytes()
    # "The CPU host": the locked (here: the builder's own) environment, no GPU.
    overlay.write_text(cpu_overlay)
    proc = tabbook(book, overlay, "build")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert statuses(book)[("chapter_a/second.md", "mxnet")] == "reused" and entry.read_bytes() == gpu_entry
    report = json.loads((book / "build" / "report.json").read_text())
    devices = {(u["section"], u["framework"]): u.get("device") for u in report["units"]}
    assert devices[("chapter_a/second.md", "mxnet")] == "1× Fake GPU 0"
    assert devices[("chapter_a/second.md", "pytorch")] == "CPU only"
    assert "Outputs computed on 1× Fake GPU 0" in (book / "build" / "html" / "chapter_a" / "second.html").read_text() \
        or "computed on 1× Fake GPU 0" in (book / "build" / "html" / "chapter_a" / "second.html").read_text()
    assert tabbook(book, overlay, "build", "--frozen").returncode == 0  # make test's freshness check agrees
    # Its code changed: this host has no GPU, so the GPU entry is kept, marked outdated (issue 31),
    # until a build is told to run it here anyway; then CPU outputs from now on.
    second = book / "chapter_a" / "second.md"
    second.write_text(second.read_text().replace("print('mxnet second')", "print('mxnet second, edited')"))
    proc = tabbook(book, overlay, "build")
    assert proc.returncode == 0 and statuses(book)[("chapter_a/second.md", "mxnet")] == "outdated"
    assert "[mxnet] outputs kept from an earlier version of the code: its outputs were computed on 1× Fake " \
        "GPU 0 and this machine has no GPU" in proc.stdout and entry.read_bytes() == gpu_entry
    assert tabbook(book, overlay, "build", "--frozen").returncode == 1
    proc = tabbook(book, overlay, "build", "--execute-here")
    assert proc.returncode == 0 and statuses(book)[("chapter_a/second.md", "mxnet")] == "executed"
    assert "GPU outputs in 1 of 4 units (pytorch 0/2, mxnet 1/2)" in proc.stdout
