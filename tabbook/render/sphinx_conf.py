"""Default Sphinx settings for a tabbook book, derived from its config.ini.

A book's ``conf.py`` does ``globals().update(sphinx_settings(ROOT))`` and may
override anything after that line; keeping the defaults here lets test
fixture books and the real book share one configuration.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tabbook.config import load_config
from tabbook.render.latex_conf import latex_settings
from tabbook.render.site import load_site_options

STATIC = Path(__file__).resolve().parent / "static"


def sphinx_settings(root: Path) -> dict[str, Any]:
    book = load_config(root)
    bib = book.bibfile
    extensions = ["myst_nb", "sphinx_design", "tabbook.render.ext"]
    if bib is not None:
        extensions.insert(2, "sphinxcontrib.bibtex")
    site = load_site_options(book)
    # furo's "view source" would point at the generated notebook, not the Markdown in the
    # repository: tabbook.render.ext.html links the source next to the downloads instead.
    theme_options: dict[str, Any] = {"top_of_page_buttons": []}
    return {
        "project": book.title,
        "author": book.author,
        "version": book.version,
        "release": book.version,
        "copyright": f"2026, {book.author}",
        "extensions": extensions,
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
        "bibtex_bibfiles": [bib.name] if bib is not None else [],
        "bibtex_reference_style": "author_year",
        "exclude_patterns": ["**.ipynb_checkpoints"],
        "html_theme": "furo",
        "html_theme_options": theme_options,
        "html_title": book.title,
        "html_favicon": str(STATIC / "favicon.svg"),
        # Nothing from other origins: math is typeset at build time (tabbook.render.ext.math), and
        # myst-nb must not pull widget scripts from a CDN.
        "html_math_renderer": "tabbook_katex",
        "nb_ipywidgets_js": {},
        "tabbook_site": site.as_dict(),
        # Only when the book lists static/ among its resources: d2lbook books keep build scripts
        # and tens of MB of print styles there that the site must not carry.
        "html_static_path": [str(root / "static")] if (root / "static").is_dir() and "static" in book.resources
        else [],
        "html_copy_source": False,
        "html_show_sourcelink": False,
        "tabbook_tabs": list(book.tabs),
        "tabbook_labels": {name: fw.label for name, fw in book.frameworks.items()},
        "tabbook_framework": book.default_tab,
        "suppress_warnings": ["mystnb.unknown_mime_type"],
        # ---- LaTeX / PDF (tabbook.render.latex_conf; owned by the PDF work) ----
        **latex_settings(root),
    }
