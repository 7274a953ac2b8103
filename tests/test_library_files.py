"""Stage 3 (library): the files it writes, their freshness, lint cleanliness and version."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from library_fixtures import (
    CONFIG,
    IMPORTS,
    PLOT_IMPORTS,
    ROOT,
    RUFF,
    body,
    fence,
    make_config,
    section,
    torch_lib,
)

from tabbook.cli import main as cli_main
from tabbook.config import Config, load_config
from tabbook.errors import BookError
from tabbook.library.generate import generate_library, stale_library, write_library


@pytest.fixture
def config(tmp_path: Path) -> Config:
    return make_config(tmp_path)


# --- files --------------------------------------------------------------------------------------

def test_init_has_the_version_and_imports_nothing(config: Config) -> None:
    """Nothing but ``sys`` (loaded already) at import time; the plotting hint's own import of
    importlib.metadata runs only when a plotting module is missing."""
    init = generate_library(config, [])["d2l/__init__.py"]
    tree = ast.parse(init)
    top = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
    assert [ast.unparse(n) for n in top] == ["import sys as _sys"]
    assert '__version__ = "1.2.3"' in init and "from d2l import torch as d2l" in ast.get_docstring(tree)


def _import_matplotlib_without_it(site: Path) -> tuple[str, str]:
    """Import the package at ``site`` in a Python without site-packages (so no matplotlib),
    then matplotlib: the error's ``name`` and text."""
    code = (f"import sys; sys.path.insert(0, {str(site)!r}); import d2l\n"
            "try:\n    import matplotlib\nexcept ModuleNotFoundError as e:\n    print(e.name); print(e)")
    proc = subprocess.run([sys.executable, "-I", "-S", "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    name, text = proc.stdout.strip().split("\n", 1)
    return name, text


def test_a_missing_plotting_module_names_the_plot_extra(config: Config, tmp_path: Path) -> None:
    """Issue 52: ``use_svg_display()`` without the ``plot`` extra raised a bare
    ``ModuleNotFoundError``; the error now says what to install, from the installed package's
    own metadata (its name, version and extras), and is still a ModuleNotFoundError of that name."""
    site = tmp_path / "site"
    (site / "d2l").mkdir(parents=True)
    (site / "d2l" / "__init__.py").write_text(generate_library(config, [])["d2l/__init__.py"])
    name, text = _import_matplotlib_without_it(site)
    assert name == "matplotlib" and "No module named 'matplotlib'" in text
    assert "install matplotlib and matplotlib-inline" in text  # not installed as a distribution
    info = site / "d2l-1.2.3.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: d2l\nVersion: 1.2.3\nProvides-Extra: plot\n"
                                   "Provides-Extra: torch\n")
    (info / "top_level.txt").write_text("d2l\n")
    name, text = _import_matplotlib_without_it(site)
    assert name == "matplotlib"
    assert "pip install 'd2l[plot]==1.2.3'" in text, text


def test_pyproject_reads_the_version_the_generator_writes() -> None:
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert meta["project"]["name"] == "d2l" and "version" in meta["project"]["dynamic"]
    assert meta["tool"]["hatch"]["version"]["path"] == "d2l/__init__.py"
    assert meta["project"]["dependencies"] == ["numpy>=1.23"]
    assert set(meta["project"]["optional-dependencies"]) >= {"plot", "torch", "jax", "tensorflow", "mxnet"}
    config = load_config(ROOT)
    init = ROOT / "d2l" / "__init__.py"
    if init.is_file():  # the committed package agrees with config.ini
        assert f'__version__ = "{config.version}"' in init.read_text()


def test_write_is_atomic_and_only_rewrites_changed_files(config: Config, monkeypatch) -> None:
    files = generate_library(config, [section(config, "a.md", "A", IMPORTS, fence("def f():  #@save\n    return 1"))])
    assert sorted(write_library(config, files)) == ["d2l/__init__.py", "d2l/jax.py", "d2l/torch.py"]
    assert write_library(config, files) == [] and stale_library(config, files) == []
    before = {p.name: p.read_text() for p in (config.root / "d2l").iterdir()}
    changed = {**files, "d2l/torch.py": files["d2l/torch.py"] + "# x\n", "d2l/jax.py": "# y\n"}
    real_fdopen = os.fdopen
    calls = []

    def failing_fdopen(fd, *args, **kwargs):
        calls.append(fd)
        if len(calls) == 2:
            os.close(fd)
            raise OSError("disk full")
        return real_fdopen(fd, *args, **kwargs)

    monkeypatch.setattr(os, "fdopen", failing_fdopen)
    with pytest.raises(OSError, match="disk full"):
        write_library(config, changed)
    after = {p.name: p.read_text() for p in (config.root / "d2l").iterdir()}
    assert after == before  # nothing replaced, no temporary file left behind
    assert sorted(stale_library(config, changed)) == ["d2l/jax.py", "d2l/torch.py"]


def lib(root: Path, *args: str) -> int:
    """``python -m tabbook -C ROOT lib [--check]``, in process."""
    return cli_main(["-C", str(root), "lib", *args])


def test_an_error_writes_nothing(tmp_path: Path) -> None:
    (tmp_path / "config.ini").write_text(CONFIG)
    (tmp_path / "index.md").write_text("# Book\n\n```toc\nch/a\n```\n")
    (tmp_path / "ch").mkdir()
    (tmp_path / "ch" / "a.md").write_text("# A\n\n" + IMPORTS + "\n" + fence("def f():  #@save\n    return 1"))
    assert lib(tmp_path) == 0
    old = (tmp_path / "d2l" / "torch.py").read_text()
    (tmp_path / "ch" / "a.md").write_text("# A\n\n" + fence("def f():  #@save\n    return 2") + "\n"
                                          + fence("@d2l.add_to_class(Nope)  #@save\ndef g(self):\n    pass"))
    assert lib(tmp_path, "--check") == 1
    assert lib(tmp_path) == 1
    assert (tmp_path / "d2l" / "torch.py").read_text() == old
    assert sorted(p.name for p in (tmp_path / "d2l").iterdir()) == ["__init__.py", "jax.py", "torch.py"]


def test_check_reports_stale_files(tmp_path: Path, capsys) -> None:
    (tmp_path / "config.ini").write_text(CONFIG)
    (tmp_path / "index.md").write_text("# Book\n")
    assert lib(tmp_path, "--check") == 0 and lib(tmp_path) == 0  # a book that saves nothing has no library
    assert not (tmp_path / "d2l").exists()
    (tmp_path / "index.md").write_text("# Book\n\n```toc\na\n```\n")
    (tmp_path / "a.md").write_text("# A\n\n" + IMPORTS + "\n" + fence("def f():  #@save\n    return 1"))
    assert lib(tmp_path, "--check") == 1
    assert "stale: d2l/torch.py" in capsys.readouterr().err
    assert lib(tmp_path) == 0
    assert lib(tmp_path, "--check") == 0


def ruff_check(text: str, name: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(RUFF), "check", "--no-cache", "--stdin-filename", name, "-"],
                          input=text, cwd=ROOT, capture_output=True, text=True)


@pytest.mark.skipif(not RUFF.exists(), reason="ruff is not installed in the builder's venv")
def test_generated_code_passes_ruff_and_compiles(config: Config) -> None:
    files = generate_library(config, [section(config, "a.md", "A", PLOT_IMPORTS, fence("""
        import os
        import collections
        from torch import Tensor, nn
        from torch.nn import functional as F, init
        from matplotlib.figure import Figure

        #@save
        class Net(nn.Module):
            \"\"\"A net.\"\"\"   \t
            def forward(self, x: Tensor):
                l = F.relu(x)  # the book's style: one-letter names, lambdas
                act = lambda v: init.zeros_(v)
                return l, act

        def plot(x):
            fig = Figure()
            fig.gca().plot(x)
            plt.plot(x)
            display.display(fig)
            return os.sep, collections.Counter(), np.ones(1)
    """))])
    for path, text in files.items():
        compile(text, path, "exec")
        proc = ruff_check(text, path)
        assert proc.returncode == 0, proc.stdout + proc.stderr


def test_trailing_blanks_are_dropped_except_inside_strings(config: Config) -> None:
    lib = torch_lib(config, fence('def f():  #@save   \n    s = """a  \nb  """   \n    return s  '))
    assert 'def f():\n' in lib and '    s = """a  \nb  """\n    return s\n' in lib


def test_tab_selected_imports_at_the_top_of_a_saved_cell_feed_the_header(config: Config) -> None:
    files = generate_library(config, [section(config, "a.md", "A", fence("""
        #@save
        if tab.selected('pytorch'):
            import torch
        if tab.selected('jax'):
            import jax


        def zeros():
            if tab.selected('pytorch'):
                return torch.zeros(1)
            if tab.selected('jax'):
                return jax.numpy.zeros(1)
    """, "pytorch, jax"))])
    assert body(files["d2l/torch.py"]).split("__all__")[0].strip() == "import torch"
    assert body(files["d2l/jax.py"]).split("__all__")[0].strip() == "import jax"


@pytest.mark.skipif(not RUFF.exists(), reason="ruff is not installed in the builder's venv")
def test_the_books_own_library_is_generated_and_clean() -> None:
    from tabbook.book import read_book, read_page

    config = load_config(ROOT)
    pages = sorted((ROOT / "chapter_gpus").glob("*.md"))
    if not pages:
        pytest.skip("chapter_gpus/ has no section yet")
    if (ROOT / "chapter_gpus" / "index.md").is_file():
        sections = read_book(config).sections
    else:  # the chapter's index is not written yet: its sections in file order
        sections = [read_page(config, p.relative_to(ROOT).as_posix()) for p in pages]
    files = generate_library(config, sections)
    for path, text in files.items():
        proc = ruff_check(text, path)
        assert proc.returncode == 0, proc.stdout + proc.stderr


def test_docstrings_cite_the_sites_address_when_the_book_names_it(tmp_path: Path) -> None:
    """Issue 52: a ``pip install d2l`` user's ``help()`` named a page by its path in the site
    (``a.html``), which is no address. With ``[site] url`` the line gives the page's address;
    the API page still reads its path from it. Without the key, nothing changes."""
    from tabbook.render.apiref import _doc
    from tabbook.render.ext.apidoc import _doc_lines

    code = fence("def f():  #@save\n    '''Twice one.'''\n    return 2")
    (tmp_path / "plain").mkdir()
    bare = make_config(tmp_path / "plain")
    plain = generate_library(bare, [section(bare, "a.md", "A", IMPORTS, code)])
    assert 'Defined in "A" (a.html).\n' in plain["d2l/torch.py"]
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "config.ini").write_text(CONFIG + "\n[site]\nurl = https://example.org/book\n")
    config = load_config(tmp_path / "site")
    assert config.site.url == "https://example.org/book/"
    text = generate_library(config, [section(config, "a.md", "A", IMPORTS, code)])["d2l/torch.py"]
    assert 'Defined in "A" (a.html): https://example.org/book/a.html\n' in text
    [node] = [n for n in ast.parse(text).body if isinstance(n, ast.FunctionDef) and n.name == "f"]
    assert _doc(node) == ("Twice one.", "A", "a")
    assert _doc_lines(ast.get_docstring(node) or "") == ["Twice one.", "", "Defined in :doc:`A </a>`."]


def test_the_sites_address_is_checked_where_it_is_written(tmp_path: Path) -> None:
    (tmp_path / "config.ini").write_text(CONFIG + "\n[site]\nurl = https://example.org/a book/\n")
    with pytest.raises(BookError, match=r"config.ini:\d+: .*not a site's address"):
        load_config(tmp_path)
