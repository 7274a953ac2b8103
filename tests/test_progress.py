"""A long cell shows progress while it runs: on a terminal a live line with the unit, the cell's
``file.md:LINE`` and the time so far; in a log a line every 30 s (``tabbook.execute.progress``).
Before, a 28-second cell printed ``start``, nothing, then ``done``."""

from __future__ import annotations

import io
import os
import pty
import re
import select
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from tabbook.execute.progress import LOG_PERIOD, LiveStatus, record_cell

ROOT = Path(__file__).resolve().parent.parent


class Clock:
    """A clock the test moves; it starts at the real time, which the worker's record holds."""

    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now


def test_a_log_gets_a_line_every_thirty_seconds(tmp_path: Path) -> None:
    clock, lines = Clock(), []
    status = LiveStatus(lines.append, clock=clock)
    status.started("ch/sec.md [jax]", "jax", tmp_path / "cell.json")
    status.tick()
    assert lines == []  # nothing new to say yet
    started = clock.now
    record_cell(tmp_path / "cell.json", "ch/sec.md:12")
    clock.now += 5
    status.tick()
    assert lines == []
    clock.now = started + LOG_PERIOD
    status.tick()
    assert len(lines) == 1 and lines[0].startswith("[exec] still running ch/sec.md:12 [jax] ")
    assert "(unit 30s)" in lines[0]
    clock.now += LOG_PERIOD - 1
    status.tick()
    assert len(lines) == 1
    clock.now += 1
    status.tick()
    assert len(lines) == 2 and "(unit 1m00s)" in lines[1]
    status.finished("ch/sec.md [jax]")
    clock.now += 2 * LOG_PERIOD
    status.tick()
    assert len(lines) == 2  # nothing runs: nothing to say
    status.started("ch/short.md [jax]", "jax", tmp_path / "other.json")
    clock.now += LOG_PERIOD - 1
    status.tick()
    assert len(lines) == 2  # a unit that has not run for a whole period yet is not long work


def test_a_terminal_gets_one_live_line_under_the_runners_lines(tmp_path: Path) -> None:
    clock, lines, screen = Clock(), [], io.StringIO()
    status = LiveStatus(lines.append, screen, interactive=True, clock=clock)
    status.started("ch/sec.md [jax]", "jax", tmp_path / "cell.json")
    record_cell(tmp_path / "cell.json", "ch/sec.md:12")
    clock.now += 7
    status.tick()
    assert re.search(r"\r\x1b\[Krunning ch/sec\.md:12 \[jax\] [67]s \(unit 7s\)$", screen.getvalue())
    status.say("[exec 1/2] done ch/other.md [jax] ok")
    assert lines == ["[exec 1/2] done ch/other.md [jax] ok"]
    assert screen.getvalue().count("\r\x1b[K") == 3  # drawn, erased for the runner's line, drawn again
    status.finished("ch/sec.md [jax]")
    status.tick()
    assert screen.getvalue().endswith("\r\x1b[K")  # nothing runs: the live line is gone


BOOK = {
    "config.ini": "[project]\nname = longbook\ntitle = Long\n",
    "index.md": "# Long\n\n```toc\nlong\n```\n",
    "long.md": textwrap.dedent("""\
        # A long cell

        Some text.

        ```{.python .input}
        import time
        time.sleep(12)
        print("slept")
        ```
        """),
}


def test_a_twelve_second_cell_shows_its_elapsed_time_on_a_terminal_before_it_ends(tmp_path: Path) -> None:
    book = tmp_path / "book"
    book.mkdir()
    for name, text in BOOK.items():
        (book / name).write_text(text)
    env = {**os.environ, "TABBOOK_WARM": "0", "PYTHONPATH": str(ROOT), "COLUMNS": "200"}
    env.pop("CI", None)
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "tabbook", "-C", str(book), "build", "--no-render"],
                            stdin=slave, stdout=slave, stderr=slave, env=env, close_fds=True)
    os.close(slave)
    out = b""
    while True:
        ready, _, _ = select.select([master], [], [], 120)
        if not ready:
            break
        try:
            chunk = os.read(master, 65536)
        except OSError:  # the terminal closed: the build has ended
            break
        if not chunk:
            break
        out += chunk
    os.close(master)
    assert proc.wait(timeout=60) == 0, out.decode(errors="replace")[-3000:]
    text = out.decode(errors="replace")
    done = text.index("] done ")
    live = [int(s) for s in re.findall(r"running long\.md:5 \[\w+\] (\d+)s \(unit \d+s\)", text[:done])]
    assert live and max(live) >= 8, text[:done]  # the cell's line and its time, while it ran
    assert live == sorted(live)
