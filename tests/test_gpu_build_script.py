"""scripts/gpu-build.sh, rehearsed as a GPU machine would run it, on a small book.

The GPU build machine is lent for minutes now and then; its time must not go to finding out that
the script cannot install its wheels or that its entries are stale once back. This test plays the
machine: its Python is a venv (as a CUDA image's ``/opt/torch/.venv`` is) without Jupyter, a
stand-in ``nvidia-smi`` reports one GPU, each tab's ``gpu_probe`` names the GPU the unit was given
(``CUDA_VISIBLE_DEVICES``), and the wheels come from ``tabbook wheelhouse`` (the registries are
reachable here, as for ``make gpu-bundle``; the machine itself installs with ``--no-index``). It
then checks the round trip: the tarball's entries, unpacked into a host without that GPU, are
current (``--frozen`` passes), and the machine's own venv was left as it was.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

from scale_book import CONFIG, ROOT, make_book, tabbook

PROBE = 'import os; [f"Stand-in GPU {d}" for d in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if d]'
SMI = """#!/bin/sh
case "$*" in
  *index,uuid,name,memory.total*) echo "0, GPU-stand-in-0000, Stand-in GPU, 81559";;
  *) echo "0, Stand-in GPU, 81559 MiB, 0.0";;
esac
"""
FACTS = "import sys\nprint('facts from', sys.version_info[:2])\n"


def test_gpu_build_script_round_trip(tmp_path: Path) -> None:
    book = make_book(tmp_path, sections=3)  # s2 needs no GPU
    config = CONFIG.replace("cell_timeout = 120", "cell_timeout = 120\ngpus = s0.md 1\n    s1.md 1")
    config = config.replace("python = current", f"python = current\ngpu_probe = {PROBE}")
    (book / "config.ini").write_text(config)
    smi = tmp_path / "bin" / "nvidia-smi"
    smi.parent.mkdir()
    smi.write_text(SMI)
    smi.chmod(0o755)
    facts = tmp_path / "facts.py"
    facts.write_text(FACTS)

    # The machine: a venv of its own (no ipykernel, no nbclient), as a CUDA image's is.
    machine = tmp_path / "machine"
    subprocess.run([sys.executable, "-m", "venv", str(machine)], check=True)
    machine_py = machine / "bin" / "python"
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    got = tabbook(book, "wheelhouse", "--python-version", version)
    assert got.returncode == 0, got.stdout + got.stderr
    assert (book / "build" / "wheelhouse" / "requirements.txt").is_file()

    out = tmp_path / "out"
    env = {**os.environ, "PATH": f"{smi.parent}{os.pathsep}{os.environ['PATH']}", "GPU_PYTHON": str(machine_py),
           "OUT": str(out), "GPU_VENV": str(tmp_path / "kernel-venv"), "FRAMEWORKS": "alpha,beta",
           "FACTS": str(facts), "TABBOOK_GPU_LOCKS": str(tmp_path / "locks"),
           "TABBOOK_CACHE": str(tmp_path / "cache")}
    env.pop("PYTHONPATH", None)
    proc = subprocess.run(["bash", str(ROOT / "scripts" / "gpu-build.sh")], cwd=book, env=env,
                          capture_output=True, text=True, timeout=900)
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, log
    assert "[dry-run] this machine: GPU 0 (Stand-in GPU" in log
    assert "[done] 6 executed" in log
    assert "facts from" in (out / "facts.txt").read_text()
    assert json.loads((out / "report.json").read_text())["units"]

    # What comes back: the four GPU entries, each computed on the GPU it was given; not s2's,
    # whose key names the machine's frameworks (every CPU build would execute it again).
    with tarfile.open(out / "freeze.tgz") as tar:
        names = sorted(tar.getnames())
    assert names == [f"_freeze/s{i}/{fw}.ipynb" for i in (0, 1) for fw in ("alpha", "beta")]
    for name in names:
        meta = json.loads((book / name).read_text())["metadata"]["tabbook"]
        assert meta["provenance"]["gpus"] == ["Stand-in GPU 0"], name
    assert "_freeze/s2/alpha.ipynb: left out (executed on the CPU)" in log

    # The machine's own venv is as it was: the kernel's packages went into the script's venv.
    probe = subprocess.run([str(machine_py), "-c", "import ipykernel"], capture_output=True, text=True)
    assert probe.returncode != 0

    # Back on a host without that GPU (no nvidia-smi, the builder's own Python), which has only
    # what the tarball brought: the GPU pages' entries are current; the CPU page runs here.
    shutil.rmtree(book / "_freeze")
    with tarfile.open(out / "freeze.tgz") as tar:
        tar.extractall(book, filter="data")
    back = tabbook(book, "build", "--no-render", "--strict",
                   env={"PATH": os.environ["PATH"], "TABBOOK_GPU_LOCKS": str(tmp_path / "locks")})
    assert back.returncode == 0, back.stdout + back.stderr
    assert "[done] 2 executed, 4 reused" in back.stdout, back.stdout
