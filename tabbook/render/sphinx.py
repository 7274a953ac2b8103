"""Stage 4b, render: run Sphinx on the merged sources, one builder at a time.

Sphinx runs in a subprocess with the book's ``conf.py`` (``-c ROOT``) and a doctree
cache per builder under ``build/doctrees``, so HTML and the per-framework LaTeX
builds each reuse their own. Its messages pass through to the user's terminal.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tabbook.config import Config
from tabbook.errors import BookError
from tabbook.render.sources import source_dir


def sphinx_command(config: Config, builder: str = "html", out: Path | None = None,
                   overrides: dict[str, str] | None = None, jobs: int = 1) -> list[str]:
    """The ``sphinx-build`` command line tabbook runs (also what ``serve`` hands to sphinx-autobuild)."""
    out = out or config.build_dir / builder
    cmd = [
        sys.executable, "-m", "sphinx", "-b", builder, "-c", str(config.root),
        str(source_dir(config)), str(out), "-d", str(config.build_dir / "doctrees" / builder),
        "-q", "--keep-going",
    ]
    if jobs != 1:
        cmd += ["-j", str(jobs) if jobs > 1 else "auto"]
    for k, v in (overrides or {}).items():
        cmd += ["-D", f"{k}={v}"]
    return cmd


def sphinx_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2])
    return env


def render(config: Config, builder: str = "html", out: Path | None = None,
           overrides: dict[str, str] | None = None, jobs: int = 1) -> None:
    proc = subprocess.run(sphinx_command(config, builder, out, overrides, jobs), env=sphinx_env(),
                          capture_output=True, text=True)
    sys.stderr.write(proc.stderr)
    if proc.returncode != 0:
        raise BookError(f"Sphinx failed (exit {proc.returncode}); see the messages above")
