"""The documents name what the code has: the commands, the modules, the files they point to."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from tabbook import cli

ROOT = Path(__file__).resolve().parent.parent


def _commands() -> set[str]:
    sub = next(a for a in cli.parser()._actions if isinstance(a, argparse._SubParsersAction))
    return set(sub.choices)


def test_every_command_is_listed_where_commands_are_listed() -> None:
    commands = _commands()
    assert len(commands) >= 14
    docstring = set(re.findall(r"``([a-z-]+)``", (cli.__doc__ or "").split("Commands:")[1].split("(")[0]))
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    listed = readme.split("Every target calls the builder's one command line")[1].split("--help")[0]
    architecture = (ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8")
    entry = next(line for line in architecture.splitlines() if line.startswith("| entry | `tabbook/cli.py`"))
    assert docstring == commands
    assert set(re.findall(r"`([a-z-]+)`", listed)) == commands
    assert set(re.findall(r"`([a-z-]+)`", entry.split("the one command line")[1].split(")")[0])) == commands


def test_every_builder_path_the_documents_name_exists() -> None:
    """ARCHITECTURE.md, README.md, CONTRIBUTING.md and pyproject.toml's comments name files of
    tabbook/ and ``python -m`` modules that exist (pyproject named two that did not)."""
    for name in ("ARCHITECTURE.md", "README.md", "CONTRIBUTING.md", "pyproject.toml"):
        text = (ROOT / name).read_text(encoding="utf-8")
        for rel in re.findall(r"\btabbook/[\w/]+\.(?:py|js|css)\b", text):
            assert (ROOT / rel).is_file(), f"{name} names {rel}, which does not exist"
        for module in re.findall(r"python -m (tabbook(?:\.\w+)+)", text):
            path = ROOT / module.replace(".", "/")
            runnable = (path / "__main__.py").is_file() or (
                path.with_suffix(".py").is_file() and "__main__" in path.with_suffix(".py").read_text())
            assert runnable, f"{name} runs {module}, which is not a module that runs"


def test_readme_starts_with_what_a_reader_installs_and_how() -> None:
    """Its first lines name the package the site serves, at the book's version, from the site's
    index: the bare ``pip install d2l`` would install PyPI's d2l, another project."""
    from tabbook.config import load_config
    from tabbook.render.package import INDEX, book_package

    package = book_package(load_config(ROOT))
    assert package is not None
    head = "\n".join((ROOT / "README.md").read_text(encoding="utf-8").splitlines()[:15])
    line = next(x for x in head.splitlines() if x.startswith("pip install "))
    assert line == f"pip install --extra-index-url https://SITE/{INDEX}/ {package.requirement('torch')}"
