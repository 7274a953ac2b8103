"""``tabbook build --scheduler tls://…``: a cluster that only holders of its certificates join
(issue 33, item 7).

A scheduler bound to 127.0.0.1 that requires encryption and a worker, each a process of its own
started with Dask's own TLS options, certificates made by ``openssl`` in the test (a CA, and a
second, unrelated one). The build reaches them only with the client's certificate given the way
README says (Dask's ``DASK_DISTRIBUTED__COMM__TLS__*`` settings): without any it is a clear error
naming those settings, with a certificate the CA did not sign it is refused, and with the right
one the units run on the worker and reach the store.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from prerequisites import require
from scale_book import entries, make_book, tabbook

try:
    import distributed
except ImportError:
    distributed = None
require(distributed, "the Dask extra (envs/builder-dask.txt) is not installed", module=True)
require(shutil.which("openssl"), "openssl makes the test's certificates", module=True)


def _certificate(folder: Path, name: str) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 (its own CA) and its key."""
    cert, key = folder / f"{name}.pem", folder / f"{name}.key"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                    "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True)
    return cert, key


def _tls_env(cert: Path, key: Path) -> dict[str, str]:
    return {"DASK_DISTRIBUTED__COMM__TLS__CA_FILE": str(cert),
            "DASK_DISTRIBUTED__COMM__TLS__CLIENT__CERT": str(cert),
            "DASK_DISTRIBUTED__COMM__TLS__CLIENT__KEY": str(key)}


@pytest.fixture(scope="module")
def tls_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path, Path, Path]]:
    logs = tmp_path_factory.mktemp("tls")
    cert, key = _certificate(logs, "cluster")
    book = make_book(logs, sections=1)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent),
           "TABBOOK_CACHE": str(book / ".cache"), "PYTHONUNBUFFERED": "1",
           "DASK_DISTRIBUTED__COMM__REQUIRE_ENCRYPTION": "True"}
    tls = ["--tls-ca-file", str(cert), "--tls-cert", str(cert), "--tls-key", str(key)]
    procs: list[subprocess.Popen[bytes]] = []

    def start(name: str, *args: str) -> None:
        with open(logs / f"{name}.log", "wb") as log:
            procs.append(subprocess.Popen([sys.executable, "-m", "dask", *args], stdout=log, stderr=subprocess.STDOUT,
                                          env=env, cwd=logs, start_new_session=True))

    def wait(probe, what: str):  # noqa: ANN001, ANN202 - a test helper
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            assert all(p.poll() is None for p in procs), (logs / "scheduler.log").read_text()[-2000:]
            if got := probe():
                return got
            time.sleep(0.2)
        raise AssertionError(f"{what} did not start: logs in {logs}")

    info = logs / "scheduler.json"
    try:
        start("scheduler", "scheduler", "--host", "127.0.0.1", "--port", "0", "--protocol", "tls",
              "--no-dashboard", "--scheduler-file", str(info), *tls)
        address = json.loads(wait(lambda: info.is_file() and info.read_text().strip() and info.read_text(),
                                  "the scheduler"))["address"]
        assert address.startswith("tls://127.0.0.1:")
        start("worker", "worker", address, "--host", "127.0.0.1", "--nthreads", "1", "--no-nanny",
              "--no-dashboard", "--memory-limit", "0", *tls)
        wait(lambda: re.search(r"Start worker at:\s+tls://", (logs / "worker.log").read_text()), "the worker")
        yield address, book, cert, key
    finally:
        for proc in reversed(procs):
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in procs:
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


FAST = {"DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT": "5s"}


def test_without_credentials_the_build_says_which_settings_to_give(tls_cluster: tuple[str, Path, Path, Path]) -> None:
    address, book, _, _ = tls_cluster
    proc = tabbook(book, "build", "--no-render", "--scheduler", address, env=FAST)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "no TLS credentials" in proc.stderr and "DASK_DISTRIBUTED__COMM__TLS__CLIENT__CERT" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (book / "_freeze").exists()
    # Plain TCP to the TLS scheduler is refused as well.
    plain = tabbook(book, "build", "--no-render", "--scheduler", address.replace("tls://", "tcp://"), env=FAST)
    assert plain.returncode != 0 and not (book / "_freeze").exists()


def test_a_certificate_the_cluster_did_not_sign_is_refused(tls_cluster: tuple[str, Path, Path, Path],
                                                           tmp_path: Path) -> None:
    address, book, cert, _ = tls_cluster
    rogue, rogue_key = _certificate(tmp_path, "rogue")
    env = {**FAST, **_tls_env(rogue, rogue_key), "DASK_DISTRIBUTED__COMM__TLS__CA_FILE": str(cert)}
    proc = tabbook(book, "build", "--no-render", "--scheduler", address, env=env)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "cannot reach the Dask scheduler" in proc.stderr, proc.stderr
    assert not (book / "_freeze").exists()


def test_with_the_clusters_certificate_units_run_on_the_worker(tls_cluster: tuple[str, Path, Path, Path]) -> None:
    address, book, cert, key = tls_cluster
    proc = tabbook(book, "build", "--no-render", "--scheduler", address, env=_tls_env(cert, key))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"[dask] 1 workers at {address}" in proc.stdout
    assert entries(book / "_freeze")  # the client stored what the worker ran
