"""A partial build's library is the whole book's (issue 30, item 4).

``--partial`` builds a few chapters; their ``#@save`` code uses names that chapters outside the
selection save (d2l-en's ``d2l.Module``, saved in one chapter, subclassed and extended in many).
Those pages are read for their saved code only (never executed, rendered or checked), so the
generated ``d2l/`` is the full book's, and the selection runs against it. The library's order is
the whole book's index's when it is kept (the partial toc named with ``[build] index``); without
it the order is inferred from what the chapters use, with a warning when that may matter.
"""

from __future__ import annotations

from pathlib import Path

from test_d2lbook_build import make_book, tabbook

from tabbook.book import read_book
from tabbook.config import load_config
from tabbook.library.cache import book_library

BASE = """\
# Base
:label:`chap_base`

```{.python .input}
%%tab all
class Base:  #@save
    def hello(self):
        return 'base'

def shared():  #@save
    return 'from chapter b'

def add_to_class(Class):  #@save
    def register(method):
        setattr(Class, method.__name__, method)
    return register
```
"""

FIRST_USES_BASE = """\
# First
:label:`sec_first`

Read :numref:`sec_second` next; the base is in :numref:`chap_base`.

```{.python .input}
%%tab all
from d2l import torch as d2l

class Child(d2l.Base):  #@save
    pass

@d2l.add_to_class(d2l.Base)  #@save
def twice(self):
    return self.hello() * 2

print(Child().twice(), d2l.shared())
```
"""


def _whole_book(tmp_path: Path) -> tuple[Path, Path]:
    book, overlay = make_book(tmp_path, eval_notebook=True)
    (book / "chapter_b").mkdir()
    (book / "chapter_b" / "index.md").write_text(BASE)
    (book / "chapter_a" / "first.md").write_text(FIRST_USES_BASE)
    index = book / "index.md"
    index.write_text(index.read_text().replace("chapter_a/index\n", "chapter_b/index\nchapter_a/index\n"))
    return book, overlay


def _partial_index(book: Path, name: str) -> None:
    (book / name).write_text((book / "index.md").read_text().replace("chapter_b/index\n", ""))


def test_the_partial_library_is_the_whole_books(tmp_path: Path) -> None:
    book, _ = _whole_book(tmp_path)
    whole = book_library(read_book(load_config(book)))
    assert "class Child(Base)" in whole["d2l/torch.py"]
    # The whole index kept, the partial toc named in config.ini: the same library, byte for byte.
    _partial_index(book, "partial.md")
    config = book / "config.ini"
    config.write_text(config.read_text().replace("[build]\n", "[build]\nindex = partial.md\n", 1))
    partial = read_book(load_config(book), extra_files=False, whole_library=True)
    assert partial.toc == ["partial.md", "chapter_a/index.md", "chapter_a/first.md", "chapter_a/second.md"]
    assert "chapter_b/index.md" in partial.outside and not partial.outside_problems
    assert book_library(partial) == whole
    # index.md itself cut down to the selection: the order is inferred (Base before its users).
    config.write_text(config.read_text().replace("index = partial.md\n", ""))
    _partial_index(book, "index.md")
    inferred = read_book(load_config(book), extra_files=False, whole_library=True)
    assert inferred.library_order[:2] == ["index.md", "chapter_b/index.md"]
    assert book_library(inferred) == whole  # no name is saved twice here: nothing to warn about
    assert not inferred.outside_problems


def test_a_partial_build_runs_code_that_uses_names_saved_outside_it(tmp_path: Path) -> None:
    book, overlay = _whole_book(tmp_path)
    _partial_index(book, "index.md")
    proc = tabbook(book, overlay, "build", "--partial", "--no-render", "--frameworks", "pytorch")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "warning: chapter_a/first.md:4: :numref: to undefined label 'chap_base'" in proc.stdout
    torch = (book / "d2l" / "torch.py").read_text()
    assert "class Base:" in torch and "class Child(Base):" in torch  # the whole book's library
    entry = (book / "_freeze" / "chapter_a" / "first" / "pytorch.ipynb").read_text()
    assert "basebase from chapter b" in entry  # run against it


def test_what_saved_code_defines_and_uses_is_read_with_ast() -> None:
    """The inferred order reads saved code as the library does (issue 40): ``ast``, IPython lines
    masked, ``add_to_class`` methods named after their class; only top-level code defines."""
    from tabbook.source.pycode import saved_names

    code = ("%matplotlib inline\n"
            "class Trainer(d2l.HyperParameters):\n    pass\n\n"
            "@d2l.add_to_class(Trainer)\ndef fit(self, model):\n    return d2l.Timer()\n\n"
            "@add_to_class(d2l.Module)\ndef plot(self):\n    pass\n\n"
            "lr: float = 0.1\nwidth: int\nsize = other = 3\n"
            "if True:\n    def hidden():\n        pass\n"
            "s = 'd2l.NotAUse' \n")
    defined, used = saved_names(code)
    assert defined == {"Trainer", "Trainer.fit", "Module.plot", "lr", "size", "other", "s"}
    assert used == {"HyperParameters", "Trainer", "Timer", "Module", "add_to_class"}
    assert saved_names("def broken(:\n") == (set(), set())
