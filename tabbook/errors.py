"""Typed errors that carry the Markdown file and line a user has to fix."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

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

    def __reduce__(self) -> tuple[Any, ...]:
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

    def __reduce__(self) -> tuple[Any, ...]:
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
