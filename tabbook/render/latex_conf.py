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

import functools
import subprocess
from pathlib import Path

from tabbook.config import Config, config_error
from tabbook.errors import BookError
from tabbook.execute.outputs import OUTPUT_KINDS
from tabbook.render.context import RenderContext, render_context
from tabbook.render.formats import PDF

#: Our LaTeX style, package data of tabbook (installed with it; a book may override it with
#: its own ``static/latex/tabbook.sty``).
BUILDER_STY = Path(__file__).resolve().parent / "latex" / "tabbook.sty"
#: The root document's LaTeX file; ``tabbook.render.pdf`` renames the PDF per framework.
TEX_NAME = "book.tex"

#: tabbook's fonts: [pdf] main_font, sans_font, mono_font (d2lbook's keys) replace them when installed.
DEFAULT_FONTS = {"main_font": "TeX Gyre Pagella", "sans_font": "TeX Gyre Heros", "mono_font": "Inconsolata"}
FONTS = r"""
\usepackage{unicode-math}
\setmainfont{MAIN_FONT}
\setsansfont{SANS_FONT}[Scale=MatchLowercase]
\setmonofont{MONO_FONT}[Scale=MatchLowercase, AutoFakeBold=2.5, AutoFakeSlant=0.15]
\setmathfont{TeX Gyre Pagella Math}
\setmathfont{TeX Gyre Pagella Math}[version=bold, FakeBold=2]
"""


@functools.lru_cache(maxsize=1)
def installed_fonts() -> frozenset[str]:
    """The font families fontconfig knows (``fc-list : family``), lower-cased; xelatex finds
    fonts through fontconfig. Empty when fc-list is missing (then no named font is used)."""
    try:
        out = subprocess.run(["fc-list", ":", "family"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return frozenset()
    return frozenset(name.strip().lower() for line in out.splitlines() for name in line.split(","))


def chosen_fonts(wanted: tuple[tuple[str, str], ...]) -> tuple[dict[str, str], list[tuple[str, str]]]:
    """The PDF's fonts: each ``[pdf] *_font`` the book names (``wanted``: (key, family)) when it
    is installed, tabbook's otherwise; and the (key, family) pairs that fall back."""
    fonts, missing = dict(DEFAULT_FONTS), []
    for key, family in wanted:
        if family.lower() in installed_fonts():
            fonts[key] = family
        else:
            missing.append((key, family))
    return fonts, missing


def font_warnings(config: Config) -> list[BookError]:
    """A warning at the key's line for each ``[pdf] *_font`` that is not installed."""
    return [config_error(config, "pdf", key, f"{family!r} is not installed (fc-list knows no such family): "
                         f"falling back to {DEFAULT_FONTS[key]}")
            for key, family in chosen_fonts(render_context(config).fonts)[1]]


#: A citation or reference in a figure's or table's caption is a ``\\hyperlink`` in a moving
#: argument (the caption is written to the list of figures), where hyperref's fragile macro
#: stops LaTeX ("Undefined control sequence"); made robust in the preamble every book gets, so a
#: book's own ``tabbook.sty`` cannot lose it.
ROBUST_LINKS = "\\usepackage{etoolbox}\\robustify{\\hyperlink}\\robustify{\\hyperref}\n"


def fonts_preamble(wanted: tuple[tuple[str, str], ...]) -> str:
    text = FONTS
    for key, family in chosen_fonts(wanted)[0].items():
        text = text.replace(key.upper(), family.replace("\\", "").replace("{", "").replace("}", ""))
    return text

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


def tex_text(text: str) -> str:
    """``text`` (a configuration value: the title, an author, a tab's label) as LaTeX that typesets
    it literally: ``X \\input{/etc/hostname}`` is those characters on the title page, not the
    build machine's name.

    Why the ``init()``: Sphinx's escape tables are empty until its LaTeX builder starts, and the
    settings are made before that (``conf.py``, ``config-inited``): without it every character
    went through as it was, a backslash included."""
    from sphinx.util import texescape

    texescape.init()  # fills the tables; idempotent
    return texescape.escape(text, latex_engine="xelatex")


def style_file(root: Path) -> Path:
    """The book's own ``static/latex/tabbook.sty`` if it has one, else the builder's."""
    own = root / "static" / "latex" / "tabbook.sty"
    return own if own.is_file() else BUILDER_STY


def latex_settings(book: RenderContext) -> dict[str, object]:
    """The ``latex_*`` (and LaTeX mime priority) settings of the book the context describes."""
    # [pdf] latex_logo: Sphinx copies it beside the .tex file; the title page (tabbook.sty) shows it.
    logo = {"latex_logo": book.latex_logo} if book.latex_logo else {}
    return {
        **logo,
        "latex_engine": "xelatex",
        "latex_documents": [
            (book.root_doc, TEX_NAME, tex_text(book.title), tex_text(book.author).replace(", ", r" \and "),
             "manual"),
        ],
        "latex_toplevel_sectioning": "chapter",
        "latex_use_xindy": False,  # makeindex is part of texlive-base; xindy is not installed
        "latex_domain_indices": False,
        "latex_show_urls": "footnote",
        "latex_show_pagerefs": False,
        "latex_additional_files": [str(style_file(Path(book.root)))],
        "latex_elements": {
            "papersize": "letterpaper",
            "pointsize": "10pt",
            "classoptions": ",openany,oneside",  # read on screen: no blank left pages
            "fontpkg": fonts_preamble(book.fonts),
            "fncychap": "",  # our own chapter heads (tabbook.sty)
            "releasename": "Version",
            "sphinxsetup": SPHINXSETUP,
            "preamble": ("\\newcommand{\\tabbooklogo}{\\sphinxlogo\\vspace{12pt}}\n" if logo else "")
            + "\\usepackage{tabbook}\n" + ROBUST_LINKS,
            "printindex": "",  # the book has no index entries; no empty "Index" chapter
            "makeindex": "",
            "figure_align": "htbp",
            "fvset": r"\fvset{fontsize=\small}",
        },
        # Framework → its library module: a PDF's API reference keeps its own.
        "tabbook_modules": dict(book.modules),
        # Notebook outputs, in the order the kinds say (tabbook.execute.outputs): vector PDF
        # (``use_svg_display()`` emits it) before PNG; SVG-only outputs are converted to PDF by
        # the extension's rsvg converter.
        "nb_mime_priority_overrides": [(PDF.builder, k.mime, k.pdf) for k in OUTPUT_KINDS if k.pdf is not None],
    }
