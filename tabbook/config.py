"""The book's configuration: ``config.ini`` read once into the frozen, typed objects of :mod:`tabbook.schema`.

d2lbook passed raw INI strings around and mutated them per tab; here every
value is parsed and validated in one place, and the rest of the builder only
ever sees a :class:`Config`.

A book written for d2lbook builds with its ``config.ini`` as it is: d2lbook's
keys are read with d2lbook's meaning (``[project] release``, ``[build]
eval_notebook``, ``exclusions`` and ``resources``, ``[pdf] bibfile``, the
``[library-<tab>]`` sections), and a tab without a ``[framework:<tab>]``
section gets the defaults of :data:`KNOWN_FRAMEWORKS`. What only tabbook needs
(the environments code runs in) goes into an **overlay**: ``tabbook.ini`` next
to ``config.ini``, or the file named by ``$TABBOOK_OVERLAY`` (``--overlay``),
read after ``config.ini`` so its keys win; its relative paths are relative to
the overlay's own folder, so an overlay kept outside the book works.

Every key is declared once, on the field it fills (:class:`Config`, :class:`Site`,
:class:`Framework`), with the vocabulary of :mod:`tabbook.settings`; :func:`load_config` reads
them all from that declaration, and :func:`key_reference` writes README's list of keys.
"""

from __future__ import annotations

import ast
import configparser
import difflib
import os
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from tabbook.errors import BookError
from tabbook.problems import Problem
from tabbook.schema import (
    KEY_CLASSES,
    KNOWN_FRAMEWORKS,
    ONE_LANGUAGE,
    OVERLAY_ENV,
    OVERLAY_NAME,
    Config,
    Framework,
    LibraryKeys,
    Site,
    environment_reference,
    key_reference,
)
from tabbook.sections import Colab, Deploy, Html, Pdf, Unused
from tabbook.settings import (
    MODULE_NAME,
    At,
    Setting,
    Unusable,
    Values,
    key_line,
    leaves_book,
    settings_of,
)

#: What callers import from here: the reader, and the schema's names they have always found here.
__all__ = [
    "KEY_CLASSES", "OVERLAY_ENV", "PYTHON_ENV", "Config", "Framework", "LibraryKeys", "chosen_interpreters",
    "config_error", "environment_reference", "key_reference", "library_keys", "load_config", "overlay_path",
    "settings_of",
]


def _mapping(value: str, split_commas: bool = True) -> tuple[tuple[str, str], ...]:
    """d2lbook's mapping syntax: entries split by newlines (and commas), each ``a -> b`` or ``a``."""
    terms = [t for line in value.splitlines() for t in (line.split(",") if split_commas else [line])]
    out = []
    for term in (t.strip() for t in terms):
        if not term:
            continue
        parts = term.split("->")
        a, b = (parts[0].strip(), parts[1].strip()) if len(parts) == 2 else (term, term)
        out.append((a, b))
    return tuple(out)


#: The keys of d2lbook's ``[library-TAB]`` sections.
LIBRARY_TAB_KEYS = ("lib_file", "lib_name", "simple_alias", "fluent_alias", "args_alias", "alias", "reverse_alias")


def library_keys(parser: configparser.ConfigParser, tab: str) -> LibraryKeys:
    """``[library]`` and ``[library-<tab>]`` of a d2lbook config.ini (empty when absent)."""
    section = f"library-{tab}"

    def get(sec: str, key: str) -> str:
        return parser.get(sec, key).strip() if parser.has_option(sec, key) else ""

    def names(key: str) -> tuple[tuple[str, str], ...]:
        # d2lbook drops a stray "(" (``exp(``) on either side of an entry.
        pairs = tuple((a.removesuffix("(").strip(), b.removesuffix("(").strip())
                      for a, b in _mapping(get(section, key)))
        for a, _ in pairs:
            if not a.isidentifier():
                raise BookError(f"[{section}] {key}: {a!r} is not a Python name", "config.ini")
        return pairs

    keys = LibraryKeys(
        lib_file=get(section, "lib_file"),
        lib_name=get(section, "lib_name"),
        version_file=get("library", "version_file"),
        simple_alias=names("simple_alias"),
        fluent_alias=names("fluent_alias"),
        args_alias=_mapping(get(section, "args_alias"), split_commas=False),
        alias=tuple(line.strip() for line in get(section, "alias").splitlines() if line.strip()),
        reverse_alias=_mapping(get(section, "reverse_alias"), split_commas=False),
        simple_as_written=_mapping(get(section, "simple_alias")),
        fluent_as_written=_mapping(get(section, "fluent_alias")),
    )
    if keys.lib_file and not keys.lib_file.endswith(".py"):
        raise BookError(f"[{section}] lib_file {keys.lib_file!r} is not a .py file", "config.ini")
    if keys.lib_name and not MODULE_NAME.match(keys.lib_name):
        raise BookError(f"[{section}] lib_name {keys.lib_name!r} is not a module name", "config.ini")
    try:
        ast.parse("\n".join(keys.alias_lines()))
    except SyntaxError as exc:
        raise BookError(f"[{section}] the aliases are not valid Python ({exc.msg}: "
                        f"{(exc.text or '').strip()})", "config.ini") from exc
    return keys


def config_error(config: Config, section: str, key: str, why: str, kind: Problem | None = None) -> BookError:
    """A problem with a key found after the configuration was read (what a file it names holds),
    at the key's line in the file that set it; also what a warning about a key is made of
    (``kind``: :mod:`tabbook.problems`)."""
    for path in (config.overlay, config.root / "config.ini"):
        if path is not None and path.is_file():
            line = key_line(path.read_text(encoding="utf-8"), section, key)
            if line is not None:
                return BookError(f"[{section}] {key} {why}", "config.ini" if path.parent == config.root
                                 and path.name == "config.ini" else str(path), line, kind=kind)
    return BookError(f"[{section}] {key} {why}", "config.ini", kind=kind)


def overlay_path(root: Path) -> Path | None:
    """The overlay to read: ``$TABBOOK_OVERLAY``, else ``tabbook.ini`` at the root, else none."""
    named = os.environ.get(OVERLAY_ENV)
    if named:
        path = Path(named).expanduser()
        return path if path.is_absolute() else (Path.cwd() / path)
    local = root / OVERLAY_NAME
    return local if local.is_file() else None


PYTHON_ENV = "TABBOOK_PYTHON"


def chosen_interpreters(tabs: tuple[str, ...], given: Sequence[str] = ()) -> dict[str, Path]:
    """``$TABBOOK_PYTHON`` then ``given`` (``--python`` items): ``pytorch=/opt/conda/bin/python,jax=...``;
    a later item for a tab wins."""
    chosen: dict[str, Path] = {}
    for item in [*os.environ.get(PYTHON_ENV, "").replace(";", ",").split(","), *given]:
        if not item.strip():
            continue
        tab, sep, path = item.partition("=")
        tab, path = tab.strip(), path.strip()
        if not sep or not path:
            raise BookError(f"--python / ${PYTHON_ENV}: {item.strip()!r} is not TAB=PATH")
        if tab not in tabs:
            raise BookError(f"--python / ${PYTHON_ENV}: unknown framework {tab!r} (tabs: {', '.join(tabs)})")
        interpreter = Path(os.path.expanduser(path))
        if not interpreter.exists():
            raise BookError(f"--python / ${PYTHON_ENV}: {tab}={path}: no such interpreter")
        chosen[tab] = interpreter.absolute()
    return chosen



def _ini_text(path: Path, shown: str) -> str:
    """A configuration file's text; bytes that are not UTF-8 are an error at their line and
    column (configparser would raise ``UnicodeDecodeError`` from inside itself)."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise BookError(f"cannot be read: {exc.strerror or exc}", shown) from None
    try:
        return data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise BookError(f"not UTF-8 text: byte 0x{data[exc.start]:02x} at column {column} (save the file "
                        "as UTF-8)", shown, line, column) from None


def _parse_ini(parser: configparser.ConfigParser, text: str, shown: str) -> None:
    """``text`` read into ``parser``; a syntax error is a :class:`BookError` at its line."""
    try:
        parser.read_string(text, source=shown)
    except configparser.Error as exc:
        errors = getattr(exc, "errors", None)
        line = getattr(exc, "lineno", None) or (errors[0][0] if errors else None)
        what = str(exc).replace(f"While reading from {shown!r} [line {line:2d}]: ", "") if line else str(exc)
        raise BookError(f"cannot parse: {' '.join(what.split())}", shown, line) from None


MAX_EXPANDED = 1_000_000  # characters a value may grow to through %(name)s references


class _TooLarge(Exception):
    """A value whose ``%(name)s`` references expand past :data:`MAX_EXPANDED` characters."""


_REFERENCE = re.compile(r"%(?:(%)|\(([^)]+)\)s)?")


class _BoundedInterpolation(configparser.BasicInterpolation):
    """configparser's interpolation with the expanded size measured first. Each level of
    ``%(name)s`` may repeat the one below, so nine short lines of ten references each expand to
    10⁹ characters: configparser builds them (minutes, gigabytes, no message). The size is a
    sum over the references, each name measured once, so measuring is linear in the file."""

    def before_get(self, parser: Any, section: str, option: str, value: str, defaults: Mapping[str, str]) -> str:
        memo: dict[str, int] = {}

        def size(text: str, depth: int) -> int:
            if depth > configparser.MAX_INTERPOLATION_DEPTH and "%" in text:
                return 0  # configparser's own depth error says it, below
            total = 0
            for match in _REFERENCE.finditer(text):
                if match.group(2) is None:
                    total += 1  # %% (or a lone %, configparser's syntax error below)
                    continue
                name = parser.optionxform(match.group(2))
                if name not in memo:
                    memo[name] = 0  # a loop: configparser's depth error says it
                    memo[name] = size(defaults.get(name, ""), depth + 1) if name in defaults else 0
                total += memo[name]
                if total > MAX_EXPANDED:
                    raise _TooLarge
            total += len(text) - sum(len(m.group(0)) for m in _REFERENCE.finditer(text))
            if total > MAX_EXPANDED:
                raise _TooLarge
            return total

        size(value, 1)
        return str(super().before_get(parser, section, option, value, defaults))


class _Parser(configparser.ConfigParser):
    """configparser as d2lbook reads ``config.ini``: with interpolation (``%%`` is ``%``). A value
    interpolation cannot read (a lone ``%``, on which d2lbook stops) is read as written, and
    noted in ``unreadable`` for a warning at its line. A value that would expand past
    :data:`MAX_EXPANDED` characters is an error at its line (``locate``: the key's place)."""

    def __init__(self, locate: Callable[[str, str, str], BookError]) -> None:
        super().__init__(interpolation=_BoundedInterpolation())
        self.unreadable: set[tuple[str, str]] = set()
        self.locate = locate

    def get(self, section: str, option: str, **kwargs: Any) -> str:  # type: ignore[override]  # fallbacks here are texts
        try:
            return super().get(section, option, **kwargs)
        except configparser.InterpolationError:
            self.unreadable.add((section, option))
            return super().get(section, option, **{**kwargs, "raw": True})
        except _TooLarge:
            raise self.locate(section, option, f"expands to more than {MAX_EXPANDED:,} characters through "
                              "its %(name)s references: write the value out, or use %% for a literal %") from None


class _Files:
    """config.ini and the overlay, as configparser reads them, with their texts for locating keys."""

    def __init__(self, root: Path, overlay: Path | None, overrides: dict[tuple[str, str], str] | None = None) -> None:
        self.root = root
        self.overrides = overrides or {}  # --set SECTION.KEY=VALUE
        self.used: set[tuple[str, str]] = set()
        self.path = root / "config.ini"
        self.problems: list[BookError] = []  # what was read past (tabbook.problems)
        if not self.path.is_file():
            raise BookError("no config.ini here; run from the book's root", str(self.path))
        self.parser = _Parser(self.error)
        self.text = _ini_text(self.path, "config.ini")
        _parse_ini(self.parser, self.text, "config.ini")
        self.overlay = overlay
        self.overlay_parser = configparser.ConfigParser(interpolation=None)
        self.overlay_text = ""
        if overlay is not None:
            if not overlay.is_file():
                raise BookError(f"the overlay {overlay} does not exist (${OVERLAY_ENV} / --overlay)")
            self.overlay_text = _ini_text(overlay, str(overlay))
            _parse_ini(self.overlay_parser, self.overlay_text, str(overlay))
            _parse_ini(self.parser, self.overlay_text, str(overlay))

    def source(self, section: str, key: str) -> tuple[str, str, Path]:
        """Which file a key's value came from: (name for messages, its text, its folder)."""
        if self.overlay is not None and self.overlay_parser.has_option(section, key):
            return str(self.overlay), self.overlay_text, self.overlay.parent
        return "config.ini", self.text, self.root

    def error(self, section: str, key: str, why: str) -> BookError:
        name, body, _ = self.source(section, key)
        return BookError(f"[{section}] {key} {why}", name, key_line(body, section, key))

    def given(self, section: str, decl: Setting) -> tuple[str, str] | None:
        """A value set outside the files, as (where, text): ``--set SECTION.KEY=VALUE``, else the
        key's environment variable (:attr:`Setting.env`); None: the files say."""
        if (section, decl.key) in self.overrides:
            self.used.add((section, decl.key))
            where = f"--set {section}.{decl.key}"
            if not decl.overlay:
                raise BookError(f"{where}: [{section}] {decl.key} describes the book, not how it is built "
                                "here: set it in config.ini")
            return where, self.overrides[(section, decl.key)]
        if decl.env and os.environ.get(decl.env):
            return f"${decl.env}", os.environ[decl.env]
        return None

    def read(self, cls: type, section: str = "", context: Values | None = None) -> Values:
        """The declared fields of ``cls``, read from ``section`` (for ``framework:*`` keys: the
        tab's own section), parsed and checked; each problem is an error at its key's line."""
        values: Values = dict(context or {})
        for name, decl in settings_of(cls):
            sec = section or decl.section
            if (given := self.given(sec, decl)) is not None:
                origin, text = given
                try:
                    values[name] = decl.parse(text, At(self.root, Path.cwd(), values))
                except ValueError as exc:
                    raise BookError(f"{origin}: [{sec}] {decl.key} {exc}") from None
                continue
            where = next(((s, k) for s, k in ((sec, decl.key), *decl.aliases) if self.parser.has_option(s, k)),
                         None)
            if where is None:
                if decl.default is None:
                    raise BookError(f"missing [{sec}] {decl.key}", "config.ini")
                raw = decl.default if isinstance(decl.default, str) else decl.default(values)
                folder = self.root
            else:
                if not decl.overlay and self.overlay is not None and self.overlay_parser.has_option(*where):
                    raise self.error(*where, "describes the book, not how it is built here: set it in "
                                     "config.ini, not in an overlay")
                raw, folder = self.parser.get(*where), self.source(*where)[2]
            try:
                values[name] = decl.parse(raw, At(self.root, folder, values))
            except Unusable as exc:
                if where is None:
                    raise
                values[name] = exc.fallback
                problem = self.error(*where, str(exc))
                self.problems.append(BookError(problem.message, problem.path, problem.line, kind=exc.kind))
            except OSError as exc:  # a path the system refuses (too long, unreadable)
                why = f"names a path that cannot be used: {exc.strerror or exc}"
                raise (self.error(*where, why) if where else BookError(f"[{sec}] {decl.key}: {why}", "config.ini")) from None
            except ValueError as exc:
                if where is None:  # a default that does not fit (another key decided it)
                    raise BookError(f"[{sec}] {decl.key}: its default {raw!r} {exc}", "config.ini") from None
                raise self.error(*where, str(exc)) from None
        return {k: v for k, v in values.items() if k not in (context or {})}

    def check_known_keys(self, section: str, cls: type) -> None:
        """A key of tabbook's own section that nothing reads is a typo: an error at its line."""
        if problems := self.unknown_keys({section: {decl.key for _, decl in settings_of(cls)}}):
            raise problems[0]

    def unknown_keys(self, known: dict[str, set[str]]) -> list[BookError]:
        """Each key of a section in ``known`` (section → its keys) that is none of them: a
        misspelt key (``cell_timout``) is otherwise ignored, and the book silently gets the
        default. At its line, saying which key was probably meant."""
        out = []
        for section, keys in known.items():
            for key in self.parser.options(section) if self.parser.has_section(section) else ():
                if key not in keys:
                    near = difflib.get_close_matches(key, keys, n=1, cutoff=0.6)
                    hint = f"did you mean {near[0]}?" if near else f"its keys: {', '.join(sorted(keys))}"
                    out.append(self.error(section, key, f"is not a key of [{section}] ({hint})"))
        return out

    def known_keys(self, tabs: tuple[str, ...]) -> dict[str, set[str]]:
        """The keys tabbook reads, per section of this book (its tabs' ``[framework:TAB]`` and
        ``[library-TAB]`` included): every key of d2lbook 1.0.3 and tabbook's own."""
        known: dict[str, set[str]] = {}
        for cls in KEY_CLASSES:
            for _, decl in settings_of(cls):
                for section, key in ((decl.section, decl.key), *decl.aliases):
                    for name in ([f"framework:{t}" for t in tabs] if section == "framework:*" else [section]):
                        known.setdefault(name, set()).add(key)
        for tab in tabs:
            known[f"library-{tab}"] = set(LIBRARY_TAB_KEYS)
        return known


def load_config(root: Path, overlay: Path | None = None, interpreters: Sequence[str] = (),
                overrides: Sequence[str] = ()) -> Config:
    """Read ``root/config.ini`` and the overlay; every problem is a :class:`BookError` naming the file
    (and the line, for a bad value). ``overlay``: the overlay to read, given explicitly (``--overlay``;
    a Dask worker gets the client's); None: :func:`overlay_path`'s choice. ``interpreters``:
    ``--python TAB=PATH`` items, after ``$TABBOOK_PYTHON``'s. ``overrides``: ``--set
    SECTION.KEY=VALUE`` items, which win over a key's environment variable and the files."""
    root = root.resolve()
    overlay = overlay or overlay_path(root)
    files = _Files(root, overlay.resolve() if overlay is not None else None, _overrides(overrides))
    book = files.read(Config)
    files.check_known_keys("site", Site)
    site = Site(**files.read(Site))
    html, pdf, colab, deploy, unused = (Html(**files.read(Html)), Pdf(**files.read(Pdf)), Colab(**files.read(Colab)),
                                        Deploy(**files.read(Deploy)), Unused(**files.read(Unused)))
    tabs: tuple[str, ...] = book["tabs"]
    chosen = chosen_interpreters(tabs, interpreters)
    frameworks: dict[str, Framework] = {}
    for tab in tabs:
        label, module, import_name = KNOWN_FRAMEWORKS.get(tab, (tab, tab, tab))
        lib_file = files.parser.get(f"library-{tab}", "lib_file", fallback="").strip()  # d2lbook's d2l/<module>.py
        if lib_file and Path(lib_file).suffix == ".py":
            module = Path(lib_file).stem
        one_language = tab == ONE_LANGUAGE and not files.parser.get("build", "tabs", fallback="").strip()
        context = {"known": (label, module, import_name), "chosen": chosen.get(tab),
                   "python_default": "current" if one_language else "3.11"}
        values = files.read(Framework, f"framework:{tab}", context)
        library = library_keys(files.parser, tab)
        for section, key, value in ((f"library-{tab}", "lib_file", library.lib_file),
                                    ("library", "version_file", library.version_file)):
            if why := leaves_book(root, value):
                raise files.error(section, key, why)
        frameworks[tab] = Framework(name=tab, library=library, **values)
    if unread := sorted(set(files.overrides) - files.used):
        raise BookError(f"--set {unread[0][0]}.{unread[0][1]}: tabbook reads no such key (README: Configuration keys)")
    for section, key in sorted(files.parser.unreadable):
        problem = files.error(section, key, "has a % that is not %% nor %(name)s: read as written "
                              "(d2lbook stops here)")
        files.problems.append(BookError(problem.message, problem.path, problem.line, kind=Problem.CONFIG_VALUE))
    files.problems += [BookError(e.message, e.path, e.line, kind=Problem.CONFIG_UNKNOWN_KEY)
                       for e in files.unknown_keys(files.known_keys(tabs)) if not e.message.startswith("[site]")]
    return Config(root=root, site=site, frameworks=frameworks, overlay=files.overlay, html=html, pdf=pdf,
                  colab=colab, deploy=deploy, unused=unused, problems=tuple(files.problems), **book)


def _overrides(items: Sequence[str]) -> dict[tuple[str, str], str]:
    """``--set SECTION.KEY=VALUE`` items (``framework:TAB.KEY`` for a tab's keys); a later one wins."""
    out: dict[tuple[str, str], str] = {}
    for item in items:
        name, sep, value = item.partition("=")
        section, dot, key = name.strip().rpartition(".")
        if not sep or not dot or not section or not key:
            raise BookError(f"--set {item!r} is not SECTION.KEY=VALUE (e.g. build.installer=pip)")
        out[(section, key)] = value
    return out


