"""Small Markdown fixtures and helpers shared by the library-stage tests."""

from __future__ import annotations

import ast
import sys
import textwrap
from pathlib import Path

from tabbook.config import Config, load_config
from tabbook.errors import BookError
from tabbook.library.generate import generate_library
from tabbook.source.model import Section
from tabbook.source.read import read_section

ROOT = Path(__file__).resolve().parent.parent
RUFF = Path(sys.executable).parent / "ruff"

CONFIG = """\
[project]
name = fx
title = Fixture Book
version = 1.2.3

[build]
tabs = pytorch, jax
default_tab = pytorch

[library]
save = cell

[framework:pytorch]
label = PyTorch
module = torch
python = current

[framework:jax]
label = JAX
module = jax
python = current
"""


def make_config(tmp_path: Path) -> Config:
    """A two-framework book (pytorch, jax) whose frameworks run in the builder's Python."""
    (tmp_path / "config.ini").write_text(CONFIG)
    return load_config(tmp_path)


def fence(code: str, tab: str = "pytorch") -> str:
    return f"```{{.python .input}}\n%%tab {tab}\n{textwrap.dedent(code).strip()}\n```\n"


def section(config: Config, path: str, title: str, *cells: str) -> Section:
    text = f"# {title}\n\nSome prose.\n\n" + "\n".join(cells)
    return read_section(text, path, config.tabs, config.default_tab)


IMPORTS = fence("""
    import torch
    from torch import nn, optim
    from d2l import torch as d2l
""")


def torch_lib(config: Config, *cells: str, path: str = "ch/a.md", title: str = "Alpha") -> str:
    return generate_library(config, [section(config, path, title, IMPORTS, *cells)])["d2l/torch.py"]


def body(text: str) -> str:
    """The generated module without banner and docstring: what the tests compare."""
    return text.split('\n"""\n', 1)[1]


def names(text: str) -> list[str]:
    return [getattr(n, "name", None) or "?" for n in ast.parse(text).body
            if isinstance(n, (ast.FunctionDef, ast.ClassDef))]


def errors_of(exc: BookError) -> list[str]:
    return [e.location_message() for e in getattr(exc, "errors", [exc])]


PLOT_IMPORTS = fence("""
    %matplotlib inline
    import numpy as np
    from matplotlib import pyplot as plt
    from matplotlib_inline import backend_inline
    from IPython import display
    from d2l import torch as d2l
""")
