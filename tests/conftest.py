"""Settings for every test: builds run by tests start no warm builder (tests/test_warm.py asks for one)."""

from __future__ import annotations

import os

# The tests' builds must not leave background processes behind, even when pytest runs at a terminal.
os.environ["TABBOOK_WARM"] = "0"
