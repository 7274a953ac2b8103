"""scripts/same_output.py's verdict, on small hand-made output trees (no build): trees that differ
only in what it normalises are the same; a changed, missing or extra file is reported and fails.

Why: the script is what shows a refactor byte-identical (issue 51 item 2); one that called every
pair of trees the same, or masked more than build stamps, would prove nothing.
"""

from __future__ import annotations

import importlib.util
import zipfile
from pathlib import Path
from types import ModuleType

import pytest

Stamp = tuple[int, int, int, int, int, int]
SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "same_output.py"


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("same_output", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _zip(path: Path, members: dict[str, bytes], when: Stamp) -> None:
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in members.items():
            zf.writestr(zipfile.ZipInfo(name, date_time=when), data)


def _tree(base: Path, root: str, page: str = "<p>x</p>", when: Stamp = (2020, 1, 1, 0, 0, 0),
          buildinfo: str = "config: 1") -> Path:
    """A build's output as the script keeps it: a page naming the folder it was built in, a
    notebooks zip, Sphinx's .buildinfo, a library module, a binary image."""
    html = base / "book" / "html"
    (html / "_downloads" / "notebooks").mkdir(parents=True)
    (html / "index.html").write_text(f"{page}<a href='file://{root}/img'>", encoding="utf-8")
    (html / ".buildinfo").write_text(buildinfo, encoding="utf-8")
    (html / ".tabbook-stamp").write_text(buildinfo, encoding="utf-8")
    _zip(html / "_downloads" / "notebooks" / "pytorch.zip", {"a.ipynb": b"{}", "b.ipynb": b"[]"}, when)
    (html / "logo.png").write_bytes(b"\x89PNG" + root.encode())  # binary: the path is not masked
    (base / "book" / "d2l").mkdir(parents=True)
    (base / "book" / "d2l" / "torch.py").write_text("def f():\n    return 1\n", encoding="utf-8")
    return base


def _same_png(a: Path, b: Path) -> None:
    (b / "book" / "html" / "logo.png").write_bytes((a / "book" / "html" / "logo.png").read_bytes())


def test_trees_that_differ_only_in_build_stamps_are_the_same(tmp_path: Path) -> None:
    so = _script()
    a = _tree(tmp_path / "A", "/tmp/same-output-aaaa/tree")
    b = _tree(tmp_path / "B", "/tmp/same-output-bbbb/tree", when=(2026, 12, 2, 14, 0, 0), buildinfo="config: 2")
    _same_png(a, b)
    assert (a / "book/html/_downloads/notebooks/pytorch.zip").read_bytes() != (
        b / "book/html/_downloads/notebooks/pytorch.zip").read_bytes()  # the stamps do differ
    found = so.differences(a, b, ("/tmp/same-output-aaaa/tree",), ("/tmp/same-output-bbbb/tree",))
    assert found == []
    assert so.verdict(found) == 0


def test_a_changed_missing_or_extra_file_is_reported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    so = _script()
    a = _tree(tmp_path / "A", "/tmp/same-output-aaaa/tree")
    b = _tree(tmp_path / "B", "/tmp/same-output-bbbb/tree", page="<p>y</p>")
    _same_png(a, b)
    _zip(b / "book/html/_downloads/notebooks/pytorch.zip", {"b.ipynb": b"[]", "a.ipynb": b"{}"},
         (2020, 1, 1, 0, 0, 0))  # the same members in another order: a reader's zip differs
    (a / "book" / "d2l" / "torch.py").unlink()
    (b / "book" / "html" / "extra.html").write_text("new", encoding="utf-8")
    found = so.differences(a, b, ("/tmp/same-output-aaaa/tree",), ("/tmp/same-output-bbbb/tree",))
    assert found == ["only in B: book/d2l/torch.py", "differs: book/html/_downloads/notebooks/pytorch.zip",
                     "only in B: book/html/extra.html", "differs: book/html/index.html"]
    assert so.verdict(found) == 1
    assert "same_output: 4 differing file(s)" in capsys.readouterr().out


def test_the_build_folder_is_masked_only_in_text(tmp_path: Path) -> None:
    """A binary file naming the build's folder is compared as it is: masking is for text."""
    so = _script()
    a = _tree(tmp_path / "A", "/tmp/same-output-aaaa/tree")
    b = _tree(tmp_path / "B", "/tmp/same-output-bbbb/tree")
    assert so.differences(a, b, ("/tmp/same-output-aaaa/tree",), ("/tmp/same-output-bbbb/tree",)) == [
        "differs: book/html/logo.png"]
