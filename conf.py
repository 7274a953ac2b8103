"""Sphinx configuration of the book: defaults derived from config.ini, then our overrides."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))

from tabbook.render.sphinx_conf import sphinx_settings  # noqa: E402

globals().update(sphinx_settings(ROOT))
