"""A Sphinx run's progress, shown while it runs, and which pages it rendered (issue 52).

The run's extension (:mod:`tabbook.render.ext.progress`) appends ``n COUNT`` / ``r DOCNAME`` /
``w PAGENAME`` lines to a file of ``build/``; :class:`RenderProgress` reads it while the run
goes on, as :class:`tabbook.execute.progress.LiveStatus` shows the running cells:

- on a terminal, one live line redrawn twice a second (``[html] reading 12/40 pages``), erased
  when the run ends;
- in a log, a line every :data:`LOG_PERIOD` seconds while it runs (a short run says nothing).

Afterwards :func:`read_pages` says which pages the run read again, which the build names
(``[html] rendered 2 pages: chapter/a.md, chapter/b.md``).
"""

from __future__ import annotations

import shutil
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

#: Seconds between two progress lines in a log.
LOG_PERIOD = 30.0
#: Seconds between two redraws of the terminal's live line.
LIVE_PERIOD = 0.5


@dataclass
class Progress:
    """What the progress file says so far."""

    total: int = 0  # pages Sphinx reads (0: not known yet)
    read: list[str] = field(default_factory=list)  # docnames, in the order read
    written: int = 0  # HTML pages written

    def line(self, builder: str) -> str:
        if not self.total and not self.read:
            return f"[{builder}] rendering: starting"
        if self.written:
            return f"[{builder}] rendering: read {len(self.read)} of {self.total} pages, wrote {self.written}"
        return f"[{builder}] rendering: reading {len(self.read)} of {self.total} pages"


def read_progress(path: Path) -> Progress:
    """The progress file's lines so far (a missing file: nothing yet)."""
    out = Progress()
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return out
    for line in text.splitlines():
        what, _, value = line.partition(" ")
        if what == "n" and value.isdigit():
            out.total += int(value)
        elif what == "r" and value:
            out.read.append(value)
        elif what == "w":
            out.written += 1
    return out


def read_pages(path: Path, pages: set[str]) -> list[str]:
    """The pages the run read, as the author knows them: ``chapter/a.md`` for a docname whose
    Markdown page is in ``pages``, the docname otherwise (a generated page: ``api``)."""
    seen = dict.fromkeys(read_progress(path).read)
    return [f"{d}.md" if f"{d}.md" in pages else d for d in seen]


class RenderProgress:
    """Shows a Sphinx run's progress while it runs (see the module's docstring); a context
    manager around the wait for the run. ``clock``: ``time.monotonic`` (a test gives its own)."""

    def __init__(self, path: Path, builder: str, log: Callable[[str], object], stream: TextIO | None = None,
                 interactive: bool = False, clock: Callable[[], float] = time.monotonic) -> None:
        self.path = path
        self.builder = builder
        self.log = log
        self.stream = stream
        self.interactive = interactive and stream is not None
        self.clock = clock
        self.started = clock()
        self._last_log = self.started
        self._shown = False
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def tick(self) -> None:
        """Redraw the live line (a terminal), or log a line when a period has passed."""
        now = self.clock()
        line = read_progress(self.path).line(self.builder)
        if self.interactive and self.stream is not None:
            width = shutil.get_terminal_size((100, 24)).columns
            self.stream.write("\r\x1b[K" + line[:max(10, width - 1)])
            self.stream.flush()
            self._shown = True
        elif now - self._last_log >= LOG_PERIOD:
            self._last_log = now
            self.log(f"{line} ({now - self.started:.0f}s)")

    def __enter__(self) -> RenderProgress:
        period = LIVE_PERIOD if self.interactive else 1.0

        def loop() -> None:
            while not self._stop.wait(period):
                try:
                    self.tick()
                except (OSError, ValueError):
                    return  # a closed stream: nothing more to show

        self._thread = threading.Thread(target=loop, name="tabbook-render-progress", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self._shown and self.stream is not None:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
