"""The tabbook distribution works as a d2lbook author uses it: built from packaging/tabbook,
installed into a fresh virtual environment outside this repository, its ``tabbook`` command
builds books in folders elsewhere, with nothing of this checkout on ``sys.path``.

The fresh venv gets the builder's dependencies from the builder venv (a ``.pth`` line naming
its site-packages: no download), and ``pip install --no-index`` of the wheel then checks that
the wheel's dependency ranges accept the pinned lock (envs/builder.txt) as installed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from pathlib import Path

import pytest
from prerequisites import require

from tabbook.execute.installer import uv_binary

ROOT = Path(__file__).resolve().parent.parent


def _run(cmd: list[str], cwd: Path, env: dict[str, str]) -> str:
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"{' '.join(map(str, cmd))} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc.stdout + proc.stderr


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str], Path]:
    """(the venv's bin folder, the environment to run it in, a work folder outside the repo)."""
    work = tmp_path_factory.mktemp("tabbook-dist")
    assert not work.resolve().is_relative_to(ROOT)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "TABBOOK_OVERLAY", "TABBOOK_PYTHON")}
    env["TABBOOK_CACHE"] = str(work / ".cache")
    env["TABBOOK_WARM"] = "0"
    _run([sys.executable, "-m", "pip", "wheel", str(ROOT / "packaging" / "tabbook"), "--no-deps", "--quiet",
          "-w", str(work / "dist")], cwd=work, env=env)
    wheels = sorted((work / "dist").glob("tabbook-*.whl"))
    assert len(wheels) == 1, wheels
    base = Path(sys.base_prefix) / "bin" / f"python{sys.version_info.major}.{sys.version_info.minor}"
    _run([str(base), "-m", "venv", str(work / "venv")], cwd=work, env=env)
    python = work / "venv" / "bin" / "python"
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    (Path(purelib) / "builder-dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    _run([str(python), "-m", "pip", "install", "--no-index", "--quiet", "--disable-pip-version-check",
          str(wheels[0])], cwd=work, env=env)
    return work / "venv" / "bin", env, work


def test_the_installed_package_is_the_wheels_with_its_data(installed: tuple[Path, dict[str, str], Path]) -> None:
    bin_dir, env, work = installed
    probe = ("import sys, tabbook, tabbook.render.latex_conf as lc, tabbook.render.katex;"
             "print(tabbook.__file__); print(lc.BUILDER_STY.is_file()); print('\\n'.join(sys.path))")
    out = _run([str(bin_dir / "python"), "-c", probe], cwd=work, env=env).splitlines()
    site = Path(sysconfig.get_paths(vars={"base": str(bin_dir.parent), "platbase": str(bin_dir.parent)})["purelib"])
    assert Path(out[0]).is_relative_to(site), out[0]
    assert out[1] == "True"  # the LaTeX style is package data
    # Nothing of the repository is importable: only the builder's own site-packages, linked in for
    # the dependencies, may lie below it (a checkout's .venv); the tabbook found is the wheel's.
    builder = Path(sys.prefix).resolve()
    assert not [p for p in out[2:] if p and Path(p).resolve().is_relative_to(ROOT)
                and not Path(p).resolve().is_relative_to(builder)], out[2:]
    for data in ("render/node/package.json", "render/static/tabbook.js", "render/front.css",
                 "render/slides_static/tabbook-slides.css", "execute/offline-requirements.txt"):
        assert (Path(out[0]).parent / data).is_file(), data
    assert "tabbook" in _run([str(bin_dir / "tabbook"), "--help"], cwd=work, env=env)


def test_tabbook_new_then_build_html(installed: tuple[Path, dict[str, str], Path]) -> None:
    bin_dir, env, work = installed
    out = _run([str(bin_dir / "tabbook"), "new", "starter"], cwd=work, env=env)
    assert "[new] wrote starter/averages.md" in out
    out = _run([str(bin_dir / "tabbook"), "build", "html"], cwd=work / "starter", env=env)
    assert "2 executed" in out
    page = (work / "starter" / "build" / "html" / "averages.html").read_text(encoding="utf-8")
    assert "2.8" in page and "Plain Python" in page and "statistics" in page
    assert "def mean" in (work / "starter" / "d2l" / "plain.py").read_text(encoding="utf-8")
    _run([str(bin_dir / "tabbook"), "clear"], cwd=work / "starter", env=env)
    assert not (work / "starter" / "build").exists() and (work / "starter" / "_freeze").is_dir()


def test_d2lbooks_quick_start_book_builds(installed: tuple[Path, dict[str, str], Path]) -> None:
    """d2lbook's quick-start shape: index.md with a toc, one page, config.ini with only
    ``[build] notebooks``; no tabs, no name, no title, nothing saved."""
    bin_dir, env, work = installed
    book = work / "quick"
    book.mkdir()
    (book / "index.md").write_text("# Field Notes\n\nA first book.\n\n```toc\n:maxdepth: 2\n\nintro\n```\n")
    (book / "intro.md").write_text("# Introduction\n\nSquares:\n\n```{.python .input}\n"
                                   "print([n * n for n in range(1, 6)])\n```\n")
    (book / "config.ini").write_text("[build]\nnotebooks = *.md\n")
    out = _run([str(bin_dir / "tabbook"), "build", "html"], cwd=book, env=env)
    assert "1 executed" in out
    html = book / "build" / "html"
    assert "[1, 4, 9, 16, 25]" in (html / "intro.html").read_text(encoding="utf-8")
    assert "Field Notes" in (html / "index.html").read_text(encoding="utf-8")  # the title from index.md
    assert not (book / "d2l").exists() and not (html / "api.html").exists()  # nothing saved: no library
    if shutil.which("xelatex") is None:
        pytest.skip("no xelatex: the PDF half of this test needs TeX (scripts/install-tex.sh)")
    out = _run([str(bin_dir / "tabbook"), "build", "pdf"], cwd=book, env=env)
    assert (book / "build" / "pdf" / "d2lbook-python.pdf").stat().st_size > 10_000, out


def test_the_sdist_carries_the_package_data_and_builds_the_same_wheel(
        installed: tuple[Path, dict[str, str], Path]) -> None:
    """``make dist``'s way: ``uv build`` makes the sdist, then the wheel from the unpacked sdist
    (where ../../tabbook does not exist: packaging/tabbook/hatch_build.py finds tabbook/ there).
    That wheel holds the same files, byte for byte, as the one built from the checkout."""
    _, env, work = installed
    uv = uv_binary()
    require(uv, "uv is not installed (envs/builder.txt)")
    out = work / "sdist"
    _run([str(uv), "build", "--quiet", str(ROOT / "packaging" / "tabbook"), "--out-dir", str(out)], cwd=work, env=env)
    [sdist] = sorted(out.glob("tabbook-*.tar.gz"))
    [from_sdist] = sorted(out.glob("tabbook-*.whl"))
    with tarfile.open(sdist) as tar:
        names = {name.split("/", 1)[1] for name in tar.getnames() if "/" in name}
    for data in ("pyproject.toml", "hatch_build.py", "PKG-INFO", "tabbook/render/node/package.json",
                 "tabbook/render/static/tabbook.js", "tabbook/render/front.css", "tabbook/render/latex/tabbook.sty",
                 "tabbook/execute/offline-requirements.txt", "tabbook/cli.py"):
        assert data in names, data
    tracked = set(subprocess.run(["git", "ls-files", "tabbook"], cwd=ROOT, capture_output=True, text=True,
                                 check=True).stdout.split())
    assert {n for n in names if n.startswith("tabbook/")} == tracked  # every file of the package, no cache
    [from_tree] = sorted((work / "dist").glob("tabbook-*.whl"))
    with zipfile.ZipFile(from_sdist) as a, zipfile.ZipFile(from_tree) as b:
        assert sorted(a.namelist()) == sorted(b.namelist())
        assert [n for n in a.namelist() if not n.endswith("RECORD") and a.read(n) != b.read(n)] == []
