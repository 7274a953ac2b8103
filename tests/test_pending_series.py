"""The GPU patch series (``pending/gpu-cells/``, issue 54) still applies to the tree as it is.

Why: the series waits, sometimes for several sessions, for a session lent the GPU machine, whose
device time is short (15 minutes, starts included). Every change to ``chapter_gpus/`` or
``config.ini`` in between may break it; a series that no longer applies is found only then, and
mending it costs the device minutes the run needed. So each patch is applied here, in order, to
a copy of the files the series touches (``git apply`` outside any repository, so nothing of the
checkout changes), and each must apply without fuzz.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SERIES = sorted((ROOT / "pending" / "gpu-cells").glob("*.patch"))


def _touched(patch: Path) -> list[str]:
    """The paths a patch reads or writes (``git apply --numstat``: its third column)."""
    out = subprocess.run(["git", "apply", "--numstat", str(patch)], cwd=ROOT, capture_output=True,
                         text=True, check=True).stdout
    return [line.split("\t", 2)[2] for line in out.splitlines() if line.count("\t") >= 2]


@pytest.mark.skipif(not SERIES, reason="no GPU series is pending (pending/gpu-cells/ is empty)")
def test_the_gpu_series_applies_in_order_to_this_tree(tmp_path: Path) -> None:
    for path in sorted({p for patch in SERIES for p in _touched(patch)}):
        if (ROOT / path).is_file():
            (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / path, tmp_path / path)
    for patch in SERIES:
        run = subprocess.run(["git", "apply", "--verbose", "-C3", str(patch)], cwd=tmp_path,
                             capture_output=True, text=True)
        assert run.returncode == 0, f"{patch.relative_to(ROOT)} no longer applies:\n{run.stderr}"
        assert "with fuzz" not in run.stderr, run.stderr
