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
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tabbook.errors import BookError
from tabbook.problems import Problem
from tabbook.settings import (
    ENVIRONMENT,
    MODULE_NAME,
    At,
    Setting,
    Unusable,
    any_folder,
    bibliography,
    book_file,
    book_files,
    book_folder,
    book_globs,
    book_paths,
    book_patterns,
    boolean,
    byte_size,
    choice,
    colab_libs,
    env_names,
    existing_file,
    file_name,
    gpu_needs,
    gpu_probe,
    header_links,
    import_stack,
    interpreter,
    key_line,
    language,
    leads_outside,
    leaves_book,
    library_module,
    lines,
    module_name,
    one_of_the_tabs,
    page_title,
    positive,
    prefix_url,
    python_statements,
    resource_list,
    setting,
    settings_of,
    sibling_books,
    site_address,
    tab_list,
    text,
    top_level_modules,
    url_template,
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


def _unused(why: str) -> str:
    return f"accepted, not used: {why}"


@dataclass(frozen=True)
class Html:
    """d2lbook's ``[html]`` keys: what every page of the site carries besides the book."""

    header_links: tuple[tuple[str, str, str], ...] = setting(
        "html", "header_links", "", header_links, "links above every page: name, URL, Font Awesome icon "
        "(comma-separated triples); the icons are drawn from a bundled set (Octicons), a relative URL "
        "is relative to the site's root", field_default=())
    favicon: Path | None = setting("html", "favicon", "", book_file, "the site's icon, a file of the "
                                   "book (default: tabbook's)", field_default=None)
    html_logo: Path | None = setting("html", "html_logo", "", book_file, "the logo above the navigation",
                                     field_default=None)
    include_css: tuple[str, ...] = setting("html", "include_css", "", book_globs, "root-relative globs of "
                                           "stylesheets every page loads after tabbook's", field_default=())
    include_js: tuple[str, ...] = setting("html", "include_js", "", book_globs, "root-relative globs of "
                                          "scripts every page loads after tabbook's", field_default=())
    raw_html: str = setting("html", "raw_html", "allow", choice("allow", "escape", why="must be allow "
                            "(d2lbook's: HTML in the pages is the page's) or escape"),
                            "HTML written in the pages (HTML blocks, inline tags, raw html blocks): allow "
                            "(d2lbook's) publishes it as it is, script included; escape shows it as text "
                            "(README: Security model)", field_default="allow", overlay=False)


@dataclass(frozen=True)
class Pdf:
    """d2lbook's ``[pdf]`` keys (``bibfile`` is read with the book's keys)."""

    main_font: str = setting("pdf", "main_font", "", text, "the text font, when installed (fc-list); "
                             "otherwise a warning and TeX Gyre Pagella", field_default="")
    sans_font: str = setting("pdf", "sans_font", "", text, "the headings' font, when installed; "
                             "otherwise a warning and TeX Gyre Heros", field_default="")
    mono_font: str = setting("pdf", "mono_font", "", text, "the code's font, when installed; "
                             "otherwise a warning and Inconsolata", field_default="")
    latex_logo: Path | None = setting("pdf", "latex_logo", "", book_file, "an image on the PDFs' title page",
                                      field_default=None)
    post_latex: Path | None = setting("pdf", "post_latex", "", book_file, "a Python script run as "
                                      "python SCRIPT FILE.tex (in the book's root) on each written .tex "
                                      "file before it is typeset, as d2lbook runs it", field_default=None)
    latex_url: str = setting("pdf", "latex_url", "", text, _unused("nothing is downloaded; tabbook's "
                             "style is package data (a book's own: static/latex/tabbook.sty)"), field_default="")
    style: str = setting("pdf", "style", "", text, _unused("one style, tabbook's"), field_default="")


@dataclass(frozen=True)
class Colab:
    """d2lbook's ``[colab]`` keys. tabbook makes no Colab copies of the notebooks: these keys shape
    the notebooks the site offers for download (and the zips of them), which a reader may
    upload to Colab or open anywhere."""

    libs: tuple[tuple[str, str, str], ...] = setting(
        "colab", "libs", "", colab_libs, "lines of TAB, LIBRARY, PIP ARGUMENT: a downloadable notebook "
        "of TAB whose code imports LIBRARY starts with a cell pip-installing it (==RELEASE: the "
        "book's version)", field_default=())
    libs_header: str = setting("colab", "libs_header", "The following additional libraries are needed "
                               "to run this notebook. Note that running on Colab is experimental, please "
                               "report a Github issue if you have any problem.", text,
                               "the text above that cell", field_default="")
    gpu_pattern: str = setting("colab", "gpu_pattern", "gpu", text, "a downloadable notebook whose code "
                               "contains it asks Colab for a GPU (metadata accelerator: GPU)",
                               field_default="gpu")
    replace_svg_url: tuple[str, str] | None = setting(
        "colab", "replace_svg_url", "", prefix_url, _unused("FOLDER, URL (checked): tabbook's "
        "downloadable notebooks hold each tab's code and outputs, no prose, so they link no images to "
        "move"),
        field_default=None)
    github_repo: str = setting("colab", "github_repo", "", text, _unused("no Colab repository is "
                               "pushed; Colab links open the freeze store's notebooks ([site] colab_url)"),
                               field_default="")
    exclusions: str = setting("colab", "exclusions", "*.html **/index.html", text,
                              _unused("no Colab buttons are added"), field_default="")


@dataclass(frozen=True)
class Deploy:
    """d2lbook's ``[deploy]`` keys: tabbook deploys nothing (``build/html`` is the site)."""

    google_analytics_tracking_id: str = setting(
        "deploy", "google_analytics_tracking_id", "", text, "accepted, not emitted: pages load nothing "
        "from other sites (a build says so in a warning at the key's line)", field_default="")
    github_repo: str = setting("deploy", "github_repo", "", text, _unused("no deploy command"),
                               field_default="")
    s3_bucket: str = setting("deploy", "s3_bucket", "", text, _unused("no deploy command"), field_default="")
    other_file_s3urls: str = setting("deploy", "other_file_s3urls", "", text, _unused("no deploy command"),
                                     field_default="")


@dataclass(frozen=True)
class Unused:
    """The rest of d2lbook 1.0.3's keys: read (so a d2lbook book's config.ini is whole), used by
    nothing in tabbook, each with the reason in its help."""

    source_dir: str = setting("build", "source_dir", ".", text, _unused("the book's root is the folder of "
                              "config.ini (-C DIR)"), field_default=".")
    output_dir: str = setting("build", "output_dir", "_build", text, _unused("outputs go to build/, "
                              "executed notebooks to [build] freeze_dir"), field_default="_build")
    origin_repo: str = setting("build", "origin_repo", "", text, _unused("no translation support"),
                               field_default="")
    translation_origin_repo: str = setting("translation", "origin_repo", "", text,
                                           _unused("no translation support"), field_default="")
    origin_lang: str = setting("translation", "origin_lang", "", text, _unused("no translation support"),
                               field_default="")
    translator: str = setting("translation", "translator", "", text, _unused("no translation support"),
                              field_default="")
    terminology: str = setting("translation", "terminology", "", text, _unused("no translation support"),
                               field_default="")
    root_dir: str = setting("library", "root_dir", "", text, _unused("the library goes to "
                            "[build] library_dir"), field_default="")
    save_filename: str = setting("library", "save_filename", "", text, _unused("deprecated in d2lbook; "
                                 "[library-TAB] lib_file"), field_default="")
    save_mark: str = setting("library", "save_mark", "", text, _unused("deprecated in d2lbook; the mark "
                             "is #@save"), field_default="")
    save_patterns: str = setting("library", "save_patterns", "", text, _unused("deprecated in d2lbook"),
                                 field_default="")
    library_version: str = setting("library", "version", "", text, _unused("deprecated in d2lbook; "
                                   "[project] version"), field_default="")
    sagemaker_repo: str = setting("sagemaker", "github_repo", "", text, _unused("no SageMaker copies"),
                                  field_default="")
    sagemaker_kernel: str = setting("sagemaker", "kernel", "conda_python3", text,
                                    _unused("no SageMaker copies"), field_default="")
    sagemaker_libs: str = setting("sagemaker", "libs", "", text, _unused("no SageMaker copies"),
                                  field_default="")
    sagemaker_libs_header: str = setting("sagemaker", "libs_header", "Installing (updating) the following "
                                         "libraries for your Sagemaker instance.", text,
                                         _unused("no SageMaker copies"), field_default="")
    slides_top_left: str = setting("slides", "top_left", "", text, _unused("the decks carry the book's "
                                   "title"), field_default="")
    slides_top_right: str = setting("slides", "top_right", "", text, _unused("the decks carry the "
                                    "book's title"), field_default="")
    slides_repo: str = setting("slides", "github_repo", "", text, _unused("decks are part of the site "
                               "(build/html/_slides)"), field_default="")



def _known(values: dict[str, Any], i: int) -> str:
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

    def before_get(self, parser: Any, section: str, option: str, value: str, defaults: Any) -> str:
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

    def get(self, section: str, option: str, **kwargs: Any) -> Any:  # type: ignore[override]
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

    def read(self, cls: type, section: str = "", context: dict[str, Any] | None = None) -> dict[str, Any]:
        """The declared fields of ``cls``, read from ``section`` (for ``framework:*`` keys: the
        tab's own section), parsed and checked; each problem is an error at its key's line."""
        values: dict[str, Any] = dict(context or {})
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
