"""Sphinx settings for the LaTeX builder: how a per-framework PDF looks.

``sphinx_settings()`` merges :func:`latex_settings` into the book's Sphinx
configuration. Every value here is rebuild-free for Sphinx (``latex_*`` keys
and ``nb_mime_priority_overrides`` only matter at write time), so one doctree
cache serves HTML and all four LaTeX builds. The framework a build keeps is
not set here: ``python -m tabbook pdf`` passes ``-D tabbook_framework=<name>``
and the extension (:mod:`tabbook.render.ext.latex`) names the edition on the title page.

Typesetting choices: xelatex with TeX Gyre Pagella (text and math), TeX Gyre
Heros for headings and Inconsolata for code (all from Debian's font packages),
code in framed light boxes whose long lines wrap (never cut), outputs set
apart by a rule, SVG figures converted to PDF (vector) by rsvg-convert.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tabbook.config import load_config

#: Our LaTeX style, shipped beside the builder (a book may override it with
#: its own ``static/latex/tabbook.sty``).
BUILDER_STY = Path(__file__).resolve().parents[2] / "static" / "latex" / "tabbook.sty"
#: The root document's LaTeX file; ``tabbook.render.pdf`` renames the PDF per framework.
TEX_NAME = "book.tex"

FONTS = r"""
\usepackage{unicode-math}
\setmainfont{TeX Gyre Pagella}
\setsansfont{TeX Gyre Heros}[Scale=MatchLowercase]
\setmonofont{Inconsolata}[Scale=MatchLowercase, AutoFakeBold=2.5, AutoFakeSlant=0.15]
\setmathfont{TeX Gyre Pagella Math}
\setmathfont{TeX Gyre Pagella Math}[version=bold, FakeBold=2]
"""

# Sphinx's \sphinxsetup keys (see "LaTeX customization" in Sphinx's docs).
SPHINXSETUP = ",".join([
    "verbatimwithframe=true",
    "verbatimwrapslines=true",
    "verbatimforcewraps=true",  # also break long tokens: nothing is ever cut at the margin
    "verbatimmaxoverfull=2",
    "verbatimmaxunderfull=60",
    "verbatimhintsturnover=false",
    "pre_border-width=0.5pt",
    "pre_border-radius=2pt",
    "pre_padding=4pt",
    r"VerbatimColor={RGB}{247,247,245}",
    r"VerbatimBorderColor={RGB}{205,205,200}",
    r"TitleColor={RGB}{30,30,30}",
    r"InnerLinkColor={RGB}{20,70,140}",
    r"OuterLinkColor={RGB}{140,40,20}",
    "HeaderFamily=\\sffamily\\bfseries",
    "hmargin={1.05in,1.05in}",
    "vmargin={1in,1in}",
])


def _escape(text: str) -> str:
    from sphinx.util.texescape import escape

    return escape(text, latex_engine="xelatex")


def style_file(root: Path) -> Path:
    """The book's own ``static/latex/tabbook.sty`` if it has one, else the builder's."""
    own = root / "static" / "latex" / "tabbook.sty"
    return own if own.is_file() else BUILDER_STY


def latex_settings(root: Path) -> dict[str, Any]:
    """The ``latex_*`` (and LaTeX mime priority) settings of the book at ``root``."""
    book = load_config(root)
    return {
        "latex_engine": "xelatex",
        "latex_documents": [
            (book.rel(book.index).removesuffix(".md"), TEX_NAME, _escape(book.title), _escape(book.author).replace(", ", r" \and "),
             "manual"),
        ],
        "latex_toplevel_sectioning": "chapter",
        "latex_use_xindy": False,  # makeindex is part of texlive-base; xindy is not installed
        "latex_domain_indices": False,
        "latex_show_urls": "footnote",
        "latex_show_pagerefs": False,
        "latex_additional_files": [str(style_file(root))],
        "latex_elements": {
            "papersize": "letterpaper",
            "pointsize": "10pt",
            "classoptions": ",openany,oneside",  # read on screen: no blank left pages
            "fontpkg": FONTS,
            "fncychap": "",  # our own chapter heads (tabbook.sty)
            "releasename": "Version",
            "sphinxsetup": SPHINXSETUP,
            "preamble": "\\usepackage{tabbook}\n",
            "printindex": "",  # the book has no index entries; no empty "Index" chapter
            "makeindex": "",
            "figure_align": "htbp",
            "fvset": r"\fvset{fontsize=\small}",
        },
        # Framework → its library module: a PDF's API reference keeps its own.
        "tabbook_modules": {name: f"{book.library_dir.name}.{fw.module}" for name, fw in book.frameworks.items()},
        # Notebook outputs: vector PDF (``use_svg_display()`` emits it) before PNG;
        # SVG-only outputs are converted to PDF by the extension's rsvg converter.
        "nb_mime_priority_overrides": [
            ("latex", "application/pdf", 10),
            ("latex", "image/png", 20),
            ("latex", "image/jpeg", 30),
            ("latex", "image/svg+xml", 35),
            ("latex", "text/latex", 40),
            ("latex", "text/markdown", 50),
            ("latex", "text/plain", 60),
        ],
    }
