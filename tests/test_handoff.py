"""The command line hands its configuration to the processes it starts explicitly (issue 28).

``--overlay`` and ``--python`` reach a Sphinx run through the environment built for that run
(:meth:`tabbook.config.Config.handoff_env`), never by changing the builder's own ``os.environ``.
"""

from __future__ import annotations

import os
import shutil
import signal
import sys
from pathlib import Path

import pytest

from tabbook.cli import main
from tabbook.config import OVERLAY_ENV, PYTHON_ENV, load_config
from tabbook.render.sphinx import sphinx_env

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "book"


def test_overlay_and_interpreters_reach_sphinx_and_leave_os_environ_alone(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(OVERLAY_ENV, raising=False)
    monkeypatch.delenv(PYTHON_ENV, raising=False)
    monkeypatch.setenv("TABBOOK_CACHE", str(tmp_path / "cache"))
    book = tmp_path / "book"
    shutil.copytree(FIXTURE, book)
    (book / "conf.py").unlink()  # the conf.py tabbook writes, too, reads the overlay from its run's env
    overlay = tmp_path / "elsewhere.ini"
    overlay.write_text("[project]\ntitle = Overlaid Title\n")
    before = dict(os.environ)
    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        code = main(["-C", str(book), "--overlay", str(overlay), "--python", f"alpha={sys.executable}",
                     "build", "--no-execute"])
    finally:  # main's own (SIGTERM and SIGHUP unwind it as Ctrl-C does) end with it
        for sig, handler in handlers.items():
            signal.signal(sig, handler)
    assert code == 0
    assert dict(os.environ) == before  # nothing was handed over through this process's environment
    page = (book / "build" / "html" / "sec.html").read_text()
    assert "- Overlaid Title</title>" in page
    config = load_config(book, overlay, [f"alpha={sys.executable}"])
    env = sphinx_env(config)
    assert env[OVERLAY_ENV] == str(overlay.resolve()) and env[PYTHON_ENV] == f"alpha={sys.executable}"
    assert OVERLAY_ENV not in sphinx_env(load_config(book))
