"""What a test needs from the machine, and what happens when it is missing.

``make test`` installs everything the suite uses before running it (TeX, Chromium, the test
extras such as actionlint and Dask; Python 3.12 comes with the machine's pyenv), and it says so
by setting ``TABBOOK_TEST_STRICT=1``; CI sets ``CI``. In either case a missing prerequisite
fails the test that needs it, so a green run never hides a test that did not run. A plain
``pytest`` on a machine without one skips that test and says what installs it.
"""

from __future__ import annotations

import os

import pytest


def strict() -> bool:
    """Whether a missing prerequisite is a failure (``make test``, CI) rather than a skip."""
    return bool(os.environ.get("TABBOOK_TEST_STRICT") or os.environ.get("CI"))


def require(present: object, what: str, *, module: bool = False) -> None:
    """Skip (a plain pytest) or fail (``make test``, CI) the calling test unless ``present``;
    ``module=True`` at a test module's top level: the whole module."""
    if present:
        return
    if strict():
        pytest.fail(f"{what}; `make test` installs it, so it must be here", pytrace=False)
    pytest.skip(what, allow_module_level=module)


def skip_unless(present: object, what: str) -> pytest.MarkDecorator:
    """The marker form of :func:`require`: under ``make test`` or CI the test runs and fails."""
    return pytest.mark.skipif(not present and not strict(), reason=what)
