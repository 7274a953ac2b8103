"""A builder's child process ends with the builder, even one killed outright.

The builder starts Sphinx runs and unit workers; each is told, in an environment variable, which
process started it, and asks Linux for a parent-death signal (:func:`end_with_parent`), so a
``kill -9`` of a build leaves no Sphinx writing ``build/html`` and no worker computing for nobody.
"""

from __future__ import annotations

import os
import sys

#: Environment variables naming the process that started a builder's child, which that child
#: must not outlive (:func:`end_with_parent`): one per kind of child, so that what a child
#: starts in turn (a worker's kernel) never takes a variable meant for another kind.
SPHINX_PARENT_ENV = "TABBOOK_SPHINX_PARENT"
WORKER_PARENT_ENV = "TABBOOK_WORKER_PARENT"
#: prctl(2)'s option: the signal this process gets when the thread that started it ends.
PR_SET_PDEATHSIG = 1


def end_with_parent(signum: int, variable: str) -> bool:
    """Have this process get ``signum`` when its parent, the process the environment
    ``variable`` names (the builder that started it), ends, SIGKILL included; at once if it is
    gone already. True when set; nothing when ``variable`` is not set (not started so).

    Why: a build killed outright (``kill -9``, the OOM killer) runs no clean-up; its Sphinx went
    on writing ``build/html`` for seconds without the book's lock, and a worker busy in C code
    went on computing for nobody. Linux's parent-death signal needs no cooperation from the dead."""
    expected = os.environ.get(variable, "")
    if not sys.platform.startswith("linux") or not expected.isdigit():
        return False
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if int(libc.prctl(PR_SET_PDEATHSIG, signum, 0, 0, 0)) != 0:
            return False
    except (OSError, AttributeError):
        return False
    if os.getppid() != int(expected):
        try:
            os.kill(int(expected), 0)
        except ProcessLookupError:  # it ended before the signal was asked for
            os.kill(os.getpid(), signum)
        except PermissionError:
            pass
        libc.prctl(PR_SET_PDEATHSIG, 0, 0, 0, 0)  # alive, not our parent: the variable is not about us
        return False
    return True
