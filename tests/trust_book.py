"""A fixture book with a forged freeze entry (issue 33, item 3), shared by the trust tests.

The entry is what a pull request touching only ``_freeze/`` could hold: its key is the real one
(so ``build --frozen`` reuses it), its outputs are hand-written — script in HTML, in an SVG, in a
JavaScript output and in HTML inside Markdown — beside what a reader needs to see (a pandas-like
table, an SVG figure).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "tests" / "fixtures" / "book"
ENTRY = "_freeze/sec/alpha.ipynb"

#: A pandas DataFrame's HTML as pandas writes it (a scoped style, a bordered table).
TABLE = """<div>
<style scoped>
    .dataframe tbody tr th:only-of-type {
        vertical-align: middle;
    }

    .dataframe thead th {
        text-align: right;
    }
</style>
<table border="1" class="dataframe">
  <thead>
    <tr style="text-align: right;">
      <th></th>
      <th>loss</th>
    </tr>
  </thead>
  <tbody>
    <tr>
      <th>0</th>
      <td>0.125</td>
    </tr>
  </tbody>
</table>
</div>"""
#: Each forged script sets a global the browser test looks for, and opens a dialog.
FORGED_HTML = ('<p id="forged-html">forged</p><script>window.forgedHtml = 1; alert("html")</script>'
               '<img src="x" onerror="window.forgedImg = 1">')
FORGED_JS = 'window.forgedJs = 1; alert("js")'
FORGED_MD = 'Some **bold** text <img src="y" onerror="window.forgedMd = 1">'
FORGED_SVG = ('<svg xmlns="http://www.w3.org/2000/svg" width="20" height="20" onload="window.forgedSvg = 1">'
              '<script>window.forgedSvg = 1</script><rect id="forged-rect" width="20" height="20"/></svg>')
#: A figure as matplotlib writes it (prolog, metadata, styles, fragment links): kept byte for byte.
FIGURE = """<?xml version="1.0" encoding="utf-8" standalone="no"?>
<!DOCTYPE svg PUBLIC "-//W3C//DTD SVG 1.1//EN"
  "http://www.w3.org/Graphics/SVG/1.1/DTD/svg11.dtd">
<svg xmlns:xlink="http://www.w3.org/1999/xlink" width="40pt" height="30pt" viewBox="0 0 40 30" xmlns="http://www.w3.org/2000/svg" version="1.1">
 <metadata>
  <rdf:RDF xmlns:dc="http://purl.org/dc/elements/1.1/" xmlns:cc="http://creativecommons.org/ns#" xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">
   <cc:Work><dc:type rdf:resource="http://purl.org/dc/dcmitype/StillImage"/></cc:Work>
  </rdf:RDF>
 </metadata>
 <defs>
  <style type="text/css">*{stroke-linejoin: round; stroke-linecap: butt}</style>
 </defs>
 <g id="figure_1">
  <path id="p1" d="M 0 30 L 40 0" clip-path="url(#c1)" style="fill: none; stroke: #1f77b4"/>
  <use xlink:href="#p1" x="1" y="1" style="fill: #1f77b4"/>
 </g>
 <defs><clipPath id="c1"><rect x="0" y="0" width="40" height="30"/></clipPath></defs>
</svg>
"""


def forged_outputs() -> list[dict[str, Any]]:
    def display(data: dict[str, str]) -> dict[str, Any]:
        return {"output_type": "display_data", "metadata": {}, "data": data}

    return [
        display({"text/html": TABLE, "text/plain": "   loss\n0  0.125"}),
        display({"text/html": FORGED_HTML, "text/plain": "<forged html>"}),
        display({"application/javascript": FORGED_JS}),
        display({"text/markdown": FORGED_MD, "text/plain": "<forged markdown>"}),
        display({"image/svg+xml": FORGED_SVG, "text/plain": "<forged svg>"}),
        display({"image/svg+xml": FIGURE, "text/plain": "<Figure>"}),
    ]


def tabbook(book: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TABBOOK_CACHE": str(book.parent / ".cache")}
    return subprocess.run([sys.executable, "-m", "tabbook", "-C", str(book), *args], cwd=book,
                          capture_output=True, text=True, env=env, timeout=600)


def forged_book(base: Path, *, trusted: bool = False) -> Path:
    """The fixture book under ``base``, built once, then its alpha entry forged and the book
    built again with ``--frozen`` (which reuses it: the key is the real one)."""
    book = base / "book"
    shutil.copytree(FIXTURE, book)
    proc = tabbook(book, "build")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    entry = book / ENTRY
    nb = json.loads(entry.read_text(encoding="utf-8"))
    nb["cells"][0]["outputs"] = nb["cells"][0]["outputs"] + forged_outputs()
    entry.write_text(json.dumps(nb, indent=1), encoding="utf-8")
    if trusted:
        config = book / "config.ini"
        config.write_text(config.read_text(encoding="utf-8") + "\n[site]\ntrusted_outputs = true\n", encoding="utf-8")
    proc = tabbook(book, "build", "--frozen")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return book
