"""Typed errors that carry the Markdown file and line a user has to fix."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import TextIO

from tabbook.problems import Problem, Severity

#: How a stage says what it does, a line at a time (``print`` by default; a test collects them).
Log = Callable[[str], object]


class BookError(Exception):
    """An error the book's author (or the build's user) can act on.

    ``str(err)`` is ``path:LINE: message`` so editors and CI logs can jump to
    the offending line.
    """

    def __init__(self, message: str, path: str | None = None, line: int | None = None,
                 column: int | None = None, kind: Problem | None = None):
        self.message = message
        self.path = path
        self.line = line
        self.column = column  # 1-based, where a line alone is not enough (a bad byte)
        # What kind of problem it is (tabbook.problems): one the build goes on past, judged by
        # its declaration; None: an error that stops the build (no output can be made).
        self.kind = kind
        super().__init__(self.location_message())

    def __reduce__(self) -> tuple[type[BookError], tuple[object, ...]]:
        """Pickled with its location (the parsed-page cache keeps sections' warnings)."""
        return (type(self), (self.message, self.path, self.line, self.column, self.kind))

    def shown(self) -> str:
        """The located message with its kind at the end of its first line
        (``page.md:3: duplicate label 'x' [duplicate-label]``)."""
        text = self.location_message()
        if self.kind is None:
            return text
        first, newline, rest = text.partition("\n")
        return f"{first} [{self.kind.slug}]{newline}{rest}"

    def location_message(self) -> str:
        if self.path is None:
            return self.message
        if self.line is None:
            return f"{self.path}: {self.message}"
        if self.column is not None:
            return f"{self.path}:{self.line}:{self.column}: {self.message}"
        return f"{self.path}:{self.line}: {self.message}"


class BookErrors(BookError):
    """Several independent problems, reported together in one run."""

    def __init__(self, errors: list[BookError]):
        self.errors = errors
        super().__init__("\n".join(e.location_message() for e in errors))

    def __reduce__(self) -> tuple[type[BookError], tuple[object, ...]]:
        return (type(self), (self.errors,))

    def location_message(self) -> str:  # noqa: D102 - same contract as parent
        return "\n".join(e.location_message() for e in getattr(self, "errors", []))

    def shown(self) -> str:  # noqa: D102 - same contract as parent
        return "\n".join(e.shown() for e in getattr(self, "errors", []))


def leads_out(shown: str, real: object, what: str = "the book's folder") -> BookError:
    """The error for a path that a symbolic link leads out of the book (``files.leads_outside``):
    at the path as the user wrote or sees it, naming where it really goes."""
    return BookError(f"leads outside {what} through a symbolic link (to {real}): the builder "
                     "neither publishes nor writes there; replace the link by the file, or leave it out", shown)


def raise_all(errors: list[BookError]) -> None:
    """Raise every problem of ``errors`` at once: the one error itself, or :class:`BookErrors`
    of them all; nothing when there is none.

    Why one helper: reading, checking, planning and rendering each report all they found
    together, and each used to spell out "one error, or several" by hand."""
    if errors:
        raise errors[0] if len(errors) == 1 else BookErrors(list(errors))


def flatten(errors: list[BookError]) -> list[BookError]:
    """Each problem on its own (a :class:`BookErrors` opened up)."""
    return [e for err in errors for e in (err.errors if isinstance(err, BookErrors) else [err])]


def judge(problems: list[BookError], strict: bool) -> tuple[list[BookError], list[BookError]]:
    """(errors, warnings) of ``problems``: a problem of a kind is what its declaration says
    (:class:`tabbook.problems.Rule`: ``default``, or ``strict`` in a strict build), a problem
    without one is an error. Duplicates (the same message at the same place) are dropped."""
    errors: list[BookError] = []
    warnings: list[BookError] = []
    seen: set[str] = set()
    for problem in flatten(problems):
        if problem.location_message() in seen:
            continue
        seen.add(problem.location_message())
        warn = problem.kind is not None and problem.kind.severity(strict) is Severity.WARNING
        (warnings if warn else errors).append(problem)
    return errors, warnings


def stops(problem: BookError) -> bool:
    """Whether a problem stops the build where it is found: one of no kind (no output can be
    made past it). A problem of a kind never does; in a strict build it fails the build at its end."""
    return problem.kind is None


class Interrupted(KeyboardInterrupt):
    """A signal other than Ctrl-C asked the command to stop (SIGTERM, SIGHUP).

    A :class:`KeyboardInterrupt`, so every clean-up that Ctrl-C runs (kernels shut down, an
    early Sphinx called off, temporary files removed) runs for it too; the command then exits
    with ``128 + signum``, as a shell reports a process the signal ended.
    """

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def raise_interrupted(signum: int, frame: object) -> None:
    """A signal handler: unwind the command as Ctrl-C does, remembering which signal it was."""
    raise Interrupted(signum)


def interrupted_status(exc: KeyboardInterrupt) -> int:
    """The exit status of a command a signal interrupted: 128 + the signal (Ctrl-C: 130)."""
    return 128 + getattr(exc, "signum", 2)


# ---- what reaches a terminal or a CI log ---------------------------------------------------

#: Terminal control sequences (ECMA-48), 7- and 8-bit: strings (OSC: window title, clipboard
#: write 52, hyperlink 8; DCS, SOS, PM, APC) up to their terminator (BEL or ST) or, unterminated,
#: the end of the line; CSI sequences (colours, cursor moves, erasing); any other escape.
_CONTROL_SEQUENCE = re.compile(
    r"(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x9c\n]*(?:\x07|\x1b\\|\x9c)?"
    r"|(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]?"
    r"|\x1b[ -/]*[0-~]?")
#: Other control characters (C0 but tab and newline, DEL, C1): a bell, a backspace that rubs out
#: what came before it on a terminal.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def terminal_text(text: str) -> str:
    """``text`` with every terminal control sequence and control character taken out, for a
    terminal or a CI log.

    Why: what tabbook prints includes text it did not write: a failing cell's exception and
    traceback, a store entry's fields, a page's words. Printed as it is, a cell could set the
    terminal's title, write the clipboard (OSC 52), show a link to somewhere else than it says
    (OSC 8), or erase and overwrite the lines above it in a log. Everything goes, colours too
    (the tracebacks' colours were the kernel's; a report is read in logs as often as at a
    terminal): what is left is the text. A carriage return becomes a line break, so what a
    progress bar drew over stays readable instead of hidden."""
    if not _NEEDS_CLEANING.search(text):
        return text
    text = _CONTROL_SEQUENCE.sub("", text).replace("\r\n", "\n").replace("\r", "\n")
    return _CONTROL.sub("", text)


_NEEDS_CLEANING = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


class TerminalStream:
    """A text stream that writes :func:`terminal_text` of what it is given to ``stream``: the
    command line's standard output and error, so every line tabbook prints (a report, a
    warning, a log line quoting a page or an entry) is plain text. ``unfiltered`` is the
    stream itself, for the one writer of control sequences of tabbook's own: the live status
    line (:class:`tabbook.execute.progress.LiveStatus`), which redraws itself at a terminal."""

    def __init__(self, stream: TextIO) -> None:
        self.unfiltered = stream

    def write(self, text: str) -> int:
        self.unfiltered.write(terminal_text(text))
        return len(text)

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> object:  # flush, isatty, fileno, encoding, ...
        return getattr(self.unfiltered, name)


def unfiltered(stream: TextIO) -> TextIO:
    """The stream a :class:`TerminalStream` writes to (``stream`` itself if it is none)."""
    return getattr(stream, "unfiltered", stream) if isinstance(stream, TerminalStream) else stream
