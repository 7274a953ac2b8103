"""What an incremental render redoes: only what the change needs (issue 18).

Each test pins one piece of work that used to be repeated on every build, whatever changed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tabbook.render import katex


def _fake_package(tmp_path: Path) -> Path:
    package = tmp_path / "katex"
    (package / "dist" / "fonts").mkdir(parents=True)
    for name in ("KaTeX_Main-Regular.woff2", "KaTeX_Math-Italic.woff2"):
        (package / "dist" / "fonts" / name).write_bytes(b"font " + name.encode())
    return package


@pytest.mark.parametrize("glyphs", [set(), {"x", "2"}])
def test_fonts_are_cut_once_while_the_sites_glyphs_stay_the_same(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, glyphs: set[str]) -> None:
    """A book without formulas (no glyphs) used to have KaTeX's 20 fonts cut again on every
    build, a second of a prose edit's rebuild; now the recorded state says they are current."""
    package = _fake_package(tmp_path)
    cuts: list[str] = []

    def fake_subset(src: Path, dst: Path, text: str) -> bool:
        cuts.append(src.name)
        dst.write_bytes(b"cut " + text.encode())
        return True

    monkeypatch.setattr(katex, "subset_font", fake_subset)
    static, state = tmp_path / "static", tmp_path / "state.json"
    katex.publish_fonts(package, static, glyphs, state)
    assert len(cuts) == 2
    katex.publish_fonts(package, static, glyphs, state)
    assert len(cuts) == 2  # nothing cut again
    katex.publish_fonts(package, static, glyphs | {"y"}, state)
    assert len(cuts) == 4  # a new glyph: cut again
    (static / "katex" / "fonts" / "KaTeX_Math-Italic.woff2").unlink()
    katex.publish_fonts(package, static, glyphs | {"y"}, state)
    assert len(cuts) == 6 and (static / "katex" / "fonts" / "KaTeX_Math-Italic.woff2").is_file()


def test_whole_fonts_without_fonttools_are_copied_again_not_recorded_as_cut(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    package = _fake_package(tmp_path)
    monkeypatch.setattr(katex, "subset_font", lambda src, dst, text: False)
    static, state = tmp_path / "static", tmp_path / "state.json"
    katex.publish_fonts(package, static, {"x"}, state)
    font = static / "katex" / "fonts" / "KaTeX_Main-Regular.woff2"
    assert font.read_bytes() == b"font KaTeX_Main-Regular.woff2"
    calls: list[str] = []
    monkeypatch.setattr(katex, "subset_font", lambda src, dst, text: calls.append(src.name) or False)
    katex.publish_fonts(package, static, {"x"}, state)
    assert len(calls) == 2  # whole fonts are not a record of cut ones: fontTools is tried again


def test_the_sphinx_process_leaves_out_myst_nbs_executing_clients(tmp_path: Path) -> None:
    """Evaluating a book's Sphinx settings keeps jupyter-cache, SQLAlchemy and nbclient out of the
    Sphinx process (~0.3 s of every run), and myst-nb still sets up with execution off."""
    import subprocess
    import sys

    root = Path(__file__).resolve().parent.parent
    probe = (
        "import sys\nfrom pathlib import Path\n"
        "from tabbook.render.sphinx_conf import sphinx_settings\n"
        f"settings = sphinx_settings(Path({str(root)!r}))\n"
        "assert settings['nb_execution_mode'] == 'off'\n"
        "import myst_nb.sphinx_ext, myst_nb.core.execute as ex\n"
        "print(sorted(m for m in ('jupyter_cache.base', 'sqlalchemy', 'nbclient') if m in sys.modules))\n"
        "try:\n    ex.NotebookClientCache(None, None, None, None)\n"
        "except RuntimeError as e:\n    print(e)\n")
    proc = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True,
                          env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr
    first, second = proc.stdout.splitlines()[:2]
    assert first == "[]"
    assert "nb_execution_mode = 'off'" in second and "left out of this Sphinx process" in second
