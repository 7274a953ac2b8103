"""The site's accessibility fixes as functions (``tabbook.render.ext.access``); the browser sees them
in tests/browser/test_reader.py and test_accessibility.py."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

from tabbook.render.ext.access import (
    intrinsic_size,
    named_landmarks,
    no_empty_header_cells,
    sized_images,
    svg_words,
)


def _png(path: Path, w: int, h: int) -> Path:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)))
    return path


def test_intrinsic_sizes_in_css_pixels(tmp_path: Path) -> None:
    svg = tmp_path / "a.svg"
    svg.write_text('<?xml version="1.0"?>\n<svg xmlns="http://www.w3.org/2000/svg" width="300pt" height="150pt">')
    assert intrinsic_size(svg, 1.0) == (400, 200)
    box = tmp_path / "b.svg"
    box.write_text('<svg viewBox="0 0 790 420" xmlns="http://www.w3.org/2000/svg">')
    assert intrinsic_size(box, 1.0) == (790, 420)
    assert intrinsic_size(_png(tmp_path / "c.png", 640, 480), 1.0) == (640, 480)
    (tmp_path / "d.gif").write_bytes(b"GIF89a" + struct.pack("<HH", 32, 16))
    assert intrinsic_size(tmp_path / "d.gif", 1.0) == (32, 16)
    (tmp_path / "e.svg").write_text("<svg>")
    assert intrinsic_size(tmp_path / "e.svg", 1.0) is None


def test_images_get_their_size_once(tmp_path: Path) -> None:
    files = {"p.png": _png(tmp_path / "p.png", 640, 480)}
    body = ('<img alt="x" loading="lazy" src="../_images/p.png" style="width: 600px;" />'
            '<img src="../_images/p.png" width="10" /><img src="https://example.org/x.png">')
    assert sized_images(body, files) == (
        '<img alt="x" loading="lazy" src="../_images/p.png" style="width: 600px;" width="640" height="480" />'
        '<img src="../_images/p.png" width="10" /><img src="https://example.org/x.png">')


def test_an_svgs_words(tmp_path: Path) -> None:
    svg = tmp_path / "plot.svg"
    svg.write_text('<svg><!-- 0.5 --><!-- 1.0 --><!-- epoch --><!-- $\\mathdefault{10^{-2}}$ -->'
                   "<!-- train_loss --><!-- epoch --></svg>")
    assert svg_words(svg, 1.0) == ("", ("epoch", "train_loss"))
    drawn = tmp_path / "drawn.svg"
    drawn.write_text('<svg><title id="t">Copying data\n  between devices</title></svg>')
    assert svg_words(drawn, 1.0)[0] == "Copying data between devices"


def test_empty_header_cells_and_landmarks() -> None:
    assert no_empty_header_cells('<tr><th class="head"><p></p></th><th class="head"><p>CPU</p></th>') == \
        '<tr><td class="head"></td><th class="head"><p>CPU</p></th>'
    page = '<aside class="sidebar-drawer">…</aside><aside class="toc-drawer">…</aside><aside class="other">'
    assert named_landmarks(page) == ('<aside class="sidebar-drawer" aria-label="Site navigation">…</aside>'
                                     '<aside class="toc-drawer" aria-label="On this page">…</aside>'
                                     '<aside class="other">')
