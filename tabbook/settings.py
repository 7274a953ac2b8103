"""How a configuration key is declared, and how its text becomes a value.

:mod:`tabbook.config` declares every key it reads once, as a ``setting(...)`` on the dataclass
field the key fills (as MyST-NB and sphinx-design declare their options): section, key, default,
parser (which is also the validator: it raises ``ValueError(why)``), help, and whether an overlay
may set it. This module holds that vocabulary and the parsers, so the declarations read as a
table and a new key of a known kind is one line. (The parsers of keys that name an address or
another book are in :mod:`tabbook.addresses`.)
"""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Callable, Iterable
from dataclasses import MISSING, dataclass, field, fields
from pathlib import Path
from typing import Any, TypeAlias

from tabbook.problems import Problem


@dataclass(frozen=True)
class At:
    """What a parser may need besides the text: where relative paths start (the folder of the
    file that set the key: an overlay's relative paths are relative to the overlay), the book's
    root, and the values already read for the same object (a default, or a check, may depend
    on them; ``known`` holds the defaults of a tab d2lbook books use)."""

    root: Path
    folder: Path
    values: Values


#: The values read so far for one object, by field name, each of its field's type: the keyword
#: arguments of the dataclass it will make (a ``Config``, a ``Framework``), filled key by key.
Values: TypeAlias = dict[str, Any]
#: Text of a key → its value; raises ValueError(why) for a value that is not allowed.
Parse = Callable[[str, At], object]
#: A default: the text used when the key is absent, or a function of the values read before it.
Default = str | Callable[[Values], str] | None


@dataclass(frozen=True)
class Setting:
    section: str  # "build"; "framework:*" stands for each tab's own section
    key: str
    default: Default  # None: the key is required
    parse: Parse
    help: str
    overlay: bool = True  # whether an overlay (tabbook.ini, --overlay) may set it
    # d2lbook's other names for the key, read when it is absent: (section, key).
    aliases: tuple[tuple[str, str], ...] = ()
    # The environment variable that sets it on this machine, over the files (``--set`` wins over it).
    env: str = ""


def setting(section: str, key: str, default: Default, parse: Parse, help: str, *, overlay: bool = True,
            aliases: tuple[tuple[str, str], ...] = (), env: str = "", field_default: object = MISSING) -> Any:
    """A dataclass field read from ``[section] key``. ``field_default``: the field's own
    default when the class is made by hand (tests make a :class:`Framework` that way)."""
    declared = {"setting": Setting(section, key, default, parse, help, overlay, aliases, env)}
    if field_default is MISSING:
        return field(metadata=declared)
    return field(default=field_default, metadata=declared)


@dataclass(frozen=True)
class Variable:
    """An environment variable tabbook reads that is not a key's environment form
    (:attr:`Setting.env` declares those, on the key)."""

    name: str
    kind: str  # "option": a command-line option's form; "switch": for tests and diagnostics;
    # "hand-off": set by tabbook for a process it starts, never by a user
    meaning: str


#: Every other ``TABBOOK_*`` variable, in one place (README: "Environment variables", written
#: from here with the keys' own; a test fails when a name in the repository is missing here).
ENVIRONMENT: tuple[Variable, ...] = (
    Variable("TABBOOK_OVERLAY", "option", "--overlay INI: the overlay read after config.ini"),
    Variable("TABBOOK_PYTHON", "option", "--python TAB=PATH,…: existing interpreters, over [framework:TAB] "
             "interpreter (a --python item wins over it)"),
    Variable("TABBOOK_CACHE", "switch", "moves the user-wide cache (framework venvs, KaTeX and reveal.js, "
             "d2lbook's venv) from $XDG_CACHE_HOME/tabbook; tests give each run its own"),
    Variable("TABBOOK_WARM", "switch", "0 or 1: the warm builder off or on (default: on at a terminal, "
             "off under CI); tests and benchmarks ask for it"),
    Variable("TABBOOK_NO_FSYNC", "switch", "any value: atomic writes skip fsync (a throw-away CI build; "
             "bench/fsync.py measures the cost)"),
    Variable("TABBOOK_GPU_LOCKS", "switch", "the machine-wide folder of GPU and run-alone locks (tests "
             "give each run its own; default: tabbook-gpu-locks in the temporary folder)"),
    Variable("TABBOOK_TEST_STRICT", "switch", "tests: a missing prerequisite (TeX, Chromium, …) fails "
             "instead of skipping (make test sets it; CI too)"),
    Variable("TABBOOK_CHROMIUM", "switch", "tests: the Chromium the browser tests drive (default "
             "/usr/bin/chromium)"),
    Variable("TABBOOK_TEST_KERNEL_LOG", "switch", "tests: the file where each kernel of "
             "tests/test_kernels_started.py records its start and the cells it ran"),
    Variable("TABBOOK_LOCK_ROUNDS", "switch", "tests: rounds of concurrent builds tests/test_book_lock.py runs"),
    Variable("TABBOOK_CRASH_ROUNDS", "switch", "tests: rounds of tests/test_crash_harness.py (kills at random points)"),
    Variable("TABBOOK_CRASH_SEED", "switch", "tests: the seed that repeats a crash-harness run"),
    Variable("TABBOOK_SNAPSHOT_UPDATE", "switch", "tests: 1 rewrites the snapshot files of tests/snapshots/ "
             "instead of comparing with them (after an intended change; review the diff)"),
    Variable("TABBOOK_BOOKS", "switch", "bench: the folder of real d2lbook books (d2l-en, d2l-zh, …) that "
             "bench/realbook.py builds; make bench runs it only when set"),
    Variable("TABBOOK_BOOKS_RUNS", "switch", "bench: runs per figure of bench/realbook.py under make bench (default 5)"),
    Variable("TABBOOK_FUZZ_EXAMPLES", "switch", "tests: examples per property of tests/test_fuzz_readers.py"),
    Variable("TABBOOK_RENDER_CONTEXT", "hand-off", "to a Sphinx run: the render context file its conf.py "
             "reads instead of config.ini (tabbook/render/context.py)"),
    Variable("TABBOOK_WARNINGS", "hand-off", "to a Sphinx run: where it records its warnings "
             "(tabbook/render/ext/diagnostics.py)"),
    Variable("TABBOOK_RENDER_PROGRESS", "hand-off", "to a Sphinx run: where it says what it reads and "
             "writes as it goes (tabbook/render/ext/progress.py)"),
    Variable("TABBOOK_SPHINX_GATE", "hand-off", "to a Sphinx started early: wait for the sources "
             "(tabbook/render/ext/gate.py)"),
    Variable("TABBOOK_LEARN_MODULES", "hand-off", "to an HTML run: where it records the modules it "
             "imported, for the warm processes (tabbook/render/ext/learn.py)"),
    Variable("TABBOOK_SPHINX_PARENT", "hand-off", "to a Sphinx run: the builder's pid, which it must not "
             "outlive (lifetime.end_with_parent)"),
    Variable("TABBOOK_WORKER_PARENT", "hand-off", "to a unit's worker: the builder's pid, which it must not "
             "outlive"),
    Variable("TABBOOK_UNIT", "hand-off", "to a unit's worker, kernel and what its cells start: a token that "
             "marks them, so that the builder can end them all (execute/reap.py)"),
    Variable("TABBOOK_D2L_DIR", "hand-off", "to tests/lib under make libtest: the d2l/ the installed "
             "wheel must match"),
)


def settings_of(cls: type) -> list[tuple[str, Setting]]:
    """(field name, its declaration) for each field of ``cls`` read from the configuration."""
    return [(f.name, f.metadata["setting"]) for f in fields(cls) if "setting" in f.metadata]


# -- parsers: text → value, or ValueError(why) -------------------------------------------------


class Unusable(ValueError):
    """A value a build goes on without, as d2lbook does (a file that does not exist): the key
    reads as ``fallback``, and the problem is reported at its line with its ``kind``."""

    def __init__(self, why: str, fallback: object, kind: Problem = Problem.CONFIG_MISSING_FILE) -> None:
        super().__init__(why)
        self.fallback = fallback
        self.kind = kind


MODULE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")
_TRUTH = {"1": True, "yes": True, "true": True, "on": True, "0": False, "no": False, "false": False, "off": False}


def text(value: str, at: At) -> str:
    return value.strip()


def words(value: str, at: At) -> tuple[str, ...]:
    """Whitespace-separated (d2lbook's lists of globs and paths)."""
    return tuple(value.split())


def commas(value: str, at: At) -> tuple[str, ...]:
    return tuple(v.strip() for v in value.split(",") if v.strip())


def lines(value: str, at: At) -> tuple[str, ...]:
    return tuple(line.strip() for line in value.splitlines() if line.strip())


def boolean(value: str, at: At) -> bool:
    """configparser's booleans (True/yes/on/1, False/no/off/0); anything else is an error."""
    truth = _TRUTH.get(value.strip().lower())
    if truth is None:
        raise ValueError(f"must be True or False, not {value.strip()!r}")
    return truth


def integer(unit: str) -> Callable[[str, At], int]:
    def parse(value: str, at: At) -> int:
        try:
            return int(value.strip())
        except ValueError:
            raise ValueError(f"must be an integer ({unit})") from None
    return parse


def gpu_needs(value: str, at: At) -> tuple[tuple[str, int], ...]:
    """Lines of ``PAGE_GLOB COUNT`` (COUNT an integer ≥ 0, or ``all``): the GPUs a page's units need."""
    out = []
    for line in value.splitlines():
        fields = line.split()
        if not fields:
            continue
        if len(fields) != 2 or not (fields[1] == "all" or fields[1].isdigit()):
            raise ValueError(f"{line.strip()!r}: each line must be a page pattern and a GPU count "
                             "(a number or all), e.g. chapter_x/multi.md 2")
        out.append((fields[0], -1 if fields[1] == "all" else int(fields[1])))
    return tuple(out)


def positive(unit: str) -> Callable[[str, At], int]:
    def parse(value: str, at: At) -> int:
        number = integer(unit)(value, at)
        if number < 1:
            raise ValueError(f"must be at least 1 ({unit})")
        return number
    return parse


def byte_size(value: str, at: At) -> int:
    """A size in bytes: a number with an optional K, M, G or T (powers of 1024: ``4G``, ``512M``);
    "" is none (0)."""
    text = value.strip().upper()
    if not text:
        return 0
    m = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([KMGT]?)(?:I?B)?", text)
    if not m:
        raise ValueError(f"must be a size such as 4G, 512M or a number of bytes, not {value.strip()!r}")
    number = int(float(m.group(1)) * 1024 ** " KMGT".index(m.group(2) or " "))
    if number < 1024**3:
        raise ValueError("must be at least 1G (an idle Python kernel's address space is close to that)")
    if number >= 2**62:  # RLIMIT_AS is a 64-bit count; past it, setting it overflows
        raise ValueError(f"{value.strip()!r} is more address space than a process can have (at most 4194303T); "
                         "leave the key empty for no cap")
    return number


def env_names(value: str, at: At) -> tuple[str, ...]:
    """Names of environment variables (letters, digits, underscores; not starting with a digit)."""
    import re

    names = tuple(value.split())
    for name in names:
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            raise ValueError(f"{name!r} is not the name of an environment variable")
    return names


def choice(*allowed: str, why: str) -> Parse:
    def parse(value: str, at: At) -> str:
        if value.strip() not in allowed:
            raise ValueError(why)
        return value.strip()
    return parse


def leads_outside(root: Path, path: Path) -> Path | None:
    """Where ``path`` really leads when that is outside ``root`` (every symbolic link on the way
    followed), or None when it stays inside (a path that does not exist yet: where it would be).

    Why: the builder reads pages, resources and entries to publish them, and writes the store,
    the library and the sources under the book; a link inside the book that leads out (a page
    linked from elsewhere, ``static/etc -> /etc``, ``_freeze/x -> /tmp/x``) would publish or
    overwrite files that are not the book's. The one rule: what counts is where a path leads.

    The book's ``.git`` folder counts as outside: it is the repository's, not the book's, and on
    a CI machine its ``config`` can hold the checkout's credentials (a ``{download}`` of
    ``.git/config`` would publish them)."""
    real, base = Path(os.path.realpath(path)), Path(os.path.realpath(root))
    if real.is_relative_to(base / ".git"):
        return real
    return None if real == base or real.is_relative_to(base) else real


def links_leading_out(root: Path, tops: Iterable[Path]) -> list[tuple[Path, Path]]:
    """Every symbolic link under the files and folders ``tops`` (followed where it stays inside
    ``root``) that leads outside ``root``: (the link, where it leads). Walked without following
    a link out, so ``static/etc -> /etc`` costs one ``stat``, not a walk of ``/etc``."""
    found: list[tuple[Path, Path]] = []
    seen: set[str] = set()
    todo = [Path(t) for t in tops]
    while todo:
        path = todo.pop()
        if path.is_symlink() and (real := leads_outside(root, path)) is not None:
            found.append((path, real))
            continue
        if not path.is_dir() or (key := os.path.realpath(path)) in seen:
            continue
        seen.add(key)
        try:
            todo.extend(sorted(path.iterdir(), reverse=True))
        except OSError:
            continue
    return sorted(found)


def leaves_book(root: Path, value: str) -> str | None:
    """Why ``value`` (a path relative to the book's root ``root``) is not inside the book, or None.

    Why every configured path is checked: the builder writes under some of them (the store,
    the library) and publishes others (resources, root files, the bibliography) on the site;
    ``../elsewhere`` or ``/etc`` would write or publish outside the book. Symbolic links are
    followed: what counts is where the path really leads."""
    if not value.strip():
        return None
    try:
        (root / value.strip()).resolve().relative_to(root.resolve())
    except ValueError:
        return f"names {value.strip()}, which is outside the book's folder (book paths are relative to " \
               "the book's root and stay inside it)"
    return None


def in_book(value: str, at: At) -> Path:
    """A path relative to the book's root, inside the book."""
    if why := leaves_book(at.root, value):
        raise ValueError(why)
    return at.root / value.strip()


def book_folder(value: str, at: At) -> Path:
    """A folder the builder writes (the store, the library): inside the book, and neither the
    book's root (``clean`` would empty the book) nor inside ``build/`` (``clean`` removes it)."""
    path = in_book(value, at)
    rel = path.resolve().relative_to(at.root.resolve())
    if not rel.parts:
        raise ValueError(f"names {value.strip() or '(nothing)'}, the book's root itself: name a folder inside it")
    if rel.parts[0] == "build":
        raise ValueError(f"names {value.strip()}, inside build/, which tabbook clean removes")
    return path


def page_title(page: Path) -> str:
    """The first heading of a Markdown page (d2lbook's default title: its first line, less the
    ``#``), at any level, a setext one (``Title`` over ``====``) included, outside code; the
    page's name without one."""
    try:
        lines = page.read_text(encoding="utf-8").splitlines()
    except OSError:
        return page.stem
    fenced = False
    for i, line in enumerate(lines):
        fenced ^= line.lstrip().startswith(("```", "~~~"))
        if fenced or not line.strip():
            continue
        atx = re.match(r"^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$", line)
        if atx:
            return atx.group(1).strip()
        if i + 1 < len(lines) and re.match(r"^ {0,3}(=+|-+)\s*$", lines[i + 1]) and not line.startswith((" " * 4, "\t")):
            return line.strip()
    return page.stem


def book_paths(value: str, at: At) -> tuple[Path, ...]:
    return tuple(in_book(v, at) for v in value.split())


def book_files(value: str, at: At) -> tuple[str, ...]:
    """Whitespace-separated root-relative paths, each inside the book."""
    names = words(value, at)
    for name in names:
        in_book(name, at)
    return names


def existing_file(value: str, at: At) -> Path | None:
    """A file relative to the file that names it (config.ini or the overlay); "" is none."""
    if not value.strip():
        return None
    target = (at.folder / value.strip()).resolve()
    if not target.is_file():
        raise ValueError(f"names {value.strip()}, which does not exist")
    return target


def any_folder(value: str, at: At) -> Path | None:
    """A folder anywhere (made when needed): absolute, ``~``, or relative to where it was set; "" is none."""
    if not value.strip():
        return None
    return (at.folder / os.path.expanduser(value.strip())).absolute()


def interpreter(value: str, at: At) -> Path | None:
    """An interpreter: absolute, ``~``, or relative to the file that names it; "" is none. One
    chosen on the command line (``--python``, in ``at.values["chosen"]``) wins unchecked: the
    key may name a path of another machine."""
    if isinstance(chosen := at.values.get("chosen"), Path):
        return chosen
    if not value.strip():
        return None
    target = Path(os.path.expanduser(value.strip()))
    target = target if target.is_absolute() else at.folder / target
    if not target.exists():
        raise ValueError(f"names {value.strip()}, which does not exist")
    return target


def module_name(value: str, at: At) -> str:
    if not MODULE_NAME.match(value.strip()):
        raise ValueError(f"{value.strip()!r} is not a module name")
    return value.strip()


def library_module(value: str, at: At) -> str:
    if not value.strip().isidentifier():
        raise ValueError(f"{value.strip()!r} is not a Python module name (d2l/<module>.py)")
    return value.strip()


def top_level_modules(value: str, at: At) -> tuple[str, ...]:
    names = commas(value, at)
    for name in names:
        if not name.isidentifier():
            raise ValueError(f"{name!r} is not a top-level module name")
    if not names:
        raise ValueError("is empty (leave it out to mean the import key)")
    return names


def gpu_probe(value: str, at: At) -> str:
    source = "\n".join(lines(value, at))
    if source and (why := check_gpu_probe(source)):
        raise ValueError(why)
    return source


def import_stack(value: str, at: At) -> str:
    if why := check_import_stack(value.strip()):
        raise ValueError(why)
    return value.strip()


#: A tab's name: it names folders and files (kernels, store entries, PDFs, zips), CSS classes and tags.
TAB_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_-]{0,63}")
#: A name that becomes a file name as it is (``[project] name``: the PDFs', the zips'): letters
#: and digits of any script, and ``_ . + -`` and spaces inside; no ``/``, no leading dot.
FILE_NAME = re.compile(r"\w(?:[\w .+-]{0,98}[\w.+-])?")


def tab_list(one_language: str) -> Parse:
    """``[build] tabs``: empty is d2lbook's default, a book of one language (its one tab). A
    tab's name names folders and files (kernels, store entries, PDFs), so it is checked."""
    def parse(value: str, at: At) -> tuple[str, ...]:
        tabs = commas(value, at) or (one_language,)
        for tab in tabs:
            if not TAB_NAME.fullmatch(tab):
                raise ValueError(f"names the tab {tab!r}: a tab's name is letters, digits, _ and - (at most 64; "
                                 "it names the tab's kernel, store entries and PDF)")
        return tabs
    return parse


#: A version: what PEP 440 and wheel names allow, roughly (it is written into Python and file names).
VERSION = re.compile(r"[A-Za-z0-9][A-Za-z0-9.+!_-]{0,63}")


def version_text(value: str, at: At) -> str:
    """``[project] version``: written into the library's version file as a Python string and into
    the wheel's file name, so a quote or a slash would be code or a path; "" is none."""
    version = value.strip()
    if version and not VERSION.fullmatch(version):
        raise ValueError(f"{version!r} is not a version: letters, digits and . + ! _ - (e.g. 1.0.3); it is "
                         "written into the library's version file and the wheel's name")
    return version


def file_name(value: str, at: At) -> str:
    """A name the builder turns into file names as it is (``NAME-pytorch.pdf``): letters,
    digits and ``_ . + -``, not starting with a dot; a ``/`` or ``..`` would put them elsewhere."""
    name = value.strip()
    if not FILE_NAME.fullmatch(name):
        raise ValueError(f"{name!r} is not a name for files: letters, digits, spaces and _ . + - (at most "
                         "100, starting with a letter or digit); it names the book's PDFs and zips")
    return name


def one_of_the_tabs(value: str, at: At) -> str:
    tabs = at.values["tabs"]
    if value.strip() not in tabs:
        raise ValueError(f"{value.strip()!r} is not one of the tabs ({', '.join(tabs)})")
    return value.strip()


def resource_list(value: str, at: At) -> tuple[str, ...]:
    names = tuple(r.rstrip("/") for r in value.split() if r.strip("/"))
    for name in names:
        in_book(name, at)
    return names


def bibliography(value: str, at: At) -> Path | None:
    """d2lbook's bibfile: used when it exists (a book may name one it does not have yet)."""
    path = in_book(value, at)
    return path if path.is_file() else None


def key_line(text: str, section: str, key: str) -> int | None:
    """The line of ``key`` in ``[section]`` of config.ini's text (configparser keeps none)."""
    inside = False
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if stripped.startswith("[") and stripped.endswith("]"):
            inside = stripped[1:-1].strip() == section
        elif inside and not line[:1].isspace() and re.match(
                rf"^{re.escape(key)}\s*[=:]", stripped, re.IGNORECASE):
            return number
    return None


def _parsed(source: str) -> ast.Module | str:
    """The statements of a Python-valued key, or why they are not valid Python."""
    try:
        return ast.parse(source, mode="exec")
    except SyntaxError as exc:
        return f"is not valid Python ({exc.msg})"


def check_gpu_probe(source: str) -> str | None:
    """Why ``source`` is not a usable ``gpu_probe`` (None: it is)."""
    tree = _parsed(source)
    if isinstance(tree, str):
        return tree
    if not tree.body or not isinstance(tree.body[-1], ast.Expr):
        return "must end with an expression giving the list of GPU names"
    return None


def check_import_stack(source: str) -> str | None:
    """Why ``source`` is not a usable ``import_stack`` (None: it is)."""
    tree = _parsed(source)
    if isinstance(tree, str):
        return tree
    if not tree.body or not all(isinstance(n, (ast.Import, ast.ImportFrom)) for n in tree.body):
        return "must be import statements only, e.g. import jax, flax.linen, optax"
    return None


# -- d2lbook's [html], [pdf], [colab] and [build] keys -----------------------------------------


def book_file(value: str, at: At) -> Path | None:
    """A file of the book, relative to its root (d2lbook's paths are), inside it; "" is none. One
    that does not exist is none too, with a warning: d2lbook goes on without it."""
    if not value.strip():
        return None
    target = in_book(value, at)
    if not target.is_file():
        raise Unusable(f"names {value.strip()}, which does not exist: left unset", None)
    return target


def python_statements(value: str, at: At) -> str:
    """Python statements (``[build] sphinx_configs``), checked to parse; d2lbook pastes them into conf.py."""
    source = "\n".join(line.strip() for line in value.splitlines())
    if isinstance(tree := _parsed(source), str):
        raise ValueError(tree)
    return source


def book_patterns(value: str, at: At) -> tuple[str, ...]:
    """Root-relative globs of files the builder reads to publish (``[build] non-notebooks``):
    none may lead out of the book, by ``..``, an absolute path or a symbolic link."""
    patterns = tuple(value.split())
    for pattern in patterns:
        if pattern.startswith("/") or ".." in pattern.split("/"):
            raise ValueError(f"names {pattern}, which is outside the book's folder (patterns are relative "
                             "to the book's root and stay inside it)")
        for path in at.root.glob(pattern):
            if path.is_relative_to(at.root / ".git"):
                continue  # a glob's match in the repository's metadata: left out (Config.non_notebook_files)
            if (real := leads_outside(at.root, path)) is not None:
                raise ValueError(f"matches {path.relative_to(at.root).as_posix()}, a symbolic link that leads "
                                 f"outside the book's folder (to {real})")
    return patterns


def book_globs(value: str, at: At) -> tuple[str, ...]:
    """Root-relative globs (``**`` crosses folders; a folder means every file in it), each of
    which must name a file of the book: a pattern naming nothing is a typo."""
    patterns = book_patterns(value, at)
    for pattern in patterns:
        in_book(pattern, at)
    found = tuple(p for p in patterns if (at.root / p).is_dir() or any(f.is_file() for f in at.root.glob(p)))
    if found != patterns:  # d2lbook's glob finds nothing there, and goes on
        missing = " ".join(p for p in patterns if p not in found)
        raise Unusable(f"names no file of the book: {missing} (left out)", found)
    return patterns
