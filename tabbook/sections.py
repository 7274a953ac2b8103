"""d2lbook's ``[html]``, ``[pdf]``, ``[colab]`` and ``[deploy]`` keys as typed sections, and
:class:`Unused`: the d2lbook keys accepted with the reason they do nothing.

Why a module of its own: these sections are d2lbook's vocabulary, read with its meaning; the
schema (:mod:`tabbook.schema`) holds them as fields of :class:`~tabbook.schema.Config`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tabbook.addresses import colab_libs, header_links, prefix_url
from tabbook.settings import (
    book_file,
    book_globs,
    choice,
    setting,
    text,
)


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



