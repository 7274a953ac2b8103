"""Stage 4b, render: run Sphinx on the merged sources, one builder at a time.

Sphinx runs in a subprocess with the book's ``conf.py`` (``-c ROOT``) and a doctree
cache per builder under ``build/doctrees``, so HTML and the per-framework LaTeX
builds each reuse their own. Its messages pass through to the user's terminal.

A book written for d2lbook has no ``conf.py`` (d2lbook generates its own): such a
book gets one written under ``build/`` that applies the same defaults
(:func:`tabbook.render.sphinx_conf.sphinx_settings`), with the overlay in effect
when it was written, so ``serve``'s Sphinx runs see the same configuration.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tabbook.config import Config
from tabbook.errors import BookError
from tabbook.render.sources import source_dir


def conf_dir(config: Config) -> Path:
    """The folder of the ``conf.py`` Sphinx reads: the book's own, or one written for it."""
    if (config.root / "conf.py").is_file():
        return config.root
    from tabbook.config import OVERLAY_ENV
    from tabbook.render.sources import write_if_changed

    folder = config.build_dir / "sphinx-conf"
    folder.mkdir(parents=True, exist_ok=True)
    overlay = f"os.environ.setdefault({OVERLAY_ENV!r}, {str(config.overlay)!r})\n" if config.overlay else ""
    write_if_changed(folder / "conf.py", (
        "# Written by tabbook for a book without a conf.py of its own: its defaults, nothing else.\n"
        "import os\nfrom pathlib import Path\n\n"
        f"{overlay}"
        "from tabbook.render.sphinx_conf import sphinx_settings\n\n"
        f"globals().update(sphinx_settings(Path({str(config.root)!r})))\n"))
    return folder


def sphinx_command(config: Config, builder: str = "html", out: Path | None = None,
                   overrides: dict[str, str] | None = None, jobs: int = 1) -> list[str]:
    """The ``sphinx-build`` command line tabbook runs (also what ``serve`` hands to sphinx-autobuild)."""
    out = out or config.build_dir / builder
    cmd = [
        sys.executable, "-m", "sphinx", "-b", builder, "-c", str(conf_dir(config)),
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
           overrides: dict[str, str] | None = None, jobs: int = 1, partial: bool = False) -> None:
    overrides = {**(overrides or {}), **({"tabbook_partial": "1"} if partial else {})}
    proc = subprocess.run(sphinx_command(config, builder, out, overrides, jobs), env=sphinx_env(),
                          capture_output=True, text=True)
    sys.stderr.write(proc.stderr)
    if proc.returncode != 0:
        raise BookError(f"Sphinx failed (exit {proc.returncode}); see the messages above")
