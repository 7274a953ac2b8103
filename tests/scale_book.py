"""A small generated book for the scale tests (store merge, Dask cluster): N sections × two tabs.

Both tabs run in the builder's own Python (``python = current``), so no framework environment
is needed, and every cell prints only what its code determines (no times, no addresses), so two
executions of a unit give the same outputs wherever they run. ``sleep`` gives one section a cell
that takes that long, for a test that kills a worker while it runs.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = Path(__file__).resolve().parent / "fixtures" / "book"

CONFIG = """\
[project]
name = scale
title = Scale Book
author = Tests
version = 0.0.1

[build]
index = index.md
tabs = alpha, beta
default_tab = alpha
cell_timeout = 120

[framework:alpha]
label = Alpha
module = alpha
import = json
python = current

[framework:beta]
label = Beta
module = beta
import = json
python = current
"""


def section_text(i: int, sleep: float = 0.0) -> str:
    pause = f"import time\ntime.sleep({sleep})\n" if sleep else ""
    return f"""\
# Section {i}
:label:`sec_s{i}`

Prose of section {i}.

```{{.python .input}}
%%tab alpha
{pause}print('alpha', {i}, sum(range({i} + 3)))
```

```{{.python .input}}
%%tab beta
def square_{i}(x):  #@save
    return x * x + {i}

print('beta', square_{i}({i}))
```
"""


def make_book(root: Path, sections: int = 3, sleep: dict[int, float] | None = None) -> Path:
    """Write the book under ``root/book``; ``sleep`` maps a section number to its pause."""
    book = root / "book"
    book.mkdir(parents=True)
    shutil.copy(FIXTURE / "conf.py", book / "conf.py")
    (book / "config.ini").write_text(CONFIG)
    names = "".join(f"s{i}\n" for i in range(sections))
    (book / "index.md").write_text(f"# Scale Book\n\n```toc\n:maxdepth: 2\n\n{names}```\n")
    for i in range(sections):
        (book / f"s{i}.md").write_text(section_text(i, (sleep or {}).get(i, 0.0)))
    return book


def tabbook(book: Path, *args: str, timeout: float = 600,
            env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tabbook", "-C", str(book), *args],
        cwd=ROOT, capture_output=True, text=True, timeout=timeout,
        env={**os.environ, "PYTHONPATH": str(ROOT), "TABBOOK_CACHE": str(book / ".cache"), **(env or {})},
    )


def entries(store: Path) -> dict[str, bytes]:
    """Every entry file of a store, by its path in the store."""
    return {p.relative_to(store).as_posix(): p.read_bytes() for p in sorted(store.rglob("*.ipynb"))}


def comparable(data: bytes) -> dict[str, Any]:
    """An entry with what differs between two executions of the same code masked.

    Only the time the unit took and the day it ran differ between two runs on one
    host: the key, the outputs, the provenance (CPU, versions, platform) must not.
    """
    nb = json.loads(data)
    meta = nb["metadata"]["tabbook"]
    meta["seconds"] = "masked"
    meta["provenance"]["date"] = "masked"
    return nb
