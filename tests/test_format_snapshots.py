"""Snapshots of every format-dependent transform: a snippet of the dialect in, the HTML page's
body and the PDF's LaTeX for it out (``tests/snapshots/formats/<snippet>.html`` / ``.tex``).

Each snippet is one page of a small book that goes through the real read, split and merge
stages (hand-made outputs stand in for execution), then through Sphinx with tabbook's
extensions: once with the HTML builder (the site: tab sets, KaTeX, solutions in ``<details>``,
web images, the download bar and header links) and once with the LaTeX builder for the
``alpha`` framework (the PDF: one framework, solutions left out, printable outputs, missing
images as notes, ``\\appendix``). Both builds run once per module, in-process, inside
``docutils_namespace`` (so no directive or role they register outlives them).

What each format does is declared in ``tabbook/render/formats.py``; a change there, or in a
transform, shows here as a reviewed diff. ``TABBOOK_SNAPSHOT_UPDATE=1`` rewrites the files.
"""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Any

import pytest
import snapshot

from tabbook.render.context import RenderContext
from tabbook.render.merge import merge_section
from tabbook.render.sphinx_conf import SOURCE_SUFFIX
from tabbook.source.read import read_section
from tabbook.source.split import split_section

TABS = ("alpha", "beta")
LABELS = {"alpha": "Alpha", "beta": "Beta"}
DEFAULT = "beta"  # the book's default framework, not the first tab: its tab opens selected
PDF_FRAMEWORK = "alpha"

SVG = ('<svg xmlns="http://www.w3.org/2000/svg" width="40" height="20" viewBox="0 0 40 20">'
       '<rect width="40" height="20" fill="#369"/></svg>\n')

#: page name → the page in the book's dialect. Each shows one format-dependent transform.
SNIPPETS: dict[str, str] = {
    # Framework cells: one tab set per run on the site, the PDF's framework alone in print.
    "code_tabs": """# Code tabs

```{.python .input}
%%tab all
shared = 1
```

```{.python .input}
%%tab alpha
alpha_only()
```

```{.python .input}
%%tab beta
beta_only()
```
""",
    # A run with one framework's cell only: the site still shows it as a tab.
    "one_framework_run": """# One framework's cell

Before.

```{.python .input}
%%tab beta
beta_only()
```

After.
""",
    # Prose tabs: consecutive ones form one tab set; the PDF keeps its framework's.
    "prose_tabs": """# Prose tabs

:begin_tab:`alpha`
Alpha readers read this.
:end_tab:

:begin_tab:`beta`
Beta readers read this.
:end_tab:
""",
    # Math: KaTeX HTML at build time on the site, TeX as written in the PDF; a numbered equation.
    "math": """# Math

Inline $a^2 + b^2 = c^2$ and a numbered one, :eqref:`eq_snap`.

$$\\sum_{i=1}^{n} x_i = \\frac{n(n+1)}{2}$$
:eqlabel:`eq_snap`
""",
    # Solutions: a closed <details> on the site, left out of the PDF.
    "solution": """# Solution

Try it first.

<!-- solution Show the answer -->
The answer is 42.

```{.python .input}
%%tab all
print(42)
```
<!-- end solution -->

After the solution.
""",
    # A figure: alt text, lazy loading and its size on the site; SVG converted to PDF in print.
    "figure": """# Figure

![A blue bar.](img/bar.svg)
:label:`fig_bar`
:width:`200px`

As :numref:`fig_bar` shows.
""",
    # An image without alt text: the site writes words for it.
    "image_words": """# Image words

![](img/bar.svg)
""",
    # A missing image: a broken image on the site, a boxed note in the PDF (not a failed PDF).
    "missing_image": """# Missing image

![Gone.](img/gone.png)
""",
    # Outputs: rich on the site; in print an HTML table as text, a widget as a note, a
    # traceback shortened to the book's own frame.
    "outputs": """# Outputs

```{.python .input}
%%tab alpha, beta
show()
```
""",
    # Raw blocks: each format passes its own and drops the other's.
    "raw": """# Raw

```{raw} html
<span class="snap-raw">raw HTML</span>
```

```{raw} latex
\\textbf{raw LaTeX}
```
""",
    # :numref: to an unnumbered section: a :ref: on the site (warned), LaTeX numbers it itself.
    "references": """# References

## A section
:label:`sec_snap_unnumbered`

See :numref:`sec_snap_unnumbered` and :ref:`sec_snap_unnumbered`.
""",
    # A page with no framework cell: the download bar and header links alone on the site.
    "downloads": """# Downloads

Only prose here.
""",
    # Highlighted code in prose: lean Pygments spans on the site, Verbatim in print.
    "highlight": """# Highlight

```python
def f(x):
    return x + 1  # one more
```
""",
    # An appendix page: the PDF letters it after \\appendix.
    "appendix_page": """# An appendix

Lettered in print.
""",
}

ROOT = """# Snapshots

```{toctree}
:maxdepth: 1

""" + "\n".join(name for name in SNIPPETS if name != "appendix_page") + """
```

```{toctree}
:caption: Appendix
:maxdepth: 1

appendix_page
```
"""

TRACEBACK = [
    "---------------------------------------------------------------------------",
    "ValueError                                Traceback (most recent call last)",
    "Cell In[1], line 1",
    "----> 1 show()",
    "File lib/shown.py:10, in show()",
    "---> 10     draw()",
    "File lib/shown.py:20, in draw()",
    "---> 20     raise ValueError('no canvas')",
    "",
    "ValueError: no canvas",
]


def _outputs(page: str, fw: str, k: int) -> list[dict[str, Any]]:
    """What the k-th code cell of ``page`` printed for ``fw``."""
    if page != "outputs":
        return [{"output_type": "stream", "name": "stdout", "text": f"{fw} {k}\n"}]
    if fw == "beta":
        return [{"output_type": "stream", "name": "stdout", "text": "beta shows text\n"}]
    return [{"output_type": "display_data", "metadata": {},
             "data": {"text/html": "<table><tr><th>epoch</th><th>loss</th></tr>"
                                   "<tr><td>1</td><td>0.25</td></tr></table>",
                      "text/plain": "<IPython.core.display.HTML object>"}},
            {"output_type": "display_data", "metadata": {},
             "data": {"application/vnd.jupyter.widget-view+json": {"model_id": "m1", "version_major": 2,
                                                                   "version_minor": 0},
                      "text/plain": "<ipywidgets.widgets.IntSlider object>"}},
            {"output_type": "error", "ename": "ValueError", "evalue": "no canvas", "traceback": TRACEBACK}]


def _notebook(page: str, text: str) -> dict[str, Any]:
    section = read_section(text, f"{page}.md", TABS, DEFAULT)
    executed = {}
    for fw in TABS:
        cells = [{"id": f"{fw}-{k}", "cell_type": "code", "execution_count": k + 1,
                  "metadata": {"tags": list(fc.tags)}, "source": fc.source, "outputs": _outputs(page, fw, k)}
                 for k, fc in enumerate(split_section(section, fw))]
        executed[fw] = {"cells": cells, "metadata": {"tabbook": {"provenance": {
            "device": "NVIDIA H100", "gpus": 1, "framework_version": "1.0", "python": "3.11.7",
            "date": "2026-01-01"}}}}
    return merge_section(section, executed, TABS, LABELS)


def _build(root: Path, builder: str, framework: str) -> Path:
    """The snippet book built with ``builder`` in this process; its output folder."""
    from sphinx.application import Sphinx
    from sphinx.util.docutils import docutils_namespace, patch_docutils

    src = root / "src"
    context = RenderContext(root=str(root), name="snap", tabs=TABS, labels=LABELS, default_tab=DEFAULT,
                            root_doc="index", pdf_url="https://example.org/pdf/snap-{fw}.pdf",
                            header_links=(("Home", "https://example.org/", "fas fa-home"),),
                            front_page=False)
    overrides = {
        "extensions": ["myst_nb", "sphinx_design", "tabbook.render.ext"],
        "root_doc": "index",
        "project": "Snapshots",
        "nb_execution_mode": "off",
        "nb_merge_streams": True,
        "myst_enable_extensions": ["colon_fence", "dollarmath"],
        "suppress_warnings": ["mystnb.unknown_mime_type"],
        "tabbook_tabs": list(TABS),
        "tabbook_labels": LABELS,
        "tabbook_framework": framework,
        "tabbook_context": json.loads(context.to_json()),
        "html_theme": "basic",
        "numfig": True,  # as the book's settings (render/sphinx_conf.py)
        # A dict of this run's, as the book's settings give it: Sphinx merges extensions'
        # suffixes into its default dict in place, so an earlier in-process application with
        # myst_parser alone (tests/test_escaping.py) would leave .md to a parser not loaded here.
        "source_suffix": dict(SOURCE_SUFFIX),
        "latex_documents": [("index", "snap.tex", "Snapshots", "Author", "manual")],
    }
    out = root / f"out-{builder}"
    warnings = io.StringIO()
    with patch_docutils(src), docutils_namespace():
        app = Sphinx(str(src), None, str(out), str(root / f"doctrees-{builder}"), builder,
                     confoverrides=overrides, status=None, warning=warnings, freshenv=True)
        app.build()
    assert "ERROR" not in warnings.getvalue(), warnings.getvalue()
    return out


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Both builds of the snippet book, once for the module."""
    root = tmp_path_factory.mktemp("formats")
    src = root / "src"
    (src / "img").mkdir(parents=True)
    (src / "img" / "bar.svg").write_text(SVG, encoding="utf-8")
    (src / "index.md").write_text(ROOT, encoding="utf-8")
    for page, text in SNIPPETS.items():
        (src / f"{page}.ipynb").write_text(json.dumps(_notebook(page, text)), encoding="utf-8")
    html = _build(root, "html", DEFAULT)
    latex = _build(root, "latex", PDF_FRAMEWORK)
    return {"root": root, "html": html, "tex": (latex / "snap.tex").read_text(encoding="utf-8")}


BODY = re.compile(r'<div class="body" role="main">\n(.*?)\n\s*</div>\n\s*</div>\n\s*</div>\n\s*<div class="sphinxsidebar"',
                  re.S)


def html_fragment(page_html: str) -> str:
    """The page's body as the HTML builder wrote it."""
    m = BODY.search(page_html)
    assert m is not None, page_html[:2000]
    return "\n".join(line.rstrip() for line in m.group(1).strip("\n").splitlines())


def tex_fragment(tex: str, page: str) -> str:
    """The part of the book's LaTeX that ``page`` wrote: from its chapter's scope to the next."""
    parts = tex.split("\\sphinxstepscope")
    mine = [p for p in parts if f"\\label{{\\detokenize{{{page}::doc}}}}" in p]
    assert len(mine) == 1, (page, len(mine))
    text = mine[0]
    for end in ("\\renewcommand{\\indexname}", "\\end{document}"):
        text = text.split(end)[0]
    return text.strip("\n")


def _scrub(text: str, root: Path) -> str:
    return text.replace(str(root), "TMP")


@pytest.mark.parametrize("page", sorted(SNIPPETS))
def test_html(page: str, built: dict[str, Any]) -> None:
    body = html_fragment((built["html"] / f"{page}.html").read_text(encoding="utf-8"))
    snapshot.check(f"formats/{page}.html", _scrub(body, built["root"]))


@pytest.mark.parametrize("page", sorted(SNIPPETS))
def test_latex(page: str, built: dict[str, Any]) -> None:
    snapshot.check(f"formats/{page}.tex", _scrub(tex_fragment(built["tex"], page), built["root"]))


def test_root_page_navigation(built: dict[str, Any]) -> None:
    """The root page's toctrees: the site's contents lists (with the Appendix caption); the PDF
    inlines them and starts ``\\appendix`` before the captioned one's pages."""
    body = html_fragment((built["html"] / "index.html").read_text(encoding="utf-8"))
    snapshot.check("formats/index.html", _scrub(body, built["root"]))
    structure = [line for line in built["tex"].splitlines() if STRUCTURE.match(line)]
    snapshot.check("formats/index.tex", "\n".join(structure))


#: The lines of the book's LaTeX that say how its documents are put together.
STRUCTURE = re.compile(r"^\\(?:begin\{document\}|end\{document\}|sphinxmaketitle|sphinxtableofcontents|"
                       r"appendix|chapter\{|part\{|printindex|phantomsection\\label)")
