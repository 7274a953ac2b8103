"""Render: a site every reader can use, whatever they read it with (HTML only).

What axe-core and readers found, each fixed where it starts:

- **Alt text.** Sphinx writes an image's path as its alt text when the source gave none
  (``alt="../_images/copy-between-devices.svg"``; a plot's is a hash), and a screen reader reads
  that out. Each image gets words instead (:class:`ImageWords`): an SVG's own ``<title>``, else
  its figure's caption (the first sentence), else, for a plot a cell drew, "Figure drawn by the
  code above" with the labels it shows (matplotlib keeps each text of an SVG in a comment).
- **Image sizes.** Images load lazily (a hidden tab's plots cost nothing until shown) and had no
  size, so the page jumped as each arrived. Every image of ``_images/`` gets its intrinsic
  ``width`` and ``height`` (read from the SVG, PNG, GIF or JPEG itself): the browser reserves its
  box, and the stylesheet keeps the ratio in a narrower column.
- **Header cells.** A table's empty corner cell (``| | CPU | GPU |``) was an empty ``<th>``: it
  becomes a ``<td>``, which needs no name.
- **Landmarks.** furo's two ``<aside>`` regions (the site's navigation, the page's contents) had
  no name to tell them apart: each gets one.

Scroll boxes (code, outputs, equations wider than the column) are made reachable by keyboard in
``tabbook.js``, which alone knows which of them overflow on the reader's screen.
"""

from __future__ import annotations

import html
import re
import struct
from functools import lru_cache
from pathlib import Path
from typing import Any

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.transforms.post_transforms import SphinxPostTransform
from sphinx.util.typing import ExtensionMetadata

from tabbook.render.ext import PageContext
from tabbook.render.formats import ForFormat, Format, Images, format_of

#: What an output plot's alt text starts with.
PLOT_WORDS = "Figure drawn by the code above"
#: The names furo's landmarks get (class of the ``<aside>`` → its ``aria-label``).
LANDMARKS = {"sidebar-drawer": "Site navigation", "toc-drawer": "On this page"}

# ---- what an image shows, in words --------------------------------------------------------------

_SVG_TITLE = re.compile(r"<title[^>]*>(.*?)</title>", re.S)
_SVG_TEXT = re.compile(r"<!-- (.+?) -->")
_NUMBER = re.compile(r"^[−+-]?[\d.,]+%?$|\$")


def _first_sentence(text: str, limit: int = 160) -> str:
    text = " ".join(text.split())
    m = re.search(r"[.!?](\s|$)", text)
    sentence = text[:m.end()].strip() if m else text
    return sentence if len(sentence) <= limit else sentence[:limit].rsplit(" ", 1)[0] + "…"


@lru_cache(maxsize=1024)
def svg_words(path: Path, mtime: float) -> tuple[str, tuple[str, ...]]:
    """An SVG's ``<title>`` ("" for none) and the texts its drawing shows (matplotlib writes each
    as a comment; tick numbers and math left out)."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return "", ()
    m = _SVG_TITLE.search(text[:20_000])
    title = " ".join(html.unescape(m.group(1)).split()) if m else ""
    labels: list[str] = []
    for found in _SVG_TEXT.findall(text):
        label = " ".join(html.unescape(found).split())
        if len(label) > 1 and not _NUMBER.search(label) and label not in labels:
            labels.append(label)
    return title, tuple(labels[:8])


def _in_output(node: nodes.Node) -> bool:
    parent = node.parent
    while parent is not None:
        if isinstance(parent, nodes.container) and "cell_output" in parent.get("classes", []):
            return True
        parent = parent.parent
    return False


def image_words(node: nodes.image, file: Path | None) -> str:
    """The alt text of an image that has none (see the module's docstring)."""
    title, labels = svg_words(file, file.stat().st_mtime) if file and file.suffix == ".svg" else ("", ())
    if title:
        return title
    figure = node.parent if isinstance(node.parent, nodes.figure) else getattr(node.parent, "parent", None)
    if isinstance(figure, nodes.figure):
        caption = next(iter(figure.findall(nodes.caption)), None)
        if caption is not None and caption.astext().strip():
            return _first_sentence(caption.astext())
    if _in_output(node):
        return PLOT_WORDS + (": " + ", ".join(labels) if labels else "")
    stem = Path(str(node.get("uri", ""))).stem
    return "Image: " + re.sub(r"[-_]+", " ", stem) if stem and not re.fullmatch(r"[0-9a-f]{16,}", stem) else "Image"


def _source_file(app: Sphinx, uri: str) -> Path | None:
    if not uri or "://" in uri or uri.startswith("data:"):
        return None
    path = (Path(app.srcdir) / uri).resolve()
    return path if path.is_file() else None


class ImageWords(ForFormat, SphinxPostTransform):
    """Alt text for every image whose source gave none (Sphinx would write its path)."""

    default_priority = 900

    @staticmethod
    def applies(fmt: Format) -> bool:
        return fmt.images is Images.WEB

    def run(self, **kwargs: Any) -> None:
        for image in self.document.findall(nodes.image):
            if image.get("alt"):
                continue
            image["alt"] = image_words(image, _source_file(self.app, str(image.get("uri", ""))))


# ---- intrinsic sizes ------------------------------------------------------------------------------

_SVG_LENGTH = re.compile(r"^\s*([\d.]+)\s*(px|pt|pc|mm|cm|in)?\s*$")
_UNIT_PX = {None: 1.0, "px": 1.0, "pt": 4 / 3, "pc": 16.0, "mm": 96 / 25.4, "cm": 96 / 2.54, "in": 96.0}


def _svg_size(head: str) -> tuple[int, int] | None:
    tag = re.search(r"<svg\b[^>]*>", head, re.S)
    if not tag:
        return None
    attrs = dict(re.findall(r'\s([\w:-]+)\s*=\s*"([^"]*)"', tag.group(0)))
    w, h = (_SVG_LENGTH.match(attrs.get(k, "")) for k in ("width", "height"))
    if w and h:
        return round(float(w.group(1)) * _UNIT_PX[w.group(2)]), round(float(h.group(1)) * _UNIT_PX[h.group(2)])
    box = attrs.get("viewBox", "").replace(",", " ").split()
    if len(box) == 4:
        return round(float(box[2])), round(float(box[3]))
    return None


def _jpeg_size(data: bytes) -> tuple[int, int] | None:
    i = 2
    while i + 9 < len(data):
        if data[i] != 0xFF:
            return None
        marker, length = data[i + 1], struct.unpack(">H", data[i + 2:i + 4])[0]
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            h, w = struct.unpack(">HH", data[i + 5:i + 9])
            return w, h
        i += 2 + length
    return None


@lru_cache(maxsize=1024)
def intrinsic_size(path: Path, mtime: float) -> tuple[int, int] | None:
    """An image's width and height in CSS pixels, read from the file (None: not known)."""
    try:
        with path.open("rb") as f:
            data = f.read(65536)
    except OSError:
        return None
    try:
        if data[:8] == b"\x89PNG\r\n\x1a\n":
            w, h = struct.unpack(">II", data[16:24])
            return w, h
        if data[:6] in (b"GIF87a", b"GIF89a"):
            w, h = struct.unpack("<HH", data[6:10])
            return w, h
        if data[:2] == b"\xff\xd8":
            return _jpeg_size(data)
        if path.suffix == ".svg":
            return _svg_size(data.decode("utf-8", errors="replace"))
    except (struct.error, ValueError):
        return None
    return None


_IMG = re.compile(r"<img\b[^>]*>")
_SRC = re.compile(r'\ssrc="([^"]*_images/([^"/]+))"')


def sized_images(body: str, files: dict[str, Path]) -> str:
    """Every ``<img>`` of ``_images/`` without a ``width`` gets its file's width and height."""
    def one(m: re.Match[str]) -> str:
        tag = m.group(0)
        src = _SRC.search(tag)
        if src is None or re.search(r"\s(width|height)=", tag) or src.group(2) not in files:
            return tag
        file = files[src.group(2)]
        size = intrinsic_size(file, file.stat().st_mtime)
        if not size or not all(size):
            return tag
        end = tag.rstrip("/>").rstrip()
        return f'{end} width="{size[0]}" height="{size[1]}"' + (" />" if tag.endswith("/>") else ">")

    return _IMG.sub(one, body)


# ---- header cells and landmarks -------------------------------------------------------------------

_EMPTY_TH = re.compile(r"<th(\s[^>]*)?>(?:\s|<p>\s*</p>)*</th>")
_ASIDE = re.compile('<aside class="(' + "|".join(map(re.escape, LANDMARKS)) + ')">')


def no_empty_header_cells(body: str) -> str:
    return _EMPTY_TH.sub(lambda m: f"<td{m.group(1) or ''}></td>", body)


def named_landmarks(page: str) -> str:
    return _ASIDE.sub(lambda m: f'<aside class="{m.group(1)}" aria-label="{LANDMARKS[m.group(1)]}">', page)


def _page_body(app: Sphinx, pagename: str, templatename: str, context: PageContext,
               doctree: nodes.document | None) -> None:
    body = context.get("body")
    if not format_of(app.builder).web_page or not isinstance(body, str):
        return
    files = {}
    for uri, name in getattr(app.builder, "images", {}).items():
        path = _source_file(app, uri)
        if path is not None:
            files[name] = path
    context["body"] = no_empty_header_cells(sized_images(body, files))


def _name_landmarks(app: Sphinx) -> None:
    """furo writes its ``<aside>`` landmarks in its templates, not in a page's body: the page as
    rendered gets their names."""
    templates = getattr(app.builder, "templates", None)
    if not format_of(app.builder).web_page or templates is None or getattr(templates, "tabbook_named", False):
        return
    render = templates.render

    def render_named(template: str, context: PageContext) -> str:
        return named_landmarks(render(template, context))

    templates.render = render_named
    templates.tabbook_named = True


def setup_access(app: Sphinx) -> None:
    app.add_post_transform(ImageWords)
    app.connect("builder-inited", _name_landmarks)
    app.connect("html-page-context", _page_body, priority=950)


def setup(app: Sphinx) -> ExtensionMetadata:
    setup_access(app)
    return {"version": "0.1", "parallel_read_safe": True, "parallel_write_safe": True}
