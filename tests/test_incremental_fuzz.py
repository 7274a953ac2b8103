"""Incremental = clean (issue 49, class C): named regression cases, then one random sequence.

Each named case is a sequence of edits the harness (``tests/incremental_fuzz.py``) once found,
or the issue reported, where the incremental build's site or report differed from a clean
build of the same sources; each asserts that it no longer does (the harness compares every
file of ``build/html``, ``d2l/`` and the reported problems). ``make fuzz-incremental`` runs
many more sequences than the one fixed seed here.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import incremental_fuzz as fuzz  # noqa: E402

from tabbook.build import _not_said  # noqa: E402
from tabbook.errors import BookError  # noqa: E402
from tabbook.problems import Problem  # noqa: E402


def _page(model: fuzz.Model, name: str) -> fuzz.Page:
    return model.pages[name]


def test_a_duplicate_label_added_and_removed_again_leaves_the_label_defined(tmp_path: Path) -> None:
    """The issue's reproduction: beta refers to sec_one (alpha's); beta defines it too; beta is
    restored. Sphinx forgot the label with beta's copy: every later build warned
    ":numref: to undefined label" and showed a broken reference until `tabbook clear`."""
    model = fuzz.start_model(fuzz.random.Random(0))
    original = _page(model, "beta").heading_label
    steps = [lambda m: setattr(_page(m, "beta"), "heading_label", "sec_one"),
             lambda m: setattr(_page(m, "beta"), "heading_label", original),
             lambda m: None]  # the no-op build after it replays no problem the sources lack
    assert (found := fuzz.replay(tmp_path, model, steps)) is None, found


def test_a_page_referring_to_a_label_that_now_has_another_owner_is_written_again(tmp_path: Path) -> None:
    """gamma (after alpha by name) takes sec_one too: a clean build resolves beta's :numref:
    to gamma; the incremental one kept beta's page pointing at alpha."""
    model = fuzz.start_model(fuzz.random.Random(0))
    assert (found := fuzz.replay(tmp_path, model, [lambda m: setattr(_page(m, "gamma"), "heading_label", "sec_one")])) is None, found


def test_a_renumbered_section_renumbers_the_references_to_it(tmp_path: Path) -> None:
    """The toc reordered: beta keeps its number, alpha's changes; beta's :numref: to alpha said
    the old number."""
    model = fuzz.start_model(fuzz.random.Random(0))
    assert (found := fuzz.replay(tmp_path, model, [lambda m: setattr(m, "toc", ["gamma", "beta", "alpha"])])) is None, found


def test_an_equation_removed_again_takes_its_stylesheet_with_it(tmp_path: Path) -> None:
    """Seed 211: beta gained an equation, then lost it; the incremental site kept the KaTeX
    stylesheet cut for beta's formulas (``_static/katex/katex-<hash>.css``), which no page
    links and a clean build does not write."""
    model = fuzz.start_model(fuzz.random.Random(0))
    steps = [lambda m: _page(m, "beta").blocks.append(("equation", "eq_sum", "")),
             lambda m: _page(m, "beta").blocks.pop()]
    assert (found := fuzz.replay(tmp_path, model, steps)) is None, found


def test_a_title_change_reaches_every_pages_navigation(tmp_path: Path) -> None:
    """furo's sidebar and the next/previous links on other pages kept the old title."""
    model = fuzz.start_model(fuzz.random.Random(0))
    assert (found := fuzz.replay(tmp_path, model, [lambda m: setattr(_page(m, "beta"), "title", "Renamed")])) is None, found


def test_a_toc_no_longer_numbered_takes_the_numbers_off_every_page(tmp_path: Path) -> None:
    """Sphinx writes section numbers into each page's toc and never takes them away: with
    ``:numbered:`` removed, every page's navigation still said "2. Beta"."""
    model = fuzz.start_model(fuzz.random.Random(0))
    assert (found := fuzz.replay(tmp_path, model, [lambda m: setattr(m, "numbered", False)])) is None, found


def test_a_config_change_leaves_no_copy_of_sphinxs_old_stamp(tmp_path: Path) -> None:
    """A changed configuration made Sphinx keep ``.buildinfo.bak`` in the site."""
    model = fuzz.start_model(fuzz.random.Random(0))
    assert (found := fuzz.replay(tmp_path, model, [lambda m: setattr(m, "title", fuzz.TITLES[1])])) is None, found


def test_removed_pages_images_and_notebooks_leave_the_site(tmp_path: Path) -> None:
    """Sphinx deletes no output: a removed page's .html and notebook, and an image no page
    shows, stayed on the site (and in its search index, as words of no page)."""
    model = fuzz.start_model(fuzz.random.Random(0))

    def remove_alpha(m: fuzz.Model) -> None:
        del m.pages["alpha"]
        m.toc.remove("alpha")

    def drop_figure(m: fuzz.Model) -> None:
        _page(m, "gamma").blocks.clear()
        m.images.clear()

    assert (found := fuzz.replay(tmp_path, model, [remove_alpha, drop_figure])) is None, found


def test_a_citation_removed_leaves_the_bibliography(tmp_path: Path) -> None:
    """The bibliography page lists what pages cite; sphinxcontrib-bibtex re-writes it only when
    its own source changes, so a removed citation stayed listed."""
    model = fuzz.start_model(fuzz.random.Random(0))
    assert (found := fuzz.replay(tmp_path, model, [lambda m: _page(m, "beta").blocks.pop()])) is None, found


def test_a_bib_entry_changed_under_the_same_key_reaches_the_pages(tmp_path: Path) -> None:
    """Formatted bib entries are kept between runs (render/ext/bib.py): an entry whose title
    changed while its key stayed is formatted again, on the bibliography and in the citing
    page's tooltip, as a clean build formats it; restoring it restores the old text."""
    model = fuzz.start_model(fuzz.random.Random(0))
    key = fuzz.BIB_KEYS[0]
    steps = [lambda m: m.bib_titles.__setitem__(key, "A retitled work"),
             lambda m: m.bib_titles.clear(),
             lambda m: None]
    assert (found := fuzz.replay(tmp_path, model, steps)) is None, found


def test_a_figure_added_before_others_renumbers_them_on_pages_not_read_again(tmp_path: Path) -> None:
    """Figure numbers come from each page's recorded outline (render/ext/fignumbers.py), not
    from the doctrees: a captioned figure added to alpha, before gamma's in the toc, renumbers
    gamma's figure, which beta refers to; removed again, the numbers are the first ones."""
    model = fuzz.start_model(fuzz.random.Random(0))
    _page(model, "beta").blocks.append(("ref", "fig_dot", "numref"))
    steps = [lambda m: _page(m, "alpha").blocks.insert(0, ("figure", "fig_new", fuzz.IMAGES[0])),
             lambda m: _page(m, "alpha").blocks.pop(0),
             lambda m: setattr(m, "numbered", False)]
    assert (found := fuzz.replay(tmp_path, model, steps)) is None, found


def test_pages_not_written_again_keep_their_search_index_entries(tmp_path: Path) -> None:
    """Sphinx adds a page's index entries while writing it, after saving its environment, and
    never reads them back: the API page's functions left the search once another page changed."""
    model = fuzz.start_model(fuzz.random.Random(0))
    saved = "%%tab all\n#@save\ndef alpha_f1(x):\n    return x + 1\n\nprint(alpha_f1(1))"
    steps = [lambda m: _page(m, "alpha").blocks.append(("code", None, saved)),
             lambda m: setattr(_page(m, "alpha"), "heading_label", "sec_three")]
    assert (found := fuzz.replay(tmp_path, model, steps)) is None, found


def test_a_label_under_a_heading_writes_its_page_not_the_book(tmp_path: Path) -> None:
    """A ``:label:`` put under beta's subsection renames that section's anchor, which only
    beta shows (furo's sidebar shows page titles only). The navigation's hash held every
    anchor, so every page was written again (the whole d2l-en: 455 pages, a minute, for one
    new label). The site stays the clean one, and gamma is not written again."""
    model = fuzz.start_model(fuzz.random.Random(0))
    _page(model, "beta").blocks.insert(0, ("section", None, "Part"))
    root = tmp_path / "book"
    assert fuzz.replay(tmp_path, model, []) is None
    gamma = root / "build" / "html" / "gamma.html"
    before = gamma.stat().st_mtime_ns
    _page(model, "beta").blocks[0] = ("section", "sec_part", "Part")
    fuzz.write_book(root, model)
    incremental = fuzz.build(root)
    assert (found := fuzz.difference(incremental, fuzz.Cleans(tmp_path / "c").of(root))) is None, found
    assert 'id="sec-part"' in (root / "build" / "html" / "beta.html").read_text()
    assert gamma.stat().st_mtime_ns == before


def test_a_label_under_a_heading_reaches_a_toctree_two_levels_up(tmp_path: Path) -> None:
    """A part's toctree (depth 3) shows the sections of its chapter's pages: a label added
    under one renames an anchor there, but Sphinx writes again only the page whose own toctree
    names the changed page (the chapter's index), so the part's page kept the old anchor."""
    root = tmp_path / "book"
    toc = "```toc\n:maxdepth: {}\n\n{}\n```\n"
    files = {"config.ini": fuzz.CONFIG.format(title=fuzz.TITLES[0], author="A. Writer"),
             "index.md": "# Book\n\nThe front page.\n\n" + toc.format(1, "part/index"),
             "part/index.md": "# Part\n\nIts prose.\n\n" + toc.format(3, "chap/index"),
             "part/chap/index.md": "# Chapter\n\nIts prose.\n\n" + toc.format(1, "page"),
             "part/chap/page.md": "# Page\n\nProse.\n\n## Details\n\nMore prose.\n"}
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    fuzz.build(root)
    part = root / "build" / "html" / "part" / "index.html"
    assert "#details" in part.read_text()
    page = root / "part" / "chap" / "page.md"
    page.write_text(page.read_text().replace("## Details\n", "## Details\n:label:`sec_details`\n"))
    incremental = fuzz.build(root)
    assert (found := fuzz.difference(incremental, fuzz.Cleans(tmp_path / "c").of(root))) is None, found
    assert "#sec-details" in part.read_text()


def test_sphinxs_duplicate_label_is_said_once_wherever_sphinx_places_it() -> None:
    """Sphinx warns at the page it read second: in an incremental run the re-read one, which
    need not be where the check (and a clean run) place it."""
    from tabbook.build import BuildResult

    result = BuildResult()
    result.problems = [("warning", BookError("duplicate label 'sec_one' (also at alpha.md:2)", "gamma.md", 2,
                                             kind=Problem.DUPLICATE_LABEL))]
    sphinx = [BookError("duplicate label sec_one, other instance in build/src/gamma.md", "alpha.md", 1,
                        kind=Problem.DUPLICATE_LABEL),
              BookError("duplicate label sec_two, other instance in build/src/beta.md", "alpha.md", 1,
                        kind=Problem.DUPLICATE_LABEL)]
    assert [p.message for p in _not_said(sphinx, result)] == [sphinx[1].message]


def test_one_random_sequence_builds_incrementally_as_it_builds_clean(tmp_path: Path) -> None:
    """A fixed seed of the harness (``make fuzz-incremental`` runs thousands)."""
    outcome = fuzz.run_sequence(7, 6, tmp_path, fuzz.Cleans(tmp_path))
    assert outcome.failure is None, fuzz.report(outcome)


def test_the_harness_forked_and_side_by_side_compares_every_build(tmp_path: Path) -> None:
    """``make fuzz-incremental``'s own way: Sphinx forked from a preloaded parent, two worker
    processes. In a subprocess, so that the preload (which patches MyST process-wide) stays out
    of this one; the summary must count every sequence and clean build it says it ran."""
    import subprocess

    run = subprocess.run([sys.executable, str(Path(fuzz.__file__)), "--seeds", "2", "--first", "11",
                          "--length", "1", "--jobs", "2", "--work", str(tmp_path)],
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "seed 11: 2 builds clean-equal" in run.stdout and "seed 12: 2 builds clean-equal" in run.stdout
    assert "2 sequences, 0 differing, 4 clean builds" in run.stdout, run.stdout
    assert sorted(p.name.startswith("worker") for p in tmp_path.iterdir() if p.name != "preload") == [True, True]


def test_only_what_sphinx_made_for_no_current_page_is_removed(tmp_path: Path) -> None:
    """Stale outputs go (a removed page, an image and a download no page names); what tabbook
    publishes beside Sphinx's (the PDFs, the notebooks) and the pages this run generated stay."""
    from types import SimpleNamespace

    from tabbook.render.ext.incremental import _remove_stale

    out = tmp_path / "html"
    for rel in ("index.html", "gone.html", "genindex.html", "_static/x.html", "_images/dot.svg",
                "_images/old.svg", "_downloads/pdf/book-plain.pdf", "_downloads/notebooks/gone-plain.ipynb",
                f"_downloads/{'a' * 32}/kept.py", f"_downloads/{'b' * 32}/old.py", ".buildinfo.bak"):
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        (out / rel).write_text("x")
    env = SimpleNamespace(found_docs={"index"}, images={"img/dot.svg": ({"index"}, "dot.svg")},
                          dlfiles={"kept.py": ({"index"}, f"{'a' * 32}/kept.py")})
    app = SimpleNamespace(builder=SimpleNamespace(format="html", name="html", out_suffix=".html"), env=env,
                          outdir=str(out), tabbook_rendered={"genindex"})
    _remove_stale(app, None)  # type: ignore[arg-type]
    left = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())
    assert left == [f"_downloads/{'a' * 32}/kept.py", "_downloads/notebooks/gone-plain.ipynb",
                    "_downloads/pdf/book-plain.pdf", "_images/dot.svg", "_static/x.html", "genindex.html",
                    "index.html"]
