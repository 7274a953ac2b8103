"""What tabbook prints is text: no terminal control sequence from a cell, an entry or a page
reaches the terminal or a CI log (issue 49: a failing cell's report passed OSC sequences on)."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tabbook.errors import TerminalStream, terminal_text, unfiltered
from tabbook.new import new_book

#: What a hostile cell prints: the window title (OSC 0, BEL-terminated), a clipboard write
#: (OSC 52, ST-terminated), a hyperlink whose text hides its target (OSC 8), colours, a screen
#: clear (8-bit CSI), a carriage return over a line, a backspace, a bell, and an OSC never ended.
HOSTILE = ("\x1b]0;TITLE-SET\x07\x1b]52;c;Q0xJUEJPQVJE\x1b\\\x1b]8;;https://attacker.example/\x1b\\"
           "innocent\x1b]8;;\x1b\\ \x1b[31mred\x1b[0m \x9b2J\x1b[2Jcleared\rover\x08\x07 \x1b]2;NEVER-ENDED")


@pytest.mark.parametrize(("raw", "shown"), [
    ("\x1b]0;TITLE-SET\x07after", "after"),
    ("\x1b]52;c;Q0xJUEJPQVJE\x1b\\after", "after"),
    ("\x1b]8;;https://attacker.example/\x1b\\innocent\x1b]8;;\x1b\\", "innocent"),
    ("\x1b[1;31mred\x1b[0m", "red"),
    ("\x9b2Jscreen \x9d0;t\x9cdone", "screen done"),
    ("\x1bPq#0;2;0;0;0\x1b\\sixel gone", "sixel gone"),
    ("\x1b_apc\x1b\\\x1b^pm\x1b\\\x1bXsos\x1b\\ok", "ok"),
    ("bar 10%\rbar 100%\r\n", "bar 10%\nbar 100%\n"),
    ("rub\x08\x08out\x07 \x00nul\x7f", "rubout nul"),
    ("\x1b]0;NEVER-ENDED\nnext line", "\nnext line"),
    ("\x1bc\x1b7reset\x1b", "reset"),
    ("tab\tand\nnewline, é ü 中 ✓", "tab\tand\nnewline, é ü 中 ✓"),
])
def test_terminal_text(raw: str, shown: str) -> None:
    assert terminal_text(raw) == shown


def test_the_command_lines_streams_write_text_and_the_live_line_its_own() -> None:
    raw = io.StringIO()
    stream = TerminalStream(raw)
    print("page.md:3:", HOSTILE, file=stream)  # type: ignore[call-overload]
    assert "\x1b" not in raw.getvalue() and "\x07" not in raw.getvalue()
    assert unfiltered(stream) is raw and unfiltered(raw) is raw
    unfiltered(stream).write("\r\x1b[K")  # the live status line's redraw: tabbook's own
    assert raw.getvalue().endswith("\r\x1b[K")


def test_a_failing_cells_report_is_text(tmp_path: Path) -> None:
    """A cell that prints control sequences and raises with them in its message: the build
    fails, saying where and why, and nothing it prints (standard output or error) holds a
    control character."""
    book = tmp_path / "book"
    new_book(book)
    page = book / "averages.md"
    text = page.read_text(encoding="utf-8")
    raising = text.count("\n") + 5  # a blank line, the fence, %%tab, the print, the raise
    page.write_text(text + "\n```{.python .input}\n%%tab all\n"
                    f"print({HOSTILE!r})\nraise ValueError({HOSTILE!r})\n```\n", encoding="utf-8")
    env = {**os.environ, "TABBOOK_WARM": "0"}
    run = subprocess.run([sys.executable, "-m", "tabbook", "-C", str(book), "build", "--no-render"],
                         capture_output=True, env=env, timeout=600)
    said = (run.stdout + run.stderr).decode("utf-8")
    assert run.returncode == 1, said
    assert "averages.md:" in said and "ValueError" in said and "innocent" in said, said
    assert f"averages.md:{raising}:" in said, said
    bad = sorted({f"U+{ord(c):04X}" for c in said if (ord(c) < 32 and c not in "\t\n") or 0x7f <= ord(c) <= 0x9f})
    assert bad == [], said
    # What the cell printed and its exception's message are there, as text; the sequences'
    # payloads (a title, the clipboard's text) are not.
    assert said.count("innocent red cleared\nover") >= 2, said
    assert "\nTITLE-SET" not in said and " Q0xJUEJPQVJE" not in said
