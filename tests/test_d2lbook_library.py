"""Stage 3 (library) on d2lbook's inputs: config.ini's [library] keys, a module's hand-written
top, ``d2l`` used by saved code itself, names a local hides, and where errors point."""

from __future__ import annotations

import ast
import configparser
import importlib.util
import sys
import textwrap
from pathlib import Path

import pytest
from library_fixtures import CONFIG, IMPORTS, PLOT_IMPORTS, errors_of, fence, make_config, section

from tabbook.config import Config, LibraryKeys, library_keys, load_config
from tabbook.errors import BookError
from tabbook.library.generate import (
    D2LBOOK_MARKER,
    generate_library,
    hand_written_tops,
    write_library,
)
from tabbook.library.scopes import hidden_reads, library_references

LIBRARY = """
[library]
version_file = d2l/__init__.py

[library-pytorch]
lib_file = d2l/torch.py
lib_name = math
# entries split by commas and by lines; "a -> b"; a stray "(" is dropped
simple_alias = sqrt, floor(,
               root -> sqrt
               pi
fluent_alias = shout -> upper, lower -> casefold,
alias =
       nn_Module = object
       twice = lambda a: 2 * a
reverse_alias =
       d2l.twice\\((\\w+)\\) -> 2 * \\1
       d2l.nn_Module -> object
"""


@pytest.fixture
def config(tmp_path: Path) -> Config:
    return make_config(tmp_path)


@pytest.fixture
def d2lbook(tmp_path: Path) -> Config:
    """The fixture book with d2lbook's [library] sections for pytorch (and d2lbook's ``#@save``)."""
    (tmp_path / "config.ini").write_text(CONFIG.replace("[library]\nsave = cell\n\n", "") + LIBRARY)
    return load_config(tmp_path)


def load(text: str, tmp_path: Path, name: str = "generated_mod"):  # noqa: ANN201 - a module
    """Import a generated module from a file, as ``import d2l.torch`` would."""
    path = tmp_path / f"{name}.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    try:
        spec.loader.exec_module(mod)
    finally:
        del sys.modules[name]
    return mod


def no_torch(text: str) -> str:
    """The generated module runnable without torch installed."""
    return text.replace("import torch\n", "").replace("from torch import nn\n", "nn = None\n")


# --- 1a: config.ini's library keys --------------------------------------------------------------

def test_library_keys_read_d2lbooks_syntax(d2lbook: Config) -> None:
    keys = d2lbook.frameworks["pytorch"].library
    assert keys.lib_file == "d2l/torch.py" and keys.module == "torch" and keys.lib_name == "math"
    assert keys.version_file == "d2l/__init__.py"
    assert keys.simple_alias == (("sqrt", "sqrt"), ("floor", "floor"), ("root", "sqrt"), ("pi", "pi"))
    assert keys.fluent_alias == (("shout", "upper"), ("lower", "casefold"))
    assert keys.alias == ("nn_Module = object", "twice = lambda a: 2 * a")
    assert keys.reverse_alias == ((r"d2l.twice\((\w+)\)", r"2 * \1"), ("d2l.nn_Module", "object"))
    assert keys.alias_lines() == [
        "nn_Module = object", "twice = lambda a: 2 * a",
        "sqrt = math.sqrt", "floor = math.floor", "root = math.sqrt", "pi = math.pi",
        "shout = lambda x, *args, **kwargs: x.upper(*args, **kwargs)",
        "lower = lambda x, *args, **kwargs: x.casefold(*args, **kwargs)",
    ]
    # A tab without [library-<tab>] has none; our own book has none at all.
    assert d2lbook.frameworks["jax"].library == LibraryKeys(version_file="d2l/__init__.py")
    assert load_config(Path(__file__).resolve().parent.parent).frameworks["pytorch"].library == LibraryKeys()


def test_library_keys_that_cannot_make_python_are_errors() -> None:
    parser = configparser.ConfigParser(interpolation=None)
    parser.read_string("[library-x]\nlib_name = np\nsimple_alias = ones, 2bad\n")
    with pytest.raises(BookError, match=r"\[library-x\] simple_alias: '2bad' is not a Python name"):
        library_keys(parser, "x")
    parser.read_string("[library-y]\nalias =\n    size = lambda a:\n")
    with pytest.raises(BookError, match=r"\[library-y\] the aliases are not valid Python"):
        library_keys(parser, "y")


# --- 1b: the hand-written top and the aliases ----------------------------------------------------

TOP = """\
# Hand-written: kept as it is.
import math

DATA_HUB = dict()
nn_Module = object  # used when a class is defined: the aliases come too late for that
""" + "DATA_URL = 'http://example.invalid/'  # trailing spaces stay" + "   \n"

SAVED = fence("""
    def area(r):  #@save
        return d2l.pi * d2l.sqrt(r) ** 2 + len(d2l.DATA_HUB)

    class Net(d2l.nn_Module):  #@save
        def double(self, x):
            return d2l.twice(x), d2l.shout(x), d2l.lower('AB')
""")


def test_hand_written_top_is_kept_and_aliases_close_the_module(d2lbook: Config, tmp_path: Path) -> None:
    lib_file = d2lbook.library_dir / "torch.py"
    lib_file.parent.mkdir()
    lib_file.write_text(TOP + D2LBOOK_MARKER + "\n# d2lbook's old generated code\ndef old():\n    pass\n")
    tops = hand_written_tops(d2lbook)
    assert tops == {"pytorch": TOP}
    sections = [section(d2lbook, "a.md", "A", IMPORTS, SAVED)]
    text = generate_library(d2lbook, sections, tops)["d2l/torch.py"]
    assert text.startswith(TOP + D2LBOOK_MARKER + "\n")  # verbatim, trailing spaces included
    assert "def old" not in text
    generated = text.split(D2LBOOK_MARKER)[1]
    # Names from the top (DATA_HUB, math) and the aliases are defined: no error, no import added.
    assert "import math" not in generated and "import torch" not in generated
    assert generated.rstrip().endswith("lower = lambda x, *args, **kwargs: x.casefold(*args, **kwargs)")
    assert "\n# Alias defined in config.ini\nnn_Module = object\ntwice = lambda a: 2 * a\n" in generated
    mod = load(text, tmp_path)
    assert mod.area(4) == pytest.approx(math_pi() * 4)
    assert mod.Net().double("x") == ("xx", "X", "ab")
    assert mod.root is mod.sqrt and mod.floor(2.5) == 2
    assert {"area", "Net", "DATA_HUB", "twice", "shout"} <= set(mod.__all__) and "math" not in mod.__all__
    # Writing it and generating again gives the same file: the top is read back unchanged.
    write_library(d2lbook, {"d2l/torch.py": text})
    again = generate_library(d2lbook, sections, hand_written_tops(d2lbook))["d2l/torch.py"]
    assert again == text


def math_pi() -> float:
    import math

    return math.pi


def test_without_a_top_or_aliases_the_module_is_as_before(config: Config) -> None:
    cells = [IMPORTS, fence("def f():  #@save\n    return 1")]
    assert generate_library(config, [section(config, "a.md", "A", *cells)], {}) == generate_library(
        config, [section(config, "a.md", "A", *cells)], {"pytorch": ""})
    text = generate_library(config, [section(config, "a.md", "A", *cells)])["d2l/torch.py"]
    assert text.startswith("# d2l/torch.py: GENERATED by tabbook") and D2LBOOK_MARKER not in text
    assert "Alias" not in text and "sys" not in text


def test_names_the_top_defines_are_not_reported_but_others_still_are(d2lbook: Config) -> None:
    cell = fence("""
        def f():  #@save
            return d2l.DATA_URL, d2l.sqrt(4), d2l.Nowhere
    """)
    with pytest.raises(BookError) as err:
        generate_library(d2lbook, [section(d2lbook, "a.md", "A", IMPORTS, cell)], {"pytorch": TOP})
    line = markdown_line("A", [IMPORTS, cell], "d2l.Nowhere")
    assert errors_of(err.value) == [f"a.md:{line}: saved code uses d2l.Nowhere, but no section saves Nowhere (PyTorch)"]


# --- 3: d2l itself in saved code; every error in one run -----------------------------------------

def test_saved_module_self_reference_is_accepted(config: Config, tmp_path: Path) -> None:
    text = generate_library(config, [section(config, "a.md", "A", IMPORTS, fence("""
        #@save
        import sys
        d2l = sys.modules[__name__]

        def me():  #@save
            return d2l, getattr(d2l, 'me')
    """))])["d2l/torch.py"]
    assert text.count("d2l = sys.modules[__name__]") == 1 and "import sys" in text
    mod = load(no_torch(text), tmp_path)
    assert mod.me() == (mod, mod.me)


def test_every_independent_library_problem_is_reported_in_one_run(config: Config) -> None:
    text = "\n".join([
        "# T", "",
        "```{.python .input}", "%%tab pytorch", "@d2l.add_to_class(Nope)  #@save",   # 3-5
        "def f(self):", "    pass", "```", "",                                      # 6-9
        "```{.python .input}", "%%tab pytorch", "#@save", "def g(:", "    pass", "```", "",  # 10-16
        "```{.python .input}", "%%tab pytorch", "def h():  #@save",                 # 17-19
        "    return undefined_thing", "", "def k():  #@save", "    return d2l.Missing", "```", "",
        "```{.python .input}", "%%tab pytorch", "def uses_g():  #@save", "    return g()", "```",
    ])
    with pytest.raises(BookError) as err:
        generate_library(config, [section(config, "ch/t.md", "T", text)])
    got = [m.removeprefix("ch/t.md:") for m in errors_of(err.value)]
    # (the section helper puts 4 lines of title and prose above the text)
    assert sorted(got, key=lambda m: int(m.split(":")[0])) == [
        "9: add_to_class(Nope): Nope was never saved before this point in the pytorch library; "
        "save the class with #@save first",
        "17: Python syntax error in a #@save cell: invalid syntax",
        "24: saved code uses undefined_thing, but no section saves it and no PyTorch cell imports it",
        "27: saved code uses d2l.Missing, but no section saves Missing (PyTorch)",
    ]  # and g, which the broken cell seems to define, is not reported as undefined


# --- 4: a local name that would hide the library's ----------------------------------------------

SHADOWED = fence("""
    def gpu(i=0):  #@save
        return f'gpu{i}'

    def num_gpus():  #@save
        return 2

    class Trainer:  #@save
        def __init__(self, max_epochs, num_gpus=0):
            self.gpus = [d2l.gpu(i) for i in range(min(num_gpus, d2l.num_gpus()))]

        def pick(self, gpu):
            return gpu, d2l.gpu(gpu)

        def nested(self):
            num_gpus = 1
            def inner():
                return num_gpus + d2l.num_gpus()
            return inner()

        def comp(self):
            return [d2l.gpu(gpu) for gpu in range(2)]

        def lam(self):
            return (lambda gpu: d2l.gpu(gpu))(1)

        def glob(self):
            global num_gpus
            return d2l.num_gpus()

        def store(self):
            d2l.counter = 7
            return counter

    counter = 0  #@save
""")


def test_names_hidden_by_locals_keep_reaching_the_module(config: Config, tmp_path: Path) -> None:
    text = generate_library(config, [section(config, "a.md", "A", IMPORTS, SHADOWED)])["d2l/torch.py"]
    assert "min(num_gpus, d2l.num_gpus())" in text  # kept: num_gpus is the parameter here
    assert "[gpu(i) for i in" in text  # rewritten: nothing hides gpu there
    assert "return gpu, d2l.gpu(gpu)" in text and "return num_gpus + d2l.num_gpus()" in text
    assert "[d2l.gpu(gpu) for gpu in range(2)]" in text and "lambda gpu: d2l.gpu(gpu)" in text
    assert "global num_gpus\n        return num_gpus()" in text  # global: the module's own
    assert "d2l.counter = 7" in text  # inside a function, `counter = 7` would make a local
    assert "import sys" in text and "\nd2l = sys.modules[__name__]" in text
    mod = load(no_torch(text), tmp_path)
    trainer = mod.Trainer(3, num_gpus=5)
    assert trainer.gpus == ["gpu0", "gpu1"]  # before the fix: TypeError, 'int' is not callable
    assert trainer.pick(1) == (1, "gpu1") and trainer.nested() == 3
    assert trainer.comp() == ["gpu0", "gpu1"] and trainer.lam() == "gpu1" and trainer.glob() == 2
    assert trainer.store() == 7 and mod.counter == 7


def test_no_self_binding_when_every_name_could_be_rewritten(config: Config) -> None:
    text = generate_library(config, [section(config, "a.md", "A", IMPORTS, fence("""
        def gpu(i=0):  #@save
            return i

        def two():  #@save
            return [d2l.gpu(i) for i in range(2)]
    """))])["d2l/torch.py"]
    assert "sys" not in text and "d2l." not in text.split('"""', 2)[2].replace("d2l.html", "")


def test_a_builtin_is_not_the_library_name_it_replaces(config: Config) -> None:
    # d2l.abs written `abs` would silently call the builtin: no section defines abs.
    cell = fence("""
        def f(x):  #@save
            return d2l.abs(x)
    """)
    with pytest.raises(BookError) as err:
        generate_library(config, [section(config, "a.md", "A", IMPORTS, cell)])
    line = markdown_line("A", [IMPORTS, cell], "d2l.abs")
    assert errors_of(err.value) == [f"a.md:{line}: saved code uses d2l.abs, but no section saves abs (PyTorch)"]


def test_a_deferred_import_never_overwrites_a_parameter(config: Config) -> None:
    text = generate_library(config, [section(config, "a.md", "A", PLOT_IMPORTS, fence("""
        def show(display=None):  #@save
            d2l.plt.figure()
            return display
    """))])["d2l/torch.py"]
    show = text.split("def show")[1].split("\n\n")[0]
    assert "    from matplotlib import pyplot as plt\n    plt.figure()" in show
    assert "IPython" not in show


def test_scope_analysis_follows_python(tmp_path: Path) -> None:
    code = textwrap.dedent("""
        class A:
            x = 1
            y = d2l.x                # class body: x is A's
            def m(self):
                return d2l.x         # a method does not see A's x
        def f(d2l):
            return d2l.x             # a local d2l is not the library
        def g():
            if (x := 2):
                return d2l.x
    """)
    refs = [(r.row, r.attr, r.rewrite) for r in library_references(code)]
    assert refs == [(4, "x", False), (6, "x", True), (11, "x", False)]
    assert hidden_reads("def f(x):\n    return x\nx = 1\ny = x\n", {"x"}) == [("x", 2)]


# --- 11: errors name the line that has the problem ------------------------------------------------

def markdown_line(title: str, cells: list[str], needle: str) -> int:
    """The line of ``needle`` in the page :func:`section` makes of ``cells``."""
    text = f"# {title}\n\nSome prose.\n\n" + "\n".join(cells)
    return next(n for n, line in enumerate(text.split("\n"), 1) if needle in line)


def test_errors_name_the_line_of_the_use_deep_in_a_saved_class(config: Config) -> None:
    methods = "\n".join(f"    def m{i}(self):\n        return {i}\n" for i in range(30))
    cls = fence(f'class Big:  #@save\n    """Many methods."""\n{methods}\n    def late(self):\n'
                f"        x = 1\n        return undefined_late + x\n")
    added = fence("@d2l.add_to_class(Big)  #@save\ndef more(self):\n    y = 2\n    return d2l.Gone(y)\n")
    sections = [section(config, "ch/a.md", "A", IMPORTS, cls), section(config, "ch/b.md", "B", IMPORTS, added)]
    with pytest.raises(BookError) as err:
        generate_library(config, sections)
    use = markdown_line("A", [IMPORTS, cls], "return undefined_late")
    assert use - markdown_line("A", [IMPORTS, cls], "class Big") > 90  # far from the class line
    gone = markdown_line("B", [IMPORTS, added], "d2l.Gone(y)")
    assert sorted(errors_of(err.value)) == [
        f"ch/a.md:{use}: saved code uses undefined_late, but no section saves it and no PyTorch "
        f"cell imports it",
        f"ch/b.md:{gone}: saved code uses d2l.Gone, but no section saves Gone (PyTorch)",
    ]


def _saved_names(config: Config, code: str) -> list[str]:
    tops = {"pytorch": "import math  # the aliases' lib_name\n"} if config.frameworks["pytorch"].library.lib_name else {}
    text = generate_library(config, [section(config, "a.md", "A", IMPORTS, fence(code))], tops)["d2l/torch.py"]
    text = text.split("# Alias defined in config.ini")[0]  # the saved code, not the aliases
    tree = ast.parse(text)
    return [n.name if hasattr(n, "name") else ast.unparse(n.targets[0]) for n in tree.body
            if isinstance(n, (ast.FunctionDef, ast.ClassDef)) or (isinstance(n, ast.Assign)
                                                                   and ast.unparse(n.targets[0]) != "__all__")]


def test_save_alone_saves_the_block_after_it_as_d2lbook_does(d2lbook: Config) -> None:
    # the def after the mark, not the demo code below it (which would run at import)
    assert _saved_names(d2lbook, """
        #@save
        def load(name):
            return name.upper()

        data = load('hotdog')
        print(data)
        """) == ["load"]
    # one-line statements directly below the mark (comments between are fine) come along,
    # up to a statement with an indented body, which closes the block
    assert _saved_names(d2lbook, """
        #@save
        URL = 'http://example.org/'
        # where the files go
        ROOT = '../data'
        class Hub:
            base = URL

        other = 1
        """) == ["URL", "ROOT", "Hub"]
    # a blank line ends the block
    assert _saved_names(d2lbook, """
        #@save
        A = 1

        B = 2
        """) == ["A"]


def test_save_cell_keeps_the_whole_cell_meaning(config: Config) -> None:
    assert config.save == "cell"
    assert _saved_names(config, """
        #@save
        def load(name):
            return name.upper()

        LIMIT = 3
        """) == ["load", "LIMIT"]


def test_save_key_is_checked(tmp_path: Path) -> None:
    (tmp_path / "config.ini").write_text(CONFIG.replace("save = cell", "save = everything"))
    with pytest.raises(BookError) as err:
        load_config(tmp_path)
    assert "config.ini:" in str(err.value) and "[library] save must be block" in str(err.value)


def test_version_file_keeps_the_book_docstring_and_gets_the_release(d2lbook: Config) -> None:
    from tabbook.library.generate import VERSION_FILE, versioned

    own = '"""The book\'s own words about its package."""\n\n__version__ = "0.0.1"\n'
    files = generate_library(d2lbook, [section(d2lbook, "a.md", "A", IMPORTS)],
                             {VERSION_FILE: own, "pytorch": "import math\n"})
    assert files["d2l/__init__.py"] == own.replace("0.0.1", d2lbook.version)
    assert versioned('"""Doc."""\n', "2.0") == '"""Doc."""\n\n__version__ = "2.0"\n'
