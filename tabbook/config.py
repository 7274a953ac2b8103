"""The book's configuration: ``config.ini`` read once into frozen, typed objects.

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
"""

from __future__ import annotations

import ast
import configparser
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from tabbook.errors import BookError

#: The overlay file read after config.ini, when present at the book root.
OVERLAY_NAME = "tabbook.ini"
#: Environment variable naming another overlay (what ``--overlay`` sets, so Sphinx sees it too).
OVERLAY_ENV = "TABBOOK_OVERLAY"

#: Defaults for the tab names books written for d2lbook use, when a tab has no
#: ``[framework:<tab>]`` section: (label, library module, import name).
KNOWN_FRAMEWORKS: dict[str, tuple[str, str, str]] = {
    "pytorch": ("PyTorch", "torch", "torch"),
    "mxnet": ("MXNet", "mxnet", "mxnet"),
    "jax": ("JAX", "jax", "jax"),
    "tensorflow": ("TensorFlow", "tensorflow", "tensorflow"),
    "numpy": ("NumPy", "numpy", "numpy"),
}


def _glob(pattern: str) -> re.Pattern[str]:
    """A d2lbook file pattern as a regex: ``*`` and ``?`` never cross a ``/`` (glob's meaning)."""
    return re.compile("".join("[^/]*" if c == "*" else "[^/]" if c == "?" else re.escape(c) for c in pattern))


@dataclass(frozen=True)
class LibraryKeys:
    """d2lbook's library keys of one tab: ``[library]`` and ``[library-<tab>]`` of config.ini.

    Our own book has none (every field empty). A d2lbook book names there the file of
    the tab's module, the module holding its tensor functions (``lib_name``) and the
    aliases appended to the generated module: ``simple_alias`` (``a = lib_name.b``),
    ``fluent_alias`` (``a = lambda x, *args, **kwargs: x.b(*args, **kwargs)``),
    ``args_alias`` (``def a(...): return b``) and ``alias`` (statements, kept as given).
    Each tab's code is rewritten with them as d2lbook rewrites it
    (:func:`tabbook.source.split.rewrite_aliases`): ``reverse_alias`` (text -> replacement,
    one a line), ``d2l.a`` -> ``lib_name.b``, ``d2l.a(x, …)`` -> ``x.b(…)`` and ``args_alias``.
    """

    lib_file: str = ""  # "d2l/torch.py", relative to the book root
    lib_name: str = ""  # "torch": simple aliases are ``a = torch.b``
    version_file: str = ""  # [library] version_file: "d2l/__init__.py"
    simple_alias: tuple[tuple[str, str], ...] = ()
    fluent_alias: tuple[tuple[str, str], ...] = ()
    args_alias: tuple[tuple[str, str], ...] = ()
    alias: tuple[str, ...] = ()  # statements, one a line
    reverse_alias: tuple[tuple[str, str], ...] = ()
    # simple_alias and fluent_alias as written, a stray "(" kept: the code of a tab is rewritten
    # with these (tabbook.source.split.rewrite_aliases), where ``exp(`` spares ``d2l.expand_dims``.
    simple_as_written: tuple[tuple[str, str], ...] = ()
    fluent_as_written: tuple[tuple[str, str], ...] = ()

    @property
    def module(self) -> str:
        """The module ``lib_file`` names (``d2l/torch.py`` -> ``"torch"``); "" when none."""
        return Path(self.lib_file).stem if self.lib_file else ""

    def alias_lines(self) -> list[str]:
        """The statements d2lbook appends to the module, in its order: alias, simple, fluent, args."""
        out = list(self.alias)
        if self.lib_name:
            out += [f"{a} = {self.lib_name}.{b}" for a, b in self.simple_alias]
            out += [f"{a} = lambda x, *args, **kwargs: x.{b}(*args, **kwargs)" for a, b in self.fluent_alias]
            for a, b in self.args_alias:
                out += [f"def {a}:", f"    return {b}"]
        return out


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
    if keys.lib_name and not _MODULE.match(keys.lib_name):
        raise BookError(f"[{section}] lib_name {keys.lib_name!r} is not a module name", "config.ini")
    try:
        ast.parse("\n".join(keys.alias_lines()))
    except SyntaxError as exc:
        raise BookError(f"[{section}] the aliases are not valid Python ({exc.msg}: "
                        f"{(exc.text or '').strip()})", "config.ini") from exc
    return keys


@dataclass(frozen=True)
class Framework:
    """One code tab and the environment its code runs in."""

    name: str  # tab name used in the Markdown, e.g. "pytorch"
    label: str  # shown on the tab, e.g. "PyTorch"
    module: str  # generated library module: d2l/<module>.py
    import_name: str  # the package whose version is recorded, e.g. "torch"
    requirements: Path | None  # pinned requirements (None: use the builder's own Python)
    constraints: Path | None
    python: str  # "3.11", or "current" for the builder's interpreter (tests)
    # Python run in the kernel after the section's cells, with ``import <import_name>``
    # done: statements separated by ";" or newlines, the last an expression giving the
    # GPU names the provenance records. "" = no probe, outputs are recorded as CPU only.
    gpu_probe: str = ""
    # Top-level modules whose import means "this framework was imported" (the
    # wheel's "import d2l imports no framework" check, the import-cost benchmark).
    heavy_modules: tuple[str, ...] = ()
    # What importing the framework means for the import-cost baseline.
    import_stack: str = ""
    # d2lbook's [library-<tab>] keys (a d2lbook book's aliases and lib_file); empty for ours.
    library: LibraryKeys = LibraryKeys()
    # An existing interpreter to run this tab's code with (a conda env, a CUDA image's Python):
    # nothing is installed into it (``[framework:X] interpreter``, ``--python X=PATH`` or
    # ``$TABBOOK_PYTHON``); None: the locked venv.
    interpreter: Path | None = None

    @property
    def kernel_name(self) -> str:
        return f"tabbook-{self.name}"

    @property
    def has_env(self) -> bool:
        """Whether code of this tab can run: a lock file to install, an interpreter, or the builder's Python."""
        return self.requirements is not None or self.python == "current" or self.interpreter is not None


@dataclass(frozen=True)
class Config:
    root: Path
    name: str
    title: str
    author: str
    version: str
    repository: str
    index: Path
    tabs: tuple[str, ...]
    default_tab: str
    cell_timeout: int
    freeze_dir: Path
    library_dir: Path
    frameworks: dict[str, Framework] = field(default_factory=dict)
    # Regexes of stderr lines that are framework start-up noise, not output
    # (e.g. TensorFlow's C++ logging that ignores TF_CPP_MIN_LOG_LEVEL).
    stderr_filters: tuple[str, ...] = ()
    # d2lbook's ``[build] eval_notebook``: False renders every tab's code without outputs.
    execute: bool = True
    # d2lbook's ``[build] warning_is_error``: warnings (a bib entry's data, a page outside every
    # toc, …) fail the build, as ``build --strict`` does.
    warning_is_error: bool = False
    # The bibliography (d2lbook's ``[pdf] bibfile``); None when the book has none.
    bibfile: Path | None = None
    # d2lbook's ``[build] exclusions``: root-relative globs of Markdown that is not a book page.
    exclusions: tuple[str, ...] = ()
    # d2lbook's ``[build] notebooks``: root-relative globs of the book's pages (``*`` stays within
    # one folder, as in d2lbook, so ``*.md */*.md`` means two levels); empty: every Markdown file.
    notebooks: tuple[str, ...] = ()
    # d2lbook's ``[build] resources``: root-relative files and folders pages refer to
    # (images, data), made visible to Sphinx beside the pages.
    resources: tuple[str, ...] = ("img", "static")
    # Book files placed at the root of Sphinx's sources (book-relative): what a book's own CI
    # copies there before building (d2l-en's index.md includes frontpage.html that way).
    root_files: tuple[str, ...] = ()
    # ``[build] offline_requirements``: requirement files of what the book's code needs besides
    # the frameworks, for a machine that cannot download (``tabbook wheelhouse``).
    offline_requirements: tuple[Path, ...] = ()
    overlay: Path | None = None  # the overlay file that was read, if any
    # What ``#@save`` alone on a line saves: "block" (d2lbook: the statement after it, with the
    # unindented lines that directly follow) or "cell" (every statement of the cell).
    save: str = "block"

    @property
    def build_dir(self) -> Path:
        return self.root / "build"

    def framework(self, name: str) -> Framework:
        return self.frameworks[name]

    def excluded(self, rel: str) -> bool:
        """Whether a root-relative Markdown path is not a page: outside ``notebooks``, or excluded."""
        if self.notebooks and not any(_glob(pattern).fullmatch(rel) for pattern in self.notebooks):
            return True
        return any(_glob(pattern).fullmatch(rel) for pattern in self.exclusions)

    def may_hold_pages(self, rel_dir: tuple[str, ...]) -> bool:
        """Whether a folder (root-relative parts) can hold a page that ``notebooks`` names.

        A pattern's ``*`` never crosses a ``/``, so each pattern has a fixed depth: a folder
        lies on the way to a page only if it matches a pattern's leading parts. This is what lets
        the walk for pages skip a book's ``.venv`` or ``node_modules`` without reading them.
        """
        if not self.notebooks:
            return True
        for pattern in self.notebooks:
            parts = pattern.split("/")
            if len(parts) > len(rel_dir) and all(_glob(p).fullmatch(d) for p, d in zip(parts, rel_dir, strict=False)):
                return True
        return False


    @property
    def heavy_modules(self) -> frozenset[str]:
        """Every framework's top-level modules: what ``import d2l`` alone must not load."""
        return frozenset(m for fw in self.frameworks.values() for m in fw.heavy_modules)

    def rel(self, path: Path) -> str:
        """A path as users see it in messages: relative to the book root."""
        try:
            return str(path.resolve().relative_to(self.root.resolve()))
        except ValueError:
            return str(path)


def _split_list(value: str) -> tuple[str, ...]:
    return tuple(v.strip() for v in value.split(",") if v.strip())


def _truth(value: str) -> bool | None:
    """configparser's booleans (True/yes/on/1 …), None when the value is none of them."""
    return {"1": True, "yes": True, "true": True, "on": True,
            "0": False, "no": False, "false": False, "off": False}.get(value.strip().lower())


def overlay_path(root: Path) -> Path | None:
    """The overlay to read: ``$TABBOOK_OVERLAY``, else ``tabbook.ini`` at the root, else none."""
    named = os.environ.get(OVERLAY_ENV)
    if named:
        path = Path(named).expanduser()
        return path if path.is_absolute() else (Path.cwd() / path)
    local = root / OVERLAY_NAME
    return local if local.is_file() else None


_MODULE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")


def _key_line(text: str, section: str, key: str) -> int | None:
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


PYTHON_ENV = "TABBOOK_PYTHON"


def chosen_interpreters(tabs: tuple[str, ...]) -> dict[str, Path]:
    """``$TABBOOK_PYTHON`` (``--python`` sets it): ``pytorch=/opt/conda/bin/python,jax=...``."""
    chosen: dict[str, Path] = {}
    for item in os.environ.get(PYTHON_ENV, "").replace(";", ",").split(","):
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


def load_config(root: Path) -> Config:
    """Read ``root/config.ini`` and the overlay; every problem is a :class:`BookError` naming the file."""
    root = root.resolve()
    path = root / "config.ini"
    if not path.is_file():
        raise BookError("no config.ini here; run from the book's root", str(path))
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read(path, encoding="utf-8")
    except configparser.Error as exc:
        raise BookError(f"cannot parse: {exc}", "config.ini") from exc
    text = path.read_text(encoding="utf-8")
    overlay = overlay_path(root)
    overlay_parser = configparser.ConfigParser(interpolation=None)
    overlay_text = ""
    if overlay is not None:
        overlay = overlay.resolve()
        if not overlay.is_file():
            raise BookError(f"the overlay {overlay} does not exist (${OVERLAY_ENV} / --overlay)")
        try:
            overlay_parser.read(overlay, encoding="utf-8")
            parser.read(overlay, encoding="utf-8")
        except configparser.Error as exc:
            raise BookError(f"cannot parse: {exc}", str(overlay)) from exc
        overlay_text = overlay.read_text(encoding="utf-8")

    def source(section: str, key: str) -> tuple[str, str, Path]:
        """Which file a key's value came from: (name for messages, its text, its folder)."""
        if overlay is not None and overlay_parser.has_option(section, key):
            return str(overlay), overlay_text, overlay.parent
        return "config.ini", text, root

    def bad(section: str, key: str, why: str) -> BookError:
        name, body, _ = source(section, key)
        return BookError(f"[{section}] {key} {why}", name, _key_line(body, section, key))

    def get(section: str, key: str, default: str | None = None) -> str:
        if parser.has_option(section, key):
            return parser.get(section, key).strip()
        if default is None:
            raise BookError(f"missing [{section}] {key}", "config.ini")
        return default

    def file_key(section: str, key: str) -> Path | None:
        value = get(section, key, "")
        if not value:
            return None
        target = (source(section, key)[2] / value).resolve()
        if not target.is_file():
            raise bad(section, key, f"names {value}, which does not exist")
        return target

    tabs = _split_list(get("build", "tabs"))
    if not tabs:
        raise BookError("[build] tabs is empty", "config.ini")
    default_tab = get("build", "default_tab", tabs[0])
    if default_tab not in tabs:
        raise BookError(f"default_tab {default_tab!r} is not one of tabs {list(tabs)}", "config.ini")
    frameworks: dict[str, Framework] = {}
    chosen = chosen_interpreters(tabs)
    for tab in tabs:
        section = f"framework:{tab}"
        known_label, known_module, known_import = KNOWN_FRAMEWORKS.get(tab, (tab, tab, tab))
        lib_file = get(f"library-{tab}", "lib_file", "")  # d2lbook's d2l/<module>.py
        if lib_file and Path(lib_file).suffix == ".py":
            known_module = Path(lib_file).stem
        python = get(section, "python", "3.11")
        req = file_key(section, "requirements")
        con = file_key(section, "constraints")
        import_name = get(section, "import", known_import)
        if not _MODULE.match(import_name):
            raise bad(section, "import", f"{import_name!r} is not a module name")
        module = get(section, "module", known_module)
        if not module.isidentifier():
            raise bad(section, "module", f"{module!r} is not a Python module name (d2l/<module>.py)")
        gpu_probe = "\n".join(line.strip() for line in get(section, "gpu_probe", "").splitlines()
                              if line.strip())
        if gpu_probe and (why := check_gpu_probe(gpu_probe)):
            raise bad(section, "gpu_probe", why)
        heavy = _split_list(get(section, "heavy_modules", import_name.split(".")[0]))
        for name in heavy:
            if not name.isidentifier():
                raise bad(section, "heavy_modules", f"{name!r} is not a top-level module name")
        if not heavy:
            raise bad(section, "heavy_modules", "is empty (leave it out to mean the import key)")
        stack = get(section, "import_stack", f"import {import_name}")
        if why := check_import_stack(stack):
            raise bad(section, "import_stack", why)
        interpreter = None
        if tab in chosen:
            interpreter = chosen[tab]
        elif value := get(section, "interpreter", ""):
            interpreter = Path(os.path.expanduser(value))
            if not interpreter.is_absolute():
                interpreter = source(section, "interpreter")[2] / interpreter
            if not interpreter.exists():
                raise bad(section, "interpreter", f"names {value}, which does not exist")
        frameworks[tab] = Framework(
            interpreter=interpreter,
            name=tab,
            label=get(section, "label", known_label),
            module=module,
            import_name=import_name,
            requirements=req,
            constraints=con,
            python=python,
            gpu_probe=gpu_probe,
            heavy_modules=heavy,
            import_stack=stack,
            library=library_keys(parser, tab),
        )
    save = get("library", "save", "block")
    if save not in ("block", "cell"):
        raise bad("library", "save", "must be block (d2lbook's meaning) or cell")
    execute = _truth(get("build", "eval_notebook", "true"))
    if execute is None:
        raise bad("build", "eval_notebook", "must be True or False")
    # d2lbook names the root page without ".md" (``index = index``); either spelling is read. It
    # must be a page of the book: Sphinx's root document is its path in the sources.
    index_name = get("build", "index", "index.md")
    index = root / (index_name if index_name.endswith(".md") else f"{index_name}.md")
    try:
        index.resolve().relative_to(root.resolve())
    except ValueError:
        raise bad("build", "index", f"{index_name!r} is outside the book's folder") from None
    warning_is_error = _truth(get("build", "warning_is_error", "false"))
    if warning_is_error is None:
        raise bad("build", "warning_is_error", "must be True or False")
    bib_name = get("pdf", "bibfile", get("build", "bibfile", "references.bib"))
    bibfile = (root / bib_name) if (root / bib_name).is_file() else None
    resources = tuple(r.rstrip("/") for r in get("build", "resources", "img/ static/").split() if r.strip("/"))
    try:
        timeout = int(get("build", "cell_timeout", "600"))
    except ValueError as exc:
        raise BookError("[build] cell_timeout must be an integer (seconds)", "config.ini") from exc
    return Config(
        root=root,
        name=get("project", "name"),
        title=get("project", "title"),
        author=get("project", "author", ""),
        version=get("project", "version", get("project", "release", "0.0.0")),
        repository=get("project", "repository", ""),
        index=index,
        tabs=tabs,
        default_tab=default_tab,
        cell_timeout=timeout,
        freeze_dir=root / get("build", "freeze_dir", "_freeze"),
        library_dir=root / get("build", "library_dir", "d2l"),
        frameworks=frameworks,
        stderr_filters=tuple(
            line.strip() for line in get("build", "stderr_filters", "").splitlines() if line.strip()
        ),
        execute=execute,
        warning_is_error=warning_is_error,
        bibfile=bibfile,
        exclusions=tuple(get("build", "exclusions", "").split()),
        notebooks=tuple(get("build", "notebooks", "").split()),
        resources=resources,
        root_files=tuple(get("build", "root_files", "").split()),
        offline_requirements=tuple(root / p for p in get("build", "offline_requirements", "").split()),
        overlay=overlay,
        save=save,
    )
