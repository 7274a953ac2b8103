"""A book with two editions, as a git repository made in a temporary folder (for
tests/test_editions.py and tests/browser/test_editions.py).

``v1`` (tagged) has ``part/old.md``; the second commit (``main``) removes it and adds
``part/new.md``, and moves the intro under the part; ``part/kept.md`` is in both, with a code
cell whose output names the edition, executed into each commit's own ``_freeze/``. The second
commit's ``config.ini`` lists both editions, the current one first.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CONFIG = """[project]
name = fx
title = Fixture

[build]
notebooks = *.md */*.md
tabs = plain

[framework:plain]
python = current
import = IPython
"""
VERSIONS = """
[site]
versions = now main Current edition
           v1 v1 First edition
"""


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout


def tabbook(repo: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """This checkout's tabbook on the book at ``repo``."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p))
    proc = subprocess.run([sys.executable, "-m", "tabbook", "-C", str(repo), *args], capture_output=True,
                          text=True, env=env, timeout=600)
    if check and proc.returncode != 0:
        raise RuntimeError(f"tabbook {' '.join(args)} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return proc


def write(repo: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text, encoding="utf-8")


def kept(edition: str) -> str:
    return f"# Kept\n\nIn every edition.\n\n```{{.python .input}}\nprint('output of the {edition} edition')\n```\n"


def index(*entries: str) -> str:
    return "# Fixture\n\n```toc\n:maxdepth: 2\n\n" + "\n".join(entries) + "\n```\n"


def part(*entries: str) -> str:
    return "# Part\n\nThe part's front.\n\n```toc\n:maxdepth: 2\n\n" + "\n".join(entries) + "\n```\n"


def make_repo(repo: Path, *, execute: tuple[str, ...] = ("first", "current")) -> Path:
    """The two-edition book at ``repo`` (see the module's docstring); ``execute`` names the
    commits whose code is executed into their ``_freeze/`` (the others' code has no entry)."""
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", "test@example.invalid")
    git(repo, "config", "user.name", "test")
    write(repo, {".gitignore": "build/\n", "config.ini": CONFIG, "index.md": index("intro", "part/index"),
                 "intro.md": "# Intro\n\nThe first words.\n", "part/index.md": part("old", "kept"),
                 "part/old.md": "# Old\n\nOnly in the first edition.\n", "part/kept.md": kept("first")})
    if "first" in execute:
        tabbook(repo, "build", "--no-render")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "first edition")
    git(repo, "tag", "v1")
    git(repo, "rm", "-q", "part/old.md")
    write(repo, {"config.ini": CONFIG + VERSIONS, "index.md": index("part/index"),
                 "part/index.md": part("intro", "new", "kept"), "part/intro.md": "# Intro\n\nMoved.\n",
                 "part/new.md": "# New\n\nOnly in the current edition.\n", "part/kept.md": kept("current")})
    git(repo, "rm", "-q", "intro.md")
    if "current" in execute:
        tabbook(repo, "build", "--no-render")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "current edition")
    return repo
