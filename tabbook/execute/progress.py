"""What is running, said while it runs: a cell that takes minutes is not silence.

The runner prints a line when a unit starts and when it ends; between the two, a long cell used
to print nothing (a 28-second cell: ``start``, then half a minute of nothing, then ``done``). Each
worker now records the cell it is running (:func:`record_cell`: its ``file.md:LINE`` and when it
began, in a small file of the unit's own folder) and :class:`LiveStatus` reports every running
unit's current cell with the time it has taken so far:

- on a terminal, one live line, redrawn every second under the runner's own lines
  (``running chapter_gpus/training.md:88 [pytorch] 14s (unit 41s)``);
- in a log (no terminal: CI, a file, a pipe), one such line every :data:`LOG_PERIOD` seconds
  while some unit has run that long, naming those units: a log shows that long work goes on and
  where, without a line per second, and says nothing about units that end sooner.
"""

from __future__ import annotations

import json
import shutil
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO, TypedDict, cast

from tabbook.files import write_atomic

#: Seconds between two "still running" lines in a log.
LOG_PERIOD = 30.0
#: Seconds between two redraws of the terminal's live line.
LIVE_PERIOD = 1.0


class RunningCell(TypedDict, total=False):
    """What a worker records of the cell it runs: where it is and since when (``time.time()``);
    read back from a file another process writes, so either may be absent or of another type."""

    where: str
    since: float


def record_cell(path: Path, where: str) -> None:
    """The worker's side: the cell at ``where`` (``file.md:LINE``) starts now."""
    try:
        write_atomic(path, json.dumps({"where": where, "since": time.time()}))
    except OSError:
        pass  # progress is a courtesy: it never fails a unit


def current_cell(path: Path) -> RunningCell | None:
    """What the worker recorded of the cell it runs (``where``, ``since``); None: nothing yet."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return cast(RunningCell, data) if isinstance(data, dict) else None


def _seconds(value: float) -> str:
    value = int(value)
    return f"{value // 60}m{value % 60:02d}s" if value >= 60 else f"{value}s"


@dataclass
class _Running:
    unit: str  # "chapter/sec.md [framework]"
    framework: str
    cell_file: Path
    started: float


class LiveStatus:
    """The running units' current cells, shown as they run (see the module's docstring).

    ``log`` prints a line (the build's log); ``stream`` is where the live line is drawn when
    ``interactive``. The runner prints its own lines through :meth:`say`, which lifts the live
    line out of the way first. ``clock`` is ``time.time`` (a test gives its own).
    """

    def __init__(self, log: Callable[[str], object], stream: TextIO | None = None, interactive: bool = False,
                 clock: Callable[[], float] = time.time) -> None:
        self.log = log
        self.stream = stream
        self.interactive = interactive and stream is not None
        self.clock = clock
        self._running: dict[str, _Running] = {}
        self._lock = threading.Lock()
        self._shown = ""  # the live line on the terminal now
        self._last_log = 0.0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # ---- what the runner tells it ----
    def started(self, unit: str, framework: str, cell_file: Path) -> None:
        with self._lock:
            self._running[unit] = _Running(unit, framework, cell_file, self.clock())

    def finished(self, unit: str) -> None:
        with self._lock:
            self._running.pop(unit, None)

    def say(self, line: str) -> None:
        """A line of the build's log, printed above the live line."""
        with self._lock:
            self._erase()
            self.log(line)
            self._draw(self._line(self.clock()))

    # ---- what it shows ----
    def _line(self, now: float, min_age: float = 0.0) -> str:
        """The running units (those running for ``min_age`` seconds at least), each at its cell."""
        parts = []
        for r in self._running.values():
            if now - r.started < min_age:
                continue
            cell = current_cell(r.cell_file)
            if cell and isinstance(cell.get("where"), str):
                since = float(cell.get("since", r.started))
                parts.append(f"{cell['where']} [{r.framework}] {_seconds(now - since)} (unit {_seconds(now - r.started)})")
            else:
                parts.append(f"{r.unit} starting {_seconds(now - r.started)}")
        return "running " + "; ".join(parts) if parts else ""

    def _erase(self) -> None:
        if self.interactive and self._shown and self.stream is not None:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self._shown = ""

    def _draw(self, line: str) -> None:
        if not self.interactive or not line or self.stream is None:
            return
        width = shutil.get_terminal_size((100, 24)).columns
        text = line if len(line) < width else line[:max(10, width - 2)] + "…"
        self.stream.write("\r\x1b[K" + text)
        self.stream.flush()
        self._shown = text

    def tick(self) -> None:
        """Redraw the live line (a terminal), or write a line if a log period has passed."""
        with self._lock:
            now = self.clock()
            if self.interactive:
                line = self._line(now)
                if line:
                    self._draw(line)
                else:
                    self._erase()
            elif now - self._last_log >= LOG_PERIOD and (long := self._line(now, LOG_PERIOD)):
                self._last_log = now
                self.log(f"[exec] still {long}")

    # ---- its clock ----
    def __enter__(self) -> LiveStatus:
        period = LIVE_PERIOD if self.interactive else min(LIVE_PERIOD * 5, LOG_PERIOD)

        def loop() -> None:
            while not self._stop.wait(period):
                self.tick()

        self._thread = threading.Thread(target=loop, name="tabbook-progress", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        with self._lock:
            self._erase()
