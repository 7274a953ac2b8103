"""Framework environments made by uv or pip, from plain or hashed locks (issue 29, item 5).

Offline: the only package is a wheel these tests write, offered through pip's configuration
(``find-links`` in a config file, no index), so uv installs it only if it is handed pip's
sources, and a wrong hash fails both installers. Each creation is a real ``python -m venv``
plus install (a few seconds).
"""

from __future__ import annotations

import base64
import hashlib
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tabbook.config import load_config
from tabbook.errors import BookError
from tabbook.execute.envs import MARKER, check_env, ensure_env, lock_hash, venv_dir
from tabbook.execute.installer import (
    HEADER,
    chosen_installer,
    hashed_lock,
    hashed_path,
    install_command,
    parse_pip_config,
    requirements_digest,
    uv_binary,
)

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "tests" / "fixtures" / "book"
HAS_UV = uv_binary() is not None
#: [build] installer's environment form.
ENV = "TABBOOK_INSTALLER"


def _wheel(folder: Path, version: str) -> Path:
    """A pure-Python wheel of ``tinypkg`` that records its version."""
    dist = f"tinypkg-{version}.dist-info"
    files = {
        "tinypkg/__init__.py": f"__version__ = {version!r}\n",
        f"{dist}/METADATA": f"Metadata-Version: 2.1\nName: tinypkg\nVersion: {version}\n",
        f"{dist}/WHEEL": "Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = []
    for name, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        record.append(f"{name},sha256={digest},{len(text.encode())}")
    record.append(f"{dist}/RECORD,,")
    files[f"{dist}/RECORD"] = "\n".join(record) + "\n"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"tinypkg-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as zf:
        for name, text in files.items():
            zf.writestr(name, text)
    return path


@pytest.fixture
def offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):  # noqa: ANN201
    """A book whose tab ``alpha`` installs ``tinypkg==1.0`` from a wheel folder pip is told of."""
    wheels = tmp_path / "wheels"
    wheel = _wheel(wheels, "1.0")
    _wheel(wheels, "2.0")  # a newer release beside it: the lock's pin decides
    conf = tmp_path / "pip.conf"
    conf.write_text(f"[global]\nno-index = true\nfind-links = {wheels}\n")
    for key in [k for k in os.environ if k.startswith("PIP_")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("PIP_CONFIG_FILE", str(conf))
    monkeypatch.setenv("TABBOOK_VENVS", str(tmp_path / "venvs"))
    book = tmp_path / "book"
    shutil.copytree(FIXTURE, book)
    (book / "envs").mkdir()
    (book / "envs" / "alpha.txt").write_text("# the alpha tab's lock\ntinypkg==1.0\n")
    cfg = book / "config.ini"
    cfg.write_text(cfg.read_text().replace("module = alpha\nimport = json\npython = current\n",
                                           "module = alpha\nimport = tinypkg\nrequirements = envs/alpha.txt\n"
                                           "python = 3.11\n"))
    return book, wheel


def test_pip_config_ranks_variables_over_sections() -> None:
    text = ("global.find-links='/opt/wheels'\nglobal.extra-index-url='file:///a/simple file:///b/simple'\n"
            ":env:.find-links='/env/wheels'\ninstall.index-url='https://mirror/simple'\n"
            "global.index-url='https://other/simple'\nglobal.cert='/etc/ssl/c.crt'\nnot a line\n")
    assert parse_pip_config(text) == {
        "find-links": ["/env/wheels"], "extra-index-url": ["file:///a/simple", "file:///b/simple"],
        "index-url": ["https://mirror/simple"]}


def test_installer_choice(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """[build] installer: config.ini or an overlay, over them $TABBOOK_INSTALLER, over that --set."""
    book = tmp_path / "book"
    shutil.copytree(FIXTURE, book)
    monkeypatch.delenv(ENV, raising=False)
    assert load_config(book).installer == ""
    assert chosen_installer("pip") == "pip" and chosen_installer("") == ("uv" if HAS_UV else "pip")
    (book / "tabbook.ini").write_text("[build]\ninstaller = uv\n")
    assert load_config(book).installer == "uv"
    monkeypatch.setenv(ENV, "pip")
    assert load_config(book).installer == "pip"
    assert load_config(book, overrides=["build.installer=uv"]).installer == "uv"
    monkeypatch.setenv(ENV, "conda")
    with pytest.raises(BookError, match=r"^\$TABBOOK_INSTALLER: \[build\] installer must be uv or pip"):
        load_config(book)
    monkeypatch.delenv(ENV)
    with pytest.raises(BookError, match=r"^--set build.instaler: tabbook reads no such key"):
        load_config(book, overrides=["build.instaler=pip"])
    with pytest.raises(BookError, match=r"^--set build.tabs: \[build\] tabs describes the book"):
        load_config(book, overrides=["build.tabs=x"])
    cmd = install_command("pip", Path("/v/bin/python"), Path("/l/x.txt"), Path("/l/c.txt"), hashed=True)
    assert cmd[-5:] == ["--require-hashes", "-c", "/l/c.txt", "-r", "/l/x.txt"]


@pytest.mark.parametrize("installer", ["uv", "pip"])
def test_env_created_by_either_installer_with_the_same_name(offline, installer: str,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    if installer == "uv" and not HAS_UV:
        pytest.skip("uv is not installed (envs/builder.txt)")
    book, _ = offline
    monkeypatch.setenv(ENV, installer)
    config = load_config(book)
    fw = config.framework("alpha")
    lines: list[str] = []
    env = ensure_env(config, fw, log=lines.append)
    assert env.python.parent.parent == venv_dir(config, fw)
    assert venv_dir(config, fw).name == f"alpha-{lock_hash(fw)}"  # the installer is not part of the name
    assert check_env(config, fw, env) == "1.0"  # the pin, not the newer wheel beside it
    assert any(f", {installer}, envs/alpha.txt)" in line for line in lines), lines
    assert (venv_dir(config, fw) / MARKER).read_text().splitlines() == [
        subprocess.run([str(env.python), "-c", "import platform; print(platform.python_version())"],
                       capture_output=True, text=True, check=True).stdout.strip()]


def _hashed(book: Path, wheel: Path, digest: str | None = None) -> Path:
    lock = book / "envs" / "alpha.txt"
    good = hashlib.sha256(wheel.read_bytes()).hexdigest()
    path = hashed_path(lock)
    path.write_text(HEADER.format(name="alpha.txt", digest=requirements_digest(lock)) +
                    f"\ntinypkg==1.0 \\\n    --hash=sha256:{digest or good}\n")
    return path


@pytest.mark.parametrize("installer", ["uv", "pip"])
def test_hashed_lock_is_installed_checked_and_keeps_the_venv_name(offline, installer: str,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    if installer == "uv" and not HAS_UV:
        pytest.skip("uv is not installed (envs/builder.txt)")
    book, wheel = offline
    monkeypatch.setenv(ENV, installer)
    config = load_config(book)
    fw = config.framework("alpha")
    name = venv_dir(config, fw).name
    hashes = _hashed(book, wheel, "0" * 64)
    assert hashed_path(book / "envs" / "alpha.txt") == book / "envs" / "alpha.hashes.txt"
    assert venv_dir(config, fw).name == name  # adding hashes renames no venv (nor any freeze key)
    with pytest.raises(BookError, match=f"installing the alpha environment failed \\({installer} exit") as err:
        ensure_env(config, fw, log=lambda _: None)
    assert err.value.path == "envs/alpha.hashes.txt"
    assert not (venv_dir(config, fw) / MARKER).exists()
    _hashed(book, wheel)
    lines: list[str] = []
    env = ensure_env(config, fw, log=lines.append)
    assert "removing incomplete environment" in lines[0]
    assert any("envs/alpha.hashes.txt, hashes checked)" in line for line in lines), lines
    assert check_env(config, fw, env) == "1.0"
    marker = (venv_dir(config, fw) / MARKER).read_text().splitlines()
    assert marker[1] == f"hashes sha256:{hashlib.sha256(hashes.read_bytes()).hexdigest()[:16]}"
    # Another hashed lock for the same requirements (tabbook lock run again elsewhere): made again.
    hashes.write_text(hashes.read_text() + "# relocked\n")
    lines.clear()
    ensure_env(config, fw, log=lines.append)
    assert "removing incomplete environment" in lines[0]


def test_stale_hashed_lock_is_refused_with_its_line(offline) -> None:
    book, wheel = offline
    _hashed(book, wheel)
    lock = book / "envs" / "alpha.txt"
    lock.write_text(lock.read_text() + "# edited after tabbook lock\n")
    with pytest.raises(BookError, match="not made from the current alpha.txt: run `tabbook lock`") as err:
        hashed_lock(lock, str)
    assert (err.value.path, err.value.line) == (str(hashed_path(lock)), 1)


@pytest.mark.skipif(not HAS_UV, reason="uv is not installed (envs/builder.txt)")
def test_tabbook_lock_pins_the_environment_with_hashes_from_the_wheel_folder(offline) -> None:
    book, wheel = offline
    _hashed(book, wheel, "0" * 64)  # a hashed lock of an earlier alpha.txt, with a wrong hash too:
    lock = book / "envs" / "alpha.txt"
    lock.write_text(lock.read_text() + "# edited: the hashed lock is stale\n")  # lock replaces it
    proc = subprocess.run([sys.executable, "-m", "tabbook", "-C", str(book), "lock", "alpha"],
                          cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(ROOT), ENV: "uv"})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    text = (book / "envs" / "alpha.hashes.txt").read_text()
    good = hashlib.sha256(wheel.read_bytes()).hexdigest()
    assert text.splitlines()[0] == HEADER.format(name="alpha.txt", digest=requirements_digest(book / "envs" / "alpha.txt"))
    assert f"tinypkg==1.0 \\\n    --hash=sha256:{good}\n" in text
    assert "pip==" not in text and "setuptools==" not in text  # what venv seeds is no part of the lock
    config = load_config(book)
    fw = config.framework("alpha")
    assert hashed_lock(lock, str) is not None
    assert check_env(config, fw, ensure_env(config, fw, create=False)) == "1.0"  # the locked venv is current


def test_hashed_lock_with_an_unhashed_or_unpinned_package_is_refused(offline) -> None:
    book, wheel = offline
    path = _hashed(book, wheel)
    lock = book / "envs" / "alpha.txt"
    good = path.read_text()
    path.write_text(good + "# a comment\nsix==1.16.0  # no hash\n")
    with pytest.raises(BookError, match="pinned with == and its --hash: six==1.16.0") as err:
        hashed_lock(lock, str)
    assert err.value.line == 5
    path.write_text(good + "six>=1 \\\n    --hash=sha256:" + "1" * 64 + "\n")
    with pytest.raises(BookError, match="six>=1") as err:
        hashed_lock(lock, str)
    assert err.value.line == 4
    path.write_text(good + "six==1.16.0 \\\n    --hash=sha256:" + "1" * 64 + "\n")
    assert hashed_lock(lock, str) == path
