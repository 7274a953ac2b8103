"""``pip install`` as the site tells a reader: the command copied from the front page, run in a
fresh venv against the built site served over HTTP, installs this book's package.

The site used to say ``pip install d2l``, which installs PyPI's d2l 1.0.3 (another project, without
the extras the site names). Here pip's index is a stand-in for PyPI that holds such a ``d2l 1.0.3``
(and numpy, from the machine's package sources), so the test fails if the command lets pip choose
the index's project; the site's own index (``simple/``) must provide the book's wheel.
"""

from __future__ import annotations

import base64
import hashlib
import os
import shlex
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest
from prerequisites import skip_unless

ROOT = Path(__file__).resolve().parents[2]
REAL_SITE = ROOT / "build" / "html"
BUILT = (REAL_SITE / "index.html").is_file()


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def other_d2l_wheel(folder: Path) -> Path:
    """A wheel of another project called d2l, version 1.0.3 (as on PyPI), with no extras."""
    files = {
        "d2l/__init__.py": b'__version__ = "1.0.3"\nOTHER_PROJECT = True\n',
        "d2l-1.0.3.dist-info/METADATA": b"Metadata-Version: 2.1\nName: d2l\nVersion: 1.0.3\n",
        "d2l-1.0.3.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = "\n".join([_record_line(n, d) for n, d in files.items()] + ["d2l-1.0.3.dist-info/RECORD,,", ""])
    wheel = folder / "d2l-1.0.3-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        for name, data in files.items():
            z.writestr(name, data)
        z.writestr("d2l-1.0.3.dist-info/RECORD", record)
    return wheel


@pytest.fixture(scope="module")
def package_index(tmp_path_factory: pytest.TempPathFactory, serve_dir: Any) -> Any:
    """A stand-in for PyPI on 127.0.0.1: ``simple/d2l/`` with d2l 1.0.3; and a folder with numpy's
    wheel (``--find-links``), taken from the machine's configured package sources."""
    root = tmp_path_factory.mktemp("pypi")
    project = root / "simple" / "d2l"
    project.mkdir(parents=True)
    wheel = other_d2l_wheel(project)
    (project / "index.html").write_text(f'<a href="{wheel.name}">{wheel.name}</a>\n')
    (root / "simple" / "index.html").write_text('<a href="d2l/">d2l</a>\n')
    wheels = root / "wheels"
    proc = subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:",
                           "--dest", str(wheels), "numpy>=1.23"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    srv = serve_dir(root)
    yield srv, wheels
    srv.httpd.shutdown()
    srv.httpd.server_close()


def pip_env(index_url: str, find_links: Path) -> dict[str, str]:
    """pip with only the stand-in index and the numpy folder: the machine's pip configuration
    (its own indexes and wheel folders) is left out."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    env.update(PIP_CONFIG_FILE=os.devnull, PIP_INDEX_URL=index_url, PIP_FIND_LINKS=str(find_links),
               PIP_DISABLE_PIP_VERSION_CHECK="1")
    return env


@skip_unless(BUILT, "no built book in build/html (`make test` builds it before the tests; or `make html`)")
def test_the_command_on_the_front_page_installs_this_books_package(
        page: Any, real_server: Any, package_index: Any, tmp_path: Path) -> None:
    index, numpy_wheels = package_index
    # The index is the site's pages, not a server's folder listing: a static host (GitHub Pages,
    # S3) lists no folder, so pip finds the wheel only through them. Sphinx's stale-page pruning
    # once deleted both after every HTML build; pip here still found the wheel by the test
    # server's listing, and only the final linkcheck saw it.
    for page_path in (REAL_SITE / "simple" / "index.html", REAL_SITE / "simple" / "d2l" / "index.html"):
        assert page_path.is_file(), f"{page_path.relative_to(REAL_SITE)} is missing from the built site"
    env = pip_env(f"{index.url}/simple/", numpy_wheels)
    # The stand-in works as PyPI does: asked for d2l, it offers the other project.
    other = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--dest", str(tmp_path / "other"),
                            "d2l"], capture_output=True, text=True, env=env)
    assert other.returncode == 0 and (tmp_path / "other" / "d2l-1.0.3-py3-none-any.whl").is_file(), other.stderr

    page.goto(f"{real_server.url}/index.html", wait_until="networkidle")
    commands = page.evaluate("[...document.querySelectorAll('.tabbook-pip pre')].map(p => p.textContent)")
    assert commands, "the front page shows no install line"
    base = commands[0]
    assert base.startswith(f"pip install --extra-index-url {real_server.url}/simple/ "), base

    subprocess.run([sys.executable, "-m", "venv", str(tmp_path / "venv")], check=True)
    bin_dir = tmp_path / "venv" / "bin"
    argv = shlex.split(base)
    assert argv[0] == "pip"
    proc = subprocess.run([str(bin_dir / "pip"), *argv[1:]], capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "does not provide the extra" not in proc.stdout + proc.stderr
    shown = subprocess.run([str(bin_dir / "python"), "-I", "-c",
                            "import d2l, importlib.metadata as m; print(d2l.__version__, m.version('d2l'), "
                            "hasattr(d2l, 'OTHER_PROJECT'))"],
                           capture_output=True, text=True, cwd=tmp_path)
    version = argv[-1].split("==")[1].strip("'")
    assert shown.stdout.split() == [version, version, "False"], shown

    # Every framework's line names an extra the served wheel provides, at the same version.
    served = next((REAL_SITE / "simple" / "d2l").glob("d2l-*.whl"))
    with zipfile.ZipFile(served) as z:
        meta = z.read(next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))).decode()
    provided = {line.split(":", 1)[1].strip() for line in meta.splitlines() if line.startswith("Provides-Extra:")}
    for command in commands[1:]:
        requirement = shlex.split(command)[-1]
        extra = requirement.split("[", 1)[1].split("]", 1)[0]
        assert extra in provided and requirement.endswith(f"=={version}"), (command, provided)
    assert len(commands) == 1 + 4  # the plain line and one per framework
