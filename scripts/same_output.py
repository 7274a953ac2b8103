"""Do two revisions of tabbook build the same books? Exit 0 when they do, 1 (each differing file
printed) when they do not.

    .venv/bin/python scripts/same_output.py REV_A REV_B [--no-pdf] [--keep DIR]

Why: a refactor (issue 51: typed records, split modules) must not change what readers get, and
the test suite checks properties of the output, not every byte of it. For each revision this
makes a temporary ``git worktree``, and with the repository's own venv (the same installed
packages for both, so only tabbook's code differs) builds, never executing anything:

- this book from its committed store: ``tabbook build --frozen lib html`` with
  ``TABBOOK_VENVS`` pointing at an empty folder (as ``make frozen-site`` does), which writes
  ``d2l/`` and ``build/html`` (the site, its slide decks under ``_slides/``, its notebook zips
  under ``_downloads/notebooks/``); and, when ``latexmk`` and ``xelatex`` are installed and
  ``--no-pdf`` is not given, ``tabbook build --frozen pdf`` (``build/pdf``);
- a fixture book, ``tabbook new`` of that revision in a temporary folder, which has no store:
  ``tabbook build --no-execute lib html`` (code without outputs, as the tests build the starter).

``TABBOOK_WARM=0`` throughout, so no warm builder of either revision answers for the other.
Then the two output trees are compared file by file. What is normalised, and why; nothing else:

- a ``.zip`` (the notebook downloads) is compared by its members' names, order and bytes: the
  zip format stamps each member with the time it was written, a build time, not content;
- a ``.pdf`` is compared as ``pdftotext`` text: TeX embeds the run's date and a random document
  ID in every PDF;
- ``.buildinfo`` and ``.tabbook-stamp`` in ``build/html`` are skipped: Sphinx's hash of its
  configuration (which names the worktree's path) and tabbook's memo of what the last render
  read (the builder's own code fingerprint, file modification times): a build's bookkeeping for
  its next incremental run, differing between any two builds, never served to a reader;
- in text files (``.html``, ``.js``, ``.json``, ``.txt``, ``.md``, ``.ipynb``, ``.py``, ``.css``,
  ``.xml``), the temporary worktree's path is replaced by ``<ROOT>``: a build that names where
  it ran is the same build in another folder.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
#: Files whose bytes are text, where the build's folder is masked (see the docstring).
TEXT_SUFFIXES = frozenset({".html", ".js", ".json", ".txt", ".md", ".ipynb", ".py", ".css", ".xml", ".svg"})
#: Files a build writes that say where or when it ran, never what it built.
SKIPPED = frozenset(f"{book}/html/{name}" for book in ("book", "fixture") for name in (".buildinfo", ".tabbook-stamp"))
ROOT_MARK = "<ROOT>"


def normalised(path: Path, roots: tuple[str, ...] = ()) -> bytes:
    """What of ``path`` is compared: its bytes, except as the module docstring lists."""
    if path.suffix == ".zip":
        with zipfile.ZipFile(path) as zf:
            return "\n".join(f"{i.filename} {hashlib.sha256(zf.read(i)).hexdigest()}"
                             for i in zf.infolist()).encode()
    if path.suffix == ".pdf":
        return subprocess.run(["pdftotext", "-layout", str(path), "-"], check=True,
                              capture_output=True).stdout
    data = path.read_bytes()
    if path.suffix in TEXT_SUFFIXES:
        for root in roots:
            data = data.replace(root.encode(), ROOT_MARK.encode())
    return data


def _files(tree: Path) -> Iterator[str]:
    for path in sorted(tree.rglob("*")):
        if path.is_file():
            yield path.relative_to(tree).as_posix()


def differences(a: Path, b: Path, roots_a: tuple[str, ...] = (), roots_b: tuple[str, ...] = ()) -> list[str]:
    """Every file that differs between trees ``a`` and ``b`` after normalisation, one line each
    (``only in A: x``, ``only in B: x``, ``differs: x``), in path order."""
    left, right = set(_files(a)) - SKIPPED, set(_files(b)) - SKIPPED
    out = []
    for rel in sorted(left | right):
        if rel not in right:
            out.append(f"only in A: {rel}")
        elif rel not in left:
            out.append(f"only in B: {rel}")
        elif normalised(a / rel, roots_a) != normalised(b / rel, roots_b):
            out.append(f"differs: {rel}")
    return out


def _run(cmd: list[str], cwd: Path, env: dict[str, str], log: Path) -> None:
    """One build step; its output goes to ``log``, shown when it fails."""
    with log.open("a") as out:
        out.write(f"$ {' '.join(cmd)}  (in {cwd})\n")
        out.flush()
        done = subprocess.run(cmd, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT)
    if done.returncode:
        sys.exit(f"same_output: `{' '.join(cmd)}` failed in {cwd} (exit {done.returncode}); see {log}")


def build(rev: str, out: Path, pdf: bool, python: str) -> tuple[str, ...]:
    """Build both books at ``rev`` into ``out/book`` and ``out/fixture``; returns the folders the
    builds ran in (masked in text, see the docstring)."""
    work = Path(tempfile.mkdtemp(prefix="same-output-"))
    tree, fixture, venvs = work / "tree", work / "fixture", work / "venvs"
    venvs.mkdir()
    subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--quiet", "--detach", str(tree), rev], check=True)
    env = {**os.environ, "PYTHONPATH": str(tree), "TABBOOK_VENVS": str(venvs), "TABBOOK_WARM": "0"}
    log = out.parent / f"{out.name}.log"  # beside the tree, not in what is compared
    out.mkdir(parents=True, exist_ok=True)
    tb = [python, "-m", "tabbook"]
    try:
        _run([*tb, "build", "--frozen", "lib", "html"], tree, env, log)
        if pdf:
            _run([*tb, "build", "--frozen", "pdf"], tree, env, log)
        _run([*tb, "new", str(fixture)], work, env, log)
        _run([*tb, "build", "--no-execute", "lib", "html"], fixture, env, log)
        for book, src in (("book", tree), ("fixture", fixture)):
            shutil.copytree(src / "build" / "html", out / book / "html")
            if (src / "d2l").is_dir():
                shutil.copytree(src / "d2l", out / book / "d2l")
            for made in sorted((src / "build" / "pdf").rglob("*.pdf")) if pdf else []:  # not TeX's logs
                target = out / book / "pdf" / made.relative_to(src / "build" / "pdf")
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(made, target)
    finally:
        subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(tree)], check=False)
        shutil.rmtree(work, ignore_errors=True)
    return (str(tree), str(fixture), str(work))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("rev_a")
    parser.add_argument("rev_b")
    parser.add_argument("--no-pdf", action="store_true", help="leave the PDFs out even where TeX is installed")
    parser.add_argument("--keep", type=Path, help="build into this folder and keep it (default: a temporary one)")
    args = parser.parse_args(argv)
    pdf = not args.no_pdf and all(shutil.which(t) for t in ("latexmk", "xelatex", "pdftotext"))
    python = str(REPO / ".venv" / "bin" / "python")
    base = args.keep or Path(tempfile.mkdtemp(prefix="same-output-trees-"))
    print(f"same_output: {args.rev_a} vs {args.rev_b} (PDFs: {'yes' if pdf else 'no'}) in {base}")
    roots_a = build(args.rev_a, base / "A", pdf, python)
    roots_b = build(args.rev_b, base / "B", pdf, python)
    found = differences(base / "A", base / "B", tuple(sorted(roots_a, key=len, reverse=True)),
                        tuple(sorted(roots_b, key=len, reverse=True)))
    if not args.keep:
        shutil.rmtree(base, ignore_errors=True)
    return verdict(found)


def verdict(found: list[str]) -> int:
    """Print every difference and the count; the exit status: 1 on any difference."""
    for line in found:
        print(line)
    print(f"same_output: {len(found)} differing file(s)" if found else "same_output: the same output")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
