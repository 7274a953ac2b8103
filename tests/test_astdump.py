"""Library keys hash definitions by :func:`tabbook.library.astdump.dump`, whose text must not
depend on the Python that computes it: a GPU machine's 3.12 wrote this chapter's GPU entries,
and a 3.11 host reads them back (a different text would stale every GPU entry at the first
library edit). Each interpreter the machine has runs the module on the same sources."""

from __future__ import annotations

import ast
import glob
import os
import shutil
import subprocess
import sys
from pathlib import Path

from tabbook.library.astdump import dump

ROOT = Path(__file__).resolve().parents[1]
SOURCES = sorted(str(p) for p in [*(ROOT / "d2l").glob("*.py"), *(ROOT / "tabbook" / "library").glob("*.py")])
#: Run by each interpreter: the number of statements and the hash of their texts.
PROGRAM = """
import ast, hashlib, importlib.util, sys
spec = importlib.util.spec_from_file_location("astdump", sys.argv[1])
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)
texts = [mod.dump(s) for f in sys.argv[2:] for s in ast.walk(ast.parse(open(f).read())) if isinstance(s, ast.stmt)]
print(len(texts), hashlib.sha256("\\n".join(texts).encode()).hexdigest())
"""


def _interpreters() -> list[str]:
    """Every CPython 3.11+ on the machine: pyenv's versions and those on the PATH (a CI machine
    with one Python compares it with itself and with 3.11's ast.dump, the other test)."""
    found = {os.path.realpath(sys.executable)}
    root = os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv"))
    candidates = glob.glob(f"{root}/versions/3.1[1-9]*/bin/python3")
    candidates += [p for v in ("3.12", "3.13", "3.14")
                   if (p := shutil.which(f"python{v}")) and "/shims/" not in p]  # pyenv's shims may refuse
    return [sys.executable, *sorted({os.path.realpath(p) for p in candidates} - found)]


def test_the_text_is_python_3_11s_ast_dump() -> None:
    if sys.version_info[:2] != (3, 11):  # the stored keys were computed by 3.11's ast.dump
        return
    for source in SOURCES:
        for node in ast.walk(ast.parse(Path(source).read_text())):
            if isinstance(node, ast.stmt):
                assert dump(node) == ast.dump(node, annotate_fields=False)


def test_every_python_on_the_machine_prints_the_same_text() -> None:
    results = {}
    for python in _interpreters():
        got = subprocess.run([python, "-c", PROGRAM, str(ROOT / "tabbook" / "library" / "astdump.py"), *SOURCES],
                             capture_output=True, text=True, timeout=120)
        assert got.returncode == 0, (python, got.stderr)
        results[python] = got.stdout.strip()
    assert len(set(results.values())) == 1, results
    assert int(next(iter(results.values())).split()[0]) > 1000  # the sources were read
