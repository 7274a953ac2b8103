"""Typed errors that carry the Markdown file and line a user has to fix."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

#: How a stage says what it does, a line at a time (``print`` by default; a test collects them).
Log = Callable[[str], object]


class BookError(Exception):
    """An error the book's author (or the build's user) can act on.

    ``str(err)`` is ``path:LINE: message`` so editors and CI logs can jump to
    the offending line.
    """

    def __init__(self, message: str, path: str | None = None, line: int | None = None,
                 column: int | None = None):
        self.message = message
        self.path = path
        self.line = line
        self.column = column  # 1-based, where a line alone is not enough (a bad byte)
        super().__init__(self.location_message())

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled with its location (the parsed-page cache keeps sections' warnings)."""
        return (type(self), (self.message, self.path, self.line, self.column))

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
