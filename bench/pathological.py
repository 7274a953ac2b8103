"""Pathological pages, and what tabbook's reader, check and MyST writer take per MB of them.

Each generator makes a page of about ``n`` repetitions of one shape a fuzzer or a careless
paste produces: long runs of one delimiter (backticks, brackets, stars, tildes, underscores,
dollars), unclosed slide marks, bracket-star pairs, a hundred thousand headings, deep nesting,
one very long line. :func:`steps` runs on a page what a build runs on it before Sphinx
(``read_section``, the check's prose and reference scans, ``cell_to_myst_lines``);
``tests/test_linear.py`` compares its time at ``n`` and ``4n`` (a ratio, robust to load).

    python bench/pathological.py [--size 200000]   # seconds per MB for each shape

Nothing here is a target: the figures go to BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

# name -> (text for n repetitions); every page starts with a title, as a page must.
SHAPES: dict[str, Callable[[int], str]] = {
    "backticks": lambda n: "# T\n\na " + "`" * n + "\n",
    "backtick-pairs": lambda n: "# T\n\n" + "` `` " * (n // 5) + "\n",
    "brackets": lambda n: "# T\n\n" + "[" * n + "\n",
    "bracket-star": lambda n: "# T\n\n" + "[*" * (n // 2) + "\n",
    "bracket-star-star": lambda n: "# T\n\n" + "[**" * (n // 3) + "\n",
    "paren-star-star": lambda n: "# T\n\n" + "(**" * (n // 3) + "\n",
    "slide-unclosed": lambda n: "# T\n\n" + "[**a " * (n // 5) + "\n",
    "tilde-marks": lambda n: "# T\n\n" + "(~~" * (n // 3) + "\n",
    "stars": lambda n: "# T\n\n" + "*" * n + "\n",
    "star-words": lambda n: "# T\n\n" + "*a " * (n // 3) + "\n",
    "underscores": lambda n: "# T\n\n" + "_a " * (n // 3) + "\n",
    "tildes": lambda n: "# T\n\na " + "~" * n + "\n",
    "dollars": lambda n: "# T\n\n" + "$a " * (n // 3) + "\n",
    "roles": lambda n: "# T\n\n" + ":numref:`" * (n // 9) + "\n",
    "links": lambda n: "# T\n\n" + "[a](" * (n // 4) + "\n",
    "headings": lambda n: "".join(f"# H{i}\n\n" for i in range(max(1, n // 8))),
    "labelled-headings": lambda n: "# T\n\n" + "".join(f"## H{i}\n:label:`s{i}`\n\n" for i in range(n // 24)),
    "lines": lambda n: "# T\n\n" + "a\n" * (n // 2),
    "long-line": lambda n: "# T\n\n" + "word " * (n // 5) + "\n",
    # Groups 30 quotes / 20 lists deep, one after another: deep, and as deep at every size.
    "nested-quotes": lambda n: "# T\n\n" + "".join("".join(">" * d + " q\n" for d in range(1, 31)) + "\n"
                                                   for _ in range(max(1, n // 500))),
    "nested-lists": lambda n: "# T\n\n" + "".join("".join("  " * d + "- x\n" for d in range(20)) + "\n"
                                                  for _ in range(max(1, n // 500))),
    "fences": lambda n: "# T\n\n" + "```\nx\n```\n\n" * (n // 14),
    "code-cells": lambda n: "# T\n\n" + "```{.python .input}\nx = 1\n```\n\n" * (n // 34),
    "table-rows": lambda n: "# T\n\n| a | b |\n| - | - |\n" + "| 1 | 2 |\n" * (n // 10),
    "images": lambda n: "# T\n\n" + "![a](i.png) x\n" * (n // 15),
    "html-comments": lambda n: "# T\n\n" + "<!-- " * (n // 5) + "\n",
}


def steps(text: str) -> None:
    """What a build does with a page before Sphinx: read it (the dialect parse), the check's
    scans of its prose (slide marks, images), and the MyST of every prose cell."""
    from tabbook.check import _check_prose
    from tabbook.render.myst import cell_to_myst_lines
    from tabbook.source.read import read_section

    section = read_section(text, "page.md", ("a", "b"), "a")
    problems: list[Any] = []
    _check_prose(SimpleNamespace(root=Path("/nonexistent-book")), section, problems)  # type: ignore[arg-type]
    for cell in section.cells:
        if cell.kind == "markdown":
            cell_to_myst_lines(cell)


def seconds(shape: str, n: int) -> float:
    """The least of three timings of :func:`steps` on ``shape`` at size ``n``."""
    text = SHAPES[shape](n)
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        steps(text)
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=200_000, help="characters per page (about)")
    args = parser.parse_args()
    steps("# warm-up\n")
    print(f"{'shape':<20} {'MB':>6} {'s':>8} {'s/MB':>8} {'4x ratio':>9}")
    for shape in SHAPES:
        small, large = seconds(shape, args.size), seconds(shape, 4 * args.size)
        mb = len(SHAPES[shape](4 * args.size).encode()) / 1e6
        print(f"{shape:<20} {mb:6.2f} {large:8.3f} {large / mb:8.3f} {large / max(small, 1e-6):9.1f}")


if __name__ == "__main__":
    main()
