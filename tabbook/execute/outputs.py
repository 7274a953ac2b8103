"""The kinds of output tabbook knows: one declaration per mime type, read by every stage.

An output's mime type decided, in five places that each listed types of their own, whether the
site publishes it as it is or cleaned (:mod:`tabbook.render.sanitize`), where it ranks in the
PDFs (:mod:`tabbook.render.latex_conf`), whether a slide shows it as an image
(:mod:`tabbook.render.slides`), whether ``verify-freeze`` compares it as text with its volatile
parts masked (:mod:`.verify`) and which bytes a base64 image of it starts with, which the store
checks when it reads an entry (:mod:`.store`). Each :class:`OutputKind` says all of that for its
type; a type declared nowhere here needs script, and is dropped from the site unless the book
trusts its outputs. To add a kind: one line in :data:`OUTPUT_KINDS` (and, for a new way of
cleaning, a member of :class:`Clean` with its branch in ``sanitize.clean_bundle``).

The pages and PDFs themselves are written by myst-nb, which renders only the types it has a
renderer for (PNG, JPEG, GIF, SVG, PDF, HTML, Markdown, LaTeX, text); a declared image type
outside that list (WebP, BMP) reaches the downloadable notebooks, and the slides where its line
ranks it, but a page shows its ``text/plain`` instead, or nothing (give it no ``pdf`` rank: the
PDFs would pick it and show nothing). Showing one on the pages takes a myst-nb mime renderer,
not a line here (``test_trust`` lists the types this concerns).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Clean(StrEnum):
    """How the site publishes an output of a kind when the book does not trust its outputs."""

    PLAIN = "plain"  # as it is: text, raster images, what only the PDFs show
    HTML = "html"  # cleaned with nh3 (no script, no handler, no frame)
    MARKDOWN = "markdown"  # as it is, unless it holds HTML: then rendered and cleaned as HTML
    SVG = "svg"  # kept to an allow-list of SVG elements, or dropped
    LATEX = "latex"  # as it is, unless its TeX reads files, runs programs or redefines commands


@dataclass(frozen=True)
class OutputKind:
    mime: str
    clean: Clean
    pdf: int | None = None  # its rank in the PDFs, lower first (myst-nb's mime priority); None: the default's
    text: bool = False  # verify-freeze compares it as text, volatile parts (timings, addresses…) masked
    slide: int | None = None  # its rank among the images a slide shows, lower first; None: not an image there
    magic: tuple[bytes, ...] = ()  # stored base64, its image starting with one of these; (): stored as text


OUTPUT_KINDS: tuple[OutputKind, ...] = (
    OutputKind("application/pdf", Clean.PLAIN, pdf=10),  # vector figures, for the PDFs only
    OutputKind("image/png", Clean.PLAIN, pdf=20, slide=2, magic=(b"\x89PNG\r\n\x1a\n",)),
    OutputKind("image/jpeg", Clean.PLAIN, pdf=30, slide=3, magic=(b"\xff\xd8",)),
    OutputKind("image/svg+xml", Clean.SVG, pdf=35, text=True, slide=1),  # converted to PDF by rsvg
    OutputKind("text/latex", Clean.LATEX, pdf=40, text=True),
    OutputKind("text/markdown", Clean.MARKDOWN, pdf=50, text=True),
    OutputKind("text/plain", Clean.PLAIN, pdf=60, text=True),
    OutputKind("text/html", Clean.HTML, text=True),  # the PDFs show it as text (render/ext/latex.py)
    OutputKind("image/gif", Clean.PLAIN, magic=(b"GIF87a", b"GIF89a")),
    OutputKind("image/webp", Clean.PLAIN, magic=(b"RIFF",)),
    OutputKind("image/bmp", Clean.PLAIN, magic=(b"BM",)),
)
#: The kinds by mime type.
KINDS = {kind.mime: kind for kind in OUTPUT_KINDS}
#: Image types stored base64-encoded, with the bytes each image starts with.
BINARY_IMAGES = {kind.mime: kind.magic for kind in OUTPUT_KINDS if kind.magic}
#: The images a slide shows, the one it prefers first.
SLIDE_IMAGES = tuple(k.mime for k in sorted((k for k in OUTPUT_KINDS if k.slide is not None),
                                            key=lambda k: k.slide or 0))
