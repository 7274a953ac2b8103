"""A full disk names the file that could not be written: tabbook's own writes and Sphinx's."""

from __future__ import annotations

import errno
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tabbook.files import write_atomic
from tabbook.render.sphinx import os_error_of


@pytest.fixture
def full_folder(tmp_path: Path) -> Iterator[Path]:
    """A 64 KiB tmpfs: a real ENOSPC (root only; elsewhere the test is skipped)."""
    folder = tmp_path / "small"
    folder.mkdir()
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(folder)],
                                           capture_output=True).returncode != 0:
        pytest.skip("mounting a small tmpfs needs root")
    try:
        yield folder
    finally:
        subprocess.run(["umount", str(folder)], check=False)


def test_a_write_that_fills_the_disk_names_its_file_and_leaves_nothing(full_folder: Path) -> None:
    target = full_folder / "report.json"
    with pytest.raises(OSError) as err:
        write_atomic(target, "x" * 1_000_000)
    assert (err.value.errno, err.value.filename) == (errno.ENOSPC, str(target))
    assert list(full_folder.iterdir()) == []  # no temporary file, no half a file


def test_sphinx_stopped_by_a_full_disk_in_an_extensions_copy_names_the_file(tmp_path: Path) -> None:
    """myst-nb copies its stylesheet at build-finished; Sphinx wraps the OSError in its
    ExtensionError and prints its "please report" banner. The copy's target is the file."""
    target = tmp_path / "build/html/_static/mystnb.css"
    stderr = ("Extension error (myst_nb._static):\nHandler <function add_global_html_resources at 0x7f> for event "
              "'build-finished' threw an exception (exception: [Errno 28] No space left on device: "
              f"'/venv/myst_nb/static/mystnb.css' -> '{target}')\nThe full traceback has been saved in:\n"
              "/tmp/sphinx-err-x.log\nTo report this error to the developers, please open an issue\n")
    error = os_error_of(stderr, tmp_path)
    assert error is not None
    assert error.location_message() == ("build/html/_static/mystnb.css: cannot write: No space left on device "
                                        "(errno 28): Sphinx stopped; Sphinx's report: /tmp/sphinx-err-x.log")


def test_sphinx_stopped_by_a_full_disk_writing_a_page_names_the_page(tmp_path: Path) -> None:
    """The theme's error gives ``OSError(28, …)`` and no file, but names the page it was writing."""
    stderr = ("Theme error!\n    sphinx.errors.ThemeError: An error happened in rendering the page api.\n"
              "    Reason: OSError(28, 'No space left on device')\nplease open an issue\n")
    error = os_error_of(stderr, tmp_path, tmp_path / "build/html")
    assert error is not None
    assert error.location_message() == "build/html/api.html: cannot write: No space left on device (errno 28): " \
                                       "Sphinx stopped"
