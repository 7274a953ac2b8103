"""llms.txt and llms-full.txt (tabbook.render.llms): a page as one framework's plain Markdown
(its prose tabs resolved, the dialect's markup read as text, its stored outputs as text), the
two files at the site's root, what is written again and what is not, and the link check of
llms.txt. The whole build that publishes them is in tests/test_build_e2e.py."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from tabbook.config import load_config
from tabbook.render.linkcheck import broken_links
from tabbook.render.llms import (
    FULL,
    INDEX,
    code_markdown,
    full_text,
    index_text,
    output_text,
    page_markdown,
    page_target,
    write_llms,
)
from tabbook.source.model import Section
from tabbook.source.read import read_section

TABS = ("torch", "jax")

PAGE = '''# Devices
:label:`sec_devices`

Shared prose citing :cite:`Kirk.Hwu.2016,Other.2020`, see :numref:`fig_copy` and :eqref:`eq_bw`,
with `:numref:` in code kept.

![Copying between
devices.](../img/copy.svg)
:label:`fig_copy`
:width:`400px`

$$t = b / w$$
:eqlabel:`eq_bw`

```{.python .input}
%%tab torch
print('torch here')
```

```{.python .input}
%%tab jax
print('jax here')
```

:begin_tab:`torch`
Torch-only words.
:end_tab:

:begin_tab:`jax`
JAX-only words.
:end_tab:

```python
:label:`not_a_label` and :numref:`kept` in a literal fence


two blank lines above, kept
```

: Bandwidths of links
| link | GB/s |
| --- | --- |
| PCIe | 64 |
:label:`tab_bw`

<!-- a note to authors -->

<div>shown</div>

```{.python .input}
%%tab all
#@hide_output
quiet = 1
```

<!-- solution the first -->

```{.python .input}
%%tab all
print('answer')
```

<!-- end solution -->

```toc
:maxdepth: 1

other
```
'''


def section(text: str = PAGE) -> Section:
    return read_section(text, "chapter/devices.md", TABS, "torch")


def cell(source: str, outputs: list[dict[str, Any]], tags: tuple[str, ...] = ()) -> dict[str, Any]:
    return {"cell_type": "code", "source": source, "outputs": outputs, "metadata": {"tags": list(tags)}}


def stream(text: str) -> dict[str, Any]:
    return {"output_type": "stream", "name": "stdout", "text": text}


def notebook(*cells: dict[str, Any]) -> dict[str, Any]:
    return {"cells": list(cells)}


TORCH = notebook(cell("print('torch here')", [stream("torch here\n")]),
                 cell("quiet = 1", [stream("not shown\n")], ("remove-output",)),
                 cell("print('answer')", [stream("answer\n")]))
JAX = notebook(cell("print('jax here')", [stream("jax here\n")]),
               cell("quiet = 1", [], ("remove-output",)),
               cell("print('answer')", [stream("answer\n")]))


def test_a_page_for_one_framework_has_its_prose_code_and_outputs_and_no_other_frameworks() -> None:
    torch = page_markdown(section(), "torch", TORCH)
    jax = page_markdown(section(), "jax", JAX)
    assert "Torch-only words." in torch and "JAX-only words." not in torch
    assert "JAX-only words." in jax and "Torch-only words." not in jax
    assert "```python\nprint('torch here')\n```\n\n```text\ntorch here\n```" in torch
    assert "print('jax here')" not in torch and "jax here" in jax and "torch here" not in jax
    # the dialect read as text: no attribute line, marker or toc; references as their labels
    for markup in (":label:`sec_devices`", ":width:", ":eqlabel:", ":begin_tab:", ":end_tab:", "```toc",
                   "<!-- solution", "<!-- end solution"):
        assert markup not in torch, markup
    assert "citing [Kirk.Hwu.2016, Other.2020], see [fig_copy] and (eq_bw)," in torch
    assert "with `:numref:` in code kept." in torch
    assert "[figure: Copying between devices.]" in torch and "../img/copy.svg" not in torch
    assert "$$t = b / w$$" in torch
    # a literal fence is shown as written, roles and all
    assert "\n```python\n:label:`not_a_label` and :numref:`kept` in a literal fence\n\n\ntwo blank lines above, " \
           "kept\n```\n" in torch
    # a table under its caption; an author's comment left out, other HTML kept
    assert "\n\nTable: Bandwidths of links\n\n| link | GB/s |\n| --- | --- |\n| PCIe | 64 |\n\n<div>shown</div>" in torch
    assert "a note to authors" not in torch and ":label:`tab_bw`" not in torch and "\n\n\n\n" not in torch
    # #@hide_output: the code, not its output; a solution under its line
    assert "quiet = 1" in torch and "not shown" not in torch
    assert "**Solution the first**\n\n```python\nprint('answer')" in torch


def test_a_page_ends_saying_where_its_outputs_were_computed() -> None:
    prov = {"device": "1\u00d7 NVIDIA H200", "gpus": ["NVIDIA H200"], "framework_version": "2.11.0",
            "python": "3.12.3", "date": "2026-11-28", "cpu": "Xeon\x1b[31m"}
    torch = {**TORCH, "metadata": {"tabbook": {"provenance": prov}}}
    text = page_markdown(section(), "torch", torch, "PyTorch")
    assert text.endswith("*PyTorch outputs computed on 1\u00d7 NVIDIA H200, PyTorch 2.11.0, Python 3.12.3, "
                         "2026-11-28.*\n")
    cpu = {**TORCH, "metadata": {"tabbook": {"provenance": {**prov, "gpus": [], "cpu": "Xeon\x1b[31m\nx"}}}}
    assert "*PyTorch outputs computed on CPU only (Xeon x), PyTorch 2.11.0," in page_markdown(section(), "torch", cpu, "PyTorch")
    off = {**TORCH, "metadata": {"tabbook": {"provenance": {"not_executed": "execution is off"}}}}
    assert page_markdown(section(), "torch", off, "PyTorch").endswith(
        "*PyTorch: code shown without outputs (execution is off).*\n")
    assert "outputs computed" not in page_markdown(section(), "torch", TORCH, "PyTorch")  # none recorded


def test_a_page_without_its_notebook_is_its_prose() -> None:
    text = page_markdown(section(), "jax", None)
    assert "JAX-only words." in text and "print(" not in text


def test_outputs_as_text_figures_as_notes_errors_by_their_statement() -> None:
    assert output_text(stream("a\x1b[31mred\x1b[0m\n10%\r50%\r100%\n\x07")) == ("text", "ared\n100%\n")
    error = {"output_type": "error", "ename": "ZeroDivisionError", "evalue": "division by zero",
             "traceback": ["\x1b[0;31mTraceback\x1b[0m", "ZeroDivisionError: division by zero"]}
    assert output_text(error) == ("text", "ZeroDivisionError: division by zero")
    figure = {"output_type": "display_data", "data": {"image/png": "iVBORw0KGgo=", "text/plain": "<Figure 1 Axes>"}}
    assert output_text(figure) == ("note", "[figure: <Figure 1 Axes>]")
    assert output_text({"output_type": "display_data", "data": {"image/svg+xml": "<svg/>"}}) == ("note", "[figure]")
    assert output_text({"output_type": "execute_result", "data": {"text/plain": "42"}}) == ("text", "42")
    assert output_text({"output_type": "display_data", "data": {"text/html": "<b>x</b>"}}) == \
        ("note", "[output: text/html]")
    shown = code_markdown(cell("plot()", [stream("before\n"), figure, stream("after\n")]))
    assert shown == "```python\nplot()\n```\n\n```text\nbefore\n```\n\n[figure: <Figure 1 Axes>]\n\n```text\nafter\n```"


def test_a_fence_outlasts_the_backticks_inside_it_and_hidden_cells_stay_hidden() -> None:
    shown = code_markdown(cell("s = '```'", [stream("````\n")]))
    assert shown == "````python\ns = '```'\n````\n\n`````text\n````\n`````"
    assert code_markdown(cell("secret = 1", [stream("x\n")], ("remove-cell",))) == ""
    assert code_markdown(cell("secret = 1", [stream("x\n")], ("remove-input",))) == "```text\nx\n```"


def test_the_index_links_every_page_for_every_framework_and_the_full_file_names_each() -> None:
    pages = [("index", "My [Book]"), ("chapter/devices", "Devices")]
    text = index_text("My Book", "A summary.", pages, TABS, {"torch": "PyTorch", "jax": "JAX"})
    lines = text.splitlines()
    assert lines[:3] == ["# My Book", "", "> A summary."]
    for fw, label in (("torch", "PyTorch"), ("jax", "JAX")):
        assert f"## {label}" in lines
        assert f"- [My \\[Book\\]]({page_target('index', fw)})" in lines
        assert f"- [Devices](_llms/{fw}/chapter/devices.md)" in lines
    assert f"[{FULL}]({FULL})" in text
    full = full_text("My Book", "A summary.", [("torch", "index", "# My Book\n"), ("jax", "index", "# My Book\n")],
                     {"torch": "PyTorch", "jax": "JAX"})
    assert "<!-- PyTorch: index.md (_llms/torch/index.md) -->\n\n# My Book\n" in full
    assert full.index("<!-- PyTorch: index.md") < full.index("<!-- JAX: index.md")


def _write(book: Path, notebooks: dict[tuple[str, str], dict[str, Any]], origins: dict[tuple[str, str], str],
           html: Path, page: str = PAGE) -> Any:
    config = load_config(book)
    sections = [read_section((book / "index.md").read_text(), "index.md", config.tabs, config.default_tab),
                read_section(page, "sec.md", config.tabs, config.default_tab)]
    return write_llms(config, sections, notebooks, origins, html)


def _fixture_notebooks(beta: str = "42\n") -> dict[tuple[str, str], dict[str, Any]]:
    return {("sec.md", "alpha"): notebook(cell("print('alpha')", [stream("alpha out\n")])),
            ("sec.md", "beta"): notebook(cell("print('beta')", [stream(beta)]))}


SMALL = '''# A Section

```{.python .input}
%%tab alpha, beta
print('x')
```
'''


def test_written_atomically_once_and_again_only_when_a_page_changes(book: Path, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    import tabbook.render.llms as llms

    html = tmp_path / "html"
    first = _write(book, _fixture_notebooks(), {}, html, SMALL)
    files = [html / INDEX, html / FULL, *(html / page_target(d, fw) for fw in ("alpha", "beta") for d in ("index", "sec"))]
    assert all(p.is_file() for p in files) and first.pages == 4 and first.written == 6
    assert "alpha out" in (html / page_target("sec", "alpha")).read_text()
    assert "42" in (html / FULL).read_text()
    for path in files:
        os.utime(path, ns=(1, 1))
    # keyed by the entries' origins now: made again, the same text, so no file is rewritten
    origins = {("sec.md", "alpha"): "entry a", ("sec.md", "beta"): "entry b"}
    assert _write(book, _fixture_notebooks(), origins, html, SMALL).written == 0
    assert all(p.stat().st_mtime_ns == 1 for p in files)

    def unexpected(*_: Any) -> str:
        raise AssertionError("a page made again with nothing changed")

    with monkeypatch.context() as patch:
        patch.setattr(llms, "page_markdown", unexpected)
        assert _write(book, _fixture_notebooks(), origins, html, SMALL).written == 0
    # the beta entry changed (another origin): its page and llms-full.txt, nothing else
    changed = _write(book, _fixture_notebooks("43\n"), {**origins, ("sec.md", "beta"): "entry b2"}, html, SMALL)
    assert changed.written == 2
    assert "43" in (html / page_target("sec", "beta")).read_text() and "43" in (html / FULL).read_text()
    assert (html / page_target("sec", "alpha")).stat().st_mtime_ns == 1
    # a file gone since is made again
    (html / page_target("sec", "alpha")).unlink()
    assert _write(book, _fixture_notebooks("43\n"), {**origins, ("sec.md", "beta"): "entry b2"}, html, SMALL).written == 1
    assert "alpha out" in (html / page_target("sec", "alpha")).read_text()
    assert not list(html.rglob("*.tmp")) and not [p for p in html.rglob("*") if p.name.startswith(".")]


def test_a_page_no_longer_in_the_book_loses_its_files(book: Path, tmp_path: Path) -> None:
    html = tmp_path / "html"
    _write(book, _fixture_notebooks(), {}, html, SMALL)
    config = load_config(book)
    only_index = [read_section((book / "index.md").read_text(), "index.md", config.tabs, config.default_tab)]
    result = write_llms(config, only_index, {}, {}, html)
    assert result.removed == 2 and not (html / "_llms" / "alpha" / "sec.md").exists()
    assert "sec.md" not in (html / INDEX).read_text() and "A Section" not in (html / FULL).read_text()


def test_linkcheck_reads_the_links_of_llms_txt(tmp_path: Path) -> None:
    site = tmp_path / "site"
    (site / "_llms" / "a").mkdir(parents=True)
    (site / "index.html").write_text("<p>home</p>")
    (site / "_llms" / "a" / "index.md").write_text("# Home\n")
    (site / INDEX).write_text("# T\n\n> s\n\n- [Home](_llms/a/index.md)\n- [Far](https://example.org/x.md)\n")
    assert broken_links(site) == []
    (site / INDEX).write_text("# T\n\n- [Home](_llms/a/index.md)\n- [Gone](_llms/a/gone.md)\n- [Up](../x.md)\n")
    assert broken_links(site) == ["llms.txt:4: broken link _llms/a/gone.md", "llms.txt:5: broken link ../x.md"]
