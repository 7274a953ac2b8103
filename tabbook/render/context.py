"""What the Sphinx process knows of the book: one render context, made from the Config, serialised.

Sphinx runs in a process of its own, whose ``conf.py`` needs the book's title, tabs and paths
and its ``[site]``, ``[html]``, ``[colab]`` and ``[pdf]`` keys. It used to read ``config.ini``
again there, told through its environment which overlay and interpreters the command line had
chosen, and the reader's site had a second configuration of its own (``SiteOptions``) that went
through Sphinx's config and back. Now the builder, which read the configuration once, writes
what rendering needs as one :class:`RenderContext` (``build/render-context.json``) and names it
in the run's environment (:data:`ENV`); ``conf.py``'s settings, the extensions and the site's
download links all read that object. Checks that need the book's files (an ``include_css``
pattern that names nothing) run here, in the builder, at the key's line.
"""

from __future__ import annotations

import json
import os
import weakref
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, TypedDict

from tabbook.book import named_bibfiles
from tabbook.config import Config, config_error
from tabbook.files import BuildDir, write_if_changed
from tabbook.render.languages import translations

#: Names the serialised context in a Sphinx run's environment (tabbook's own hand-off: set for
#: the processes it starts, never by a user).
ENV = "TABBOOK_RENDER_CONTEXT"
COLAB_GITHUB = "https://colab.research.google.com/github/{repo}/blob/{branch}/{path}"
SLIDES = "_slides"  # the reveal.js decks, under the HTML output directory (tabbook.render.slides)
#: Stylesheets and scripts of tabbook's own (an ``include_css``/``include_js`` file may not take their names).
STATIC = Path(__file__).resolve().parent / "static"


@dataclass(frozen=True)
class RenderContext:
    """What rendering needs of the configuration; every path absolute, as text, so it crosses
    into the Sphinx process as JSON and comes back equal (:meth:`to_json`, :meth:`from_json`)."""

    root: str
    name: str
    tabs: tuple[str, ...]
    labels: dict[str, str]
    default_tab: str = ""
    # [project]
    title: str = ""
    author: str = ""
    version: str = ""
    copyright: str = ""
    lang: str = ""
    root_doc: str = "index"  # [build] index, as Sphinx names the document
    # the book's paths
    freeze_dir: str = ""
    max_output_bytes: int = 0  # [build] max_output_bytes: the downloads read entries with the store's cap
    library_dir: str = ""
    modules: dict[str, str] = field(default_factory=dict)  # tab -> its library module ("d2l.torch")
    pdf_dir: str = ""  # where `make pdf` leaves <name>-<fw>.pdf
    slides_dir: str = ""  # where the decks are written (build/html/_slides)
    resources: tuple[str, ...] = ()
    bibfile: str = ""  # "" when the book has none
    # [pdf] bibfile and the files the pages name on their :bibliography: lines (d2lbook: the key's)
    bibfiles: tuple[str, ...] = ()
    # Documents in the resource folders that are not pages (notebooks, Markdown `notebooks` does
    # not match): left out of Sphinx's reading (root-relative)
    not_pages: tuple[str, ...] = ()
    # [build] sphinx_extensions / sphinx_configs (with where the key is, for its errors)
    sphinx_extensions: tuple[str, ...] = ()
    sphinx_configs: str = ""
    sphinx_configs_at: tuple[str, int] = ("config.ini", 0)
    # [html]
    favicon: str = ""
    html_logo: str = ""
    include_css: tuple[str, ...] = ()  # the files the globs name, checked
    include_js: tuple[str, ...] = ()
    header_links: tuple[tuple[str, str, str], ...] = ()  # (name, URL, Font Awesome icon)
    raw_html: str = "allow"  # [html] raw_html: the pages' own HTML published (allow) or shown as text (escape)
    # [pdf]
    latex_logo: str = ""
    fonts: tuple[tuple[str, str], ...] = ()  # ("main_font", family) the book asks for
    # the reader's site: [site], [project] repository, and d2lbook's [colab] keys applied to the
    # notebooks offered for download: (tab or "" for every tab, import name, pip argument) …
    pdf_url: str = ""
    repo: str = ""  # "owner/name" on GitHub, or "" (no notebook links to open elsewhere)
    branch: str = "main"
    colab_url: str = ""
    front_page: bool = True
    trusted_outputs: bool = False  # [site] trusted_outputs: downloads keep script (render/sanitize.py)
    libs: tuple[tuple[str, str, str], ...] = ()
    libs_header: str = ""
    gpu_pattern: str = ""
    non_notebooks: tuple[str, ...] = ()  # Markdown files (root-relative) copied as they are into each zip
    # `tabbook site` with [site] versions: this build's edition (its label) and every edition's
    # pages (tabbook.render.editions.Edition rows); empty in any other build.
    edition: str = ""
    editions: tuple[tuple[object, ...], ...] = ()
    # The reader's install line (execute/readerlock.py), when the book packages its library and
    # sets no [colab] libs: the package (its index folder name, its wheel's requirement), and per
    # framework the locks' pins and the files they come from.
    install_package: tuple[str, ...] = ()  # (name, "name==version") or ()
    install_pins: dict[str, tuple[str, ...]] = field(default_factory=dict)
    install_locks: dict[str, str] = field(default_factory=dict)
    # [site] languages: document -> its links (role, tag, URL, note): tabbook.render.languages
    translations: dict[str, tuple[tuple[str, str, str, str], ...]] = field(default_factory=dict)

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=1, sort_keys=True)

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> RenderContext:
        """The context :meth:`to_json` wrote (JSON's lists become the tuples they were)."""
        names = {f.name for f in fields(cls)}
        return cls(**{k: _tuples(v) for k, v in data.items() if k in names})

    @classmethod
    def from_json(cls, text: str) -> RenderContext:
        return cls.from_dict(json.loads(text))


def _tuples(value: object) -> Any:  # JSON's lists as tuples: each field's own type
    if isinstance(value, list):
        return tuple(_tuples(v) for v in value)
    if isinstance(value, dict):
        return {k: _tuples(v) for k, v in value.items()}
    return value


def github_repo(url: str) -> str:
    """``https://github.com/o/r(.git)``, ``git@github.com:o/r`` or ``o/r`` → ``o/r``; else ``""``."""
    import re

    url = url.strip()
    m = re.fullmatch(r"(?:https?://github\.com/|git@github\.com:)?([\w.-]+)/([\w.-]+?)(?:\.git)?/?", url)
    if not m or ("://" in url and "github.com" not in url):
        return ""
    return f"{m.group(1)}/{m.group(2)}"


#: The context last made of each configuration object, while that object lives (a build loads
#: its configuration once, and asks for the context five times: the Sphinx run's hand-off at its
#: start and finish, the site stamp, the inputs a spare is checked against, the PDF links; each
#: reads every page for its ``:bibliography:`` lines, 0.03 s on a 40-page book).
_MADE: dict[int, tuple[weakref.ref[Config], RenderContext]] = {}


def render_context(config: Config) -> RenderContext:
    """The render context of the configuration; an ``include_css``/``include_js`` problem is an
    error at its key's line. Made once per configuration object (the files it reads are the
    book's, which a build does not change)."""
    made = _MADE.get(id(config))
    if made is not None and made[0]() is config:
        return made[1]
    context = _render_context(config)
    for key in [k for k, (ref, _) in _MADE.items() if ref() is None]:
        del _MADE[key]
    _MADE[id(config)] = (weakref.ref(config), context)
    return context


def set_editions(config: Config, edition: str, editions: tuple[tuple[object, ...], ...]) -> RenderContext:
    """Make the configuration's render context carry the edition selector's table (``tabbook
    site`` with ``[site] versions`` builds each edition with the pages of all of them, which no
    ``config.ini`` says); every later :func:`render_context` of this object returns it."""
    from dataclasses import replace

    context = replace(render_context(config), edition=edition, editions=editions)
    _MADE[id(config)] = (weakref.ref(config), context)
    return context


def _render_context(config: Config) -> RenderContext:
    repo = github_repo(config.repository) if config.repository else ""
    colab = config.site.colab_url or (COLAB_GITHUB if repo else "")
    build = BuildDir(config.build_dir)
    at = config_error(config, "build", "sphinx_configs", "") if config.sphinx_configs else None
    fonts = tuple((key, getattr(config.pdf, key)) for key in ("main_font", "sans_font", "mono_font")
                  if getattr(config.pdf, key))
    return RenderContext(
        root=str(config.root), name=config.name, tabs=config.tabs,
        labels={name: fw.label for name, fw in config.frameworks.items()}, default_tab=config.default_tab,
        title=config.title, author=config.author, version=config.version, copyright=config.copyright,
        lang=config.lang, root_doc=config.rel(config.index).removesuffix(config.index.suffix),
        freeze_dir=str(config.freeze_dir), max_output_bytes=config.max_output_bytes,
        library_dir=str(config.library_dir),
        modules={name: f"{config.library_dir.name}.{fw.module}" for name, fw in config.frameworks.items()},
        pdf_dir=str(build.pdf), slides_dir=str(build.html / SLIDES), resources=config.resources,
        bibfile=str(config.bibfile) if config.bibfile is not None else "",
        bibfiles=tuple(str(b) for b in named_bibfiles(config)), not_pages=_not_pages(config),
        # an extension that cannot be imported is left out; the check says so at the key's line
        sphinx_extensions=tuple(m for m in config.sphinx_extensions if m not in config.missing_extensions()),
        sphinx_configs=config.sphinx_configs,
        sphinx_configs_at=(at.path or "config.ini", at.line or 0) if at is not None else ("config.ini", 0),
        favicon=str(config.html.favicon or ""), html_logo=str(config.html.html_logo or ""),
        include_css=_included(config, config.html.include_css, "include_css"),
        include_js=_included(config, config.html.include_js, "include_js"),
        header_links=config.html.header_links, raw_html=config.html.raw_html, latex_logo=str(config.pdf.latex_logo or ""), fonts=fonts,
        pdf_url=config.site.pdf_url, repo=repo or config.repository, branch=config.site.branch,
        colab_url=colab if config.repository else "", front_page=config.site.front_page,
        trusted_outputs=config.site.trusted_outputs, libs=config.colab.libs,
        libs_header=config.colab.libs_header, gpu_pattern=config.colab.gpu_pattern,
        non_notebooks=tuple(config.rel(p) for p in config.files(config.non_notebooks)),
        **_install(config),
        translations=translations(config),
    )


class _InstallFields(TypedDict, total=False):
    """The reader notebooks' install fields of :class:`RenderContext` (absent: no install line)."""

    install_package: tuple[str, ...]
    install_pins: dict[str, tuple[str, ...]]
    install_locks: dict[str, str]


def _install(config: Config) -> _InstallFields:
    """The reader notebooks' install line: the book's package and each framework's lock pins
    (none when the book packages no library, or sets d2lbook's ``[colab] libs``, which wins)."""
    from tabbook.execute.readerlock import reader_pins
    from tabbook.render.package import book_package

    package = book_package(config) if not config.colab.libs else None
    if package is None:
        return {}
    pins: dict[str, tuple[str, ...]] = {}
    locks: dict[str, str] = {}
    for tab in config.tabs:
        fw = config.frameworks[tab]
        if fw.requirements is None:
            continue
        pins[tab] = tuple(p.spec for p in reader_pins(fw, config.rel))
        locks[tab] = ", ".join(config.rel(p) for p in (fw.requirements, fw.constraints) if p is not None)
    return {"install_package": (package.name, f"{package.name}=={package.version}"),
            "install_pins": pins, "install_locks": locks}


def _not_pages(config: Config) -> tuple[str, ...]:
    """The documents Sphinx would find in the resource folders linked into its sources that are
    not pages: notebooks, and Markdown that ``notebooks`` does not match (a page there, which
    d2lbook renders too, is generated in its place)."""
    out = []
    for path in config.files(tuple(r for r in config.resources if (config.root / r).is_dir())):
        rel = config.rel(path)
        if path.suffix == ".ipynb" or path.suffix == ".md" and config.excluded(rel):
            out.append(rel)
    return tuple(out)


def _included(config: Config, patterns: tuple[str, ...], key: str) -> tuple[str, ...]:
    """The files ``[html] include_css``/``include_js`` name; a pattern that names nothing, or a
    file whose name is already one of tabbook's, is an error at the key's line."""
    found = config.files(patterns)
    taken = {p.name for p in STATIC.iterdir()}
    for path in found:
        if path.name in taken:
            raise config_error(config, "html", key, f"names {config.rel(path)}, whose file name is one of "
                               f"tabbook's own ({path.name}): rename it")
    if patterns and not found:
        raise config_error(config, "html", key, f"names no file ({' '.join(patterns)})")
    return tuple(str(p) for p in found)


def hand_off(config: Config) -> dict[str, str]:
    """Write the configuration's render context for a Sphinx run (only when it changed) and
    return what names it in that run's environment."""
    path = BuildDir(config.build_dir).render_context
    path.parent.mkdir(parents=True, exist_ok=True)
    write_if_changed(path, render_context(config).to_json() + "\n")
    return {ENV: str(path)}


def received(root: Path) -> RenderContext:
    """The context a Sphinx run was handed (:func:`hand_off`); a Sphinx started by hand on a
    book's ``conf.py``, with none, gets the one its ``config.ini`` gives."""
    named = os.environ.get(ENV)
    if named:
        return RenderContext.from_json(Path(named).read_text(encoding="utf-8"))
    from tabbook.config import load_config

    return render_context(load_config(root))
