"""Reading, checking and writing the MyST of a page take time linear in what the page holds.

Each pathological shape of ``bench/pathological.py`` (long runs of backticks, brackets, stars,
tildes, underscores; unclosed slide marks; many headings, images, lines; deep nesting) is run
at ``n`` and ``8n`` characters in the same process, the least of several timings each: linear
steps take about 8 times as long, quadratic ones about 64 times. The bound (32) is generous for
load and caches, and the comparison is a ratio, never a wall-clock target."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
import pathological  # noqa: E402

SMALL, FACTOR, BOUND = 4_000, 8, 32.0


def _least(text: str, tries: int) -> float:
    best = float("inf")
    for _ in range(tries):
        start = time.perf_counter()
        pathological.steps(text)
        best = min(best, time.perf_counter() - start)
    return best


@pytest.mark.parametrize("shape", sorted(pathological.SHAPES))
def test_each_step_before_sphinx_is_linear_in_the_page(shape: str) -> None:
    make = pathological.SHAPES[shape]
    pathological.steps(make(SMALL))  # warm: imports, the parser, regular expressions
    small = _least(make(SMALL), 5)
    large = _least(make(SMALL * FACTOR), 5)
    # A step this fast is below the timer's grain: a floor of 2 ms for the small page.
    ratio = large / max(small, 0.002)
    assert ratio < BOUND, f"{shape}: {small:.4f} s at {SMALL:,} characters, {large:.4f} s at {SMALL * FACTOR:,}"
