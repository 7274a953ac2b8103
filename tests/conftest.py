"""Settings for every test: builds run by tests start no warm builder (tests/test_warm.py asks for
one); and the ``book`` fixture the configuration tests share."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

# The tests' builds must not leave background processes behind, even when pytest runs at a terminal.
os.environ["TABBOOK_WARM"] = "0"

FIXTURE_BOOK = Path(__file__).resolve().parent / "fixtures" / "book"


@pytest.fixture
def book(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of tests/fixtures/book to change at will, read with no overlay from the environment
    (a module with a ``book`` fixture of its own uses that one instead)."""
    from tabbook.config import OVERLAY_ENV

    monkeypatch.delenv(OVERLAY_ENV, raising=False)
    shutil.copytree(FIXTURE_BOOK, tmp_path / "book")
    return tmp_path / "book"
