"""The builder's code keeps a shape a maintainer can change: no long procedure, every
subcommand dispatched by the command line's table.

Long functions were where concerns piled up (MyST emission as one 177-line state machine,
library assembly tangled with its validation, an if-chain of subcommands); issue 28 split
them along their concerns, and this keeps it so.
"""

from __future__ import annotations

import argparse
import ast
from pathlib import Path

from tabbook import cli

PACKAGE = Path(__file__).resolve().parent.parent / "tabbook"
#: The longest a function of tabbook/ may be, in lines (decorators and docstring included).
MAX_LINES = 100
#: The longest a module of tabbook/ may be, in lines (issue 51 item 4: past it, a module held
#: several concerns, as worker.py's 860 and config.py's 966 lines did).
MAX_MODULE_LINES = 600


def long_functions(package: Path = PACKAGE, limit: int = MAX_LINES) -> list[str]:
    """``path:LINE: name is N lines`` for every function or method longer than ``limit``."""
    found = []
    for path in sorted(package.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                length = (node.end_lineno or node.lineno) - first + 1
                if length > limit:
                    found.append(f"{path.relative_to(package.parent)}:{node.lineno}: {node.name} is {length} lines")
    return found


def long_modules(package: Path = PACKAGE, limit: int = MAX_MODULE_LINES) -> list[str]:
    """``path: N lines`` for every module longer than ``limit``."""
    found = []
    for path in sorted(package.rglob("*.py")):
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > limit:
            found.append(f"{path.relative_to(package.parent)}: {lines} lines")
    return found


def test_no_function_is_longer_than_a_hundred_lines() -> None:
    assert long_functions() == []


def test_no_module_is_longer_than_six_hundred_lines() -> None:
    assert long_modules() == []


def test_the_measure_finds_a_long_module(tmp_path: Path) -> None:
    (tmp_path / "short.py").write_text("x = 1\n" * MAX_MODULE_LINES)
    (tmp_path / "long.py").write_text("x = 1\n" * (MAX_MODULE_LINES + 1))
    assert long_modules(tmp_path) == [f"{tmp_path.name}/long.py: {MAX_MODULE_LINES + 1} lines"]


def test_the_measure_finds_a_long_function(tmp_path: Path) -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_LINES))
    (tmp_path / "m.py").write_text(f"def short():\n    return 1\n\n\ndef long():\n{body}\n")
    assert long_functions(tmp_path) == [f"{tmp_path.name}/m.py:5: long is {MAX_LINES + 1} lines"]


def test_every_subcommand_has_one_entry_in_the_dispatch_table() -> None:
    sub = next(a for a in cli.parser()._actions if isinstance(a, argparse._SubParsersAction))
    assert set(sub.choices) == set(cli.WITHOUT_BOOK) | set(cli.WITH_BOOK)
    assert not set(cli.WITHOUT_BOOK) & set(cli.WITH_BOOK)
