"""The command line hands its configuration to the processes it starts explicitly (issue 28).

The configuration reaches a Sphinx run as the render context the builder writes and names in the
environment built for that run (:func:`tabbook.render.context.hand_off`, issue 40), never by
changing the builder's own ``os.environ``; the Sphinx process does not read ``config.ini`` again.
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
from tabbook.render.context import ENV, RenderContext
from tabbook.render.sphinx import sphinx_env
from tabbook.render.sphinx_conf import sphinx_settings

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
    assert OVERLAY_ENV not in env and PYTHON_ENV not in env  # the context says what Sphinx needs
    assert RenderContext.from_json(Path(env[ENV]).read_text()).title == "Overlaid Title"


def test_the_sphinx_process_reads_the_context_not_config_ini(tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(OVERLAY_ENV, raising=False)
    book = tmp_path / "book"
    shutil.copytree(FIXTURE, book)
    overlay = tmp_path / "elsewhere.ini"
    overlay.write_text("[project]\ntitle = Overlaid Title\n")
    env = sphinx_env(load_config(book, overlay))
    context = RenderContext.from_json(Path(env[ENV]).read_text())
    assert RenderContext.from_json(context.to_json()) == context  # it survives the trip as it was
    (book / "config.ini").unlink()  # a Sphinx run that read it again would fail now
    monkeypatch.setenv(ENV, env[ENV])
    settings = sphinx_settings(book)
    assert settings["project"] == "Overlaid Title" and settings["tabbook_context"]["title"] == "Overlaid Title"
