"""Default Sphinx settings for a tabbook book, derived from its render context.

A book's ``conf.py`` does ``globals().update(sphinx_settings(ROOT))`` and may
override anything after that line; keeping the defaults here lets test
fixture books and the real book share one configuration. The settings come from the
:class:`~tabbook.render.context.RenderContext` the builder handed the run: ``config.ini`` is
read once, by the builder, never again here.
"""

from __future__ import annotations

import ast
import html
import importlib.util
import sys
import types
from dataclasses import asdict
from pathlib import Path
from typing import Any

from tabbook.errors import BookError
from tabbook.files import builder_fingerprint
from tabbook.render.context import STATIC, RenderContext, received
from tabbook.render.latex_conf import latex_settings


def missing_imports(library_dir: Path) -> list[str]:
    """Top-level packages the generated library imports that the builder's Python lacks.

    d2lbook books document their ``d2l`` package with autodoc (``.. autoclass::`` in an
    ``eval_rst`` block); the builder has no framework installed, so autodoc imports the
    package with these mocked, which is enough to read signatures and docstrings.
    """
    wanted: set[str] = set()
    for path in sorted(library_dir.glob("*.py")) if library_dir.is_dir() else []:
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError, OSError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                wanted.update(a.name.split(".")[0] for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                wanted.add(node.module.split(".")[0])
    wanted.discard(library_dir.name)
    return sorted(m for m in wanted if m not in sys.stdlib_module_names and importlib.util.find_spec(m) is None)


#: myst-nb's notebook clients that execute (through jupyter-cache, nbclient), by module, and
#: the class each module provides; tabbook never uses them.
MYST_NB_EXECUTING_CLIENTS = {
    "myst_nb.core.execute.cache": "NotebookClientCache",
    "myst_nb.core.execute.direct": "NotebookClientDirect",
    "myst_nb.core.execute.inline": "NotebookClientInline",
}


class _NoExecution:
    """Stands in for a myst-nb notebook client that executes: tabbook never lets myst-nb execute."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        raise RuntimeError("tabbook runs myst-nb with nb_execution_mode = 'off' (outputs come from the "
                           "freeze store); its executing notebook clients were left out of this Sphinx process")


def leave_out_myst_nb_execution() -> list[str]:
    """Keep myst-nb from importing its executing notebook clients in this (Sphinx) process.

    Why: myst-nb imports every client it could execute a notebook with (jupyter-cache with its
    database layer and SQLAlchemy, nbclient) whenever it starts, even with execution off. That
    is ~0.3 s of every Sphinx run, a fifth of a prose-edit rebuild, for code tabbook never
    calls: outputs come from the freeze store and ``nb_execution_mode`` is always ``off``, for
    which myst-nb uses its base client only. Stand-in modules take the clients' places; each
    fails loudly if it is ever asked to execute. Returns the modules replaced (none when myst-nb
    was already imported: nothing to save then).
    """
    if "myst_nb.core.execute" in sys.modules:
        return []
    replaced = []
    for module_name, class_name in MYST_NB_EXECUTING_CLIENTS.items():
        if module_name not in sys.modules:
            stand_in = types.ModuleType(module_name, _NoExecution.__doc__)
            setattr(stand_in, class_name, type(class_name, (_NoExecution,), {}))
            sys.modules[module_name] = stand_in
            replaced.append(module_name)
    return replaced


#: Sphinx's own default, given as a dict of each run's: Sphinx merges the extensions' suffixes
#: into its default's one dict in place (``registry.merge_source_suffix``), so after an earlier
#: application in the same process (a test's, a warm process's) ``.md`` would still map to that
#: run's parser ("Source parser for markdown not registered").
SOURCE_SUFFIX = {".rst": "restructuredtext"}


def sphinx_settings(root: Path, context: RenderContext | None = None) -> dict[str, Any]:
    """The Sphinx settings of the book at ``root``; evaluated by its ``conf.py``, in the Sphinx
    process, from the render context the builder handed it (:func:`tabbook.render.context.received`)."""
    book = context or received(root)
    leave_out_myst_nb_execution()
    extensions = ["myst_nb", "sphinx_design", "sphinx.ext.autodoc", "tabbook.render.ext",
                  *book.sphinx_extensions]  # [build] sphinx_extensions
    css, js = book.include_css, book.include_js
    # autodoc imports the book's own package first (not another d2l on the path).
    if book.root not in sys.path:
        sys.path.insert(0, book.root)
    if book.bibfiles:
        extensions.insert(2, "sphinxcontrib.bibtex")
    # furo's "view source" would point at the generated notebook, not the Markdown in the
    # repository: tabbook.render.ext.html links the source next to the downloads instead.
    theme_options: dict[str, Any] = {"top_of_page_buttons": []}
    settings = {
        "project": book.title,
        "author": book.author,
        "version": book.version,
        "release": book.version,
        # [project] copyright: the footer's line, none when empty (d2lbook's default).
        "copyright": book.copyright,
        "html_show_copyright": bool(book.copyright),
        # [project] lang: the pages' lang attribute and Sphinx's own words.
        "language": book.lang or "en",
        # [build] index: the root page under any name (d2lbook's is "index"), in any folder.
        "root_doc": book.root_doc,
        "tabbook_root": book.root,  # tabbook.render.ext.paths: images stay inside the book
        "tabbook_raw_html": book.raw_html,  # tabbook.render.ext.rawhtml: the pages' HTML, or its text
        "extensions": extensions,
        "source_suffix": dict(SOURCE_SUFFIX),
        # Outputs come from the freeze store; Sphinx never executes anything.
        "nb_execution_mode": "off",
        "nb_merge_streams": True,
        "myst_enable_extensions": ["dollarmath", "amsmath", "colon_fence"],
        # $$…$$ inside a paragraph is display math, as pandoc (d2lbook's reader) takes it:
        # "if $X$ is discrete, $$H(X) = …$$", or $$ lines continuing a list item's text.
        "myst_dmath_double_inline": True,
        "myst_heading_anchors": 3,
        "numfig": True,
        "numfig_format": {"figure": "Figure %s", "table": "Table %s",
                          "code-block": "Listing %s", "section": "Section %s"},
        "math_numfig": True,
        "math_eqref_format": "({number})",
        # Absolute: Sphinx resolves bib files against the conf.py folder, which for a book
        # without its own conf.py is under build/.
        # [pdf] bibfile and those the pages name on their :bibliography: lines (d2lbook: the key's).
        "bibtex_bibfiles": list(book.bibfiles),
        "bibtex_reference_style": "author_year",
        # Resources (images, data) are linked into the sources: any Markdown in them is not a page.
        "exclude_patterns": ["**.ipynb_checkpoints", *book.not_pages],
        "html_theme": "furo",
        # The search page and the general index, extended to show what the extensions put above
        # every page's content (tabbook.render.ext.prepend_to_page).
        "templates_path": [str(STATIC.parent / "templates")],
        "html_theme_options": theme_options,
        # Sphinx and furo paste html_title into pages as HTML (the sidebar's brand, the search
        # page's <title>): the book's title is text.
        "html_title": html.escape(book.title, quote=False),
        "html_favicon": book.favicon or str(STATIC / "favicon.svg"),
        "html_logo": book.html_logo or None,
        # Nothing from other origins: math is typeset at build time (tabbook.render.ext.math), and
        # myst-nb must not pull widget scripts from a CDN.
        "html_math_renderer": "tabbook_katex",
        "nb_ipywidgets_js": {},
        # The reader's site (tabbook.render.ext.html): the whole context, as the extensions read it.
        "tabbook_context": asdict(book),
        # Only when the book lists static/ among its resources: d2lbook books keep build scripts
        # and tens of MB of print styles there that the site must not carry.
        "html_static_path": ([str(root / "static")] if (root / "static").is_dir() and "static" in book.resources
                             else []) + list(css + js),
        # [html] include_css / include_js: the book's own, after tabbook's (Sphinx copies each
        # file into _static/).
        "html_css_files": [Path(p).name for p in css],
        "html_js_files": [Path(p).name for p in js],
        "html_copy_source": False,
        "html_show_sourcelink": False,
        "tabbook_tabs": list(book.tabs),
        "tabbook_labels": dict(book.labels),
        "tabbook_framework": book.default_tab,
        # The builder's rendering code and Sphinx's packages: pages Sphinx keeps are written by
        # the extensions, so a new tabbook (or Sphinx) must re-read and re-write every page.
        "tabbook_code": builder_fingerprint(),
        # myst.header: a page whose headings start at ## or skip a level renders as d2lbook's
        # (its first heading is the title, levels nest in their order), which says nothing of it:
        # reStructuredText, which d2lbook goes through, has no heading levels to skip.
        "suppress_warnings": ["mystnb.unknown_mime_type", "myst.header"],
        # autoclass/autofunction of the book's own package are read from its source
        # (tabbook.render.ext.apidoc); the mocks serve autodoc of anything else it imports.
        "tabbook_library_dir": book.library_dir,
        "autodoc_mock_imports": missing_imports(Path(book.library_dir)),
        # ---- LaTeX / PDF (tabbook.render.latex_conf; owned by the PDF work) ----
        **latex_settings(book),
    }
    return _with_sphinx_configs(book, settings)


def _with_sphinx_configs(book: RenderContext, settings: dict[str, Any]) -> dict[str, Any]:
    """``settings`` after ``[build] sphinx_configs``, the Python statements d2lbook pastes into
    conf.py: run after tabbook's settings, so they win (and may change tabbook's lists in place)."""
    if book.sphinx_configs:
        namespace: dict[str, Any] = dict(settings)
        try:
            exec(compile(book.sphinx_configs, "[build] sphinx_configs", "exec"), namespace)
        except Exception as exc:  # the book's own code: any error is the book's, at the key
            path, line = book.sphinx_configs_at
            raise BookError(f"[build] sphinx_configs failed: {type(exc).__name__}: {exc}", path,
                            line or None) from None
        settings.update({k: v for k, v in namespace.items() if not k.startswith("__")})
    return settings
