"""Downloaded notebooks run as downloaded (issue 53, item 3).

A reader's notebook starts with an install line generated from the framework's locks
(``tabbook/execute/readerlock.py``); ``tabbook notebooks`` runs every notebook of the site's zips in
a fresh venv, offline (``tabbook/render/notebooks.py``; ``make notebooks-check`` runs it on this
book). Here: the line's generation from small locks, its drift from them, the skip the package's
own markers decide, and one real run of a broken notebook (a lock naming a release that does not
exist) that must fail at the lock's line.
"""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from prerequisites import require

from tabbook.errors import BookError

PY312 = sorted(glob.glob(str(Path.home() / ".pyenv" / "versions" / "3.12.*" / "bin" / "python3.12")))

CONFIG = """[project]
name = mini
version = 0.1.0+mini

[build]
tabs = alpha
library_dir = minilib

[framework:alpha]
requirements = envs/alpha.txt
{constraints}
"""

PYPROJECT = """[build-system]
requires = ["hatchling>=1.18"]
build-backend = "hatchling.build"

[project]
name = "minilib"
version = "0.1.0+mini"
requires-python = ">=3.11"
dependencies = []

[project.optional-dependencies]
{extra}

[tool.hatch.build.targets.wheel]
packages = ["minilib"]
"""


def make_book(tmp: Path, lock: str, constraints: str = "", extra: str = "") -> Path:
    """A one-tab book that packages its library (``minilib/``) and pins its framework in a lock."""
    book = tmp / "book"
    (book / "envs").mkdir(parents=True)
    (book / "chapter").mkdir()
    (book / "minilib").mkdir()
    (book / "minilib" / "__init__.py").write_text('__version__ = "0.1.0+mini"\n')
    (book / "envs" / "alpha.txt").write_text(lock)
    if constraints:
        (book / "envs" / "alpha-constraints.txt").write_text(constraints)
    (book / "config.ini").write_text(CONFIG.format(
        constraints="constraints = envs/alpha-constraints.txt" if constraints else ""))
    (book / "pyproject.toml").write_text(PYPROJECT.format(extra=extra))
    (book / "index.md").write_text("# Mini\n\n```toc\nchapter/sec\n```\n")
    (book / "chapter" / "sec.md").write_text("# Sec\n\n```{.python .input}\nprint('one')\n```\n")
    return book


def config_of(book: Path):  # noqa: ANN201 - Config
    from tabbook.config import load_config

    return load_config(book)


def test_the_install_line_is_the_locks_pins_without_the_builders_own_tools(tmp_path: Path) -> None:
    from tabbook.execute.readerlock import find_links_for, install_source, reader_pins

    book = make_book(tmp_path, "# a comment\nipykernel==7.4.0\nTorch == 2.13.0  # the framework\nnumpy==2.3.5\n"
                               "pytest==9.2.0  # libtest\n", constraints="numpy==1.0\nipython<9\n")
    config = config_of(book)
    pins = reader_pins(config.frameworks["alpha"], config.rel)
    # the requirements first, then what only the constraints name; a package named twice keeps
    # its first pin; the kernel and libtest's runner are the builder's, not the reader's
    assert [p.spec for p in pins] == ["Torch==2.13.0", "numpy==2.3.5", "ipython<9"]
    assert [(config.rel(p.path), p.line) for p in pins] == [
        ("envs/alpha.txt", 3), ("envs/alpha.txt", 4), ("envs/alpha-constraints.txt", 2)]
    line = install_source("minilib==0.1.0+mini", tuple(p.spec for p in pins), find_links_for("chapter/sec"),
                          "envs/alpha.txt", "minilib")
    assert line.splitlines()[1] == ("%pip install --quiet --find-links .. minilib==0.1.0+mini Torch==2.13.0 "
                                    "numpy==2.3.5 'ipython<9'")
    assert find_links_for("index") == "." and find_links_for("a/b/c") == "../.."


def test_a_lock_line_the_install_line_cannot_carry_is_a_located_error(tmp_path: Path) -> None:
    from tabbook.execute.readerlock import reader_pins

    config = config_of(make_book(tmp_path, "numpy==2.3.5\n--extra-index-url https://example.org/simple\n"))
    with pytest.raises(BookError) as info:
        reader_pins(config.frameworks["alpha"], config.rel)
    assert info.value.location_message().startswith("envs/alpha.txt:2: '--extra-index-url")


def test_a_hashed_lock_at_another_version_is_a_located_error_and_a_local_label_is_not(tmp_path: Path) -> None:
    from tabbook.execute.readerlock import reader_pins

    config = config_of(make_book(tmp_path, "torch==2.13.0\n"))
    hashed = config.root / "envs" / "alpha.hashes.txt"
    hashed.write_text("# tabbook lock\ntorch==2.13.0+cpu \\\n    --hash=sha256:00\n")
    assert [p.spec for p in reader_pins(config.frameworks["alpha"], config.rel)] == ["torch==2.13.0"]
    hashed.write_text("# tabbook lock\nfilelock==1.0 \\\n    --hash=sha256:00\ntorch==2.12.0 \\\n    --hash=sha256:00\n")
    with pytest.raises(BookError) as info:
        reader_pins(config.frameworks["alpha"], config.rel)
    message = info.value.location_message()
    assert message.startswith("envs/alpha.hashes.txt:4: pins torch==2.12.0, but envs/alpha.txt:1 pins torch==2.13.0")


def test_the_downloaded_notebook_starts_with_the_line_and_d2lbooks_libs_win(tmp_path: Path) -> None:
    from dataclasses import replace

    from tabbook.render.context import RenderContext, render_context
    from tabbook.render.site import INSTALL_CELL, for_colab

    config = config_of(make_book(tmp_path, "ipykernel==7.4.0\nnumpy==2.3.5\n"))
    opts = render_context(config)
    # what crosses into the Sphinx process comes back equal
    assert RenderContext.from_json(opts.to_json()) == opts
    nb = {"cells": [{"cell_type": "code", "source": "import numpy", "metadata": {}, "outputs": []}], "metadata": {}}
    out = for_colab(json.loads(json.dumps(nb)), opts, "alpha", "chapter/sec")
    assert [c.get("id") for c in out["cells"]][:1] == [INSTALL_CELL]
    assert out["cells"][0]["source"].endswith("--find-links .. minilib==0.1.0+mini numpy==2.3.5\n")
    assert len(out["cells"]) == 2  # no d2lbook header above the lock's line
    libs = replace(opts, libs=(("", "numpy", "numpy==RELEASE"),), libs_header="Needed:")
    out = for_colab(json.loads(json.dumps(nb)), libs, "alpha", "chapter/sec")
    assert [c["source"] for c in out["cells"][:2]] == ["Needed:", "!pip install numpy==0.1.0+mini\n"]


def test_a_notebook_published_from_other_locks_fails_at_the_lock(tmp_path: Path) -> None:
    """The drift check: the published line against what the locks give now, before any kernel."""
    from tabbook.render.notebooks import run_notebook
    from tabbook.render.site import INSTALL_CELL

    config = config_of(make_book(tmp_path, "numpy==2.3.5\n"))
    nb_path = tmp_path / "sec.ipynb"
    nb_path.write_text(json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
        {"cell_type": "code", "id": INSTALL_CELL, "metadata": {}, "outputs": [], "execution_count": None,
         "source": "%pip install --quiet --find-links .. minilib==0.1.0+mini numpy==2.3.4\n"}]}))
    with pytest.raises(BookError) as info:
        run_notebook(config, config.frameworks["alpha"], nb_path, "mini-alpha/chapter/sec.ipynb", "chapter/sec",
                     Path(sys.executable), tmp_path, "%pip install --quiet --find-links .. minilib==0.1.0+mini "
                     "numpy==2.3.5\n")
    assert info.value.location_message().startswith(
        "envs/alpha.txt: [alpha] mini-alpha/chapter/sec.ipynb: its install line is not what the locks give now")


def test_a_framework_the_package_marks_for_other_pythons_is_skipped_with_the_reason(tmp_path: Path) -> None:
    from tabbook.render.notebooks import unsupported

    config = config_of(make_book(tmp_path, "numpy==2.3.5\n", extra='alpha = ["numpy<1.24; python_version < \'3.9\'"]'))
    fw = config.frameworks["alpha"]
    object.__setattr__(fw, "module", "alpha")
    why = unsupported(config, fw, Path(sys.executable))
    assert why.startswith(f"pyproject.toml: minilib[alpha] installs nothing on Python {sys.version_info[0]}."), why
    config = config_of(make_book(tmp_path / "b", "numpy==2.3.5\n", extra='alpha = ["numpy"]'))
    fw = config.frameworks["alpha"]
    object.__setattr__(fw, "module", "alpha")
    assert unsupported(config, fw, Path(sys.executable)) == ""


def test_a_lock_naming_a_missing_release_fails_the_run_at_its_line(tmp_path: Path) -> None:
    """A real run: a fresh Python 3.12 venv, offline, the notebook's own install line; pip cannot
    find the release, so the run fails, at the lock line the install line came from."""
    require(PY312, "no Python 3.12 under ~/.pyenv: the notebooks run on Colab's Python")
    from tabbook.execute.readerlock import find_links_for, install_source, reader_pins
    from tabbook.render.notebooks import kernel_pin, run_zip
    from tabbook.render.package import build_wheel
    from tabbook.render.site import INSTALL_CELL

    config = config_of(make_book(tmp_path, "ipykernel==7.4.0\nnumpy==0.0.1  # no such release\n"))
    fw = config.frameworks["alpha"]
    # set-up, as the make target's: the kernel's wheels for 3.12 (the registries, once per machine)
    house = Path.home() / ".cache" / "tabbook" / "notebook-wheels-test" / "py3.12"
    got = subprocess.run([PY312[-1], "-m", "pip", "download", "--quiet", "--only-binary=:all:", "--dest", str(house),
                          kernel_pin(fw)], capture_output=True, text=True)
    assert got.returncode == 0, got.stderr
    wheel = build_wheel(config, tmp_path / "dist")
    specs = tuple(p.spec for p in reader_pins(fw, config.rel))
    line = install_source("minilib==0.1.0+mini", specs, find_links_for("chapter/sec"), "envs/alpha.txt", "minilib")
    nb = {"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
        {"cell_type": "code", "id": INSTALL_CELL, "metadata": {}, "outputs": [], "execution_count": None, "source": line},
        {"cell_type": "code", "id": "c1", "metadata": {}, "outputs": [], "execution_count": None,
         "source": "print('one')"}]}
    zipped = tmp_path / "mini-alpha-notebooks.zip"
    with zipfile.ZipFile(zipped, "w") as zf:
        zf.writestr("mini-alpha/chapter/sec.ipynb", json.dumps(nb))
        zf.write(wheel, f"mini-alpha/{wheel.name}")
    (tmp_path / "work").mkdir()
    env_before = dict(os.environ)
    with pytest.raises(BookError) as info:
        run_zip(config, fw, zipped, Path(PY312[-1]), house, tmp_path / "work", lambda docname: line)
    message = info.value.location_message()
    assert message.startswith("envs/alpha.txt:2: [alpha] the downloaded notebooks' install line cannot install "
                              "numpy==0.0.1"), message
    assert "mini-alpha/chapter/sec.ipynb, cell 1" in message, message
    assert dict(os.environ) == env_before  # the offline settings were the kernel's, not this process's


def test_a_failing_cell_is_told_at_its_pages_line(tmp_path: Path) -> None:
    from tabbook.render.notebooks import _md_line

    config = config_of(make_book(tmp_path, "numpy==2.3.5\n"))
    assert _md_line(config, "chapter/sec", "\nprint('one')\n") == ("chapter/sec.md", 4)
    assert _md_line(config, "chapter/sec", "never written") == ("chapter/sec.md", 1)


def test_only_pips_own_error_lines_fail_the_install_cell() -> None:
    """The kernel's loggers write ``ERROR:tornado…`` lines into the install cell's stream while pip
    runs (seen in a fresh make test); those are not pip failing."""
    from tabbook.render.notebooks import _pip_failed

    assert not _pip_failed("ERROR:tornado.general:Uncaught exception in ZMQStream callback\nSuccessfully installed d2l\n")
    assert _pip_failed("Looking in links: ..\nERROR: No matching distribution found for numpy==0.0.1\n")
