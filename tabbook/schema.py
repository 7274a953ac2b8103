"""The configuration's schema: every key of ``config.ini`` declared once, on the field of the typed,
frozen object it fills (:class:`Config`, :class:`Site`, :class:`Framework`, :class:`LibraryKeys`;
d2lbook's own sections in :mod:`tabbook.sections`), and README's key list written from it
(:func:`key_reference`).

Why apart from the reader (:mod:`tabbook.config`): what a key is and means is read by the
whole builder, the Sphinx process included, which gets the typed configuration and never
reads ``config.ini``; how the INI text is parsed, interpolated and located is the reader's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from tabbook.addresses import edition_refs, language, sibling_books, site_address, url_template
from tabbook.errors import BookError
from tabbook.sections import Colab, Deploy, Html, Pdf, Unused
from tabbook.settings import (
    ENVIRONMENT,
    At,
    Values,
    any_folder,
    bibliography,
    book_files,
    book_folder,
    book_globs,
    book_paths,
    book_patterns,
    boolean,
    byte_size,
    choice,
    env_names,
    existing_file,
    file_name,
    gpu_needs,
    gpu_probe,
    import_stack,
    interpreter,
    leads_outside,
    library_module,
    lines,
    module_name,
    one_of_the_tabs,
    page_title,
    positive,
    python_statements,
    resource_list,
    setting,
    settings_of,
    tab_list,
    text,
    top_level_modules,
    version_text,
    words,
)

#: The overlay file read after config.ini, when present at the book root.
OVERLAY_NAME = "tabbook.ini"
#: Environment variable naming another overlay (``--overlay``'s; a Sphinx run is handed the
#: render context instead, :mod:`tabbook.render.context`).
OVERLAY_ENV = "TABBOOK_OVERLAY"

#: The one tab of a book without ``[build] tabs``.
ONE_LANGUAGE = "python"

#: Defaults for the tab names books written for d2lbook use, when a tab has no
#: ``[framework:<tab>]`` section: (label, library module, import name).
KNOWN_FRAMEWORKS: dict[str, tuple[str, str, str]] = {
    "pytorch": ("PyTorch", "torch", "torch"),
    "mxnet": ("MXNet", "mxnet", "mxnet"),
    "jax": ("JAX", "jax", "jax"),
    "tensorflow": ("TensorFlow", "tensorflow", "tensorflow"),
    "numpy": ("NumPy", "numpy", "numpy"),
    # A book without [build] tabs (d2lbook's one-language book): its code runs where d2lbook's
    # runs, in a kernel of the builder's own Python ([framework:python] python = current).
    ONE_LANGUAGE: ("Python", "python", "IPython"),
}


def _glob(pattern: str) -> re.Pattern[str]:
    """A d2lbook file pattern as a regex, as d2lbook's ``glob(recursive=True)`` reads it: ``*``
    and ``?`` never cross a ``/``; a ``**`` part is any number of folders, none included
    (``**/*.md`` is every Markdown file, the root's too)."""
    out = []
    parts = pattern.split("/")
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        if part == "**":
            out.append(".*" if last else "(?:[^/]*/)*")
            continue
        out.append("".join("[^/]*" if c == "*" else "[^/]" if c == "?" else re.escape(c) for c in part))
        if not last:
            out.append("/")
    return re.compile("".join(out))


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


def root_page(value: str, at: At) -> Path:
    """``[build] index``: a page of the book, named with or without ``.md`` (d2lbook writes
    ``index``), or a reStructuredText page where the book has that and no Markdown one
    (deepnumpy-doc's ``index.rst``, which older d2lbooks took); Sphinx's root document is its path."""
    name = value.strip()
    page = at.root / (name if name.endswith((".md", ".rst")) else f"{name}.md")
    if page.suffix == ".md" and not page.is_file() and page.with_suffix(".rst").is_file():
        page = page.with_suffix(".rst")
    try:
        page.resolve().relative_to(at.root.resolve())
    except ValueError:
        raise ValueError(f"{name!r} is outside the book's folder") from None
    return page


# ---- the keys, declared once ----------------------------------------------------------------
#
# Every key tabbook reads from config.ini (and an overlay) is one ``setting(...)`` line on the
# field it fills, below: its section, key, default, how its text is parsed and checked, its help
# and whether an overlay may set it. ``load_config`` reads the fields of :class:`Site`,
# :class:`Framework` and :class:`Config` from that declaration, locates every bad value at its
# line, and :func:`key_reference` writes README's list of keys from it. To add a key: add the
# field with its ``setting(...)`` to the class that holds it; nothing else reads config.ini.


# -- what the keys fill ------------------------------------------------------------------------


@dataclass(frozen=True)
class Site:
    """The reader's site (``[site]``, tabbook's own section; used by :mod:`tabbook.render.site`)."""

    branch: str = setting("site", "branch", "main", text, "the branch the Colab links open")
    colab_url: str = setting("site", "colab_url", "", url_template, "template of a notebook's Colab link, with "
                             "{repo} {branch} {path}; default: Colab's GitHub URL when [project] "
                             "repository names a GitHub repository")
    pdf_url: str = setting("site", "pdf_url", "", url_template, "template of a PDF's link, with {name} {fw}; "
                           "default: build/pdf/NAME-FW.pdf, copied into the site, when it exists")
    url: str = setting("site", "url", "", site_address, "the address the site is served at "
                       "(https://HOST/PATH/): the d2l package's docstrings cite each page there "
                       "(empty: by its path in the site)")
    languages: tuple[tuple[str, str, str], ...] = setting(
        "site", "languages", "", sibling_books, "the book in other languages, one line each: TAG SOURCE "
        "[URL]; SOURCE is . (this book), a sibling book's folder or git:REF, URL where its site is served "
        "(default ../TAG/); every page links the same page in each (by its path, then by its :label:), "
        "notes a translation last committed before it, and heads its <link rel=alternate hreflang>; "
        "the first line is x-default (README: Languages)")
    front_page: bool = setting("site", "front_page", "true", boolean,
                               "the root page gains the generated front matter (picker, contents, downloads)")
    trusted_outputs: bool = setting("site", "trusted_outputs", "false", boolean,
                                    "publish outputs as they are, script included (interactive plots); off: "
                                    "HTML and SVG outputs are cleaned and JavaScript outputs dropped, on the "
                                    "pages and in the downloadable notebooks (README: What an output may do)",
                                    overlay=False)
    versions: tuple[tuple[str, str, str], ...] = setting(
        "site", "versions", "", edition_refs, "the book's editions, one a line: LABEL REF [TITLE]; "
        "`tabbook site` builds each from its git ref's sources and _freeze/ (never executing) into "
        "build/html/LABEL/, the first at the root, and every page links the same page in the others",
        field_default=(), overlay=False)


def _known(values: Values, i: int) -> str:
    return str(values["known"][i])


@dataclass(frozen=True)
class Framework:
    """One code tab and the environment its code runs in (``[framework:<tab>]``)."""

    name: str  # tab name used in the Markdown, e.g. "pytorch"
    label: str = setting("framework:*", "label", lambda v: _known(v, 0), text,
                         "shown on the tab (default: the tab name, or d2lbook's label of a tab it knows)")
    module: str = setting("framework:*", "module", lambda v: _known(v, 1), library_module,
                          "the generated library module d2l/MODULE.py; tabbook libtest runs "
                          "tests/lib/test_MODULE.py for it (default: the tab name, or [library-TAB] lib_file's)")
    import_name: str = setting("framework:*", "import", lambda v: _known(v, 2), module_name,
                               "the package whose version the provenance records (default: the tab name)")
    requirements: Path | None = setting("framework:*", "requirements", "", existing_file,
                                        "the pinned requirements of its environment (relative to this file)")
    constraints: Path | None = setting("framework:*", "constraints", "", existing_file,
                                       "pip constraints for its environment (optional)")
    python: str = setting("framework:*", "python", lambda v: v["python_default"], text,
                          'the Python version of its environment, or "current": the builder\'s own '
                          "(default: 3.11; current for the one tab of a book without [build] tabs)")
    gpu_probe: str = setting("framework:*", "gpu_probe", "", gpu_probe,
                             "Python run in the kernel after a section's cells, with the import done; "
                             "its last expression gives the GPU names the provenance records",
                             field_default="")
    heavy_modules: tuple[str, ...] = setting(
        "framework:*", "heavy_modules", lambda v: v["import_name"].split(".")[0], top_level_modules,
        "top-level modules whose import means the framework was imported: import d2l loads "
        "none (tabbook libtest), import d2l.MODULE none of another framework's (default: the import key)",
        field_default=())
    import_stack: str = setting("framework:*", "import_stack", lambda v: f"import {v['import_name']}",
                                import_stack, "the import statements that are the framework, for the "
                                "import-cost benchmark (default: import IMPORT)", field_default="")
    # d2lbook's [library-<tab>] keys (a d2lbook book's aliases and lib_file); empty for ours.
    library: LibraryKeys = LibraryKeys()
    # An existing interpreter to run this tab's code with (a conda env, a CUDA image's Python):
    # nothing is installed into it; ``--python X=PATH`` or ``$TABBOOK_PYTHON`` win over the key,
    # which is then not checked. None: the locked venv.
    interpreter: Path | None = setting("framework:*", "interpreter", "", interpreter,
                                       "an existing Python to run this tab's code with (nothing is "
                                       "installed into it)", field_default=None)

    @property
    def kernel_name(self) -> str:
        return f"tabbook-{self.name}"

    @property
    def has_env(self) -> bool:
        """Whether the book says where this tab's code runs: a lock file to install, an interpreter,
        or ``python = current``. A tab it says nothing of runs in the builder's Python
        (:attr:`builder_python`), as d2lbook runs every tab's code in the current kernel."""
        return self.requirements is not None or self.python == "current" or self.interpreter is not None

    @property
    def builder_python(self) -> bool:
        """Whether this tab's code runs in the builder's own interpreter: ``python = current``, or
        no environment given at all (d2lbook's way; the build says how to pin one)."""
        return self.interpreter is None and (self.python == "current" or self.requirements is None)


@dataclass(frozen=True)
class Config:
    """The book's configuration. Made only by :func:`load_config`."""

    root: Path
    name: str = setting("project", "name", "d2lbook", file_name, "the book's short name (file names of its "
                        "PDFs and zips: letters, digits, spaces, _ . + -)", overlay=False)
    author: str = setting("project", "author", "The contributors", text, "the book's authors")
    version: str = setting("project", "version", "0.0.1", version_text, "the book's and its library's version "
                           "(d2lbook's release)", aliases=(("project", "release"),))
    copyright: str = setting("project", "copyright", "", text, "the footer's copyright line (none when "
                             "empty, as in d2lbook)")
    lang: str = setting("project", "lang", "", language, "the book's language (en, zh, ja, ...): the pages' "
                        "lang attribute and Sphinx's own words (default: en)")
    repository: str = setting("project", "repository", "", text, "where the sources live (view-source "
                              "and notebook links); a GitHub repository adds Colab links")
    tabs: tuple[str, ...] = setting("build", "tabs", "", tab_list(ONE_LANGUAGE), "the code tabs, in display "
                                    "order; empty (d2lbook's default): a one-language book, its code run "
                                    "in the builder's Python", overlay=False)
    default_tab: str = setting("build", "default_tab", lambda v: v["tabs"][0], one_of_the_tabs,
                               "the tab of a cell without a %%tab line (default: the first tab)", overlay=False)
    index: Path = setting("build", "index", "index.md", root_page, "the table of contents' root page "
                          "(d2lbook's spelling, without .md, too); any page of the book (index.rst where "
                          "there is no index.md: its toctrees are walked)", overlay=False)
    title: str = setting("project", "title", lambda v: page_title(v["index"]), text,
                         "the book's title (default: the first heading of the index page, as d2lbook's)")
    notebooks: tuple[str, ...] = setting(
        "build", "notebooks", "", words, "root-relative globs of the book's pages (** is any number of folders, a star stays in "
        "one folder); empty: every Markdown file", overlay=False)
    exclusions: tuple[str, ...] = setting("build", "exclusions", "", words, "root-relative globs of "
                                          "Markdown that is not a page", overlay=False)
    cell_timeout: int = setting("build", "cell_timeout", "600", positive("seconds"),
                                "seconds one cell may run before its unit fails")
    max_output_bytes: int = setting(
        "build", "max_output_bytes", "4000000", positive("bytes"), "bytes of output one cell may keep "
        "(text and data); the rest is dropped, with a note in the output saying so")
    memory_limit: int = setting(
        "build", "memory_limit", "", byte_size, "the address space one kernel may use, e.g. 8G (RLIMIT_AS; "
        "a cell over it raises MemoryError); empty: no cap. GPU frameworks reserve much address space")
    kernel_env: tuple[str, ...] = setting(
        "build", "kernel_env", "", env_names, "names of environment variables kernels get from the "
        "builder's environment besides the allow-list (PATH, HOME, locale, CUDA/XLA/TF…, TABBOOK_*)")
    execute: bool = setting("build", "eval_notebook", "true", boolean, "False: every tab's code is shown "
                            "without outputs where the store has none")
    warning_is_error: bool = setting("build", "warning_is_error", "false", boolean, "True: every problem a "
                                     "build goes on past (README: d2lbook's contract) fails it, all listed in "
                                     "one run, as build --strict; False (d2lbook's default): they are warnings")
    sphinx_configs: str = setting("build", "sphinx_configs", "", python_statements, "Python statements "
                                  "setting Sphinx options, run after tabbook's own (they win)")
    sphinx_extensions: tuple[str, ...] = setting("build", "sphinx_extensions", "", words, "more Sphinx "
                                                 "extensions (modules; the book's root is on the path)")
    dependencies: tuple[str, ...] = setting(
        "build", "dependencies", "", book_globs, "root-relative globs of files every unit depends on: their "
        "contents enter every unit's freeze key (a change re-runs the book, as in d2lbook)", overlay=False)
    rsts: tuple[str, ...] = setting("build", "rsts", "", book_globs, "root-relative globs of reStructuredText "
                                    "pages built beside the Markdown ones (reached by links, or by a toc "
                                    "naming them)", overlay=False)
    non_notebooks: tuple[str, ...] = setting(
        "build", "non-notebooks", "", book_patterns, "root-relative globs of Markdown files that are not pages: "
        "never run nor rendered, copied as they are into each tab's notebooks zip", overlay=False)
    freeze_dir: Path = setting("build", "freeze_dir", "_freeze", book_folder, "the freeze store")
    library_dir: Path = setting("build", "library_dir", "d2l", book_folder, "the generated library")
    stderr_filters: tuple[str, ...] = setting(
        "build", "stderr_filters", "", lines, "regexes, one a line, of stderr lines that are framework "
        "start-up noise, dropped from outputs")
    resources: tuple[str, ...] = setting("build", "resources", "img/ static/", resource_list,
                                         "root-relative files and folders pages refer to (images, data)")
    root_files: tuple[str, ...] = setting("build", "root_files", "", book_files, "book files placed at the "
                                          "root of Sphinx's sources (what a book's CI copies there)")
    run_alone: tuple[str, ...] = setting(
        "build", "run_alone", "", words, "root-relative globs of pages whose code measures time: each of "
        "their units runs with nothing else running on the machine")
    gpus: tuple[tuple[str, int], ...] = setting(
        "build", "gpus", "", gpu_needs, "lines of PAGE_GLOB COUNT (a number, or all): the GPUs a page's "
        "units need, where the guess from their code (d2lbook's) is wrong")
    units_per_gpu: int = setting("build", "units_per_gpu", "1", positive("units"),
                                 "how many units share one GPU at a time")
    installer: str = setting("build", "installer", "", choice("", "uv", "pip", why="must be uv or pip (or "
                             "empty: uv when installed)"), "who installs the framework environments: uv or "
                             "pip (empty: uv when installed beside the builder or on the PATH, else pip)",
                             env="TABBOOK_INSTALLER")
    venvs: Path | None = setting("build", "venvs", "", any_folder, "the folder the framework environments "
                                 "are made in, shared by every book (empty: venvs/ in the user-wide cache)",
                                 env="TABBOOK_VENVS")
    offline_requirements: tuple[Path, ...] = setting(
        "build", "offline_requirements", "", book_paths, "requirement files of what the code needs "
        "besides the frameworks, for a machine that cannot download (tabbook wheelhouse)")
    bibfile: Path | None = setting("pdf", "bibfile", "references.bib", bibliography,
                                   "the bibliography, used when it exists", aliases=(("build", "bibfile"),))
    save: str = setting("library", "save", "block", choice("block", "cell", why="must be block (d2lbook's "
                        "meaning) or cell"), "what #@save alone on a line saves: block (the statement after "
                        "it, d2lbook's meaning) or cell (the whole cell)", overlay=False)
    # Read with the [library-TAB] keys (:func:`library_keys`); declared here for the key list.
    version_file: str = setting("library", "version_file", "", text, "the file whose __version__ "
                                "line gets [project] version (d2lbook's)", overlay=False)
    site: Site = field(default_factory=Site)
    html: Html = field(default_factory=Html)
    pdf: Pdf = field(default_factory=Pdf)
    colab: Colab = field(default_factory=Colab)
    deploy: Deploy = field(default_factory=Deploy)
    unused: Unused = field(default_factory=Unused)
    frameworks: dict[str, Framework] = field(default_factory=dict)
    overlay: Path | None = None  # the overlay file that was read, if any
    # What was read past, at its key's line (a file a key names that does not exist, a key nothing
    # reads): d2lbook goes on without it, and so does a build, reporting each (tabbook.problems).
    problems: tuple[BookError, ...] = ()

    @property
    def build_dir(self) -> Path:
        return self.root / "build"

    def framework(self, name: str) -> Framework:
        return self.frameworks[name]

    def runs_alone(self, rel: str) -> bool:
        """Whether the units of page ``rel`` must run with nothing beside them (``[build] run_alone``)."""
        return any(_glob(pattern).fullmatch(rel) for pattern in self.run_alone)

    def declared_gpus(self, rel: str) -> int | None:
        """The GPUs ``[build] gpus`` says page ``rel`` needs (-1: all of them); None: not said."""
        return next((count for pattern, count in self.gpus if _glob(pattern).fullmatch(rel)), None)

    def excluded(self, rel: str) -> bool:
        """Whether a root-relative Markdown path is not a page: outside ``notebooks``, or excluded."""
        if self.notebooks and not any(_glob(pattern).fullmatch(rel) for pattern in self.notebooks):
            return True
        return any(_glob(pattern).fullmatch(rel) for pattern in (*self.exclusions, *self.non_notebooks))

    def missing_extensions(self) -> list[str]:
        """The ``[build] sphinx_extensions`` that cannot be imported (the book's root on the path,
        as Sphinx has it): left out of the build with a warning, where Sphinx would not start
        (deepnumpy-doc's numpydoc)."""
        import importlib.util
        import sys

        added = str(self.root) not in sys.path
        if added:
            sys.path.insert(0, str(self.root))
        try:
            missing = []
            for module in self.sphinx_extensions:
                try:
                    found = importlib.util.find_spec(module) is not None
                except (ImportError, ValueError):
                    found = False
                if not found:
                    missing.append(module)
            return missing
        finally:
            if added:
                sys.path.remove(str(self.root))

    def named_files(self) -> list[Path]:
        """The book's files that keys name besides its pages and resources: the favicon, the logos,
        ``include_css``/``include_js``, ``post_latex`` and the book's own Sphinx extensions
        (``[build] sphinx_extensions`` modules at its root). A change to one must render again."""
        named = [self.html.favicon, self.html.html_logo, self.pdf.latex_logo, self.pdf.post_latex,
                 *self.files(self.html.include_css), *self.files(self.html.include_js)]
        for module in self.sphinx_extensions:
            base = self.root.joinpath(*module.split("."))
            named += [p for p in (base.with_suffix(".py"), base) if p.exists()]
        return [p for p in named if p is not None]

    def files(self, patterns: tuple[str, ...]) -> list[Path]:
        """The book's files that root-relative globs name, sorted (d2lbook's ``find_files``: ``**``
        crosses folders, a folder means every file under it)."""
        found: set[Path] = set()
        for pattern in patterns:
            target = self.root / pattern
            if target.is_dir():
                found.update(p for p in target.rglob("*") if p.is_file())
            else:
                found.update(p for p in self.root.glob(pattern) if p.is_file())
        # Only the book's own files: the parsers refuse patterns that lead out, and a link made
        # since is left out here (they are read to be published).
        return sorted(p for p in found if not leads_outside(self.root, p))

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
            if "**" in parts:  # any depth past it: the parts before it must match
                fixed = parts[:parts.index("**")]
                if all(_glob(p).fullmatch(d) for p, d in zip(fixed, rel_dir, strict=False)):
                    return True
            elif len(parts) > len(rel_dir) and all(_glob(p).fullmatch(d) for p, d in zip(parts, rel_dir, strict=False)):
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


#: Every class whose fields are keys, in the order README lists them.
KEY_CLASSES: tuple[type, ...] = (Config, Site, Framework, Html, Pdf, Colab, Deploy, Unused)


def key_reference() -> str:
    """README's list of the keys (Markdown), written from their declarations."""
    out = ["| key | default | in an overlay | meaning |", "| --- | --- | --- | --- |"]
    for cls in KEY_CLASSES:
        for _, decl in settings_of(cls):
            names = " / ".join(f"`[{s.replace(':*', ':TAB')}] {k}`" for s, k in ((decl.section, decl.key), *decl.aliases))
            if decl.default is None:
                default = "(required)"
            elif not isinstance(decl.default, str):
                default = "(see meaning)"
            else:
                default = f"`{' '.join(decl.default.split())}`" if decl.default else "(empty)"
            env = f" (environment: `${decl.env}`)" if decl.env else ""
            out.append(f"| {names} | {default} | {'yes' if decl.overlay else 'no'} | {decl.help}{env} |")
    return "\n".join(out) + "\n"


def environment_reference() -> str:
    """README's list of the ``TABBOOK_*`` environment variables (Markdown): the keys' environment
    forms, from their declarations, then :data:`tabbook.settings.ENVIRONMENT`."""
    out = ["| variable | kind | meaning |", "| --- | --- | --- |"]
    for cls in KEY_CLASSES:
        for _, decl in settings_of(cls):
            if decl.env:
                out.append(f"| `{decl.env}` | key | `[{decl.section}] {decl.key}` (`--set "
                           f"{decl.section}.{decl.key}=…` wins over it): {decl.help} |")
    out += [f"| `{v.name}` | {v.kind} | {v.meaning} |" for v in ENVIRONMENT]
    return "\n".join(out) + "\n"
