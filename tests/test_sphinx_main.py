"""The Sphinx entry point of tabbook's runs (tabbook.render.sphinx_main) ends as ``python -m
sphinx`` would, less the interpreter's teardown: the same exit status, every ``atexit`` handler
run, the standard streams' last bytes kept, and the site written."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tabbook.render import sphinx_main

ROOT = Path(__file__).resolve().parents[1]

# An extension that leaves work for interpreter exit: an atexit handler writing a file, and text
# on both streams without a final newline (buffered until the streams are flushed).
EXT = '''
import atexit, sys
from pathlib import Path

def setup(app):
    out = Path(app.confdir) / "atexit.txt"
    atexit.register(lambda: out.write_text("ran"))
    app.connect("build-finished", lambda app, exc: (sys.stdout.write("OUT-TAIL"), sys.stderr.write("ERR-TAIL")) and None)
    return {"parallel_read_safe": True}
'''


def project(tmp_path: Path, body: str) -> Path:
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "leftover.py").write_text(EXT)
    (tmp_path / "conf.py").write_text("import sys\nsys.path.insert(0, '.')\nextensions = ['leftover']\n")
    (tmp_path / "index.rst").write_text(body)
    return tmp_path


def sphinx(root: Path, module: str, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", module, "-q", "-b", "html", *extra, str(root),
                           str(root / "_build")], cwd=root, capture_output=True, text=True,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})


def test_it_ends_as_sphinx_does(tmp_path: Path) -> None:
    root = project(tmp_path, "Title\n=====\n\nA page.\n")
    proc = sphinx(root, "tabbook.render.sphinx_main")
    assert proc.returncode == 0, proc.stderr
    assert (root / "_build" / "index.html").is_file()
    assert (root / "atexit.txt").read_text() == "ran"
    assert proc.stdout.endswith("OUT-TAIL")
    assert proc.stderr.endswith("ERR-TAIL")


@pytest.mark.parametrize("extra,body", [
    (("-W",), "Title\n=====\n\n:undefined-role:`x`\n"),  # a warning made an error: status 1
    (("--no-such-option",), "Title\n=====\n"),  # argparse's error: status 2
])
def test_the_exit_status_is_sphinxs(tmp_path: Path, extra: tuple[str, ...], body: str) -> None:
    ours = sphinx(project(tmp_path / "ours", body), "tabbook.render.sphinx_main", *extra)
    theirs = sphinx(project(tmp_path / "theirs", body), "sphinx", *extra)
    assert ours.returncode == theirs.returncode != 0
    assert (tmp_path / "ours" / "atexit.txt").exists() == (tmp_path / "theirs" / "atexit.txt").exists()


def test_the_status_of_a_system_exit(monkeypatch: pytest.MonkeyPatch) -> None:
    """``main`` may leave by SystemExit (argparse, ``--help``): its code becomes the status."""
    import sphinx.cmd.build

    for code, status in ((None, 0), (3, 3), ("a message", 1)):
        def leave(argv: list[str], code: object = code) -> int:
            raise SystemExit(code)

        monkeypatch.setattr(sphinx.cmd.build, "main", leave)
        assert sphinx_main.run([]) == status


def test_tabbook_runs_sphinx_through_it(tmp_path: Path) -> None:
    from tabbook.config import load_config
    from tabbook.render.sphinx import sphinx_command

    (tmp_path / "config.ini").write_text("[project]\nname = b\n[build]\nindex = index.md\n")
    (tmp_path / "index.md").write_text("# B\n")
    cmd = sphinx_command(load_config(tmp_path))
    assert cmd[1:3] == ["-m", "tabbook.render.sphinx_main"]
    assert cmd[3:5] == ["-b", "html"]  # sphinx-build's own arguments follow, as serve and warm take them


def test_what_a_run_reads_besides_the_sources_changes_with_the_bibliography_and_the_environment(
        tmp_path: Path) -> None:
    """SphinxRun.inputs, which decides whether a run set up ahead may be used: the same text
    while nothing changed; another when the bibliography (read before the gate) or the pickled
    environment changed, or the site stamp differs."""
    import os

    from tabbook.config import load_config
    from tabbook.render.sphinx import SphinxRun

    (tmp_path / "config.ini").write_text("[project]\nname = b\n[build]\nindex = index.md\n")
    (tmp_path / "index.md").write_text("# B\n")
    bib = tmp_path / "references.bib"
    bib.write_text("@misc{a, title={A}}\n")
    run = SphinxRun(load_config(tmp_path))
    first = run.inputs("stamp")
    assert run.inputs("stamp") == first
    assert run.inputs("another stamp") != first
    bib.write_text("@misc{a, title={B}}\n")
    os.utime(bib, ns=(1, 1))
    assert run.inputs("stamp") != first
    second = run.inputs("stamp")
    pickle = tmp_path / "build" / "doctrees" / "html" / "environment.pickle"
    pickle.parent.mkdir(parents=True)
    pickle.write_bytes(b"env")
    assert run.inputs("stamp") != second
