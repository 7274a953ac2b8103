"""Snippet in, fragment out: what reading and the MyST renderer make of each dialect construct.

Each ``tests/snapshots/constructs/NAME.md`` is a page of a two-tab book (``alpha``, the default,
and ``beta``); ``NAME.out`` beside it is what :func:`render` makes of it: every cell the reader
found (its kind, line, tabs, solution), each prose cell's blocks (the construct table's kind,
rows, level, attribute) and the MyST emitted for it, each code cell's code, and the problems
reading reported. Above them, the blocks of the page's one parse, each with the kind its
token carries (markers included, which no cell holds). Reviewed as files: a change of the reader or the renderer shows in the
diff of the ``.out`` files it changes. ``TABBOOK_SNAPSHOT_UPDATE=1`` rewrites them (``tests/snapshot.py``; then
review ``git diff tests/snapshots``); a new construct gets a snippet here (CONTRIBUTING.md, "Add a
construct"). No Sphinx, no build: the whole directory runs in about a second.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import snapshot

from tabbook.errors import BookError, BookErrors
from tabbook.render.myst import cell_to_myst
from tabbook.source.constructs import Kind
from tabbook.source.fences import parse_blocks
from tabbook.source.read import read_section

FOLDER = snapshot.SNAPSHOTS / "constructs"
SNIPPETS = sorted(FOLDER.glob("*.md"))
TABS = ("alpha", "beta")


def _indent(text: str) -> list[str]:
    return [f"    | {row}".rstrip() for row in text.split("\n")]


def render(text: str, path: str) -> str:
    """The reviewed fragment of one snippet (see the module's docstring)."""
    try:
        section = read_section(text, path, TABS, TABS[0])
    except BookErrors as exc:
        return "\n".join(["refused:", *(f"  {e}" for e in exc.errors)]) + "\n"
    except BookError as exc:
        return f"refused:\n  {exc}\n"
    # the page's one parse: every block with the kind its token carries
    page = parse_blocks(text.replace("\r\n", "\n"))[1]
    out = [f"title: {section.title}", "page: " + ", ".join(f"{b.kind.name} {b.start}-{b.end}" for b in page)]
    for cell in section.cells:
        head = f"{cell.kind} line {cell.line} tabs={','.join(cell.tabs) or '-'}"
        if cell.solution:
            head += f" solution={cell.solution}"
        if cell.flags:
            head += f" flags={','.join(sorted(cell.flags))}"
        out.append(head)
        if cell.kind == "code":
            out += ["  code:", *_indent(cell.source)]
            continue
        for b in cell.blocks:
            out.append(f"  block {b.kind.name} rows {b.start}-{b.end} level {b.level}" + (f" {b.attr}" if b.attr else ""))
        out += ["  myst:", *_indent(cell_to_myst(cell))]
    if section.labels:
        out.append("labels: " + ", ".join(f"{k}@{v}" for k, v in section.labels.items()))
    if section.refs:
        out.append("refs: " + ", ".join(f"{r}:{t}@{n}" for r, t, n in section.refs))
    if section.solutions:
        out.append("solutions: " + ", ".join(f"{k}={v[0]!r}@{v[1]}" for k, v in section.solutions.items()))
    for toc in section.toc:
        out.append(f"toc line {toc.line}: {', '.join(toc.entries)} maxdepth={toc.maxdepth} numbered={toc.numbered}")
    # each with its kind: a problem the build goes on past (a refused page is "refused:" above)
    out += [f"problem [{p.kind.slug if p.kind else 'no kind'}]: {p}" for p in section.warnings]
    return "\n".join(out) + "\n"


@pytest.mark.parametrize("snippet", SNIPPETS, ids=[p.stem for p in SNIPPETS])
def test_snapshot(snippet: Path) -> None:
    snapshot.check(f"constructs/{snippet.stem}.out", render(snippet.read_text(encoding="utf-8"), f"{snippet.stem}.md"))


def test_every_construct_has_a_snapshot() -> None:
    """Each kind of the construct table shows in some snapshot: a new construct comes with its snippet."""
    seen = "".join(p.with_suffix(".out").read_text(encoding="utf-8") for p in SNIPPETS if p.with_suffix(".out").exists())
    pages = [line for line in seen.split("\n") if line.startswith("page: ")]
    shown = {k for k in Kind if any(f" {k.name} " in f" {line}" for line in pages)}
    assert len(SNIPPETS) >= 25
    assert set(Kind) - shown == set()
