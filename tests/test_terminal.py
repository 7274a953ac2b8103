"""What an author's terminal and a reader's provenance line say (issue 52, "Authors' terminal"):
unit-level checks, no build."""

from __future__ import annotations

import re
from typing import Any

from tabbook.build import BuildResult
from tabbook.execute.job import Job, Provenance
from tabbook.execute.outcome import UnitOutcome
from tabbook.execute.provenance import provenance
from tabbook.render.front import computed_lines
from tabbook.render.merge import describe_provenance


def _job(import_name: str) -> Job:
    return Job(notebook={}, section="a.md", framework="plain", kernel_name="k", import_name=import_name,
               cwd=".", timeout=10)


def test_a_tab_without_a_framework_records_no_framework_version() -> None:
    """The starter book's plain tab imports IPython (to check its kernel) and its stdlib tab
    ``statistics``: neither version is the tab's. A real framework's is kept."""
    info = {"framework_version": "9.18.1", "python": "3.11.7"}
    assert provenance(_job("IPython"), info).framework_version == "?"
    assert provenance(_job("statistics"), {"framework_version": "?"}).framework_version == "?"
    assert provenance(_job("torch"), {"framework_version": "2.13.0"}).framework_version == "2.13.0"


def as_text(myst: str) -> str:
    """MyST's backslash escapes undone (the entry's values are escaped): the text a reader sees."""
    return re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", myst)


def test_an_unknown_version_is_left_out_of_the_provenance_lines() -> None:
    prov = Provenance.from_dict({"device": "CPU only", "cpu": "AMD EPYC", "gpus": [], "framework_version": "?",
                                 "python": "3.11.7", "date": "2026-12-02"})
    [line] = computed_lines("statistics", [prov])
    assert as_text(line) == "CPU only (AMD EPYC), Python 3.11.7: 1 section, 2026-12-02"
    assert as_text(describe_provenance("statistics", prov)) == (
        "statistics outputs computed on CPU only (AMD EPYC), Python 3.11.7, 2026-12-02.")
    known = prov.with_(framework_version="2.13.0")
    assert "PyTorch 2.13.0, Python 3.11.7" in as_text(computed_lines("PyTorch", [known])[0])
    assert "CPU only (AMD EPYC), PyTorch 2.13.0, Python 3.11.7" in as_text(describe_provenance("PyTorch", known))


def _unit(fw: str, device: str, need: int = 0) -> UnitOutcome:
    prov: dict[str, Any] = {"device": device, "gpus": [] if device == "CPU only" else [device]}
    unit = UnitOutcome("a.md", fw, gpu_need=need)
    unit.notebook = {"cells": [], "metadata": {"tabbook": {"provenance": prov}}}
    return unit


def test_the_gpu_summary_says_nothing_for_a_book_without_gpus() -> None:
    """Every build of the starter book said "GPU outputs in 0 of 2 units"."""
    assert BuildResult(outcomes=[_unit("plain", "CPU only"), _unit("stdlib", "CPU only")]).gpu_summary() == ""
    # A unit that asks for a GPU (try_gpu) and got none is worth saying; so is one that ran on one.
    asked = BuildResult(outcomes=[_unit("pytorch", "CPU only", need=1), _unit("jax", "CPU only")])
    assert asked.gpu_summary() == "GPU outputs in 0 of 2 units (pytorch 0/1, jax 0/1)"
    ran = BuildResult(outcomes=[_unit("pytorch", "1× H100"), _unit("jax", "CPU only")])
    assert ran.gpu_summary() == "GPU outputs in 1 of 2 units (pytorch 1/1, jax 0/1)"


# --- Contributors: outputs kept from earlier code (issue 52) ----------------------------------

GPU_PAGE = """# Devices

Prose.

```{.python .input}
%%tab pytorch
import os
```

More prose.

```{.python .input}
%%tab pytorch
print('first')
```

```{.python .input}
%%tab pytorch
print('second')
```
"""


def _cells(text: str) -> list[Any]:
    from tabbook.source.read import read_section
    from tabbook.source.split import split_section

    return split_section(read_section(text, "ch/devices.md", ("pytorch",), "pytorch"), "pytorch")


def _entry(cells: list[Any]) -> Any:
    from tabbook.execute.store import Entry

    return Entry({"cells": [{"cell_type": "code", "source": c.source, "metadata": {"tags": list(c.tags)},
                             "outputs": []} for c in cells], "metadata": {}})


def test_outdated_outputs_are_located_at_the_first_edited_cell() -> None:
    """A CPU-only contributor edits a GPU section's third cell: the warning named the section's
    first cell (line 5); it names the edited one."""
    from tabbook.execute.plan import first_edited_line

    before = _cells(GPU_PAGE)
    assert [c.cell.line for c in before] == [5, 12, 17]
    entry = _entry(before)
    assert first_edited_line(entry, _cells(GPU_PAGE.replace("'second'", "'2nd'"))) == 17
    assert first_edited_line(entry, _cells(GPU_PAGE.replace("'first'", "'1st'"))) == 12
    added = GPU_PAGE + "\n```{.python .input}\n%%tab pytorch\nprint('third')\n```\n"
    assert first_edited_line(entry, _cells(added)) == 22  # the new cell
    assert first_edited_line(entry, before) == 5  # the code is the same: the library or lock changed


def test_outdated_outputs_say_what_a_contributor_can_do() -> None:
    from tabbook.execute.plan import refresh_hint

    hint = refresh_hint("ch/devices.md", "pytorch")
    assert "open a pull request" in hint and "make gpu-bundle" in hint and "scripts/gpu-build.sh" in hint
    assert "`tabbook build --execute-here --only ch/devices.md --frameworks pytorch`" in hint


# --- a failed build ends with its count --------------------------------------------------------

def test_failure_summary_counts_errors_and_warnings() -> None:
    from tabbook.errors import BookError

    result = BuildResult(problems=[("warning", BookError("w", "a.md", 1)), ("error", BookError("e", "a.md", 2))])
    assert result.failure_summary(1) == "[failed] 2 problems (1 error, 1 warning)"
    assert BuildResult().failure_summary(3) == "[failed] 3 problems (3 errors, 0 warnings)"


def test_a_strict_build_that_fails_ends_with_the_count(tmp_path: Any, capsys: Any) -> None:
    """The errors are listed, located, and the last line says how many there were."""
    from tabbook.cli import main

    (tmp_path / "config.ini").write_text("[build]\nnotebooks = *.md\n")
    (tmp_path / "index.md").write_text("# Book\n\n```toc\npage\n```\n")
    (tmp_path / "page.md").write_text("# Page\n\nSee :numref:`nowhere` and :numref:`elsewhere`.\n")
    assert main(["-C", str(tmp_path), "build", "--strict", "--no-render"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert [line for line in err if line.startswith("page.md:3:")][:2] and len(err) >= 3
    assert err[-1] == "[failed] 2 problems (2 errors, 0 warnings)"


def test_a_duplicate_label_on_one_page_is_said_once() -> None:
    """A label given twice on one page: the check says so at the second, then docutils said it
    again in its own words ("Duplicate explicit target name", "Duplicate ID") as Sphinx warnings."""
    from tabbook.build import _not_said
    from tabbook.errors import BookError
    from tabbook.problems import Problem
    from tabbook.render.diagnostics import kind_of
    from tabbook.render.warning import SphinxWarning

    said = BuildResult(problems=[("warning", BookError("duplicate label 'fig_a' (first defined at line 5)",
                                                       "aaa.md", 11, kind=Problem.DUPLICATE_LABEL))])
    records = [SphinxWarning(message='Duplicate explicit target name: "fig_a".', location="aaa.md:10"),
               SphinxWarning(message='Duplicate ID: "equation-eq-x" used by <target ids="equation-eq-x"> and …',
                             level="ERROR")]
    assert [kind_of(r) for r in records] == [Problem.DUPLICATE_LABEL, Problem.DUPLICATE_LABEL]
    again = [BookError(r.message, "aaa.md", 10 if r.location else None, kind=kind_of(r)) for r in records]
    assert _not_said(again, said) == []
    # a Sphinx warning of another kind on that page is still said
    other = BookError("something else", "aaa.md", 3, kind=Problem.SPHINX)
    assert _not_said([other], said) == [other]


# --- make serve's terminal --------------------------------------------------------------------

def test_a_preview_rebuild_says_each_warning_once_located_and_a_failure_says_what_is_served(
        tmp_path: Any, capfd: Any, monkeypatch: Any) -> None:
    """Issue 52: ``serve`` printed each warning twice (located by the stages, then as Sphinx's
    raw line at ``build/src/…``), and a failed rebuild ended without saying that the server
    goes on with the last good site."""
    from tabbook.config import load_config
    from tabbook.errors import BookError
    from tabbook.render.sphinx import sphinx_command
    from tabbook.serve import BUILD_FAILED, STATUS_URL, PreviewRebuild, html_dir

    (tmp_path / "config.ini").write_text("[build]\nnotebooks = *.md\n")
    (tmp_path / "index.md").write_text("# Book\n\n```toc\npage\n```\n")
    page = tmp_path / "page.md"
    page.write_text("# Page\n\n![Gone.](img/none.png)\n\nText.\n\n```{nosuchdirective}\nbody\n```\n")
    config = load_config(tmp_path)
    args = sphinx_command(config, "html", html_dir(config), {"tabbook_preview_status": STATUS_URL})[3:]
    rebuild = PreviewRebuild(config, args, url_host="127.0.0.1:1")
    rebuild(changed_paths=())
    out, err = capfd.readouterr()
    said = out + err
    assert said.count("img/none.png") == 1 and "page.md:3: image file img/none.png does not exist" in said, said
    unknown = [line for line in said.splitlines() if "nosuchdirective" in line]
    assert len(unknown) == 1 and unknown[0].startswith("warning: page.md:7:"), said
    assert "build/src" not in said and "WARNING:" not in said, said
    assert "[serve] rendered 2 pages: index.md, page.md" in said, said
    assert said.rstrip().endswith("[serve] done; serving http://127.0.0.1:1/"), said

    def stops(*args: Any, **kwargs: Any) -> None:  # any problem that stops a build
        raise BookError("a problem no output can be made past", "page.md", 3)

    monkeypatch.setattr("tabbook.build.build", stops)
    rebuild(changed_paths=(page,))
    out, err = capfd.readouterr()
    assert "page.md:3: a problem no output" in err and out.rstrip().endswith(BUILD_FAILED), out + err


def test_sphinx_autobuilds_own_chatter_is_off(capsys: Any) -> None:
    """``serve`` began with sphinx-autobuild's banner lines and the file watcher's log."""
    import logging
    import types

    import sphinx_autobuild.__main__ as real

    from tabbook.serve import quiet_autobuild

    fake = types.SimpleNamespace(show_message=real.show_message)
    fake.show_message("Waiting to detect changes...")
    assert "Waiting to detect changes" in capsys.readouterr().out  # what it said before
    quiet_autobuild(fake)
    fake.show_message("Waiting to detect changes...")
    assert capsys.readouterr().out == ""
    assert not logging.getLogger("watchfiles.main").isEnabledFor(logging.INFO)


# --- rendering is not silence ------------------------------------------------------------------

def test_render_progress_reads_the_runs_lines(tmp_path: Any) -> None:
    from tabbook.render.progress import read_pages, read_progress

    path = tmp_path / "html.progress"
    assert read_progress(path).line("html") == "[html] rendering: starting"
    path.write_text("n 40\nr ch/a\nr api\nr ch/a\n")
    assert read_progress(path).line("html") == "[html] rendering: reading 3 of 40 pages"
    path.write_text("n 40\nr ch/a\nr api\nw ch/a\n")
    assert read_progress(path).line("html") == "[html] rendering: read 2 of 40 pages, wrote 1"
    assert read_pages(path, {"ch/a.md", "ch/b.md"}) == ["ch/a.md", "api"]


def test_render_progress_in_a_log_says_a_line_now_and_then(tmp_path: Any) -> None:
    """In a log (not a terminal) a long render says how far it is every LOG_PERIOD seconds."""
    import io

    from tabbook.render.progress import LOG_PERIOD, RenderProgress

    path = tmp_path / "html.progress"
    path.write_text("n 10\nr a\n")
    now = [100.0]
    lines: list[str] = []
    progress = RenderProgress(path, "html", lines.append, clock=lambda: now[0])
    progress.tick()
    assert lines == []  # a short run says nothing
    now[0] += LOG_PERIOD
    progress.tick()
    assert lines == ["[html] rendering: reading 1 of 10 pages (30s)"]
    stream = io.StringIO()
    live = RenderProgress(path, "html", lines.append, stream, interactive=True)
    live.tick()
    assert stream.getvalue() == "\r\x1b[K[html] rendering: reading 1 of 10 pages"


def test_a_build_says_which_pages_it_rendered(tmp_path: Any, capsys: Any) -> None:
    from tabbook.build import rendered_line
    from tabbook.cli import main

    assert rendered_line("html", [f"p{i}.md" for i in range(7)]) == (
        "[html] rendered 7 pages: p0.md, p1.md, p2.md, p3.md, p4.md and 2 more")
    (tmp_path / "config.ini").write_text("[build]\nnotebooks = *.md\n")
    (tmp_path / "index.md").write_text("# Book\n\n```toc\npage\n```\n")
    (tmp_path / "page.md").write_text("# Page\n\nText.\n")
    assert main(["-C", str(tmp_path), "build", "html"]) == 0
    assert "[html] rendered 2 pages: index.md, page.md" in capsys.readouterr().out
    (tmp_path / "page.md").write_text("# Page\n\nText.\n\nA second paragraph.\n")  # the front page shows the first
    assert main(["-C", str(tmp_path), "build", "html"]) == 0
    assert "[html] rendered 1 page: page.md" in capsys.readouterr().out
