"""Each tab's code rewritten with its ``[library-<tab>]`` aliases, as d2lbook does (issue 30, item 2).

d2lbook rewrites a tab's code before it runs and shows it: ``reverse_alias`` and
``simple_alias`` as text, ``fluent_alias`` and ``args_alias`` as calls. So d2l.ai's PyTorch
tab shows ``torch.matmul(X, self.w)`` and ``y.reshape(y_hat.shape)`` where the Markdown says
``d2l.matmul(X, self.w)`` and ``d2l.reshape(y, y_hat.shape)``; the library keeps the code as
written and defines the aliases.
"""

from __future__ import annotations

import configparser
from pathlib import Path

from test_d2lbook_build import make_book

from tabbook.book import read_book
from tabbook.config import library_keys, load_config
from tabbook.execute.plan import unit_key
from tabbook.execute.runner import build_notebook
from tabbook.library.cache import book_library
from tabbook.source.split import rewrite_aliases

KEYS = """\
[library-pytorch]
lib_file = d2l/torch.py
lib_name = torch
simple_alias = ones, zeros, matmul, exp(, log, concat -> cat
fluent_alias = numpy -> detach().numpy, reshape, reduce_sum -> sum, expand_dims -> unsqueeze
args_alias = clip(a_x, low=None) -> torch.clamp(a_x, min=low)
reverse_alias =
       d2l.nn_Module -> nn.Module
       d2l.size\\(([\\w\\_\\d]+)\\) -> \\1.size
"""


def _keys(text: str = KEYS):  # noqa: ANN202 - LibraryKeys
    parser = configparser.ConfigParser()
    parser.read_string(text)
    return library_keys(parser, "pytorch")


def test_simple_fluent_args_and_reverse_aliases_rewrite_the_code() -> None:
    keys = _keys()
    code = ("class LinReg(d2l.nn_Module):\n"
            "    def forward(self, X):\n"
            "        return d2l.matmul(X, self.w) + self.b\n"
            "l = (y_hat - d2l.reshape(y, y_hat.shape)) ** 2 / 2\n"
            "e = d2l.exp(d2l.expand_dims(x, 1))\n"  # exp( spares expand_dims
            "a = d2l.numpy(d2l.reduce_sum(x + 1, axis=0))\n"  # nested: outer first, then inner
            "c = d2l.concat([d2l.ones(2), d2l.zeros(2)])\n"
            "k = d2l.clip(x, low=0) + d2l.clip(y)\n"
            "n = d2l.size(X)\n")  # reverse_alias entries are text, not patterns (d2lbook 1.0.3)
    assert rewrite_aliases(code, keys) == (
        "class LinReg(nn.Module):\n"
        "    def forward(self, X):\n"
        "        return torch.matmul(X, self.w) + self.b\n"
        "l = (y_hat - y.reshape(y_hat.shape)) ** 2 / 2\n"
        "e = torch.exp(x.unsqueeze(1))\n"
        "a = (x + 1).sum(axis=0).detach().numpy()\n"
        "c = torch.cat([torch.ones(2), torch.zeros(2)])\n"
        "k = torch.clamp(x, min=0) + torch.clamp(y)\n"
        "n = d2l.size(X)\n")


def test_what_cannot_be_rewritten_is_left_as_written() -> None:
    keys = _keys()
    assert rewrite_aliases("%time\nd2l.reshape(x, (2, 3))", keys) == "%time\nx.reshape((2, 3))"
    assert rewrite_aliases("d2l.reshape()", keys) == "d2l.reshape()"  # no receiver
    assert rewrite_aliases("d2l.clip(x, high=1)", keys) == "d2l.clip(x, high=1)"  # keyword not in the template
    assert rewrite_aliases("d2l.reshape(x\n!ls", keys) == "d2l.reshape(x\n!ls"  # does not parse
    assert rewrite_aliases("d2l.matmul(a, b)", _keys(KEYS.replace("lib_name = torch\n", ""))) == \
        "d2l.matmul(a, b)"  # without lib_name, d2lbook applies reverse_alias only


SECOND_ALIASED = """\
# Second
:label:`sec_second`

```{.python .input}
%%tab pytorch
import torch  #@save
```

```{.python .input}
%%tab pytorch
def forward(X, w):  #@save
    return d2l.matmul(X, w)
print(d2l.reshape(d2l.ones(4), (2, 2)))
```

```{.python .input}
%%tab mxnet
print('mxnet second')
```
"""


def test_a_tab_shows_runs_and_keys_the_rewritten_code_while_the_library_keeps_it(tmp_path: Path) -> None:
    book, _ = make_book(tmp_path)
    (book / "config.ini").write_text((book / "config.ini").read_text().replace(
        "[library-pytorch]\nlib_file = d2l/torch.py\nlib_name = torch\n",
        "[library-pytorch]\nlib_file = d2l/torch.py\nlib_name = torch\nsimple_alias = matmul, ones\n"
        "fluent_alias = reshape\n"))
    (book / "chapter_a" / "second.md").write_text(SECOND_ALIASED)
    config = load_config(book)
    read = read_book(config)
    section = read.pages["chapter_a/second.md"]
    parts, cells = unit_key(config, section, "pytorch", book_library(read))
    shown = [c.source for c in cells]
    assert shown == ["import torch  #@save", "def forward(X, w):  #@save\n    return torch.matmul(X, w)\n"
                     "print(torch.ones(4).reshape((2, 2)))"]
    notebook = {"cells": build_notebook(type("U", (), {"cells": tuple(cells), "kernel_name": "k"})())["cells"]}
    assert [c["source"] for c in notebook["cells"]] == shown  # what the kernel runs
    library = book_library(read)["d2l/torch.py"]
    # the saved code as written (d2l.matmul, which the module writes matmul), and the alias
    assert "    return matmul(X, w)\n" in library and "matmul = torch.matmul" in library
    # The freeze key hashes the rewritten code: without the aliases it is another key.
    plain = load_config(book)
    object.__setattr__(plain.framework("pytorch"), "library", _keys("[library-pytorch]\n"))  # a frozen dataclass
    assert unit_key(plain, section, "pytorch", book_library(read))[0].cells != parts.cells
