"""The generated front page (tabbook.render.front): one line per section, the provenance summary,
the MyST it writes (picker, downloads, pip line) and the hidden root toctree."""

from __future__ import annotations

import html
import re

from tabbook.execute.job import Provenance
from tabbook.render.front import (
    Entry,
    FrontFacts,
    computed_lines,
    contents,
    fill_pdf_cells,
    front_matter,
    hide_root_toctree,
    one_line,
    where_line,
)
from tabbook.render.package import Package
from tabbook.source.read import read_section

TABS = ("pytorch", "jax")


def sec(text: str, path: str = "c/s.md"):  # noqa: ANN201 - Section
    return read_section(text, path, TABS, "pytorch")


def test_one_line_is_the_first_sentence_of_the_first_shared_paragraph() -> None:
    text = ("# Title\n:label:`sec_x`\n\n:begin_tab:`jax`\nJAX only.\n:end_tab:\n\n"
            ":numref:`sec_x` placed tensors (**on devices**). More follows.\n\nSecond paragraph.\n")
    assert one_line(sec(text)) == "{numref}`sec_x` placed tensors on devices."


def test_one_line_skips_figures_math_and_code_and_cuts_long_text() -> None:
    text = "# T\n\n![A box.](img/box.svg)\n\n$$x$$\n\n```python\ncode = 1\n```\n\n" + "word " * 60 + "end.\n"
    line = one_line(sec(text))
    assert line.startswith("word word") and line.endswith("…") and len(line) <= 181
    assert one_line(sec("# Only a title\n")) == ""


def test_contents_follow_the_toc_two_levels() -> None:
    root = sec("# Book\n\n```toc\nch/index\n```\n", "index.md")
    chapter = sec("# Chapter\n\nWhat it is about.\n\n```toc\na\nb\n```\n", "ch/index.md")
    pages = {p.path: p for p in (root, chapter, sec("# A\n\nFirst.\n", "ch/a.md"), sec("# B\n\nSecond.\n", "ch/b.md"))}
    assert contents(root, pages) == (
        Entry("ch/index", "Chapter", "What it is about.",
              (Entry("ch/a", "A", "First."), Entry("ch/b", "B", "Second."))),)


def as_text(myst: str) -> str:
    """MyST's backslash escapes undone (the entry's values are escaped): the text a reader sees."""
    return re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", myst)


def test_computed_lines_group_by_device_and_version() -> None:
    cpu = {"device": "CPU only", "cpu": "AMD EPYC", "gpus": [], "framework_version": "2.1", "python": "3.11.7",
           "date": "2026-11-20"}
    gpu = {**cpu, "device": "1× NVIDIA H100", "gpus": ["NVIDIA H100"], "date": "2026-11-24"}
    provs = [cpu, {**cpu, "date": "2026-11-22"}, gpu, {"not_executed": "execution off"}]
    lines = computed_lines("PyTorch", [Provenance.from_dict(p) for p in provs])
    assert [as_text(line) for line in lines] == ["CPU only (AMD EPYC), PyTorch 2.1, Python 3.11.7: 2 sections, 2026-11-20 to 2026-11-22",
                     "1× NVIDIA H100, PyTorch 2.1, Python 3.11.7: 1 section, 2026-11-24",
                     "1 section shown without outputs"]


def test_a_chapter_index_says_where_its_sections_outputs_were_computed() -> None:
    """Issue 17: one line on the chapter index, per framework, from the entries its pages show."""
    chapter = sec("# Chapter\n\nAbout.\n\n```toc\na\nb\n```\n", "ch/index.md")
    pages = {p.path: p for p in (chapter, sec("# A\n\nFirst.\n", "ch/a.md"), sec("# B\n\nSecond.\n", "ch/b.md"))}
    labels = {"pytorch": "PyTorch", "jax": "JAX", "tensorflow": "TensorFlow"}

    def entry(**prov: object) -> dict[str, object]:
        return {"metadata": {"tabbook": {"provenance": prov}}}

    cpu = {"device": "CPU only", "cpu": "AMD EPYC", "gpus": []}
    h100 = {"device": "1× NVIDIA H100", "gpus": ["NVIDIA H100"]}
    notebooks = {("ch/a.md", "pytorch"): entry(**h100), ("ch/b.md", "pytorch"): entry(**h100),
                 ("ch/a.md", "jax"): entry(**h100), ("ch/b.md", "jax"): entry(**cpu),
                 ("ch/a.md", "tensorflow"): entry(**cpu), ("ch/b.md", "tensorflow"): entry(not_executed="off")}
    assert as_text(where_line(chapter, pages, labels, notebooks)) == (
        "*The outputs of this chapter's sections were computed on 1× NVIDIA H100 for PyTorch; "
        "on 1× NVIDIA H100 and the CPU only (AMD EPYC) for JAX; on the CPU only (AMD EPYC) for TensorFlow.*")
    assert where_line(chapter, pages, labels, {}) == ""


def facts(**kw: object) -> FrontFacts:
    base: dict[str, object] = dict(
        title="Book", tabs=TABS, labels={"pytorch": "PyTorch", "jax": "JAX"}, default_tab="pytorch",
        contents=(Entry("c/s", "Sec", "A line."),),
        zips={"pytorch": ("_downloads/notebooks/b-pytorch-notebooks.zip", 3)}, package="d2l",
        extras={"pytorch": "torch"}, computed={"pytorch": ["CPU only, PyTorch 2.1, Python 3.11: 3 sections, d"]})
    base.update(kw)
    return FrontFacts(**base)  # type: ignore[arg-type]


def test_front_matter() -> None:
    text = front_matter(facts())
    assert text.startswith(":::::{only} html\n") and text.endswith("\n:::::")
    assert 'class="tabbook-picker" data-sync-group="tab" data-default="pytorch"' in text
    assert '<button type="button" data-sync-id="pytorch" aria-pressed="true">PyTorch</button>' in text
    assert "- {doc}`Sec </c/s>`: A line." in text
    assert "<td><!--tabbook-pdf:pytorch--></td>" in text and "<!--tabbook-pdf:jax-->" in text
    filled = fill_pdf_cells(text, {"jax": "_downloads/pdf/b-jax.pdf"}, {"jax": "JAX"})
    assert '<td><a class="reference external" href="_downloads/pdf/b-jax.pdf">JAX PDF</a></td>' in filled
    assert '<td><span class="tabbook-missing">not in this build</span></td>' in filled  # no PyTorch PDF
    assert 'href="_downloads/notebooks/b-pytorch-notebooks.zip">PyTorch notebooks (zip)</a>' in text
    assert "- **PyTorch**: CPU only, PyTorch 2.1, Python 3.11: 3 sections, d." in text
    assert "pip install" not in text  # a book whose site serves no package names none to install


def test_the_install_lines_pin_the_package_the_site_serves() -> None:
    package = Package("d2l", "0.1.0+gpus", ("plot", "torch"), ">=3.11")
    text = front_matter(facts(install=package))
    lines = re.findall(r'<pre data-index="simple/" data-placeholder="https://SITE/">([^<]*)</pre>', text)
    assert [html.unescape(line) for line in lines] == [
        "pip install --extra-index-url https://SITE/simple/ 'd2l==0.1.0+gpus'",
        "pip install --extra-index-url https://SITE/simple/ 'd2l[torch]==0.1.0+gpus'"]  # PyTorch's extra only
    assert ":sync: pytorch" in text and 'href="simple/d2l/index.html"' in text
    assert "pip install d2l" not in text  # never the bare name: the package index has another d2l


def test_root_toctree_hidden_once() -> None:
    once = hide_root_toctree("intro\n\n```{toctree}\n:maxdepth: 2\n\nch/index\n```")
    assert once == "intro\n\n```{toctree}\n:hidden:\n:maxdepth: 2\n\nch/index\n```"
    assert hide_root_toctree(once) == once
