"""Incremental = clean, checked at random: a differential harness (issue 49, class C and item 5).

Why: an incremental build reuses what earlier builds left in ``build/`` (Sphinx's pickled
environment, tabbook's memos, the recorded warnings, the pages of ``build/src``); whatever it
forgets to invalidate shows only after some *sequence* of edits (a label duplicated, then
restored). A handful of hand-written sequences cannot cover the ways edits combine, so this
module draws them: a small model of a book (:class:`Model`, 3–5 pages) is edited at random
(:data:`EDITS`: pages added, removed and renamed, labels and duplicates, references, citations
and bib entries, toc entries, code cells and ``#@save`` blocks, images, config keys), the book is
written from the model and built after every edit, and what that incremental build produced is
compared with a clean build of the same sources (a fresh folder: the book's files and its
``_freeze/``, nothing of ``build/``).

What is compared (:func:`snapshot`): the exit status; the problems the build reported (its
``warning:``/``error:`` lines, as a sorted set, since their order is the order pages were read);
every file under ``build/html`` (bytes; HTML and other text normalised, below) except Sphinx's
own stamp files; the generated package ``d2l/*.py``.

What is normalised, and why (:func:`normalise`): nothing but what differs between two clean
builds of the same sources — found by building one state twice (:func:`self_check`):

- the book's folder, which differs between the two builds by construction, is replaced by
  ``BOOK`` wherever it appears (no page should name it; the replacement keeps a page that does
  from making every comparison differ);
- ``.buildinfo`` (Sphinx's hash of its configuration, which includes the source folder) is
  left out.

Clean builds are cached by a hash of the sources (:func:`source_hash`), so a state reached
again (an edit undone) costs no second clean build. Builds run in this process
(:func:`tabbook.cli.main`), with the warm builder off; Sphinx runs in its own process as in
every build, a fork of this one unless ``--new-interpreter`` (:class:`Runs`). ``--jobs N`` runs
sequences in N worker processes. Tabs run in the builder's Python, as in ``tabbook new``.

Replay: ``python tests/incremental_fuzz.py --seed N`` (``make fuzz-incremental SEED=N``) runs
sequence ``N`` again and prints its edits; ``--seeds K`` runs seeds ``0..K-1``
(``make fuzz-incremental SEEDS=K``). A difference prints the seed, the edits so far and the
first differing file and lines.
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import hashlib
import io
import json
import os
import random
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

os.environ["TABBOOK_WARM"] = "0"
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

#: The labels pages may define and refer to: few, so that duplicates and references to labels
#: that moved or vanished are frequent.
LABELS = ("sec_one", "sec_two", "sec_three", "fig_dot", "eq_sum")
#: The citation keys pages may cite; the bib file holds a subset of them.
BIB_KEYS = ("Lovelace.1843", "Turing.1936", "Hopper.1952")
#: The images the book may hold under ``img/`` (pages may name one that is missing).
IMAGES = ("dot.svg", "box.svg")
#: Page names: a few, so that a removed page's name comes back.
NAMES = ("alpha", "beta", "gamma", "delta", "epsilon")
TITLES = ("Fuzz book", "Another title")
ROLES = ("numref", "ref", "eqref")

CONFIG = """\
[project]
name = fuzzbook
title = {title}
author = {author}

[build]
notebooks = *.md
tabs = plain, stdlib

[framework:plain]
label = Plain Python
python = current
import = IPython

[framework:stdlib]
label = statistics
python = current
import = statistics
"""

SVG = {
    "dot.svg": '<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><circle cx="5" cy="5" r="4"/></svg>\n',
    "box.svg": '<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><rect width="8" height="8"/></svg>\n',
}


@dataclass
class Page:
    """One page of the model: what it defines and refers to, in the order it is written."""

    title: str
    heading_label: str | None = None
    #: (kind, label or None, extra): a block of the page: ("section", label, title),
    #: ("figure", label, image), ("equation", label, ""), ("ref", label, role),
    #: ("cite", key, ""), ("code", None, cell text).
    blocks: list[tuple[str, str | None, str]] = field(default_factory=list)


@dataclass
class Model:
    """The book as data: written out whole by :func:`write_book` after every edit."""

    pages: dict[str, Page] = field(default_factory=dict)
    toc: list[str] = field(default_factory=list)
    numbered: bool = True
    title: str = TITLES[0]
    author: str = "A. Writer"
    bib: list[str] = field(default_factory=list)
    images: list[str] = field(default_factory=list)
    counter: int = 0  # makes each new code cell's output its own
    bib_titles: dict[str, str] = field(default_factory=dict)  # a bib entry's title, where not the default


def page_text(name: str, page: Page) -> str:
    lines = [f"# {page.title}"]
    if page.heading_label:
        lines.append(f":label:`{page.heading_label}`")
    lines.append("")
    lines.append(f"Prose of {name}.")
    lines.append("")
    for kind, label, extra in page.blocks:
        if kind == "section":
            lines += [f"## {extra}"] + ([f":label:`{label}`"] if label else []) + [""]
        elif kind == "figure":
            lines += [f"![A figure of {name}.](img/{extra})"] + ([f":label:`{label}`"] if label else []) + [""]
        elif kind == "equation":
            lines += ["$$a + b = c$$"] + ([f":eqlabel:`{label}`"] if label else []) + [""]
        elif kind == "ref":
            lines += [f"See :{extra}:`{label}`.", ""]
        elif kind == "cite":
            lines += [f"As in :cite:`{label}`.", ""]
        elif kind == "code":
            lines += ["```{.python .input}", extra, "```", ""]
    return "\n".join(lines)


def bib_text(keys: list[str], titles: dict[str, str] | None = None) -> str:
    out = []
    for key in keys:
        author, year = key.split(".")
        title = (titles or {}).get(key, f"Notes of {author}")
        out.append(f"@book{{{key},\n  title = {{{title}}},\n  author = {{{author}, Ada}},\n"
                   f"  year = {{{year}}},\n  publisher = {{Press}}\n}}\n")
    return "\n".join(out)


def index_text(model: Model) -> str:
    options = ":maxdepth: 2\n" + (":numbered:\n" if model.numbered else "")
    entries = "\n".join(model.toc)
    return f"# {model.title}\n\nThe front page.\n\n```toc\n{options}\n{entries}\n```\n"


def book_files(model: Model) -> dict[str, str]:
    """Every file of the book (relative path → text), as the model says."""
    files = {"config.ini": CONFIG.format(title=model.title, author=model.author),
             "index.md": index_text(model)}
    for name, page in model.pages.items():
        files[f"{name}.md"] = page_text(name, page)
    if model.bib:
        files["references.bib"] = bib_text(model.bib, model.bib_titles)
    for image in model.images:
        files[f"img/{image}"] = SVG[image]
    return files


def write_book(root: Path, model: Model) -> None:
    """Make ``root``'s book files what the model says: write what differs, delete what is no
    longer there (``build/``, ``_freeze/`` and ``d2l/`` are the builder's)."""
    wanted = book_files(model)
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if rel.split("/")[0] in ("build", "_freeze", "d2l") or not path.is_file():
            continue
        if rel not in wanted:
            path.unlink()
    for rel, text in wanted.items():
        target = root / rel
        if target.is_file() and target.read_text() == text:
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)


# -- edits ----------------------------------------------------------------------------------

Edit = Callable[[Model, random.Random], str | None]  # returns its description, None: not applicable


def _pick_page(model: Model, rng: random.Random) -> str | None:
    return rng.choice(sorted(model.pages)) if model.pages else None


def add_page(model: Model, rng: random.Random) -> str | None:
    free = [n for n in NAMES if n not in model.pages]
    if not free or len(model.pages) >= 4:
        return None
    name = rng.choice(free)
    model.pages[name] = Page(title=name.capitalize())
    in_toc = rng.random() < 0.85
    if in_toc:
        model.toc.insert(rng.randint(0, len(model.toc)), name)
    return f"add page {name}" + ("" if in_toc else " (not in the toc)")


def remove_page(model: Model, rng: random.Random) -> str | None:
    if len(model.pages) <= 1:
        return None
    name = _pick_page(model, rng)
    assert name
    del model.pages[name]
    keep_entry = rng.random() < 0.2
    if not keep_entry:
        model.toc = [e for e in model.toc if e != name]
    return f"remove page {name}" + (" (its toc entry stays)" if keep_entry else "")


def rename_page(model: Model, rng: random.Random) -> str | None:
    free = [n for n in NAMES if n not in model.pages]
    name = _pick_page(model, rng)
    if not free or name is None:
        return None
    new = rng.choice(free)
    model.pages = {(new if k == name else k): v for k, v in model.pages.items()}
    model.toc = [new if e == name else e for e in model.toc]
    return f"rename page {name} to {new}"


def set_heading_label(model: Model, rng: random.Random) -> str | None:
    name = _pick_page(model, rng)
    if name is None:
        return None
    label = rng.choice([None, *LABELS[:3]])
    model.pages[name].heading_label = label
    return f"heading label of {name} = {label}"


def add_labelled_block(model: Model, rng: random.Random) -> str | None:
    name = _pick_page(model, rng)
    if name is None:
        return None
    kind = rng.choice(("section", "figure", "equation"))
    label: str | None = rng.choice([*LABELS, None])
    if kind == "section":
        extra = rng.choice(("Part", "Details"))
    elif kind == "figure":
        extra = rng.choice(IMAGES)
    else:
        extra = ""
    if kind == "equation" and label and not label.startswith("eq"):
        label = "eq_sum"
    blocks = model.pages[name].blocks
    blocks.insert(rng.randint(0, len(blocks)), (kind, label, extra))
    return f"add {kind} labelled {label} to {name}"


def add_reference(model: Model, rng: random.Random) -> str | None:
    name = _pick_page(model, rng)
    if name is None:
        return None
    label = rng.choice(LABELS)
    role = "eqref" if label.startswith("eq") else rng.choice(("numref", "ref"))
    blocks = model.pages[name].blocks
    blocks.insert(rng.randint(0, len(blocks)), ("ref", label, role))
    return f"add :{role}:`{label}` to {name}"


def add_citation(model: Model, rng: random.Random) -> str | None:
    name = _pick_page(model, rng)
    if name is None:
        return None
    key = rng.choice(BIB_KEYS)
    blocks = model.pages[name].blocks
    blocks.insert(rng.randint(0, len(blocks)), ("cite", key, ""))
    return f"add :cite:`{key}` to {name}"


def remove_block(model: Model, rng: random.Random) -> str | None:
    candidates = [(n, i) for n, p in model.pages.items() for i in range(len(p.blocks))]
    if not candidates:
        return None
    name, i = rng.choice(sorted(candidates))
    kind, label, _ = model.pages[name].blocks.pop(i)
    return f"remove {kind} {label} from {name}"


def toggle_bib_entry(model: Model, rng: random.Random) -> str | None:
    key = rng.choice(BIB_KEYS)
    if key in model.bib:
        model.bib.remove(key)
        return f"remove bib entry {key}"
    model.bib.append(key)
    return f"add bib entry {key}"


def edit_toc(model: Model, rng: random.Random) -> str | None:
    choice = rng.random()
    if choice < 0.4 and len(model.toc) > 1:
        rng.shuffle(model.toc)
        return f"reorder the toc: {model.toc}"
    missing = [n for n in model.pages if n not in model.toc]
    if choice < 0.7 and missing:
        name = rng.choice(sorted(missing))
        model.toc.insert(rng.randint(0, len(model.toc)), name)
        return f"add {name} to the toc"
    if model.toc:
        name = rng.choice(model.toc)
        model.toc.remove(name)
        return f"remove {name} from the toc"
    return None


def toggle_numbered(model: Model, rng: random.Random) -> str | None:
    model.numbered = not model.numbered
    return f"toc :numbered: = {model.numbered}"


def code_cell(model: Model, rng: random.Random, name: str) -> str:
    model.counter += 1
    n = model.counter
    shape = rng.choice(("all", "tab", "save", "save_tab"))
    if shape == "all":
        return f"%%tab all\nprint({n} * 2)"
    if shape == "tab":
        tab = rng.choice(("plain", "stdlib"))
        return f"%%tab {tab}\nprint('{tab} {n}')"
    func = f"{name}_f{rng.randint(1, 2)}"
    if shape == "save":
        return f"%%tab all\n#@save\ndef {func}(x):\n    return x + {n}\n\nprint({func}(1))"
    return (f"%%tab stdlib\nimport statistics  #@save\n\n#@save\ndef {func}(values):\n"
            f"    return statistics.fmean(values) + {n}\n\nprint({func}([1, 2]))")


def add_code(model: Model, rng: random.Random) -> str | None:
    name = _pick_page(model, rng)
    if name is None:
        return None
    cell = code_cell(model, rng, name)
    blocks = model.pages[name].blocks
    blocks.insert(rng.randint(0, len(blocks)), ("code", None, cell))
    return f"add code cell to {name}: {cell.splitlines()[0]} …{cell.splitlines()[-1]}"


def change_code(model: Model, rng: random.Random) -> str | None:
    cells = [(n, i) for n, p in model.pages.items() for i, b in enumerate(p.blocks) if b[0] == "code"]
    if not cells:
        return None
    name, i = rng.choice(sorted(cells))
    cell = code_cell(model, rng, name)
    model.pages[name].blocks[i] = ("code", None, cell)
    return f"change code cell {i} of {name}: {cell.splitlines()[0]} …{cell.splitlines()[-1]}"


def toggle_image(model: Model, rng: random.Random) -> str | None:
    image = rng.choice(IMAGES)
    if image in model.images:
        model.images.remove(image)
        return f"delete img/{image}"
    model.images.append(image)
    return f"add img/{image}"


def edit_config(model: Model, rng: random.Random) -> str | None:
    if rng.random() < 0.5:
        model.title = TITLES[1] if model.title == TITLES[0] else TITLES[0]
        return f"config title = {model.title}"
    model.author = rng.choice(("A. Writer", "B. Author", ""))
    return f"config author = {model.author!r}"


def edit_prose(model: Model, rng: random.Random) -> str | None:
    name = _pick_page(model, rng)
    if name is None:
        return None
    model.pages[name].title = rng.choice((name.capitalize(), f"{name.capitalize()} again", "Same title"))
    return f"title of {name} = {model.pages[name].title}"


#: Each edit with its weight (how often it is drawn).
EDITS: list[tuple[Edit, int]] = [
    (add_page, 3), (remove_page, 2), (rename_page, 2), (set_heading_label, 4), (add_labelled_block, 4),
    (add_reference, 4), (add_citation, 2), (remove_block, 4), (toggle_bib_entry, 2), (edit_toc, 3),
    (toggle_numbered, 1), (add_code, 2), (change_code, 2), (toggle_image, 2), (edit_config, 1),
    (edit_prose, 2),
]


def start_model(rng: random.Random) -> Model:
    """The book each sequence starts from: three pages in the toc, a label, a reference, a
    citation, a figure and a code cell."""
    model = Model(bib=[BIB_KEYS[0]], images=[IMAGES[0]])
    model.pages["alpha"] = Page("Alpha", "sec_one", [("code", None, "%%tab all\nprint(1)")])
    model.pages["beta"] = Page("Beta", None, [("ref", "sec_one", "numref"), ("cite", BIB_KEYS[0], "")])
    model.pages["gamma"] = Page("Gamma", "sec_two", [("figure", "fig_dot", IMAGES[0])])
    model.toc = ["alpha", "beta", "gamma"]
    return model


def draw_edits(rng: random.Random, model: Model) -> str:
    """Apply one random applicable edit; returns what it did."""
    functions = [f for f, _ in EDITS]
    weights = [w for _, w in EDITS]
    while True:
        edit = rng.choices(functions, weights)[0]
        said = edit(model, rng)
        if said is not None:
            return said


# -- building and comparing -----------------------------------------------------------------

@dataclass
class Snapshot:
    """What a build produced, normalised: its exit status, its problems, its files."""

    status: int
    problems: list[str]
    files: dict[str, str]  # path → normalised text (or a hash of bytes)


_PROBLEM = re.compile(r"^(warning|error)?:?\s*\S+\.(md|bib|ini)(:\d+)?: .*|^(warning|error): .*")


def normalise(text: str, root: Path) -> str:
    """The text with the book's folder spelled ``BOOK`` (the only difference between two clean
    builds of one state in two folders, :func:`self_check`)."""
    return text.replace(str(root.resolve()), "BOOK").replace(str(root), "BOOK")


#: Files of build/html not compared: Sphinx's hash of its configuration and the source folder.
SKIPPED = {".buildinfo", ".tabbook-stamp"}


def snapshot(root: Path, status: int, output: str) -> Snapshot:
    files: dict[str, str] = {}
    html = root / "build" / "html"
    for base, prefix in ((html, "html/"), (root / "d2l", "d2l/")):
        if not base.is_dir():
            continue
        for path in sorted(base.rglob("*")):
            if not path.is_file() or path.name in SKIPPED:
                continue
            rel = prefix + path.relative_to(base).as_posix()
            data = path.read_bytes()
            try:
                files[rel] = normalise(data.decode("utf-8"), root)
            except UnicodeDecodeError:
                files[rel] = "sha256:" + hashlib.sha256(data).hexdigest()
    problems = sorted({normalise(line.strip(), root) for line in output.splitlines()
                       if line.startswith(("warning:", "error:")) or re.match(r"^\S+\.(md|bib|ini):\d+: ", line)})
    return Snapshot(status, problems, files)


class Runs:
    """How :func:`build` starts Sphinx: in a fork (``fork``, the warm builder's way; the command
    line's default) or in a new interpreter per run (``tabbook build`` outside a terminal; the
    default when this module is imported).

    Why both: a run in a new interpreter spends most of a small book's build importing Sphinx,
    myst-nb and the extensions (about 1.5 of 1.8 s here), so 2,000 sequences of nine builds and
    their clean builds take a day on two cores. A fork of a process that has imported them
    (:data:`tabbook.warm.launch.fork_sphinx`, after :func:`tabbook.warm.preload.preload`) is what
    a build at a terminal gets from the warm builder; each Sphinx run is a fresh fork of a parent
    that never ran Sphinx itself, so no run's module state reaches the next, and both sides of
    every comparison start Sphinx the same way. The command line forks unless told
    ``--new-interpreter``; the named cases (``tests/test_incremental_fuzz.py``) import this module
    and keep the new interpreter, the way CI's builds start Sphinx, so both ways stay tested.
    """

    fork = False
    preloaded = False


def _preload(root: Path) -> None:
    """Import, once, what the book's Sphinx runs import (the warm builder's preload)."""
    if Runs.preloaded:
        return
    from tabbook.config import load_config
    from tabbook.warm.preload import preload

    preload(load_config(root))
    Runs.preloaded = True


def build(root: Path) -> Snapshot:
    """One ``tabbook build html`` of ``root`` in this process; its snapshot."""
    from tabbook.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        try:
            if Runs.fork:
                from tabbook.warm.launch import fork_sphinx

                _preload(root)
                status = main(["-C", str(root), "build", "html"], sphinx=fork_sphinx)
            else:
                status = main(["-C", str(root), "build", "html"])
        except SystemExit as e:  # argparse's errors
            status = int(e.code or 0)
    return snapshot(root, status, out.getvalue())


def source_hash(root: Path) -> str:
    """A hash of the book's sources: every file but ``build/`` and ``d2l/`` (``_freeze/`` is a
    source: committed, read by the build)."""
    h = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if rel.split("/")[0] in ("build", "d2l") or not path.is_file():
            continue
        h.update(rel.encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def clean_copy(root: Path, target: Path) -> None:
    """The book's sources (with its ``_freeze/``) into an empty ``target``."""
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(root, target, ignore=lambda folder, names: [n for n in names if Path(folder) == root
                                                                and n in ("build", "d2l")])


class Cleans:
    """Clean builds, cached by :func:`source_hash` (in memory and, when given, on disk)."""

    def __init__(self, work: Path, cache: Path | None = None) -> None:
        self.work = work
        self.cache = cache
        self.memory: dict[str, Snapshot] = {}
        self.built = 0

    def of(self, root: Path) -> Snapshot:
        key = source_hash(root)
        if key in self.memory:
            return self.memory[key]
        stored = self.cache / f"{key}.json" if self.cache else None
        if stored is not None and stored.is_file():
            data = json.loads(stored.read_text())
            snap = Snapshot(data["status"], data["problems"], data["files"])
        else:
            target = self.work / "clean" / root.name
            clean_copy(root, target)
            snap = build(target)
            self.built += 1
            if stored is not None:
                stored.parent.mkdir(parents=True, exist_ok=True)
                stored.write_text(json.dumps(vars(snap)))
        self.memory[key] = snap
        return snap


def difference(incremental: Snapshot, clean: Snapshot) -> str | None:
    """The first difference, as text (None: the same)."""
    if incremental.status != clean.status:
        return f"exit status: incremental {incremental.status}, clean {clean.status}"
    if incremental.problems != clean.problems:
        diff = difflib.unified_diff(clean.problems, incremental.problems, "clean", "incremental", lineterm="")
        return "problems reported differ:\n" + "\n".join(diff)
    names = sorted(set(incremental.files) | set(clean.files))
    for name in names:
        a, b = clean.files.get(name), incremental.files.get(name)
        if a == b:
            continue
        if a is None or b is None:
            return f"{name}: only in the {'incremental' if a is None else 'clean'} build"
        diff = list(difflib.unified_diff(a.splitlines(), b.splitlines(), f"clean/{name}", f"incremental/{name}",
                                         lineterm="", n=1))
        at = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
        where = (f"first different character at {at}:\n  clean:       …{a[max(at - 80, 0):at + 80]!r}\n"
                 f"  incremental: …{b[max(at - 80, 0):at + 80]!r}")
        return f"{name} differs:\n" + "\n".join(line[:300] for line in diff[:40]) + "\n" + where
    return None


@dataclass
class Outcome:
    seed: int
    edits: list[str]
    failure: str | None
    builds: int
    seconds: float


def run_sequence(seed: int, length: int, work: Path, cleans: Cleans,
                 log: Callable[[str], None] = lambda s: None) -> Outcome:
    """Sequence ``seed``: the start book, then ``length`` random edits, built after each and
    compared with the clean build of the same sources."""
    rng = random.Random(seed)
    model = start_model(rng)
    root = work / f"seq{seed}" / "book"
    if root.parent.exists():
        shutil.rmtree(root.parent)
    root.mkdir(parents=True)
    t0 = time.monotonic()
    edits: list[str] = ["start"]
    builds = 0
    try:
        for step in range(length + 1):
            if step:
                edits.append(draw_edits(rng, model))
            write_book(root, model)
            incremental = build(root)
            builds += 1
            clean = cleans.of(root)
            found = difference(incremental, clean)
            log(f"  seed {seed} step {step}: {edits[-1]}" + (" — DIFFERS" if found else ""))
            if found:
                return Outcome(seed, edits, found, builds, time.monotonic() - t0)
        return Outcome(seed, edits, None, builds, time.monotonic() - t0)
    finally:
        if root.parent.exists():
            shutil.rmtree(root.parent, ignore_errors=True)


def replay(work: Path, model: Model, steps: list[Callable[[Model], object]]) -> str | None:
    """A written sequence (a regression case): build ``model``, then after each step; the first
    difference from the clean build of the same sources, or None."""
    root = work / "book"
    root.mkdir(parents=True)
    cleans = Cleans(work)
    for i, step in enumerate([lambda m: None, *steps]):
        step(model)
        write_book(root, model)
        incremental = build(root)
        found = difference(incremental, cleans.of(root))
        if found:
            return f"after step {i}: {found}"
    return None


def report(outcome: Outcome) -> str:
    lines = [f"incremental build differs from the clean build: seed {outcome.seed}",
             f"replay: make fuzz-incremental SEED={outcome.seed}  (python tests/incremental_fuzz.py --seed "
             f"{outcome.seed})", "edits:"]
    lines += [f"  {i}. {e}" for i, e in enumerate(outcome.edits)]
    lines += ["first difference (after the last edit):", outcome.failure or ""]
    return "\n".join(lines)


def self_check(work: Path) -> str | None:
    """Two clean builds of the start book in two folders: what normalisation must cover."""
    model = start_model(random.Random(0))
    snaps = []
    for name in ("one", "two"):
        root = work / "self" / name / "book"
        root.mkdir(parents=True)
        write_book(root, model)
        snaps.append(build(root))
    return difference(snaps[1], snaps[0])


@contextlib.contextmanager
def workspace(keep: Path | None = None) -> Iterator[Path]:
    if keep is not None:
        keep.mkdir(parents=True, exist_ok=True)
        yield keep
        return
    with tempfile.TemporaryDirectory(prefix="tabbook-fuzz-") as tmp:
        yield Path(tmp)


@dataclass
class Worker:
    """A worker process's own folder and clean-build cache (two workers never build in one folder)."""

    work: Path
    length: int
    cleans: Cleans


#: This process's :class:`Worker`, when it is one (set by :func:`_start_worker`).
_worker: Worker | None = None


def _start_worker(work: Path, length: int, fork: bool) -> None:
    global _worker
    Runs.fork = fork
    folder = work / f"worker{os.getpid()}"
    folder.mkdir(parents=True, exist_ok=True)
    _worker = Worker(folder, length, Cleans(folder))


def _run_in_worker(seed: int) -> tuple[Outcome, int]:
    assert _worker is not None, "not a worker process"
    before = _worker.cleans.built
    outcome = run_sequence(seed, _worker.length, _worker.work, _worker.cleans)
    return outcome, _worker.cleans.built - before


def sequences(seeds: list[int], length: int, work: Path, jobs: int,
              log: Callable[[str], None]) -> Iterator[tuple[Outcome, int]]:
    """Each seed's outcome and the clean builds it needed, in ``jobs`` processes side by side.

    Why processes: sequences are independent, and on a machine with more cores the 2,000 of
    issue 49 take hours rather than a day. Each worker keeps its own folder and clean-build cache
    (two workers never build in one folder); with ``--fork`` the parent imports Sphinx first, so
    every worker (a fork of it) starts with it loaded."""
    if jobs == 1:
        cleans = Cleans(work)
        for seed in seeds:
            before = cleans.built
            yield run_sequence(seed, length, work, cleans, log=log), cleans.built - before
        return
    import multiprocessing

    if Runs.fork:  # the workers inherit the imports
        root = work / "preload" / "book"
        root.mkdir(parents=True, exist_ok=True)
        write_book(root, start_model(random.Random(0)))
        _preload(root)
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(jobs, initializer=_start_worker, initargs=(work, length, Runs.fork)) as pool:
        yield from pool.imap_unordered(_run_in_worker, seeds)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--seed", type=int, help="run this one sequence (replay)")
    p.add_argument("--seeds", type=int, default=2000, help="run seeds FIRST..FIRST+N-1")
    p.add_argument("--first", type=int, default=0)
    p.add_argument("--length", type=int, default=8, help="edits per sequence")
    p.add_argument("--work", type=Path, help="keep the books here (default: a temporary folder)")
    p.add_argument("--self-check", action="store_true", help="build one state twice and compare")
    p.add_argument("--new-interpreter", action="store_true",
                   help="start each Sphinx run in a new interpreter, not a fork of this one (Runs)")
    p.add_argument("--jobs", type=int, default=1, help="sequences run side by side, one process each")
    args = p.parse_args(argv)
    Runs.fork = not args.new_interpreter
    seeds = [args.seed] if args.seed is not None else list(range(args.first, args.first + args.seeds))
    with workspace(args.work) as work:
        if args.self_check:
            found = self_check(work)
            print(found or "two clean builds agree")
            return 1 if found else 0
        failed = 0
        built = 0
        t0 = time.monotonic()
        log = print if args.seed is not None else (lambda s: None)
        for outcome, clean_builds in sequences(seeds, args.length, work, max(1, args.jobs), log):
            built += clean_builds
            if outcome.failure:
                failed += 1
                print(report(outcome), flush=True)
            else:
                print(f"seed {outcome.seed}: {outcome.builds} builds clean-equal in {outcome.seconds:.1f}s",
                      flush=True)
        took = time.monotonic() - t0
        print(f"{len(seeds)} sequences, {failed} differing, {built} clean builds, {took:.0f}s "
              f"({took / max(len(seeds), 1):.1f}s a sequence)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
