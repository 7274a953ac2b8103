"""d2lbook 1.0.3's reading of a book's pages, per tab, as JSON (the d2lbook side of
``bench/differential.py``).

Runs in d2lbook's own environment (``bench/d2lbook_book.py``'s venv), never in the builder's:
it imports d2lbook and calls d2lbook's functions, in the order its ``build eval`` calls them with
execution off (``d2lbook/build.py``, ``_process_and_eval_notebook``): the page read by notedown
(``notebook.read_markdown``), prose cells split at the prose tabs (``split_markdown_cell``), the
tab's notebook (``get_tab_notebook``: other tabs' cells dropped, ``tab.selected`` branches cut
by its line-based cleaner), the ``[library-<tab>]`` aliases (``library.replace_alias``) and the
code formatting (``library.format_code_nb``, isort; the code before it is kept too), and
what the page shows of each code cell (``rst._process_nb`` empties the hidden ones). That notebook is what d2lbook converts to
reST, shows on d2l.ai and runs. For every Markdown cell it also records d2lbook's own prose
model: the Markdown's blocks (``markdown.split_markdown``: fences such as ```` ```toc ````),
the paragraphs of each prose block (``markdown.split_text``: titles with their marks,
equations, images, tables) and the slide marks (``slides._match_slide_marks``).

Nothing here decides what differs: ``bench/differential.py`` reads this JSON and tabbook's
model and compares them.

Usage (d2lbook's venv)::

    python bench/differential_d2lbook.py BOOK OUT.json PAGE.md [PAGE.md ...]

``BOOK`` is the book's root (its ``config.ini`` gives the tabs and the library keys); the
pages are relative to it. A page d2lbook cannot read is recorded with its error.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import logging
import os
import sys


def _prose(source: str) -> dict:
    from d2lbook import markdown, slides

    blocks = []
    for block in markdown.split_markdown(source):
        entry = {"type": block["type"], "source": block["source"], "class": block.get("class")}
        if block["type"] == "markdown":
            with contextlib.redirect_stderr(io.StringIO()):
                entry["paragraphs"] = markdown.split_text(block["source"])
        blocks.append(entry)
    try:
        marks = [text for _pair, text in slides._match_slide_marks(source)]
    except AssertionError as exc:  # d2lbook's own check of the marks (unclosed, overlapping)
        marks = {"error": str(exc)}
    return {"blocks": blocks, "slides": marks}


def read_page(path: str, tabs: list[str], default_tab: str, library: dict) -> dict:
    from d2lbook import library as d2l_library
    from d2lbook import notebook, rst

    with open(path, encoding="utf-8") as f:
        md = f.read()
    out: dict = {}
    for tab in tabs:
        nb = notebook.read_markdown(md)
        nb = notebook.split_markdown_cell(nb)
        nb = notebook.get_tab_notebook(nb, tab, default_tab)
        if not nb:
            out[tab] = None  # d2lbook skips the page for this tab
            continue
        if tab in library:
            nb = d2l_library.replace_alias(nb, library[tab])
        unformatted = [cell.source for cell in nb.cells]
        nb = d2l_library.format_code_nb(nb)
        # What the page shows of each code cell: d2lbook's reST step empties the cells its
        # hide marks hide (rst._process_nb, which keeps the code cells in order).
        shown = [c.source for c in rst._process_nb(copy.deepcopy(nb)).cells if c.cell_type == "code"]
        cells = []
        for cell, before in zip(nb.cells, unformatted, strict=True):
            entry = {"type": cell.cell_type, "source": cell.source, "tab": cell.metadata.get("tab")}
            if cell.cell_type == "code" and before != cell.source:
                entry["unformatted"] = before  # the code before format_code_nb (isort)
            if cell.cell_type == "code":
                entry["shown"] = shown.pop(0)
            if cell.cell_type == "markdown":
                entry.update(_prose(cell.source))
            cells.append(entry)
        out[tab] = cells
    return out


def main(argv: list[str]) -> int:
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    book, out_path, pages = argv[0], argv[1], argv[2:]
    logging.disable(logging.WARNING)
    os.chdir(book)
    from d2lbook import config as d2l_config

    config = d2l_config.Config()
    library = {tab: config.library[tab] for tab in config.tabs if tab in config.library}
    from d2lbook import build

    notebooks, markdowns, _depends = build.Builder(config)._find_md_files()
    found = sorted(os.path.relpath(p, config.src_dir) for p in [*notebooks, *markdowns])
    result: dict = {"tabs": config.tabs, "default_tab": config.default_tab, "found": found, "pages": {}}
    for page in pages:
        try:
            result["pages"][page] = read_page(page, config.tabs, config.default_tab, library)
        except Exception as exc:  # noqa: BLE001 - d2lbook's failure is data for the comparison
            result["pages"][page] = {"error": f"{type(exc).__name__}: {exc}"}
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump(result, f)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
