"""The book's package in its site (``tabbook.render.package``): the wheel its own backend builds,
a PEP 503 index beside it, rebuilt only when the package's files change."""

from __future__ import annotations

import shutil
import textwrap
import zipfile
from pathlib import Path

import pytest

from tabbook.config import load_config
from tabbook.errors import BookError
from tabbook.render.package import Package, book_package, normalize, project_page, publish, root_page

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "tests" / "fixtures" / "book"

PYPROJECT = textwrap.dedent("""\
    [build-system]
    requires = ["hatchling>=1.18"]
    build-backend = "hatchling.build"

    [project]
    name = "Fixture_Lib"
    dynamic = ["version"]
    requires-python = ">=3.11"
    dependencies = []

    [project.optional-dependencies]
    alpha = []

    [tool.hatch.version]
    path = "d2l/__init__.py"

    [tool.hatch.build.targets.wheel]
    packages = ["d2l"]
    """)


def test_names_are_normalized_as_pep_503_says() -> None:
    assert normalize("Fixture_Lib") == normalize("fixture.lib") == normalize("fixture--lib") == "fixture-lib"


def test_this_books_package_has_a_version_no_public_index_can_hold() -> None:
    package = book_package(load_config(ROOT))
    assert package is not None and package.name == "d2l"
    assert package.local  # PyPI refuses local labels, so d2l==<it> is only ever the site's wheel
    assert {"torch", "jax", "tensorflow", "mxnet", "plot"} <= set(package.extras)
    assert package.requirement("torch") == f"'d2l[torch]=={package.version}'"


def test_a_book_without_a_packaged_library_has_no_package(tmp_path: Path) -> None:
    book = tmp_path / "book"
    shutil.copytree(FIXTURE, book)
    assert book_package(load_config(book)) is None  # no pyproject.toml
    (book / "pyproject.toml").write_text(PYPROJECT)
    assert book_package(load_config(book)) is None  # nor a generated library


def test_the_project_page_links_the_wheel_with_its_hash(tmp_path: Path) -> None:
    wheel = tmp_path / "d2l-0.1.0+gpus-py3-none-any.whl"
    wheel.write_bytes(b"wheel")
    page = project_page(Package("d2l", "0.1.0+gpus", (), ">=3.11"), wheel)
    assert ('<a href="d2l-0.1.0%2Bgpus-py3-none-any.whl#sha256=' in page
            and 'data-requires-python="&gt;=3.11">d2l-0.1.0+gpus-py3-none-any.whl</a>' in page)


def test_publish_builds_once_and_replaces_an_old_wheel(tmp_path: Path) -> None:
    book = tmp_path / "book"
    shutil.copytree(FIXTURE, book)
    (book / "pyproject.toml").write_text(PYPROJECT)
    (book / "d2l").mkdir()
    (book / "d2l" / "__init__.py").write_text('__version__ = "0.0.1+fixture"\n')
    (book / "d2l" / "alpha.py").write_text("def f():\n    return 1\n")
    config = load_config(book)
    config = type(config)(**{**vars(config), "version": "0.0.1+fixture"})
    site = book / "build" / "html"
    said: list[str] = []
    wheel = publish(config, site, said.append)
    assert wheel == site / "simple" / "fixture-lib" / "fixture_lib-0.0.1+fixture-py3-none-any.whl"
    with zipfile.ZipFile(wheel) as z:
        assert "d2l/alpha.py" in z.namelist()
    assert 'href="fixture-lib/"' in (site / "simple" / "index.html").read_text()
    assert wheel.name in (site / "simple" / "fixture-lib" / "index.html").read_text()
    assert len(said) == 1 and "simple/fixture-lib/" in said[0]
    assert publish(config, site, said.append) == wheel and len(said) == 1  # nothing changed: not rebuilt

    (book / "d2l" / "__init__.py").write_text('__version__ = "0.0.2+fixture"\n')
    config = type(config)(**{**vars(config), "version": "0.0.2+fixture"})
    newer = publish(config, site, said.append)
    assert newer is not None and newer.name.startswith("fixture_lib-0.0.2+fixture")
    assert [p.name for p in newer.parent.glob("*.whl")] == [newer.name]  # the old wheel is gone

    (book / "d2l" / "__init__.py").write_text('__version__ = "9.9"\n')  # not what the site would say
    with pytest.raises(BookError, match="the wheel's version is 9.9"):
        publish(config, site, said.append)


def _wheel(folder: Path, version: str) -> Path:
    """A minimal wheel of a project called d2l at ``version``; no dependencies, no extras."""
    import base64
    import hashlib

    info = f"d2l-{version}.dist-info"
    files = {"d2l/__init__.py": f'__version__ = "{version}"\n'.encode(),
             f"{info}/METADATA": f"Metadata-Version: 2.1\nName: d2l\nVersion: {version}\n".encode(),
             f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}

    def record(name: str, data: bytes) -> str:
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        return f"{name},sha256={digest},{len(data)}"

    wheel = folder / f"d2l-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        for name, data in files.items():
            z.writestr(name, data)
        z.writestr(f"{info}/RECORD", "\n".join([record(n, d) for n, d in files.items()] + [f"{info}/RECORD,,", ""]))
    return wheel


def _index(root: Path, package: Package, version: str) -> Path:
    """A PEP 503 index on disk holding one d2l wheel, written as the site writes its own."""
    project = root / "simple" / "d2l"
    project.mkdir(parents=True)
    wheel = _wheel(project, version)
    (project / "index.html").write_text(project_page(package, wheel))
    (root / "simple" / "index.html").write_text(root_page(package))
    return root / "simple"


def test_the_sites_install_line_takes_the_sites_wheel_over_a_higher_version_elsewhere(tmp_path: Path) -> None:
    """Issue 52: with ``--extra-index-url``, pip takes the highest version either index has, so an
    unpinned ``d2l`` is PyPI's (1.0.3, another project). The line the front page shows pins the
    book's own local version, which only the site's index holds. Both indexes are folders
    (``file://``): nothing leaves the machine."""
    import os
    import shlex
    import subprocess
    import sys

    from tabbook.render.front import SITE_PLACEHOLDER, pip_command

    book = Package("d2l", "0.1.0+gpus", ())
    pypi = _index(tmp_path / "pypi", Package("d2l", "1.0.3", ()), "1.0.3")
    site = _index(tmp_path / "site", book, "0.1.0+gpus")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    env.update(PIP_CONFIG_FILE=os.devnull, PIP_INDEX_URL=pypi.as_uri() + "/", PIP_DISABLE_PIP_VERSION_CHECK="1")

    def downloads(argv: list[str]) -> list[str]:
        dest = tmp_path / f"got{len(list(tmp_path.glob('got*')))}"
        proc = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--dest", str(dest), *argv],
                              capture_output=True, text=True, env=env, timeout=300)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        return sorted(p.name for p in dest.iterdir())

    line = pip_command(book).replace(SITE_PLACEHOLDER, (tmp_path / "site").as_uri() + "/")
    argv = shlex.split(line)
    assert argv[:2] == ["pip", "install"] and argv[-1] == "d2l==0.1.0+gpus"
    assert downloads(argv[2:]) == ["d2l-0.1.0+gpus-py3-none-any.whl"]
    # the risk it guards against: the same indexes, the bare name, and pip takes the other project
    assert downloads(["--extra-index-url", site.as_uri() + "/", "d2l"]) == ["d2l-1.0.3-py3-none-any.whl"]
