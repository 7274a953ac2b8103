"""Two small sibling books in two languages, each its own git repository with chosen commit
dates (tests/test_languages.py): English, the original, and a French translation whose table of
contents runs in another order, where one page has another file name (and the same label) and
one English page is missing."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

CONFIG = """[project]
name = {name}
title = {title}
author = Tests
lang = {lang}

[build]
index = index.md

[site]
languages = {languages}
"""

EN = {
    "index.md": "# A small book\n\n```toc\n:maxdepth: 2\n\nintro\nbasics/tensors\nbasics/autograd\nextra\n```\n",
    "intro.md": "# Introduction\n:label:`sec_intro`\n\nWhy this book.\n",
    "basics/tensors.md": "# Tensors\n:label:`sec_tensors`\n\nArrays of numbers.\n",
    "basics/autograd.md": "# Automatic differentiation\n:label:`sec_autograd`\n\nGradients, computed.\n",
    "extra.md": "# Extra\n:label:`sec_extra`\n\nOnly in English.\n",
}
FR = {
    "index.md": "# Un petit livre\n\n```toc\n:maxdepth: 2\n\nbasics/gradients\nbasics/tensors\nintro\n```\n",
    "intro.md": "# Introduction\n:label:`sec_intro`\n\nPourquoi ce livre.\n",
    "basics/tensors.md": "# Tenseurs\n:label:`sec_tensors`\n\nDes tableaux de nombres.\n",
    "basics/gradients.md": "# Différentiation automatique\n:label:`sec_autograd`\n\nDes gradients, calculés.\n",
}


def commit(root: Path, files: dict[str, str], day: str) -> None:
    """Write ``files`` and commit them, dated ``day`` (author and committer)."""
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    env = {**os.environ, "GIT_AUTHOR_DATE": f"{day}T12:00:00Z", "GIT_COMMITTER_DATE": f"{day}T12:00:00Z",
           "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.org", "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    git = ["git", "-C", str(root)]
    if not (root / ".git").exists():
        subprocess.run([*git, "init", "-q", "-b", "main"], check=True, env=env)
    subprocess.run([*git, "add", "-A"], check=True, env=env)
    subprocess.run([*git, "commit", "-q", "-m", f"edit of {day}"], check=True, env=env)


def make_books(tmp: Path, git: bool = True) -> tuple[Path, Path]:
    """``tmp/en`` and ``tmp/fr``: English committed on 2024-01-10, French on 2024-02-01, then
    English's tensors page changed on 2024-03-05 (so its French page is older). ``git=False``:
    the same files, no repositories."""
    en, fr = tmp / "en", tmp / "fr"
    en.mkdir(parents=True)
    fr.mkdir(parents=True)
    en_files = {**EN, "config.ini": CONFIG.format(name="small", title="A small book", lang="en",
                                                  languages="en .\n    fr ../fr")}
    fr_files = {**FR, "config.ini": CONFIG.format(name="petit", title="Un petit livre", lang="fr",
                                                  languages="en ../en\n    fr .")}
    if not git:
        en_files["basics/tensors.md"] += "\nA second paragraph.\n"
        for root, files in ((en, en_files), (fr, fr_files)):
            for rel, text in files.items():
                (root / rel).parent.mkdir(parents=True, exist_ok=True)
                (root / rel).write_text(text, encoding="utf-8")
        return en, fr
    commit(en, en_files, "2024-01-10")
    commit(fr, fr_files, "2024-02-01")
    commit(en, {"basics/tensors.md": EN["basics/tensors.md"] + "\nA second paragraph.\n"}, "2024-03-05")
    return en, fr
