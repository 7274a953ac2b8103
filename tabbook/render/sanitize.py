"""What a stored output may do on the reader's site: show, never run script (issue 33, item 3).

A freeze entry is data anyone who can change the repository can write: a pull request that
touches only ``_freeze/`` JSON, a shard store, a Dask worker's result. Its key proves which
code it belongs to, not what its outputs are. So, unless the book opts in (``[site]
trusted_outputs = true``), every output is made inert before it reaches a page, a slide deck,
an image file under ``_images/`` or a downloadable notebook:

- ``text/html`` is cleaned by ``nh3`` (the Ammonia sanitizer): no script, no event handler, no
  ``javascript:`` URL, no frame or form; tables (pandas' HTML and its ``<style>``), images,
  classes, ids and inline styles are kept, so what readers need looks the same.
- ``text/markdown`` that holds HTML becomes that Markdown rendered (CommonMark, the format
  myst-nb renders Markdown outputs in) and cleaned the same way; Markdown without HTML is kept
  as it is.
- ``image/svg+xml`` keeps only SVG elements from an allow-list (no ``script``,
  ``foreignObject``, no animation), no ``on*`` attribute, links only to fragments, the
  web and raster ``data:`` images; an SVG with nothing to remove is kept byte for byte (a
  matplotlib figure is unchanged), and one that is not well-formed XML is dropped (Chromium
  runs the script before a parse error).
- ``text/latex`` that reads or writes files, runs programs or redefines commands (``\\input``,
  ``\\write``, ``\\def``, ``\\catcode``, ``^^`` escapes, …: :data:`_ACTIVE_TEX`) is dropped:
  the PDFs' TeX would run it on the machine that builds them.
- Every other type that is not plain data (``application/javascript``, widget views, vendor
  types whose renderers are script) is dropped; an output left with nothing shows a note. A
  Markdown or raw cell put into an entry by hand is shown as code, and widget state in the
  notebook's metadata is dropped.

The functions are pure (a notebook in, a cleaned copy out); :class:`PublishedNotebooks` cleans
lazily, so a build pays only for the pages it merges again.
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator, Mapping
from pathlib import Path
from urllib.parse import urlsplit

from tabbook.execute.outputs import KINDS, Clean
from tabbook.execute.store import text as nb_text
from tabbook.nbjson import MimeBundle, Notebook

#: What an output whose every type was dropped shows instead.
DROPPED_NOTE = ("[an output this site does not show: it would run script in the reader's browser "
                "(the book's [site] trusted_outputs is off)]")
#: TeX that reads or writes files, runs programs or redefines what later text means: a
#: ``text/latex`` output is typeset by KaTeX on the site (``trust: false``) and by TeX in the PDFs,
#: where ``\input{~/.ssh/id_rsa}`` would print a file of the machine that builds them. Formulas
#: (sympy's, IPython's ``Latex``) use none of it; an output that does keeps its text form only.
_ACTIVE_TEX = re.compile(
    r"\\(input|include|InputIfFileExists|openin|openout|read|readline|write|immediate|catcode|csname|"
    r"endcsname|special|def|edef|gdef|xdef|let|futurelet|makeatletter|jobname|directlua|latelua|"
    r"usepackage|RequirePackage|documentclass|includegraphics|verbatiminput|lstinputlisting|"
    r"scantokens|expandafter|newcommand|renewcommand|providecommand|DeclareRobustCommand|href|url|"
    r"pdfobj|pdfliteral|pdfannot|pdfstartlink|ShellEscape|endinput|afterassignment|every[a-z]+|"
    r"output|end\s*\{\s*document|begin\s*\{\s*document)(?![A-Za-z])|\^\^")

# ---- HTML ----------------------------------------------------------------------------------------

_HTML_TAGS = {
    "a", "abbr", "b", "bdi", "bdo", "blockquote", "br", "caption", "center", "cite", "code", "col", "colgroup",
    "dd", "del", "details", "dfn", "div", "dl", "dt", "em", "figcaption", "figure", "font", "h1", "h2", "h3", "h4",
    "h5", "h6", "hr", "i", "img", "ins", "kbd", "li", "mark", "ol", "p", "pre", "q", "s", "samp", "small", "span",
    "strike", "strong", "style", "sub", "summary", "sup", "table", "tbody", "td", "tfoot", "th", "thead", "time",
    "tr", "tt", "u", "ul", "var", "wbr",
}
#: Attributes any kept tag may carry: what tables (pandas, its Styler) and styled text use.
_ANY_TAG_ATTRIBUTES = {"class", "id", "style", "title", "lang", "dir", "align", "valign", "border", "width",
                       "height", "bgcolor", "color", "colspan", "rowspan", "scope", "span", "cellpadding",
                       "cellspacing", "headers", "start", "type"}
_TAG_ATTRIBUTES = {"a": {"href", "name", "target"}, "img": {"src", "alt"}, "font": {"face", "size"},
                   "style": {"type", "scoped", "media"}, "details": {"open"}, "time": {"datetime"}}
_URL_SCHEMES = {"http", "https", "mailto", "data"}
#: ``data:`` URLs an image may load (inert in an ``<img>``, whatever they hold).
_DATA_IMAGE = re.compile(r"data:image/(png|jpeg|gif|webp|bmp|svg\+xml)[;,]", re.I)


def _html_attribute(tag: str, attr: str, value: str) -> str | None:
    """nh3's per-attribute hook: a ``data:`` URL only as an image's source."""
    if attr in ("href", "src") and value.strip().lower().startswith("data:"):
        return value if tag == "img" and attr == "src" and _DATA_IMAGE.match(value.strip()) else None
    return value


def clean_html(html: str) -> str:
    """``html`` without anything that runs script (nh3, with the allow-lists above)."""
    import nh3

    attributes = {tag: set(attrs) for tag, attrs in _TAG_ATTRIBUTES.items()}
    attributes["*"] = set(_ANY_TAG_ATTRIBUTES)
    return str(nh3.clean(html, tags=_HTML_TAGS, clean_content_tags={"script", "noscript", "template"},
                         attributes=attributes, attribute_filter=_html_attribute, url_schemes=_URL_SCHEMES,
                         strip_comments=True, link_rel="noopener noreferrer"))


def markdown_has_html(text: str) -> bool:
    """Whether CommonMark (myst-nb's format for Markdown outputs) reads any raw HTML in ``text``."""
    from markdown_it import MarkdownIt

    for token in MarkdownIt("commonmark").parse(text):
        if token.type == "html_block" or any(c.type == "html_inline" for c in token.children or ()):
            return True
    return False


def markdown_to_clean_html(text: str) -> str:
    from markdown_it import MarkdownIt

    return clean_html(MarkdownIt("commonmark").render(text))


# ---- SVG -----------------------------------------------------------------------------------------

SVG_NS = "http://www.w3.org/2000/svg"
XLINK_NS = "http://www.w3.org/1999/xlink"
#: Namespaces whose elements a figure's ``<metadata>`` holds (matplotlib writes RDF / Dublin Core).
_METADATA_NS = ("http://www.w3.org/1999/02/22-rdf-syntax-ns#", "http://creativecommons.org/ns#",
                "http://purl.org/dc/elements/1.1/", "http://purl.org/dc/terms/")
_SVG_ELEMENTS = {
    "svg", "g", "defs", "desc", "title", "metadata", "symbol", "use", "image", "switch", "style", "path", "rect",
    "circle", "ellipse", "line", "polyline", "polygon", "text", "tspan", "textPath", "a", "clipPath", "mask",
    "marker", "pattern", "linearGradient", "radialGradient", "stop", "filter", "view", "feBlend", "feColorMatrix",
    "feComponentTransfer", "feComposite", "feConvolveMatrix", "feDiffuseLighting", "feDisplacementMap",
    "feDistantLight", "feDropShadow", "feFlood", "feFuncA", "feFuncB", "feFuncG", "feFuncR", "feGaussianBlur",
    "feImage", "feMerge", "feMergeNode", "feMorphology", "feOffset", "fePointLight", "feSpecularLighting",
    "feSpotLight", "feTile", "feTurbulence",
}
#: CSS that old engines ran as script: never worth keeping in a figure.
_SCRIPT_CSS = re.compile(r"javascript:|expression\s*\(|-moz-binding|behavior\s*:", re.I)
#: Anything in a document's prolog that could make a browser read it otherwise than expat does
#: (an internal DTD subset, entities, an XSLT stylesheet): its text is then never kept as it is.
_PROLOG_RISK = re.compile(r"<!DOCTYPE[^>]*\[|<!ENTITY|<\?(?!xml\s)", re.I)


#: What every way an SVG document runs script, embeds a document or loads one needs somewhere in
#: its text: a script element, an event handler, a link or source other than a fragment, a
#: script URL, an embedding element, an entity or a processing instruction (an XSLT stylesheet).
#: An SVG none of which appears is kept as it is without parsing it (a book's figures, every
#: build); any match sends it through the parser and the allow-list. Words are looked for in the
#: lower-cased text; patterns only where a word is not enough.
_ACTIVE_WORDS = ("script", "data:", "foreignobject", "iframe", "embed", "object", "<!entity", "&#", "<set",
                 "<animate", "<handler", "<listener", "expression", "-moz-binding", "behavior")
_ACTIVE_PATTERNS = re.compile(r"[\s/]on[a-z]+\s*=|(?:href|src)\s*=\s*(?![\"']\s*#)|url\s*\(\s*[\"']?\s*(?!#)"
                              r"|<\?(?!xml\s)|<!doctype[^>]*\[")


def _maybe_active(svg: str) -> bool:
    low = svg.lower()
    return any(word in low for word in _ACTIVE_WORDS) or bool(_ACTIVE_PATTERNS.search(low))


def _local(name: str) -> tuple[str, str]:
    if name.startswith("{"):
        ns, _, local = name[1:].partition("}")
        return ns, local
    return "", name


def _safe_url(value: str, element: str) -> bool:
    url = re.sub(r"[\x00-\x20]", "", value)
    if url.startswith("#") or url == "":
        return True
    if url.lower().startswith("data:"):
        return element in ("image", "feImage") and bool(_DATA_IMAGE.match(url))
    scheme = urlsplit(url).scheme.lower()
    return scheme in ("http", "https", "mailto") or (scheme == "" and element in ("a", "image", "feImage"))


def _clean_svg_element(el: ET.Element, in_metadata: bool) -> bool:
    """Clean ``el``'s attributes and children in place; returns whether anything was removed."""
    removed = False
    ns, local = _local(el.tag)
    for name in list(el.attrib):
        ans, alocal = _local(name)
        value = el.attrib[name]
        drop = alocal.lower().startswith("on") or ans == "http://www.w3.org/2001/xml-events"
        if alocal == "href" and ans in ("", XLINK_NS):
            drop = drop or not _safe_url(value, local)
        if alocal == "style" or ans not in ("", XLINK_NS, "http://www.w3.org/XML/1998/namespace"):
            drop = drop or bool(_SCRIPT_CSS.search(value))
        if drop:
            del el.attrib[name]
            removed = True
    for child in list(el):
        if not isinstance(child.tag, str):  # a comment or processing instruction kept by a parser
            el.remove(child)
            removed = True
            continue
        cns, clocal = _local(child.tag)
        keep = (cns == SVG_NS and clocal in _SVG_ELEMENTS) or (in_metadata and cns in _METADATA_NS)
        if keep and clocal == "style" and _SCRIPT_CSS.search("".join(child.itertext())):
            keep = False
        if not keep:
            el.remove(child)
            removed = True
            continue
        removed |= _clean_svg_element(child, in_metadata or clocal == "metadata")
    return removed


def clean_svg(svg: str) -> str | None:
    """``svg`` with nothing that runs script; the same text when nothing had to go, None when it
    is not a well-formed SVG document (a browser would still run what precedes the error)."""
    if not _maybe_active(svg):
        return svg
    try:
        root = ET.fromstring(svg)
    except (ET.ParseError, ValueError):
        return None
    if _local(root.tag) != (SVG_NS, "svg"):
        return None
    removed = _clean_svg_element(root, False)
    if not removed and not _PROLOG_RISK.search(svg):
        return svg
    ET.register_namespace("", SVG_NS)
    ET.register_namespace("xlink", XLINK_NS)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode")


# ---- notebooks -----------------------------------------------------------------------------------


def clean_bundle(data: MimeBundle) -> MimeBundle:
    """A mime bundle as the site shows it untrusted (see the module's docstring)."""
    out: MimeBundle = {}
    for mime, value in data.items():
        clean = KINDS[mime].clean if mime in KINDS else None  # none: a type that needs script
        if clean is Clean.PLAIN:
            out[mime] = value
        elif clean is Clean.HTML:
            out[mime] = clean_html(nb_text(value))
        elif clean is Clean.LATEX:
            if not _ACTIVE_TEX.search(nb_text(value)):
                out[mime] = value
        elif clean is Clean.SVG:
            svg = clean_svg(nb_text(value))
            if svg is not None:
                out[mime] = svg if svg != nb_text(value) else value
        elif clean is Clean.MARKDOWN:
            text = nb_text(value)
            if not markdown_has_html(text):
                out[mime] = value
            elif "text/html" not in data:
                out["text/html"] = markdown_to_clean_html(text)
    if not out or set(out) <= {"application/pdf"}:
        out["text/plain"] = DROPPED_NOTE
    return out


def untrusted_notebook(nb: Notebook) -> Notebook:
    """``nb`` with every output's bundle cleaned; ``nb`` itself when nothing had to change."""
    changed = False
    cells = []
    for cell in nb.get("cells", []):
        if isinstance(cell, dict) and cell.get("cell_type") != "code":
            # An entry holds the code cells a unit ran, nothing else: a Markdown or raw cell put
            # there by hand would be rendered (MyST directives, raw HTML). Shown as code instead.
            cell = {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
                    "source": cell.get("source", "")}
            changed = True
        outputs = cell.get("outputs") if isinstance(cell, dict) else None
        if not isinstance(outputs, list):
            cells.append(cell)
            continue
        new_outputs = []
        for output in outputs:
            data = output.get("data") if isinstance(output, dict) else None
            if isinstance(data, dict):
                cleaned = clean_bundle(data)
                if cleaned != data:
                    meta = output.get("metadata")
                    if isinstance(meta, dict):  # per-type metadata of a type kept only
                        meta = {k: v for k, v in meta.items() if "/" not in k or k in cleaned}
                    output = {**output, "data": cleaned, **({"metadata": meta} if meta is not None else {})}
                    changed = True
            new_outputs.append(output)
        cells.append({**cell, "outputs": new_outputs})
    meta = nb.get("metadata")
    if isinstance(meta, dict) and "widgets" in meta:  # widget state: Jupyter renders it with script
        meta = {k: v for k, v in meta.items() if k != "widgets"}
        changed = True
    if not changed:
        return nb
    out = copy.copy(nb)
    out["cells"] = cells
    if isinstance(meta, dict):
        out["metadata"] = meta
    return out


class PublishedNotebooks(Mapping[tuple[str, str], Notebook]):
    """The executed notebooks as the site may show them: cleaned on first access (and then
    remembered), so a build that merges few pages cleans few notebooks.

    The front page reads every notebook's provenance on every build, so with ``memo`` (a file
    under ``build/``) the entries found to need no cleaning are remembered by their store
    signature (the size and time the plan's reuse and the sources memo already go by) and this
    module's code: an unchanged book's outputs are not scanned again. :meth:`save` writes it.
    """

    def __init__(self, notebooks: Mapping[tuple[str, str], Notebook],
                 origins: Mapping[tuple[str, str], str] | None = None, memo: Path | None = None) -> None:
        self._raw = notebooks
        self._clean: dict[tuple[str, str], Notebook] = {}
        self._origins = origins or {}
        self._memo = memo
        self._code = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()
        self._known: set[str] = set()
        self._seen: set[str] = set()  # clean entries met in this build: what the memo keeps
        if memo is not None:
            try:
                data = json.loads(memo.read_text(encoding="utf-8"))
                if data.get("code") == self._code:
                    self._known = {str(x) for x in data.get("clean", [])}
            except (OSError, ValueError, AttributeError, TypeError):
                pass

    def _signature(self, key: tuple[str, str]) -> str | None:
        origin = self._origins.get(key, "")
        return f"{key[0]} {key[1]} {origin}" if origin.startswith("entry ") else None

    def __getitem__(self, key: tuple[str, str]) -> Notebook:
        if key not in self._clean:
            raw = self._raw[key]
            sig = self._signature(key)
            if sig is not None and sig in self._known:
                self._clean[key] = raw
            else:
                self._clean[key] = untrusted_notebook(raw)
            if sig is not None and self._clean[key] is raw:
                self._seen.add(sig)
        return self._clean[key]

    def __iter__(self) -> Iterator[tuple[str, str]]:
        return iter(self._raw)

    def __len__(self) -> int:
        return len(self._raw)

    def __contains__(self, key: object) -> bool:
        return key in self._raw

    def save(self) -> None:
        """Remember the clean entries met in this build (only when that changed what is known)."""
        if self._memo is None:
            return
        current = {self._signature(k) for k in self._raw}
        keep = self._seen | (self._known & current)  # entries of the book as it is now
        if keep == self._known:
            return
        from tabbook.files import write_atomic

        try:
            write_atomic(self._memo, json.dumps({"code": self._code, "clean": sorted(keep)}))
        except OSError:
            pass  # only slower next time


def published(notebooks: Mapping[tuple[str, str], Notebook], trusted: bool,
              origins: Mapping[tuple[str, str], str] | None = None,
              memo: Path | None = None) -> Mapping[tuple[str, str], Notebook]:
    """What the site shows of ``notebooks``: all of it for a book that trusts its outputs."""
    return notebooks if trusted else PublishedNotebooks(notebooks, origins, memo)


def published_origins(origins: dict[tuple[str, str], str], trusted: bool) -> dict[tuple[str, str], str]:
    """The plan's origins of the notebooks, marked with the trust setting: a merged page is made
    from its entries *and* how they were published, so flipping the key merges every page again."""
    return origins if trusted else {k: f"{v} untrusted" for k, v in origins.items()}
