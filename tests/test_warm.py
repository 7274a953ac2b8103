"""The warm builder (tabbook.warm.server, reached by tabbook.warm.client): a build handed over to it is the same build, only faster.

Each test starts a real warm builder for its own copy of a book (the socket is keyed by the
book's folder) and stops it at the end.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from procs import processes

from tabbook.warm import address
from tabbook.warm import client as warm

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "tests" / "fixtures" / "book"


def _env(book: Path, on: bool) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "TABBOOK_CACHE": str(book / ".cache"),
            warm.ENV: "1" if on else "0"}


def _tabbook(book: Path, *args: str, on: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tabbook", "-C", str(book), *args], cwd=ROOT,
                          capture_output=True, text=True, env=_env(book, on), timeout=300)


def _pages(book: Path) -> dict[str, str]:
    html = book / "build" / "html"
    return {p.relative_to(html).as_posix(): p.read_text().replace(str(book), "BOOK")
            for p in html.rglob("*.html")}


def _edit(book: Path, words: str) -> None:
    sec = book / "sec.md"
    lines = sec.read_text().splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if i and line.strip()[:1].isalpha())
    lines[at] = lines[at].rstrip("\n") + f" {words}\n"
    sec.write_text("".join(lines))


@pytest.fixture
def warm_book(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A built copy of the fixture book with its warm builder running."""
    book = tmp_path / "warm"
    shutil.copytree(FIXTURE, book)
    proc = _tabbook(book, "build", on=True)  # finds none, builds, starts one
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "(warm builder)" not in proc.stdout
    for key, value in _env(book, True).items():
        monkeypatch.setenv(key, value)
    assert warm.wait_ready(book, timeout=120), (book / "build" / "warm.log").read_text()
    try:
        yield book
    finally:
        warm.stop(book)


def test_a_build_handed_over_renders_what_a_build_of_its_own_does(warm_book: Path, tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    shutil.copytree(FIXTURE, plain)
    assert _tabbook(plain, "build", on=False).returncode == 0
    for book, on in ((warm_book, True), (plain, False)):
        _edit(book, "A sentence added while the builder was warm.")
        proc = _tabbook(book, "build", on=on)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert ("(warm builder)" in proc.stdout) is on
        assert json.loads((book / "build" / "report.json").read_text())["warm"] is on
    assert "added while the builder was warm" in _pages(warm_book)["sec.html"]
    _same_pages(_pages(warm_book), _pages(plain))
    # Each HTML run records what it imported, for the warm builder to import before its next fork.
    learned = json.loads((warm_book / "build" / "warm-modules.json").read_text())
    assert "sphinx.builders.html" in learned and "myst_nb" in learned


def _same_pages(warm_pages: dict[str, str], plain: dict[str, str]) -> None:
    """The two sites are the same; if not, the failure shows each differing page's diff."""
    import difflib

    assert sorted(warm_pages) == sorted(plain)
    diffs = ["".join(difflib.unified_diff(plain[name].splitlines(keepends=True), warm_pages[name].splitlines(keepends=True),
                                          f"plain/{name}", f"warm/{name}", n=1))
             for name in sorted(plain) if plain[name] != warm_pages[name]]
    assert not diffs, "\n".join(diffs)


def test_a_run_records_what_it_imported_except_the_books_own_modules(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import types

    from tabbook.render.ext.learn import learn_modules
    from tabbook.render.sphinx import LEARN_ENV

    book = tmp_path / "book"
    own = types.ModuleType("the_books_library")
    own.__file__ = str(book / "the_books_library" / "__init__.py")
    monkeypatch.setitem(sys.modules, "the_books_library", own)
    record = tmp_path / "learned.json"
    monkeypatch.setenv(LEARN_ENV, str(record))
    app = types.SimpleNamespace(config=types.SimpleNamespace(tabbook_root=str(book)))
    learn_modules(app, RuntimeError("a failed run"))  # type: ignore[arg-type]
    assert not record.exists()  # a failed run records nothing
    learn_modules(app, None)  # type: ignore[arg-type]
    names = json.loads(record.read_text())
    assert "json" in names and "tabbook.render.ext" in names
    assert "the_books_library" not in names


def test_errors_and_exit_status_pass_through(warm_book: Path) -> None:
    sec = warm_book / "sec.md"
    good = sec.read_text()
    sec.write_text(good + "\nSee :numref:`no_such_label`.\n")
    proc = _tabbook(warm_book, "build", "--strict")
    assert proc.returncode == 1
    assert "sec.md:" in proc.stderr and "no_such_label" in proc.stderr
    proc = _tabbook(warm_book, "build", "--frameworks", "nope")
    assert proc.returncode == 1 and "unknown framework 'nope'" in proc.stderr
    sec.write_text(good)
    proc = _tabbook(warm_book, "build")
    assert proc.returncode == 0 and "(warm builder)" in proc.stdout, proc.stdout + proc.stderr


def test_a_config_change_reaches_a_build_in_the_warm_builder(warm_book: Path) -> None:
    """The warm builder read config.ini when it started; a build handed to it reads it again."""
    config = warm_book / "config.ini"
    config.write_text(config.read_text().replace("title = Fixture Book", "title = Retitled Book"))
    proc = _tabbook(warm_book, "build")
    assert proc.returncode == 0 and "(warm builder)" in proc.stdout, proc.stdout + proc.stderr
    page = _pages(warm_book)["sec.html"]
    assert "- Retitled Book</title>" in page and "- Fixture Book</title>" not in page


def test_ctrl_c_reaches_the_build_in_the_warm_builder(warm_book: Path) -> None:
    sec = warm_book / "sec.md"
    sec.write_text(sec.read_text() + "\n```{.python .input}\n%%tab all\nimport time\ntime.sleep(60)\n```\n")
    client = subprocess.Popen([sys.executable, "-m", "tabbook", "-C", str(warm_book), "build"], cwd=ROOT,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(warm_book, True))
    deadline = time.monotonic() + 120
    report = warm_book / "build" / "report.json"
    before = report.stat().st_mtime_ns
    # Wait until the unit runs: a kernel of this book is alive.
    while time.monotonic() < deadline and not _kernels(warm_book):
        time.sleep(0.2)
    assert _kernels(warm_book), "the unit never started"
    client.send_signal(signal.SIGINT)
    out, err = client.communicate(timeout=120)
    assert client.returncode == 130, out + err
    assert "interrupted" in err
    assert report.stat().st_mtime_ns != before  # the report is written even when interrupted
    time.sleep(1)
    assert _kernels(warm_book) == []
    assert warm.running(warm_book)  # the warm builder itself goes on


def _kernels(book: Path) -> list[str]:
    return processes(lambda args, here: any(b"ipykernel" in a for a in args) and here.startswith(str(book)))


def test_a_changed_builder_or_book_gets_another_warm_builder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = address.socket_path(tmp_path)
    assert first is not None and first == address.socket_path(tmp_path)
    assert address.socket_path(tmp_path / "other") != first
    assert address.socket_path(tmp_path, code="another builder") != first


def test_on_by_default_only_for_a_person_at_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    class Tty:
        def __init__(self, tty: bool) -> None:
            self.tty = tty

        def isatty(self) -> bool:
            return self.tty

    monkeypatch.delenv(warm.ENV, raising=False)
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.setattr(sys, "stdout", Tty(True))
    assert warm.enabled()
    monkeypatch.setenv("CI", "true")
    assert not warm.enabled()
    monkeypatch.delenv("CI")
    monkeypatch.setattr(sys, "stdout", Tty(False))
    assert not warm.enabled()
    monkeypatch.setenv(warm.ENV, "1")
    assert warm.enabled()
    monkeypatch.setenv(warm.ENV, "0")
    monkeypatch.setattr(sys, "stdout", Tty(True))
    assert not warm.enabled()


def test_stop_ends_it_and_removes_its_socket(warm_book: Path) -> None:
    path = address.socket_path(warm_book)
    assert path is not None and path.exists()
    assert warm.stop(warm_book)
    deadline = time.monotonic() + 10
    while path.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not path.exists() and not warm.running(warm_book)
    proc = _tabbook(warm_book, "build")  # builds by itself, and starts a new one
    assert proc.returncode == 0 and "(warm builder)" not in proc.stdout
    assert warm.wait_ready(warm_book, timeout=120)  # (stopped again when the test ends)


# ---- faults: signals, a stuck builder, another user (issue 33, item 6) -------------------------

#: A Sphinx extension for the book's conf.py: a long Sphinx phase that writes build/sphinx-phase
#: every 0.1 s, so that a test can interrupt Sphinx and see whether anything still writes build/.
SLOW_SPHINX = '''

def _slow_phase(app, env):
    import time
    marker = Path(app.outdir).parent / "sphinx-phase"
    for i in range(600):
        marker.write_text(str(i))
        time.sleep(0.1)


def setup(app):
    app.connect("env-updated", _slow_phase)
'''


def _children(pid: int) -> list[int]:
    """The live processes whose parent is ``pid``."""
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid and fields[0] != "Z":
            out.append(int(stat.parent.name))
    return out


def _builder_pid(book: Path) -> int:
    path = address.socket_path(book)
    assert path is not None
    sock = warm.connect(path)
    assert sock is not None
    with sock:
        return address.peer(sock)[0]


def _in_sphinx_phase(book: Path) -> subprocess.Popen[str]:
    """A warm build of ``book`` started and now in its (slowed) Sphinx phase."""
    conf = book / "conf.py"
    conf.write_text(conf.read_text() + SLOW_SPHINX)
    marker = book / "build" / "sphinx-phase"
    # In a process group of its own, as a shell runs a job: Ctrl-Z stops a job that is not orphaned.
    client = subprocess.Popen([sys.executable, "-m", "tabbook", "-C", str(book), "build"], cwd=ROOT,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(book, True),
                              process_group=0)
    deadline = time.monotonic() + 120
    while not marker.exists() and time.monotonic() < deadline and client.poll() is None:
        time.sleep(0.1)
    assert marker.exists(), client.communicate(timeout=60)
    return client


def _nothing_writes(book: Path, builder: int) -> None:
    """No process of the build is left: the warm builder has no child, and nothing writes build/."""
    marker = book / "build" / "sphinx-phase"
    time.sleep(0.5)
    before = marker.stat().st_mtime_ns
    time.sleep(1.5)
    assert marker.stat().st_mtime_ns == before, "a process of the interrupted build still writes build/"
    assert _children(builder) == []


@pytest.mark.parametrize(("sig", "status"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_in_the_sphinx_phase_stops_every_process_of_the_build(warm_book: Path, sig: int,
                                                                         status: int) -> None:
    builder = _builder_pid(warm_book)
    client = _in_sphinx_phase(warm_book)
    assert len(_children(builder)) == 1  # the build's fork (its Sphinx is that fork's child)
    client.send_signal(sig)
    out, err = client.communicate(timeout=60)
    assert client.returncode == status, out + err
    assert "interrupted; nothing half-written was kept" in err
    _nothing_writes(warm_book, builder)
    assert warm.running(warm_book)  # the warm builder itself goes on


def test_a_build_killed_by_a_signal_exits_128_plus_n_and_leaves_no_sphinx(warm_book: Path) -> None:
    builder = _builder_pid(warm_book)
    client = _in_sphinx_phase(warm_book)
    (fork,) = _children(builder)
    os.kill(fork, signal.SIGKILL)
    out, err = client.communicate(timeout=60)
    assert client.returncode == 128 + signal.SIGKILL, out + err
    _nothing_writes(warm_book, builder)


def test_ctrl_z_stops_the_build_and_fg_continues_it(warm_book: Path) -> None:
    builder = _builder_pid(warm_book)
    client = _in_sphinx_phase(warm_book)
    (fork,) = _children(builder)
    marker = warm_book / "build" / "sphinx-phase"
    client.send_signal(signal.SIGTSTP)
    time.sleep(1)
    assert _state(client.pid) == "T" and _state(fork) == "T"
    before = marker.stat().st_mtime_ns
    time.sleep(1)
    assert marker.stat().st_mtime_ns == before  # its Sphinx fork is stopped too
    client.send_signal(signal.SIGCONT)
    time.sleep(1)
    assert _state(fork) != "T" and marker.stat().st_mtime_ns != before
    client.send_signal(signal.SIGINT)
    client.communicate(timeout=60)
    assert client.returncode == 130
    _nothing_writes(warm_book, builder)


def _state(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


def test_a_stuck_warm_builder_is_ended_and_the_build_runs_by_itself(warm_book: Path) -> None:
    builder = _builder_pid(warm_book)
    os.kill(builder, signal.SIGSTOP)
    try:
        t0 = time.monotonic()
        _edit(warm_book, "Written while the warm builder was stopped.")
        proc = _tabbook(warm_book, "build")
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert f"the warm builder (pid {builder}) did not take the build within" in proc.stderr
        assert "(warm builder)" not in proc.stdout
        assert not json.loads((warm_book / "build" / "report.json").read_text())["warm"]
        assert "Written while the warm builder was stopped" in _pages(warm_book)["sec.html"]
        assert time.monotonic() - t0 < warm.HANDOVER_TIMEOUT + 120
        time.sleep(0.5)
        assert not Path(f"/proc/{builder}").exists() or _state(builder) == "Z"
    finally:
        try:
            os.kill(builder, signal.SIGKILL)
        except ProcessLookupError:
            pass
    # The build started a fresh one, which the next build hands over to.
    assert warm.wait_ready(warm_book, timeout=120)
    proc = _tabbook(warm_book, "build")
    assert proc.returncode == 0 and "(warm builder)" in proc.stdout, proc.stdout + proc.stderr


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root, to connect as another user")
def test_a_peer_of_another_user_is_refused_at_both_ends(tmp_path: Path) -> None:
    """The builder runs nothing for another user's connection, and the command line hands
    nothing to another user's listener, whatever the socket's permissions allow."""
    import socket
    import tempfile

    from tabbook.warm.server import Server

    nobody = 65534
    shared = Path(tempfile.mkdtemp(prefix="tabbook-peer-"))
    try:
        shared.chmod(0o777)
        path = shared / "builder.sock"
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(str(path))
        path.chmod(0o777)
        listener.listen(1)
        ran: list[list[str]] = []
        server = Server(listener, lambda argv, *, sphinx: ran.append(argv) or 0, preloaded=None)  # type: ignore[arg-type]
        pid = os.fork()
        if pid == 0:  # another user's command line, handing over a build
            code = 2
            try:
                os.setuid(nobody)
                with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
                    sock.settimeout(10)
                    sock.connect(str(path))  # (the socket's permissions let it)
                    try:
                        socket.send_fds(sock, [b"t"], [0, 1, 2])
                        sock.sendall(warm.frame(json.dumps({"argv": ["build"], "cwd": "/", "env": {},
                                                            "umask": 0o22}).encode()))
                        reply = sock.makefile("rb").readline()
                    except OSError:  # hung up on before it finished sending
                        reply = b""
                    code = 1 if reply.startswith(b"pid ") else 0
            finally:
                os._exit(code)
        assert server._accept() is False
        assert os.waitpid(pid, 0)[1] == 0  # it got no build: the connection was closed
        assert server.builds == {} and ran == []
        listener.close()
        path.unlink()

        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:  # another user's listener where the command line looks
            os.setuid(nobody)
            theirs = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            theirs.bind(str(path))
            theirs.listen(1)
            os.write(write_end, b"1")
            time.sleep(30)
            os._exit(0)
        try:
            os.read(read_end, 1)
            assert warm.connect(path) is None
        finally:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
    finally:
        shutil.rmtree(shared, ignore_errors=True)


def test_a_client_that_sends_nothing_does_not_hold_the_builder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A connected command line that never sends its request is given up on after the request
    timeout; the builder then serves the next connection."""
    import socket

    from tabbook.warm import server

    monkeypatch.setattr(server, "REQUEST_TIMEOUT", 0.5)
    path = tmp_path / "builder.sock"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    listener.listen(2)
    ran: list[list[str]] = []
    builder = server.Server(listener, lambda argv, *, sphinx: ran.append(argv) or 0, preloaded=None)  # type: ignore[arg-type]
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as silent:
        silent.connect(str(path))
        t0 = time.monotonic()
        assert builder._accept() is False
        assert time.monotonic() - t0 < 5
        assert silent.recv(1) == b""  # hung up on
    assert builder.builds == {} and ran == []
    listener.close()


def _report(book: Path) -> dict:
    return json.loads((book / "build" / "report.json").read_text())


def _wait_for_a_spare(builder: int, timeout: float = 60) -> None:
    """Until the warm builder has a child that is not a build: its Sphinx run set up ahead."""
    deadline = time.monotonic() + timeout
    while not _children(builder) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _children(builder), "the warm builder set no Sphinx run up ahead"


def test_the_next_build_takes_the_sphinx_run_set_up_ahead(warm_book: Path, tmp_path: Path) -> None:
    """A build that rendered leaves a Sphinx run of its command set up and waiting; the next
    prose edit's build lets that one read and write, and the page is what a build of its own
    makes. A no-op build leaves it waiting."""
    builder = _builder_pid(warm_book)
    _edit(warm_book, "First warm edit.")
    assert _tabbook(warm_book, "build").returncode == 0
    assert not _report(warm_book)["sphinx_set_up_ahead"]  # the first handed-over build had none
    _wait_for_a_spare(builder)
    (spare,) = _children(builder)
    assert _tabbook(warm_book, "build").returncode == 0  # nothing changed: no Sphinx at all
    assert _children(builder) == [spare]
    _edit(warm_book, "Second warm edit.")
    proc = _tabbook(warm_book, "build")
    assert proc.returncode == 0 and "(warm builder)" in proc.stdout, proc.stdout + proc.stderr
    assert _report(warm_book)["sphinx_set_up_ahead"]
    assert "Second warm edit." in _pages(warm_book)["sec.html"]
    _wait_for_a_spare(builder)
    assert spare not in _children(builder)  # used once; another one waits now
    plain = tmp_path / "plain"  # the same book built without the warm builder
    shutil.copytree(FIXTURE, plain)
    _edit(plain, "First warm edit.")
    _edit(plain, "Second warm edit.")
    assert _tabbook(plain, "build", on=False).returncode == 0
    _same_pages(_pages(warm_book), _pages(plain))


def test_a_run_set_up_before_the_configuration_changed_is_not_used(warm_book: Path) -> None:
    """config.ini edited after the spare set itself up: the build calls it off and runs Sphinx
    afresh, so the new title is on the page."""
    builder = _builder_pid(warm_book)
    _edit(warm_book, "An edit.")
    assert _tabbook(warm_book, "build").returncode == 0
    _wait_for_a_spare(builder)
    config = warm_book / "config.ini"
    config.write_text(config.read_text().replace("title = Fixture Book", "title = Retitled Book"))
    proc = _tabbook(warm_book, "build")
    assert proc.returncode == 0 and "(warm builder)" in proc.stdout, proc.stdout + proc.stderr
    assert not _report(warm_book)["sphinx_set_up_ahead"]
    page = _pages(warm_book)["sec.html"]
    assert "- Retitled Book</title>" in page and "- Fixture Book</title>" not in page


def test_stopping_the_builder_ends_its_spare(warm_book: Path) -> None:
    builder = _builder_pid(warm_book)
    _edit(warm_book, "An edit.")
    assert _tabbook(warm_book, "build").returncode == 0
    _wait_for_a_spare(builder)
    (spare,) = _children(builder)
    assert warm.stop(warm_book)
    deadline = time.monotonic() + 30
    while Path(f"/proc/{spare}").exists() and _state(spare) != "Z" and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not Path(f"/proc/{spare}").exists() or _state(spare) == "Z"
