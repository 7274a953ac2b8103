"""Render: the reader's site (HTML only; LaTeX builds are untouched).

What makes the HTML a site rather than Sphinx's defaults, and nothing about tabs (:mod:`.tabs`)
or math (:mod:`.math`, which has its own state and parallel-build story):

- Pages with executed notebooks get a downloads line under their title: the notebook per framework,
  the PDFs, and "Open in Colab" where the book names a repository (:mod:`tabbook.render.site`).
- Images load lazily, so hidden framework tabs cost nothing until shown.
- Assets a page does not use are not linked: sphinx-design's stylesheet (only pages with
  sphinx-design components other than tabs need it; tabbook.css styles tabs), its tab script
  (tabbook.js does the syncing, accessibly), myst-nb's stylesheet (tabbook.css styles cells), and
  Sphinx's search-term highlighter outside the search page (tabbook.js loads it for a reader who
  comes from a search).
- Code is highlighted with fewer spans: tokens drawn like plain text in both the light and the
  dark style lose their wrapper (same pixels, a third less HTML on code-heavy pages).
- Toctree captions get the ``aria-level`` their ``role="heading"`` requires.
- ``tabbook.js`` and ``tabbook.css`` are served compact.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.transforms.post_transforms import SphinxPostTransform
from sphinx.util.osutil import relative_uri
from sphinx.util.typing import ExtensionMetadata

from tabbook.files import write_atomic
from tabbook.render.context import RenderContext
from tabbook.render.ext import PageContext, prepend_to_page
from tabbook.render.formats import HTML_NAME, ForFormat, Format, Images, format_of
from tabbook.render.names import SYNC_GROUP
from tabbook.render.site import (
    NO_PDF_NOTE,
    Link,
    available_pdfs,
    compact_css,
    compact_js,
    deck_target,
    header_links_html,
    links_for,
    pdf_url,
    publish_downloads,
)

OTHER_SD_COMPONENT = re.compile(r'class="[^"]*\bsd-(?!tab-)[a-z]')


# ---- lean code markup --------------------------------------------------------------------------

def plain_token_types(styles: list[Any]) -> frozenset[Any]:
    """Standard Pygments token types that every given style draws exactly like plain text (or,
    for whitespace, invisibly): their ``<span class="n">`` wrappers change nothing on screen.
    Generic tokens (prompts, console output, tracebacks) keep theirs: the copy button reads them."""
    from pygments.token import STANDARD_TYPES, Generic, Text, Whitespace

    plain = set()
    for ttype in STANDARD_TYPES:
        if ttype in Generic:
            continue
        same = True
        for style in styles:
            base, own = style.style_for_token(Text), style.style_for_token(ttype)
            if ttype in Whitespace:
                same = not (own["underline"] or own["bgcolor"] or own["border"])
            else:
                same = {**own, "color": own["color"] or base["color"]} == base
            if not same:
                break
        if same:
            plain.add(ttype)
    return frozenset(plain)


def _lean_highlighting(app: Sphinx) -> None:
    """Pygments wraps every token in a span; about half of them (names, punctuation, spaces)
    look exactly like the text around them in the light and the dark style. Leaving those out
    makes a code-heavy page's HTML roughly a third smaller, with the same pixels."""
    highlighter = getattr(app.builder, "highlighter", None)
    if not format_of(app.builder).web_page or highlighter is None or highlighter.dest != HTML_NAME:
        return
    from sphinx.highlighting import PygmentsBridge

    styles = [highlighter.formatter_args["style"]]
    dark = getattr(app.config, "pygments_dark_style", None)  # furo's option
    if dark:
        styles.append(PygmentsBridge(HTML_NAME, dark).formatter_args["style"])
    plain = plain_token_types(styles)
    base = highlighter.formatter

    class LeanFormatter(base):  # type: ignore[misc, valid-type]
        def _get_css_classes(self, ttype: Any) -> str:
            return "" if ttype in plain else super()._get_css_classes(ttype)

    highlighter.formatter = LeanFormatter
    from pygments.token import STANDARD_TYPES

    highlighter.tabbook_plain_classes = frozenset(STANDARD_TYPES[t] for t in plain if STANDARD_TYPES.get(t))


_PYGMENTS_RULE = re.compile(r"^[^{]*\.highlight \.([\w-]+) \{[^}]*\}\s*$")
_CSS_COMMENT = re.compile(r"\s*/\*.*?\*/")


def _lean_pygments_css(app: Sphinx, exception: BaseException | None) -> None:
    """The site's ``pygments.css`` less the rules for token classes no page carries (the lean
    formatter leaves them out) and the comments naming each token type: ~40% of its bytes,
    loaded by every page. Runs after furo has written its light-and-dark version."""
    plain = getattr(getattr(app.builder, "highlighter", None), "tabbook_plain_classes", None)
    path = Path(app.outdir) / "_static" / "pygments.css"
    if exception is not None or not plain or not path.is_file():
        return
    text = path.read_text(encoding="utf-8")
    kept = []
    for line in text.splitlines():
        rule = _PYGMENTS_RULE.match(_CSS_COMMENT.sub("", line))
        if rule and rule.group(1) in plain:
            continue
        kept.append(_CSS_COMMENT.sub("", line))
    lean = "\n".join(kept) + "\n"
    if lean != text:
        path.write_text(lean, encoding="utf-8")


class LazyImages(ForFormat, SphinxPostTransform):
    """``loading="lazy"`` on every image: a hidden tab's plots load only when it is opened."""

    default_priority = 900

    @staticmethod
    def applies(fmt: Format) -> bool:
        return fmt.images is Images.WEB

    def run(self, **kwargs: Any) -> None:
        for image in self.document.findall(nodes.image):
            image.setdefault("loading", "lazy")


# ---- downloads ---------------------------------------------------------------------------------

def _options(app: Sphinx) -> RenderContext | None:
    data = app.config.tabbook_context
    return RenderContext.from_dict(data) if data else None


KINDS = {  # kind: (shown as, link title)
    "Notebook": ("Notebooks", "Download the executed notebook"),
    "PDF": ("PDF", "Download the book as PDF"),
    "Slides": ("Slides", "This section as slides"),
    "Colab": ("Open in Colab", "Open the notebook in Google Colab"),
    "Source": ("Source", "The page's Markdown source"),
}
#: Kinds shown as one link that follows the reader's framework choice (tabbook.js keeps the href,
#: text and title in step with the tabs); the build's default framework is the no-JS fallback.
FOLLOW = ("PDF", "Slides")


def _links_changed(app: Sphinx, env: Any, added: set[str], changed: set[str], removed: set[str]) -> list[str]:
    """Re-write pages whose download links changed since the last build (a PDF appeared, a
    notebook was added): Sphinx cannot see those files, so it is told here."""
    opts = _options(app)
    if opts is None or not format_of(app.builder).downloads:
        return []
    current = {doc: [tuple(vars(link).values()) for link in links_for(opts, doc)] for doc in env.found_docs}
    before = getattr(env, "tabbook_links", {})
    env.tabbook_links = current
    return sorted(doc for doc, links in current.items() if doc in before and before[doc] != links)


def follow_link_html(group: list[Link], template: str, default: str) -> str:
    """One ``<a>`` for a kind offered per framework: its href is the default framework's (or the
    first offered); ``data-href`` is the URL with ``{fw}`` for the framework and
    ``data-fws`` the frameworks offered (``name:Label|…``), what the tab script needs to
    point it at the reader's choice: a few bytes on every page, not every URL spelled out."""
    import html as htmlmod

    first = next((link for link in group if link.fw == default), group[0])
    attrs = {  # no title: it would name the framework, and the text already does
        "class": "tabbook-follow",
        "href": template.replace("{fw}", first.fw),
        "data-sync-group": SYNC_GROUP,
        "data-href": template,
        # a label's ":" or "|" would read as the separators: they become spaces
        "data-fws": "|".join(f"{link.fw}:{re.sub('[:|]', ' ', link.label)}" for link in group),
    }
    text = "".join(f' {k}="{htmlmod.escape(v, quote=True)}"' for k, v in attrs.items())
    return f"<a{text}>{htmlmod.escape(first.label)}</a>"


def _bar(links: list[Link], here: str, default: str = "", pdf_missing: bool = False,
         templates: dict[str, str] | None = None) -> nodes.container:
    """The downloads line; ``templates``: kind → its per-framework URL with ``{fw}``
    (root-relative or absolute), for the kinds shown as one link that follows the tabs."""
    bar = nodes.container(classes=["tabbook-downloads"])
    for kind, (shown, title) in KINDS.items():
        group = [link for link in links if link.kind == kind]
        para = nodes.paragraph(classes=["tabbook-downloads-" + kind.lower()])
        para += nodes.inline(shown, shown, classes=["tabbook-downloads-kind"])
        if not group:
            if kind == "PDF" and pdf_missing:
                para["classes"].append("tabbook-downloads-missing")
                para += nodes.inline(NO_PDF_NOTE, NO_PDF_NOTE, classes=["tabbook-missing"])
                bar += para
            continue
        if kind in FOLLOW and templates and kind in templates:
            url = templates[kind]
            url = url if "://" in url else relative_uri(here, url)
            para += nodes.raw("", follow_link_html(group, url, default), format=HTML_NAME)
            bar += para
            continue
        for link in group:
            url = link.url if "://" in link.url else relative_uri(here, link.url)
            para += nodes.reference(link.label, link.label, refuri=url, internal=False,
                                    reftitle=f"{title} ({link.label})")
        bar += para
    return bar


def _front_pdfs(opts: RenderContext, doctree: nodes.document, here: str) -> None:
    """The front page's downloads table gets the PDFs that exist now."""
    from tabbook.render.front import fill_pdf_cells

    pdfs = {}
    for fw in available_pdfs(opts):
        url = pdf_url(opts, fw)
        pdfs[fw] = url if "://" in url else relative_uri(here, url)
    for node in list(doctree.findall(nodes.raw)):
        if HTML_NAME in node.get("format", "").split() and "<!--tabbook-pdf:" in node.astext():
            text = fill_pdf_cells(node.astext(), pdfs, opts.labels)
            node.replace_self(nodes.raw("", text, format=HTML_NAME))


def _downloads_bar(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    if not format_of(app.builder).downloads:
        return
    opts = _options(app)
    if opts is None:
        return
    if opts.front_page and docname == app.config.root_doc:
        _front_pdfs(opts, doctree, app.builder.get_target_uri(docname))
        return  # the front page lists every download itself (tabbook.render.front)
    links = links_for(opts, docname)
    section = next(iter(doctree.findall(nodes.section)), None)
    if section is None or not section.children or not isinstance(section[0], nodes.title):
        return
    pdf_missing = not any(link.kind == "PDF" for link in links)
    templates = {"PDF": pdf_url(opts, "{fw}"), "Slides": deck_target(docname, "{fw}")}
    section.insert(1, _bar(links, app.builder.get_target_uri(docname), opts.default_tab, pdf_missing, templates))


def _publish(app: Sphinx, exception: BaseException | None) -> None:
    fmt = format_of(app.builder)
    if exception is not None or not fmt.web_page:
        return
    outdir = Path(app.outdir)
    opts = _options(app)
    if opts is not None and fmt.downloads:
        publish_downloads(opts, sorted(app.env.found_docs), outdir)
    # Our readable sources, served compact (Sphinx copies them anew each build, before this).
    for name, compact in (("tabbook.js", compact_js), ("tabbook.css", compact_css)):
        path = outdir / "_static" / name
        if path.is_file():
            path.write_text(compact(path.read_text(encoding="utf-8")), encoding="utf-8")


# ---- per-page assets ---------------------------------------------------------------------------

def _basename(asset: Any) -> str:
    return str(getattr(asset, "filename", asset)).rsplit("/", 1)[-1]


def _page_assets(app: Sphinx, pagename: str, templatename: str, context: PageContext,
                 doctree: nodes.document | None) -> None:
    if not format_of(app.builder).web_page:
        return
    css = context.get("css_files")
    js = context.get("script_files")
    body = context.get("body", "") or ""
    if isinstance(css, list):
        drop = {"mystnb"}  # tabbook.css styles cells; myst-nb's file is mostly 256 ANSI colours
        if not OTHER_SD_COMPONENT.search(body):
            drop.add("sphinx-design")
        css[:] = [c for c in css if _basename(c).split(".")[0] not in drop]
    if isinstance(js, list):
        # sphinx-design's tab script: tabbook.js syncs tabs. Sphinx's search-term highlighter:
        # only a reader coming from a search needs it, so tabbook.js loads it then; the search
        # page's own script uses it, so that page keeps it.
        drop_js = {"design-tabs.js"} if pagename == "search" else {"design-tabs.js", "sphinx_highlight.js"}
        js[:] = [s for s in js if _basename(s) not in drop_js]


def _header_links(app: Sphinx, pagename: str, templatename: str, context: PageContext,
                  doctree: nodes.document | None) -> None:
    """``[html] header_links`` (d2lbook's navbar links) above every page's content."""
    opts = _options(app)
    if not format_of(app.builder).navigation or opts is None or not opts.header_links:
        return
    to_root = relative_uri(app.builder.get_target_uri(pagename), "")
    prepend_to_page(context, header_links_html(opts.header_links, to_root))


HEADING_WITHOUT_LEVEL = re.compile(r'role="heading"(?![^>]*aria-level)')


def _heading_levels(app: Sphinx, pagename: str, templatename: str, context: PageContext,
                    doctree: nodes.document | None) -> None:
    """Sphinx writes toctree captions as ``role="heading"`` without the ``aria-level`` ARIA
    requires; give them one (after furo has built its navigation tree)."""
    for key in ("furo_navigation_tree", "body"):
        value = context.get(key)
        if isinstance(value, str) and 'role="heading"' in value:
            context[key] = HEADING_WITHOUT_LEVEL.sub('role="heading" aria-level="2"', value)


HIGHLIGHT_CACHE = "tabbook-highlight.pickle"
#: Builds an unused highlighted block is kept for (a page not written again keeps its entries
#: that long; a code edit's old text ages out).
HIGHLIGHT_KEEP = 50


def _cached_highlighting(app: Sphinx) -> None:
    """Keep Pygments' HTML for each code block between runs (beside the doctrees).

    Why: a page is written again whenever its prose changes, and highlighting its code is the
    largest part of that (~0.6 s for the hundred blocks of this book's training page, four
    tabs each); the code itself did not change. A block's HTML is reused when its text,
    language, options, the formatter (styles, the lean token classes) and the builder's render
    code are the same. A block whose highlighting warned is not kept, so its warning repeats.
    """
    import hashlib
    import pickle

    highlighter = getattr(app.builder, "highlighter", None)
    if not format_of(app.builder).web_page or highlighter is None or highlighter.dest != HTML_NAME:
        return
    from tabbook.files import builder_fingerprint

    path = Path(app.doctreedir) / HIGHLIGHT_CACHE
    try:
        store = pickle.loads(path.read_bytes())
        assert isinstance(store, dict) and isinstance(store["entries"], dict)
    except Exception:  # noqa: BLE001 - no cache, or one from another version: start empty
        store = {"build": 0, "entries": {}}
    store["build"] += 1
    entries: dict[str, tuple[str, int]] = store["entries"]
    style = highlighter.formatter_args.get("style")
    salt = repr((builder_fingerprint(), highlighter.formatter.__qualname__, getattr(style, "__name__", style),
                 sorted((k, repr(v)) for k, v in highlighter.formatter_args.items() if k != "style")))
    original = highlighter.highlight_block

    def highlight_block(source: str, lang: str, opts: dict[str, Any] | None = None, force: bool = False,
                        location: Any = None, **kwargs: Any) -> str:
        key = hashlib.sha256(repr((salt, source, lang, sorted((opts or {}).items()), force,
                                   sorted(kwargs.items()))).encode()).hexdigest()
        hit = entries.get(key)
        if hit is not None:
            entries[key] = (hit[0], store["build"])
            return hit[0]
        warnings = getattr(app, "_warncount", 0)
        html = original(source, lang, opts, force, location, **kwargs)
        if getattr(app, "_warncount", 0) == warnings:
            entries[key] = (html, store["build"])
        return html

    highlighter.highlight_block = highlight_block  # type: ignore[method-assign]

    def save(app: Sphinx, exception: BaseException | None) -> None:
        if exception is not None:
            return
        oldest = store["build"] - HIGHLIGHT_KEEP
        store["entries"] = {k: v for k, v in entries.items() if v[1] > oldest}
        write_atomic(path, pickle.dumps(store, protocol=pickle.HIGHEST_PROTOCOL))

    app.connect("build-finished", save)


def _template_bytecode(app: Sphinx) -> None:
    """Keep the theme's compiled Jinja templates between runs (beside the doctrees).

    Why: every Sphinx run makes a new template environment and compiles furo's templates from
    source again, ~0.2 s of each incremental build (a prose edit's, a live preview's). Jinja's
    file cache keys each template by name and a checksum of its source, so an edited template
    is compiled again; entries are written to a temporary file and renamed (parallel-safe).
    """
    import jinja2

    environment = getattr(getattr(app.builder, "templates", None), "environment", None)
    if isinstance(environment, jinja2.Environment) and environment.bytecode_cache is None:
        folder = Path(app.doctreedir) / "jinja-bytecode"
        folder.mkdir(parents=True, exist_ok=True)
        environment.bytecode_cache = jinja2.FileSystemBytecodeCache(str(folder))


def setup_html(app: Sphinx) -> None:
    """Register the reader's site parts: downloads, lazy images, lean markup, per-page assets."""
    app.add_config_value("tabbook_context", {}, "html", types=(dict,))
    app.add_post_transform(LazyImages)
    app.connect("builder-inited", _lean_highlighting)
    app.connect("builder-inited", _template_bytecode)
    app.connect("builder-inited", _cached_highlighting)
    app.connect("build-finished", _lean_pygments_css, priority=900)  # after furo rewrites it
    app.connect("env-get-outdated", _links_changed)
    app.connect("doctree-resolved", _downloads_bar)
    app.connect("html-page-context", _page_assets)
    app.connect("html-page-context", _header_links)
    app.connect("html-page-context", _heading_levels, priority=900)
    app.connect("build-finished", _publish)


def setup(app: Sphinx) -> ExtensionMetadata:
    setup_html(app)
    return {"version": "0.1", "parallel_read_safe": True, "parallel_write_safe": True}
