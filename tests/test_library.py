"""Stage 3 (library): #@save extraction on small Markdown fixtures."""

from __future__ import annotations

import ast
import importlib.util
import sys
from pathlib import Path

import pytest
from library_fixtures import (
    IMPORTS,
    PLOT_IMPORTS,
    body,
    errors_of,
    fence,
    make_config,
    names,
    section,
    torch_lib,
)

from tabbook.config import Config
from tabbook.errors import BookError
from tabbook.library.generate import generate_library
from tabbook.source.read import read_section


@pytest.fixture
def config(tmp_path: Path) -> Config:
    return make_config(tmp_path)


# --- what is saved ------------------------------------------------------------------------------

def test_trailing_save_saves_that_def_and_keeps_its_comments(config: Config) -> None:
    lib = torch_lib(config, fence("""
        # Where tensors go.
        def cpu():  #@save
            # the host
            return torch.device('cpu')  # a torch.device

        def helper():
            return 1
    """))
    assert names(lib) == ["cpu"]
    assert "# Where tensors go.\ndef cpu():\n" in lib
    assert "    # the host\n" in lib and "# a torch.device" in lib
    assert "@save" not in body(lib)


def test_save_alone_saves_the_whole_cell(config: Config) -> None:
    lib = torch_lib(config, fence("""
        #@save
        def a():
            return 1

        # b's comment
        def b():
            return a()
    """))
    assert names(lib) == ["a", "b"] and "# b's comment\ndef b():" in lib


def test_tab_selected_branches_resolved_per_framework(config: Config) -> None:
    cells = [
        fence("import torch\nfrom d2l import torch as d2l"),
        fence("import jax\nfrom d2l import jax as d2l", "jax"),
        fence("""
            def cpu():  #@save
                if tab.selected('pytorch'):
                    return torch.device('cpu')
                if tab.selected('jax'):
                    return jax.devices('cpu')[0]
        """, "all"),
    ]
    files = generate_library(config, [section(config, "a.md", "A", *cells)])
    assert "return torch.device('cpu')" in files["d2l/torch.py"] and "jax" not in body(files["d2l/torch.py"])
    assert "return jax.devices('cpu')[0]" in files["d2l/jax.py"] and "torch" not in body(files["d2l/jax.py"])
    assert set(files) == {"d2l/__init__.py", "d2l/torch.py", "d2l/jax.py"}


def test_add_to_class_merges_methods_and_later_definitions_replace(config: Config) -> None:
    lib = torch_lib(config, fence("""
        class Trainer:  #@save
            \"\"\"Trains.\"\"\"
            def __init__(self, max_epochs):
                self.max_epochs = max_epochs

            def fit(self, model):
                return 'old'
    """), fence("""
        @d2l.add_to_class(Trainer)  #@save
        def prepare_batch(self, batch):
            text = \"\"\"two
        lines\"\"\"
            return batch, text

        @d2l.add_to_class(d2l.Trainer)  #@save
        def fit(self, model):
            return 'new'
    """))
    tree = ast.parse(lib)
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef))
    methods = [n.name for n in cls.body if isinstance(n, ast.FunctionDef)]
    assert methods == ["__init__", "fit", "prepare_batch"]  # fit replaced where it stood
    assert "'old'" not in lib and "'new'" in lib
    assert "add_to_class" not in lib and "d2l." not in body(lib)
    assert "text = \"\"\"two\nlines\"\"\"" in lib  # the string's second line was not re-indented
    ns: dict = {}
    exec(compile(lib.replace("import torch\n", "").replace("from torch import nn, optim\n", ""),
                 "t", "exec"), ns)
    assert ns["Trainer"](3).prepare_batch(1) == (1, "two\nlines")


MERGED_DOCS = '''
class A:  #@save
    def f(self):
        """Line one.

        Line two.
        """
        return 1

@d2l.add_to_class(A)  #@save
def g(self):
    """Added.

    More.
    """
    s = """kept
as is"""
    return s
'''


def test_merged_methods_move_their_docstrings_with_them(config: Config) -> None:
    lib = torch_lib(config, fence(MERGED_DOCS))
    assert '        Line two.\n        """\n        return 1' in lib
    assert '\n        Added.\n\n        More.\n        """\n' in lib
    assert '        s = """kept\nas is"""' in lib  # a string's content never moves


def test_later_top_level_definition_replaces_in_place_and_order_follows_the_toc(config: Config) -> None:
    first = section(config, "ch/a.md", "A", IMPORTS, fence("""
        def f():  #@save
            return 1

        def g():  #@save
            return f()
    """))
    second = section(config, "ch/b.md", "B", IMPORTS, fence("""
        def h():  #@save
            return 3

        def f():  #@save
            return 2
    """))
    lib = generate_library(config, [first, second])["d2l/torch.py"]
    assert names(lib) == ["f", "g", "h"] and lib.count("def f(") == 1 and "return 2" in lib
    assert '"B" (ch/b.html)' in lib.split("def f")[1].split("def g")[0]
    swapped = generate_library(config, [second, first])["d2l/torch.py"]
    assert names(swapped) == ["h", "f", "g"] and "return 1" in swapped


def test_redefinition_needing_a_later_name_at_definition_time_moves_to_the_end(config: Config) -> None:
    lib = torch_lib(config, fence("""
        def f():  #@save
            return 1

        class Base:  #@save
            pass

        class f(Base):  #@save
            pass
    """))
    assert names(lib) == ["Base", "f"]
    compile(lib, "t", "exec")


def test_plain_statements_are_saved_once_and_d2l_references_rewritten(config: Config) -> None:
    lib = torch_lib(config, fence("""
        #@save
        DATA_HUB = dict()
    """), fence("""
        d2l.DATA_HUB['x'] = ('url', 'sha')  #@save
        d2l.DATA_HUB['x'] = ('url', 'sha')  #@save
    """))
    assert lib.count("DATA_HUB['x'] = ('url', 'sha')") == 1 and "d2l." not in body(lib)


# --- docstrings ---------------------------------------------------------------------------------

def test_every_saved_object_says_where_it_is_defined(config: Config) -> None:
    lib = torch_lib(config, fence("""
        #@save
        def one_line(): return 1

        def documented(x):
            \"\"\"Double x.\"\"\"
            return 2 * x

        def long_doc(x):
            '''Summary.

            Details.
            '''
            return x

        def quoted(x):
            'Single quotes.'
            return x

        class C:
            pass
    """), path="chapter_gpus/devices.md", title='Computing "Devices"')
    note = "Defined in \"Computing 'Devices'\" (chapter_gpus/devices.html)."
    ns: dict = {}
    exec(compile(lib.replace("import torch\n", "").replace("from torch import nn, optim\n", ""),
                 "t", "exec"), ns)
    for name in ("one_line", "documented", "long_doc", "quoted", "C"):
        assert ns[name].__doc__.startswith(note), name
    assert ns["documented"].__doc__.split("\n\n")[1].strip() == "Double x."
    assert "Details." in ns["long_doc"].__doc__ and ns["quoted"].__doc__.endswith("Single quotes.\n    ")
    assert ns["one_line"]() == 1


# --- imports ------------------------------------------------------------------------------------

def test_import_header_keeps_only_what_saved_code_uses(config: Config) -> None:
    lib = torch_lib(config, fence("""
        import math
        import os, json  #@save

        def net():  #@save
            return nn.Linear(2, int(math.sqrt(4)))
    """))
    head = body(lib).split("__all__")[0]
    assert head.strip().split("\n") == ["import math", "", "from torch import nn"]
    assert "optim" not in body(lib) and "from d2l" not in body(lib) and "json" not in lib


def test_imports_are_per_framework(config: Config) -> None:
    cells = [IMPORTS, fence("import jax\nfrom d2l import jax as d2l", "jax"),
             fence("#@save\ndef n():\n    return 0", "all")]
    files = generate_library(config, [section(config, "a.md", "A", *cells)])
    assert "import" not in body(files["d2l/torch.py"]).split("__all__")[0]
    assert "import" not in body(files["d2l/jax.py"]).split("__all__")[0]




def test_plotting_imports_are_deferred_into_the_functions_that_use_them(config: Config, tmp_path: Path) -> None:
    lib = generate_library(config, [section(config, "a.md", "A", PLOT_IMPORTS, fence("""
        def use_svg_display():  #@save
            \"\"\"Use SVG in Jupyter.\"\"\"
            backend_inline.set_matplotlib_formats('svg')

        def set_figsize(figsize=(3.5, 2.5)):  #@save
            use_svg_display()
            d2l.plt.rcParams['figure.figsize'] = figsize

        class Board:  #@save
            def draw(self):
                display.display(plt.gcf())

            def size(self):
                return np.zeros(2)
    """))])["d2l/torch.py"]
    head = body(lib).split("__all__")[0]
    assert head.strip() == "import numpy as np"  # no plotting import at module level
    assert "    from matplotlib_inline import backend_inline\n    backend_inline" in lib
    assert '(a.html)."""\n    from matplotlib import pyplot as plt\n    use_svg_display()' in lib
    assert "        from IPython import display\n        from matplotlib import pyplot as plt\n" in lib
    assert "def __getattr__(name):" in lib and "'plt': ('matplotlib', 'pyplot')" in lib
    # Importing the module needs neither matplotlib nor IPython (not installed in the builder).
    (tmp_path / "lazy_mod.py").write_text(lib.replace("import numpy as np\n", "np = None\n"))
    spec = importlib.util.spec_from_file_location("lazy_mod", tmp_path / "lazy_mod.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert "matplotlib" not in sys.modules and callable(mod.set_figsize)
    with pytest.raises(ModuleNotFoundError, match="matplotlib"):
        mod.plt  # noqa: B018 - the PEP 562 hook imports on access
    with pytest.raises(AttributeError):
        mod.nothing_here  # noqa: B018


def test_plotting_name_used_at_definition_time_is_an_error(config: Config) -> None:
    with pytest.raises(BookError) as err:
        generate_library(config, [section(config, "a.md", "A", PLOT_IMPORTS, fence("""
            def show(fig=plt.gcf()):  #@save
                return fig
        """))])
    assert errors_of(err.value) == [
        "a.md:17: plt (a plotting import, deferred so that importing the library stays light) "
        "is used when the code is defined, not inside a function body"
    ]


# --- errors carry file.md:LINE ------------------------------------------------------------------

def test_save_on_an_indented_line_is_an_error(config: Config) -> None:
    text = "# T\n\n```{.python .input}\n%%tab pytorch\nclass A:\n    #@save\n    def f(self):\n        pass\n```\n"
    with pytest.raises(BookError) as err:
        generate_library(config, [read_section(text, "ch/t.md", config.tabs, config.default_tab)])
    assert str(err.value).startswith("ch/t.md:6: #@save")


def test_trailing_save_inside_a_block_is_an_error(config: Config) -> None:
    text = "# T\n\n```{.python .input}\n%%tab pytorch\nclass A:\n    def f(self):  #@save\n        pass\n```\n"
    with pytest.raises(BookError) as err:
        generate_library(config, [read_section(text, "ch/t.md", config.tabs, config.default_tab)])
    assert str(err.value).startswith("ch/t.md:6: #@save inside a block")


def test_add_to_class_of_a_class_never_saved_is_an_error(config: Config) -> None:
    text = ("# T\n\n```{.python .input}\n%%tab pytorch\nclass Tr:\n    pass\n```\n\n"
            "```{.python .input}\n%%tab pytorch\n@d2l.add_to_class(Tr)  #@save\ndef f(self):\n    pass\n```\n")
    with pytest.raises(BookError) as err:
        generate_library(config, [read_section(text, "ch/t.md", config.tabs, config.default_tab)])
    assert errors_of(err.value) == [
        "ch/t.md:11: add_to_class(Tr): Tr was never saved before this point in the pytorch library; "
        "save the class with #@save first"
    ]


def test_syntax_error_in_a_saved_block_is_an_error(config: Config) -> None:
    text = "# T\n\n```{.python .input}\n%%tab all\n#@save\ndef f(:\n    pass\n```\n"
    with pytest.raises(BookError) as err:
        generate_library(config, [read_section(text, "ch/t.md", config.tabs, config.default_tab)])
    assert errors_of(err.value) == ["ch/t.md:6: Python syntax error in a #@save cell: invalid syntax"]


def test_a_saved_cell_python_parses_but_cannot_run_is_an_error(config: Config) -> None:
    """ast.parse accepts `return` outside a function; the generated module would not import
    (found by tests/test_fuzz.py: a def line replaced by `if tab.selected(...)`)."""
    text = ("# T\n\n```{.python .input}\n%%tab all\n#@save\nif tab.selected('pytorch'):\n"
            "    x = 1\n    return x\n```\n")
    with pytest.raises(BookError) as err:
        generate_library(config, [read_section(text, "ch/t.md", config.tabs, config.default_tab)])
    assert errors_of(err.value) == ["ch/t.md:8: Python syntax error in a #@save cell: 'return' outside function"]


def test_top_level_await_in_a_saved_cell_is_allowed(config: Config) -> None:
    text = ("# T\n\n```{.python .input}\n%%tab all\nimport asyncio\nawait asyncio.sleep(0)\n\n"
            "#@save\ndef f():\n    return 1\n```\n")
    library = generate_library(config, [read_section(text, "ch/t.md", config.tabs, config.default_tab)])
    assert any("def f():" in text for text in library.values())


def test_name_never_saved_nor_imported_is_an_error(config: Config) -> None:
    text = "# T\n\n```{.python .input}\n%%tab pytorch\ndef f():  #@save\n    return d2l.Missing()\n```\n"
    with pytest.raises(BookError) as err:
        generate_library(config, [read_section(text, "ch/t.md", config.tabs, config.default_tab)])
    # The line that uses the name (6), not the def line (5).
    assert str(err.value) == "ch/t.md:6: saved code uses d2l.Missing, but no section saves Missing (PyTorch)"


def test_errors_of_several_cells_are_reported_together(config: Config) -> None:
    text = ("# T\n\n```{.python .input}\n%%tab pytorch\nif True:\n    x = 1  #@save\n```\n\n"
            "```{.python .input}\n%%tab pytorch\n#@save\nx = (\n```\n")
    with pytest.raises(BookError) as err:
        generate_library(config, [read_section(text, "ch/t.md", config.tabs, config.default_tab)])
    assert [m.split(":")[1] for m in errors_of(err.value)] == ["6", "12"]
