"""Snapshots of what the tabbook Sphinx transforms make of a small merged notebook.

One section in the book's dialect goes through the real read, split and merge stages (with
hand-made outputs standing in for execution), then through Sphinx: the HTML builder (framework
runs become sphinx-design tab sets; ``beta``, the book's default framework here and not the first
tab, opens selected) and the LaTeX builder for one framework (only that framework's cells and
provenance remain; HTML, widget and traceback outputs made printable). The resolved doctree of each is compared with a
snapshot under ``tests/test_ext_snapshots/`` (``pytest --force-regen`` rewrites them after an
intended change; review the diff). Temp paths are replaced, so the snapshots are deterministic.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from tabbook.render.merge import merge_section
from tabbook.source.read import read_section
from tabbook.source.split import split_section

TABS = ("alpha", "beta")
LABELS = {"alpha": "Alpha", "beta": "Beta"}

SECTION = """# Snapshot

Shared prose.

```{.python .input}
%%tab all
print(name)
```

:begin_tab:`alpha`
Alpha-only prose.
:end_tab:

:begin_tab:`beta`
Beta-only prose.
:end_tab:

```{.python .input}
%%tab alpha
table()
```

```{.python .input}
%%tab beta
train()
```

```{.python .input}
%%tab all
print('same everywhere')
```
"""

TRACEBACK = [
    "---------------------------------------------------------------------------",
    "ValueError                                Traceback (most recent call last)",
    "Cell In[2], line 1",
    "----> 1 train()",
    "File lib/trainer.py:10, in train()",
    "---> 10     step()",
    "File lib/trainer.py:20, in step()",
    "---> 20     raise ValueError('diverged')",
    "",
    "ValueError: diverged",
]


def _outputs(fw: str, k: int) -> list[dict[str, Any]]:
    """The k-th code cell's outputs for ``fw``: the kinds of output the transforms care about."""
    if k == 0:
        return [{"output_type": "stream", "name": "stdout", "text": f"framework: {fw}\n"}]
    if k == 1 and fw == "alpha":
        return [{"output_type": "display_data", "metadata": {},
                 "data": {"text/html": "<table><tr><th>epoch</th><th>loss</th></tr>"
                                       "<tr><td>1</td><td>0.25</td></tr></table>",
                          "text/plain": "<IPython.core.display.HTML object>"}}]
    if k == 1 and fw == "beta":
        return [{"output_type": "display_data", "metadata": {},
                 "data": {"application/vnd.jupyter.widget-view+json": {"model_id": "m1", "version_major": 2,
                                                                       "version_minor": 0},
                          "text/plain": "<ipywidgets.widgets.IntSlider object>"}},
                {"output_type": "error", "ename": "ValueError", "evalue": "diverged", "traceback": TRACEBACK}]
    return [{"output_type": "stream", "name": "stdout", "text": "same everywhere\n"}]


def merged_notebook() -> dict[str, Any]:
    section = read_section(SECTION, "snap.md", TABS, "beta")
    executed = {}
    for fw in TABS:
        cells = [{"id": f"{fw}-{k}", "cell_type": "code", "execution_count": k + 1,
                  "metadata": {"tags": list(fc.tags)}, "source": fc.source, "outputs": _outputs(fw, k)}
                 for k, fc in enumerate(split_section(section, fw))]
        executed[fw] = {"cells": cells, "metadata": {"tabbook": {"provenance": {
            "device": "NVIDIA H100", "gpus": 1, "framework_version": "1.0", "python": "3.11.7",
            "date": "2026-01-01"}}}}
    return merge_section(section, executed, TABS, LABELS)


def resolved_doctree(tmp_path: Path, builder: str, framework: str) -> str:
    """Build the notebook with ``builder``; the document as its writer receives it, paths hidden."""
    from sphinx.application import Sphinx
    from sphinx.util.docutils import docutils_namespace, patch_docutils

    src = tmp_path / "src"
    src.mkdir()
    (src / "snap.ipynb").write_text(json.dumps(merged_notebook()), encoding="utf-8")
    overrides = {
        "extensions": ["myst_nb", "sphinx_design", "tabbook.render.ext"],
        "root_doc": "snap",
        "nb_execution_mode": "off",
        "nb_merge_streams": True,
        "myst_enable_extensions": ["colon_fence"],
        "suppress_warnings": ["mystnb.unknown_mime_type"],
        "tabbook_tabs": list(TABS),
        "tabbook_labels": LABELS,
        "tabbook_framework": framework,
        "html_theme": "basic",
    }
    warnings = io.StringIO()
    with patch_docutils(src), docutils_namespace():
        app = Sphinx(str(src), None, str(tmp_path / "out"), str(tmp_path / "doctrees"), builder,
                     confoverrides=overrides, status=None, warning=warnings, freshenv=True)
        app.build()
        doctree = app.env.get_and_resolve_doctree("snap", app.builder, tags=app.builder.tags)
    assert "ERROR" not in warnings.getvalue(), warnings.getvalue()
    return doctree.pformat().replace(str(tmp_path), "TMP")


@pytest.mark.parametrize(("builder", "framework"), [("html", "beta"), ("latex", "beta"), ("latex", "alpha")])
def test_transformed_doctree(builder: str, framework: str, tmp_path: Path, file_regression: Any) -> None:
    """HTML: ``framework`` is the default tab. LaTeX: the PDF's framework (``alpha`` has the HTML
    output made text, ``beta`` the widget made a note and the traceback shortened)."""
    text = resolved_doctree(tmp_path, builder, framework)
    assert "TMP" not in text.replace('source="TMP/src/snap.ipynb"', "")  # no other path leaks
    file_regression.check(text, basename=f"doctree_{builder}_{framework}", extension=".xml")
