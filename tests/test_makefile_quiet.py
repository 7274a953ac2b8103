"""A newcomer's ``make html`` prints our lines, not pip's: the machine's pip configuration can make
every install print pages of warnings (``Location '...' is ignored``, one per package and index)
before anything of ours. The Makefile sends pip's output to a log, says in one line what it
installs, and shows the log's end only when pip fails.

The venv is a stand-in whose ``python`` prints such warnings (and fails on request), so the
Makefile's own recipe runs as written without installing anything.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

NOISY_PYTHON = """#!/bin/sh
[ "$2" = pip ] || exit 0  # only pip is noisy (the lint step's ruff says nothing here)
i=0
while [ $i -lt 100 ]; do
  echo "WARNING: Location 'file:///opt/mirror/simple/pkg$i/' is ignored: it is neither a file nor a directory." >&2
  i=$((i + 1))
done
if [ -n "$FAKE_PIP_FAIL" ]; then echo "ERROR: No matching distribution found for sphinx==9.0.4" >&2; exit 1; fi
exit 0
"""


def make_setup(tmp_path: Path, fail: bool) -> subprocess.CompletedProcess[str]:
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    python = venv / "bin" / "python"
    python.write_text(NOISY_PYTHON)
    python.chmod(0o755)
    env = {**os.environ, "FAKE_PIP_FAIL": "1" if fail else ""}
    # `lint` needs both stamps (the builder's environment and the test tools), then runs the
    # stand-in's ruff: every pip call of the set-up, and nothing that builds.
    return subprocess.run(["make", "--no-print-directory", f"VENV={venv}", "lint"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)


def test_setup_shows_our_lines_not_pips_warnings(tmp_path: Path) -> None:
    proc = make_setup(tmp_path, fail=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout + proc.stderr
    assert "is ignored" not in out, out
    lines = out.splitlines()
    assert lines[0].startswith("[setup] the builder's environment: ") and "envs/builder.txt" in lines[0]
    assert lines[1].startswith("[setup] the test tools: ")
    assert len(lines) <= 4, out  # the two set-up lines, then the lint command's
    assert (tmp_path / "venv" / "pip-install.log").read_text().count("is ignored") == 100  # kept, in the log


def test_a_failing_install_shows_pips_own_words(tmp_path: Path) -> None:
    proc = make_setup(tmp_path, fail=True)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "ERROR: No matching distribution found for sphinx==9.0.4" in out
    assert f"[setup] pip failed: {tmp_path / 'venv' / 'pip-install.log'}" in out
