"""``tabbook new DIR``: a small book that builds as it is, to start from.

Why it exists: a d2lbook author's first question is what a book looks like. The one made here
has every part a real book has, each as small as it can be: ``config.ini``, an ``index.md`` whose
``toc`` block lists one page, and that page with two code tabs, a prose tab, a cell for every
tab and a ``#@save`` definition per tab (so ``tabbook build lib`` has something to write). Both
tabs run in tabbook's own Python (``python = current``), so ``tabbook build html`` works at once,
offline, without creating any environment; a real framework's tab names its pinned requirements
instead (the comment in ``config.ini`` says how).
"""

from __future__ import annotations

from pathlib import Path

from tabbook.errors import BookError
from tabbook.files import write_atomic

CONFIG = """\
# The book's configuration (d2lbook's keys; every one optional, as in d2lbook).

[project]
name = {name}
title = {title}
author =

[build]
# The pages: Markdown files matching these globs (a star stays in one folder).
notebooks = *.md
# The code tabs, in display order; the first is the default.
tabs = plain, stdlib

# Each tab's code runs in its own Jupyter kernel. These two run in tabbook's own Python
# (`import`: the module whose version each output's provenance records); the tab of a
# framework names its pinned requirements instead, e.g.
#   [framework:pytorch]
#   requirements = envs/pytorch.txt
[framework:plain]
label = Plain Python
python = current
import = IPython

[framework:stdlib]
label = statistics
python = current
import = statistics
"""

INDEX = """\
# {title}

A book built with tabbook: each page is Markdown whose code cells are executed once per tab,
their outputs kept in `_freeze/`.

```toc
:maxdepth: 2
:numbered:

averages
```
"""

PAGE = """\
# Averages
:label:`sec_averages`

The mean of a list of numbers, written twice: by hand, and with the standard library. Pick a
tab to see one way or the other; the choice holds for the whole site.

:begin_tab:`plain`
Summing the values and dividing by how many there are.
:end_tab:

:begin_tab:`stdlib`
The `statistics` module's `fmean`, which works in floating point from the start.
:end_tab:

```{{.python .input}}
%%tab plain
#@save
def mean(values):
    \"\"\"The arithmetic mean of a non-empty list of numbers.\"\"\"
    return sum(values) / len(values)
```

```{{.python .input}}
%%tab stdlib
import statistics  #@save

#@save
def mean(values):
    \"\"\"The arithmetic mean of a non-empty list of numbers.\"\"\"
    return statistics.fmean(values)
```

The same call, whichever tab is chosen (`mean` is saved into this book's `d2l` package too, and
:numref:`sec_averages` is how another page refers to this one):

```{{.python .input}}
%%tab all
print(mean([3, 1, 4, 1, 5]))
```
"""


def new_book(folder: Path) -> list[str]:
    """Write the starter book into ``folder`` (made if missing); returns the files written.

    An existing folder must be empty: this never writes over an author's files."""
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise BookError(f"{folder} exists and is not an empty folder: tabbook new writes only into a new one")
    name = folder.resolve().name
    title = name.replace("-", " ").replace("_", " ").strip().capitalize() or "My book"
    files = {
        "config.ini": CONFIG.format(name=name, title=title),
        "index.md": INDEX.format(title=title),
        "averages.md": PAGE.format(),
    }
    folder.mkdir(parents=True, exist_ok=True)
    for rel, text in files.items():
        write_atomic(folder / rel, text)
    return list(files)
