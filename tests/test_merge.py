"""Stage 5, merge: executed notebooks of a section → one document; runs, prose-tab divs, ordering."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from tabbook.render.merge import PROVENANCE_CLASS, merge_section
from tabbook.render.names import CELL_KEY, PROSE_TAB
from tabbook.source.model import Section
from tabbook.source.read import read_section
from tabbook.source.split import split_section

TABS = ("pytorch", "jax", "tensorflow", "mxnet")
LABELS = {"pytorch": "PyTorch", "jax": "JAX", "tensorflow": "TensorFlow", "mxnet": "MXNet"}
FIXTURES = Path(__file__).parent / "fixtures" / "dialect"


def read(text: str, tabs: tuple[str, ...] = TABS) -> Section:
    return read_section(text, "sec.md", tabs, tabs[0])


def executed(section: Section, tabs: tuple[str, ...] = TABS, provenance: bool = False) -> dict[str, dict[str, Any]]:
    """What the execute stage returns: per framework, its split cells with a telltale output each."""
    out: dict[str, dict[str, Any]] = {}
    for fw in tabs:
        cells = []
        for k, fc in enumerate(split_section(section, fw)):
            cells.append({
                "id": f"{fw}-{k}",
                "cell_type": "code",
                "execution_count": k + 1,
                "metadata": {"tags": list(fc.tags), "tabbook": {"index": fc.index}},
                "source": fc.source,
                "outputs": [{"output_type": "stream", "name": "stdout", "text": f"{fw}#{k}"}],
            })
        meta: dict[str, Any] = {}
        if provenance:
            meta = {"tabbook": {"provenance": {
                "device": "NVIDIA H100", "gpus": 1, "framework_version": "9.9", "python": "3.11.7",
                "date": "2025-01-01",
            }}}
        out[fw] = {"cells": cells, "metadata": meta}
    return out


def tags(cell: dict[str, Any]) -> list[str]:
    return list(cell["metadata"].get("tags", []))


def mark(cell: dict[str, Any]) -> tuple[str, int] | None:
    """(framework, run) of a merged cell: a code cell's metadata, a prose tab's directive arguments."""
    if cell["cell_type"] == "code":
        data = cell["metadata"].get(CELL_KEY)
        return (data["framework"], data["run"]) if data else None
    m = re.match(rf"^`{{3,}}\{{{PROSE_TAB}\}} (\S+) (\d+)\n", cell["source"])
    return (m.group(1), int(m.group(2))) if m else None


def fw_of(cell: dict[str, Any]) -> str | None:
    found = mark(cell)
    return found[0] if found else None


def run_of(cell: dict[str, Any]) -> int | None:
    found = mark(cell)
    return found[1] if found else None


def div_classes(source: str) -> list[str]:
    """Classes of a ``{div}`` wrapper (as directive argument or ``:class:`` option); [] if none."""
    lines = source.split("\n")
    m = re.match(r"^(`{3,}|:{3,})\{div\}(.*)$", lines[0])
    if not m:
        return []
    classes = m.group(2).split()
    if len(lines) > 1 and lines[1].startswith(":class:"):
        classes += lines[1][len(":class:"):].split()
    assert lines[-1] == m.group(1), "the div must close at the end of the cell"
    return classes


def body(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """The document's cells without the provenance note (which the lead may lay out as it likes)."""
    return [c for c in doc["cells"] if PROVENANCE_CLASS not in div_classes(c["source"])]


def output(cell: dict[str, Any]) -> str:
    return cell["outputs"][0]["text"]


@pytest.fixture(scope="module")
def full() -> tuple[Section, dict[str, Any]]:
    section = read((FIXTURES / "full.md").read_text(encoding="utf-8"))
    return section, merge_section(section, executed(section), TABS, LABELS)


def test_document_is_a_notebook(full: tuple[Section, dict[str, Any]]) -> None:
    _, doc = full
    assert doc["nbformat"] == 4 and doc["metadata"]["kernelspec"]["name"] == "python3"
    ids = [c.get("id") for c in doc["cells"]]
    assert len(set(ids)) == len(ids)  # executed cells' own ids never collide across frameworks


def test_kth_executed_cell_lands_at_kth_code_cell(full: tuple[Section, dict[str, Any]]) -> None:
    section, doc = full
    for fw in TABS:
        merged = [c for c in doc["cells"] if c["cell_type"] == "code" and fw_of(c) == fw]
        split = split_section(section, fw)
        assert [output(c) for c in merged] == [f"{fw}#{k}" for k in range(len(split))]
        assert [c["source"] for c in merged] == [fc.source for fc in split]


def test_code_cells_follow_section_order_with_frameworks_in_config_order(
    full: tuple[Section, dict[str, Any]],
) -> None:
    section, doc = full
    expected = [(fw, cell.source) for cell in section.code_cells for fw in TABS if fw in cell.tabs]
    got = [(fw_of(c), c["source"]) for c in doc["cells"] if c["cell_type"] == "code"]
    assert [fw for fw, _ in got] == [fw for fw, _ in expected]
    for (fw, merged), (_, original) in zip(got, expected, strict=True):
        if "tab.selected" not in original:
            assert merged == original, fw


def test_tab_all_cell_yields_one_cell_per_framework_in_order(full: tuple[Section, dict[str, Any]]) -> None:
    _, doc = full
    cpu = [c for c in doc["cells"] if c["cell_type"] == "code" and "def cpu" in c["source"]]
    assert [fw_of(c) for c in cpu] == list(TABS)
    assert len({run_of(c) for c in cpu}) == 1
    assert "torch.device" in cpu[0]["source"] and "jax.devices" in cpu[1]["source"]


def test_consecutive_framework_cells_share_one_run(full: tuple[Section, dict[str, Any]]) -> None:
    _, doc = full
    imports = [c for c in doc["cells"] if c["cell_type"] == "code" and "import" in c["source"]]
    assert [fw_of(c) for c in imports] == list(TABS)
    assert len({run_of(c) for c in imports}) == 1


def test_shared_prose_breaks_runs(full: tuple[Section, dict[str, Any]]) -> None:
    _, doc = full
    run_before: int | None = None
    seen_shared = False
    for cell in doc["cells"]:
        r = run_of(cell)
        if r is None:
            seen_shared = True
            continue
        if run_before is not None and seen_shared:
            assert r > run_before, "a run continued across shared prose"
        if run_before is not None and not seen_shared:
            assert r >= run_before
        run_before, seen_shared = r, False
    # "## Shared Code" prose separates the imports from the default-tab cell.
    imports = next(c for c in doc["cells"] if "import torch" in c.get("source", ""))
    default = next(c for c in doc["cells"] if c["cell_type"] == "code" and c["source"] == "x = 1")
    assert run_of(default) != run_of(imports)


def test_runs_are_contiguous(full: tuple[Section, dict[str, Any]]) -> None:
    _, doc = full
    order = [run_of(c) for c in doc["cells"] if run_of(c) is not None]
    for r in set(order):
        idx = [i for i, x in enumerate(order) if x == r]
        assert idx == list(range(idx[0], idx[-1] + 1)), f"run {r} is split"


def test_prose_tabs_are_marked_directives(full: tuple[Section, dict[str, Any]]) -> None:
    _, doc = full
    divs = [c for c in body(doc) if c["cell_type"] == "markdown" and mark(c)]
    assert [fw_of(c) for c in divs] == ["pytorch", "jax", "tensorflow"]
    assert all(c["source"].rstrip().endswith("```") for c in divs)
    assert len({run_of(c) for c in divs}) == 1  # the two prose tabs form one run
    assert "PyTorch prose." in divs[0]["source"]
    assert "JAX and TensorFlow prose." in divs[1]["source"] and "JAX and TensorFlow prose." in divs[2]["source"]
    # prose tabs and the following code cells are separate runs (different kinds)
    first_code = next(c for c in doc["cells"] if c["cell_type"] == "code")
    assert run_of(first_code) != run_of(divs[0])


def test_shared_prose_is_converted_to_myst(full: tuple[Section, dict[str, Any]]) -> None:
    _, doc = full
    first = doc["cells"][0]
    assert first["cell_type"] == "markdown" and first["source"].startswith("(sec_full)=\n# Devices and Memory")
    assert not div_classes(first["source"]) and mark(first) is None


def test_executed_tags_kept_and_the_framework_added_as_data(full: tuple[Section, dict[str, Any]]) -> None:
    _, doc = full
    (jax_y,) = [c for c in doc["cells"] if c["cell_type"] == "code" and c["source"] == "y = 2" and fw_of(c) == "jax"]
    assert tags(jax_y) == ["remove-output"]
    assert jax_y["metadata"][CELL_KEY]["framework"] == "jax" and isinstance(run_of(jax_y), int)
    assert set(jax_y["metadata"]) == {"tags", CELL_KEY}


def test_missing_framework_or_short_notebook_skips_cells() -> None:
    section = read("```{.python .input}\n%%tab pytorch, jax, tensorflow, mxnet\na = 1\n```\n\n"
                   "```{.python .input}\n%%tab all\nb = 2\n```\n")
    ran = executed(section)
    del ran["mxnet"]
    ran["jax"]["cells"] = ran["jax"]["cells"][:1]
    doc = merge_section(section, ran, TABS, LABELS)
    got = [(fw_of(c), c["source"]) for c in body(doc)]
    assert got == [
        ("pytorch", "a = 1"), ("jax", "a = 1"), ("tensorflow", "a = 1"),
        ("pytorch", "b = 2"), ("tensorflow", "b = 2"),
    ]


def test_nothing_executed_keeps_prose() -> None:
    section = read("# T\n\n```{.python .input}\nx = 1\n```\n\n:begin_tab:`jax`\nJ.\n:end_tab:\n")
    doc = merge_section(section, {}, TABS, LABELS)
    assert [c["cell_type"] for c in doc["cells"]] == ["markdown", "markdown"]
    assert fw_of(doc["cells"][1]) == "jax"


def test_single_framework_has_no_tabs() -> None:
    tabs = ("pytorch",)
    section = read("# T\n\n```{.python .input}\nx = 1\n```\n\n:begin_tab:`pytorch`\nP.\n:end_tab:\n", tabs)
    doc = merge_section(section, executed(section, tabs), tabs, LABELS)
    assert [c["source"] for c in body(doc)] == ["# T", "x = 1", "P."]
    assert tags(body(doc)[1]) == []


def test_toc_cell_becomes_toctree() -> None:
    section = read((FIXTURES / "index.md").read_text(encoding="utf-8"))
    doc = merge_section(section, {}, TABS, LABELS)
    toctrees = [c["source"] for c in doc["cells"] if c["source"].startswith("```{toctree}")]
    assert toctrees == [
        "```{toctree}\n:maxdepth: 2\n:numbered:\n\nchapter_gpus/index\nchapter_gpus/devices\n```",
        "```{toctree}\n:maxdepth: 1\n\nreferences\n```",
    ]


def test_prose_change_keeps_outputs_in_place() -> None:
    """The freeze store reuses an entry after a prose edit: merge still pairs cells correctly."""
    text = (FIXTURES / "full.md").read_text(encoding="utf-8")
    before = read(text)
    after = read(text.replace("## Shared Code", "## Shared Code\n\nA new paragraph.\n\nAnother one."))
    doc = merge_section(after, executed(before), TABS, LABELS)
    for fw in TABS:
        merged = [c for c in doc["cells"] if c["cell_type"] == "code" and fw_of(c) == fw]
        assert [c["source"] for c in merged] == [fc.source for fc in split_section(after, fw)]


def as_text(myst: str) -> str:
    """MyST's backslash escapes undone: the text a reader sees."""
    return re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", myst)


def test_provenance_line_per_framework() -> None:
    section = read("```{.python .input}\n%%tab all\nx = 1\n```\n")
    ran = executed(section, provenance=True)
    ran["tensorflow"]["metadata"] = {}
    doc = merge_section(section, ran, TABS, LABELS, {"jax": "jax.ipynb"})
    prov = "\n".join(c["source"] for c in doc["cells"] if PROVENANCE_CLASS in div_classes(c["source"]))
    assert doc["cells"][-1]["source"] in prov  # the note comes last
    lines = [prov.index(f"{LABELS[fw]} outputs") for fw in TABS]
    assert lines == sorted(lines)  # config order
    # The entry's values are shown as text: MyST escapes of every punctuation character.
    assert "JAX outputs computed on NVIDIA H100, JAX 9.9, Python 3.11.7, 2025-01-01." in as_text(prov)
    assert "TensorFlow outputs: not recorded." in prov
    assert "jax.ipynb" in prov
    assert not any(PROVENANCE_CLASS in div_classes(c["source"]) for c in merge_section(section, {}, TABS, LABELS)["cells"])


def test_identical_runs_are_shown_once_without_tabs() -> None:
    from tabbook.render.merge import share_identical_runs

    def code(fw: str, run: int, src: str, out: str) -> dict:
        return {"cell_type": "code", "source": src, "execution_count": 1,
                "metadata": {"tags": [], CELL_KEY: {"framework": fw, "run": run}},
                "outputs": [{"output_type": "stream", "name": "stdout", "text": out}]}

    tabs = ("a", "b")
    same = [code("a", 1, "x = 1", "1"), code("b", 1, "x = 1", "1")]
    differ = [code("a", 2, "print(1)", "1"), code("b", 2, "print(1)", "2")]
    partial = [code("a", 3, "y", "")]
    out = share_identical_runs(same + differ + partial, tabs)
    assert out[0]["metadata"] == {"tags": []} and out[0]["source"] == "x = 1"
    assert out[1:] == differ + partial  # different outputs, or a framework missing: tabs stay
