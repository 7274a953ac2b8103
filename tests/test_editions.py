"""Editions (issue 53, item 1): ``[site] versions`` and ``tabbook site`` building each edition
from its own commit, and the selector on every page.

The selector's table is pure (tabbook/render/editions.py) and tested on rows written here; the
build is tested once on a fixture repository (tests/editions_book.py: two commits, a page in
one only, a page moved, a code cell whose output names its edition), plus the failures a
user can cause: a stale edition, a ref that is no commit, a bad key.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from editions_book import git, make_repo, tabbook

from tabbook.addresses import edition_refs
from tabbook.render.editions import Edition, choices, href, selector_html
from tabbook.settings import At

NOW = Edition("now", "Current edition", "", "index",
              (("index", "Fixture"), ("part/index", "Part"), ("part/intro", "Intro"), ("part/new", "New"),
               ("part/kept", "Kept")),
              (("part/index", "index"), ("part/intro", "part/index"), ("part/new", "part/index"),
               ("part/kept", "part/index")))
OLD = Edition("v1", "First edition", "v1/", "index",
              (("index", "Fixture"), ("intro", "Intro"), ("part/index", "Part"), ("part/old", "Old"),
               ("part/kept", "Kept")),
              (("intro", "index"), ("part/index", "index"), ("part/old", "part/index"),
               ("part/kept", "part/index")))
BOTH = (NOW, OLD)


def test_a_page_in_both_editions_links_the_same_page() -> None:
    now, old = choices(BOTH, "now", "part/kept")
    assert (now.current, now.target, now.note) == (True, "part/kept", "")
    assert (old.current, old.target, old.note) == (False, "part/kept", "")


def test_a_missing_page_falls_back_to_its_nearest_parent_with_a_note() -> None:
    _, old = choices(BOTH, "now", "part/new")
    assert old.target == "part/index"
    assert "not in the First edition" in old.note and "nearest parent there, Part" in old.note
    now, _ = choices(BOTH, "v1", "part/old")
    assert now.target == "part/index" and "not in the Current edition" in now.note


def test_with_no_parent_there_it_falls_back_to_the_front_page_with_a_note() -> None:
    # intro.md moved under the part in the current edition: its only parent in v1 is the root
    now, _ = choices(BOTH, "v1", "intro")
    assert now.target == "index" and now.note.endswith("the link goes to its front page")
    # a page no toc lists (no parents known) goes to the front page too
    _, old = choices(BOTH, "now", "api")
    assert old.target == "index" and old.note


def test_links_are_relative_between_the_root_and_an_edition_folder() -> None:
    assert href(NOW, "../", OLD, "part/index.html") == "../v1/part/index.html"
    assert href(NOW, "./", OLD, "index.html") == "v1/index.html"
    assert href(OLD, "../", NOW, "part/kept.html") == "../../part/kept.html"
    assert href(OLD, "./", NOW, "index.html") == "../index.html"


def test_the_selector_is_plain_links_naming_the_current_edition() -> None:
    html = selector_html(BOTH, "v1", "part/old", "../", lambda d: d + ".html")
    assert html.startswith('<nav class="tabbook-editions" aria-label="Editions"><details>')
    assert "<summary>Edition: First edition</summary>" in html
    assert '<strong aria-current="page">First edition</strong>' in html
    assert '<a href="../../part/index.html">Current edition</a>' in html
    assert "<script" not in html and "storage" not in html.lower()


def test_the_round_trip_through_the_render_context_keeps_the_rows() -> None:
    import json

    from tabbook.render.context import _tuples
    row = json.loads(json.dumps(OLD.as_row()))
    assert Edition.from_row(_tuples(row)) == OLD


@pytest.mark.parametrize(("text", "why"), [
    ("now HEAD", "names one edition"),
    ("now HEAD\nnow v1", "twice"),
    ("_static HEAD\nv1 v1", "not an edition's label"),
    ("a/b HEAD\nv1 v1", "not an edition's label"),
    ("now --upload-pack=x\nv1 v1", "LABEL REF"),
    ("now\nv1 v1", "LABEL REF"),
])
def test_the_versions_key_refuses_what_cannot_name_an_edition(text: str, why: str) -> None:
    with pytest.raises(ValueError, match=why):
        edition_refs(text, At(Path("."), Path("."), {}))


def test_the_versions_key_reads_labels_refs_and_titles() -> None:
    assert edition_refs("now main Current edition\n  v1 v1\n", At(Path("."), Path("."), {})) == (
        ("now", "main", "Current edition"), ("v1", "v1", "v1"))


# ---- the build, on a fixture repository ---------------------------------------------------------

@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    repo = make_repo(tmp_path_factory.mktemp("editions") / "book")
    tabbook(repo, "build")  # the working tree built first: its Sphinx state must not outlive the site
    tabbook(repo, "site", "--no-pdfs")
    return repo


def _selector_links(page: Path) -> list[tuple[str, str, str]]:
    """(edition, href, note) of each linked edition on a built page."""
    nav = re.search(r'<nav class="tabbook-editions".*?</nav>', page.read_text(encoding="utf-8"), re.S)
    assert nav, f"{page}: no edition selector"
    return re.findall(r'<li><a href="([^"]+)">([^<]+)</a>(?: <span class="tabbook-edition-note">([^<]*)</span>)?',
                      nav.group(0))


def test_each_edition_is_built_from_its_own_commit(built: Path) -> None:
    html = built / "build" / "html"
    assert (html / "part" / "new.html").is_file() and not (html / "part" / "old.html").exists()
    assert (html / "v1" / "part" / "old.html").is_file() and not (html / "v1" / "part" / "new.html").exists()
    # outputs from each commit's own _freeze/, never executed again
    assert "output of the current edition" in (html / "part" / "kept.html").read_text(encoding="utf-8")
    assert "output of the first edition" in (html / "v1" / "part" / "kept.html").read_text(encoding="utf-8")
    # each edition's own notebooks, linked from its own pages
    old_nb = html / "v1" / "_downloads" / "notebooks" / "part" / "kept-plain.ipynb"
    assert "output of the first edition" in old_nb.read_text(encoding="utf-8")
    assert 'href="../_downloads/notebooks/part/kept-plain.ipynb"' in (html / "v1/part/kept.html").read_text(
        encoding="utf-8")
    # the temporary worktrees are gone
    assert git(built, "worktree", "list").count("\n") == 1
    assert not list((built / "build").glob(".editions-*"))


def test_every_page_links_an_existing_page_of_the_other_edition(built: Path) -> None:
    html = built / "build" / "html"
    # Sphinx's search page and general index included: they have no body, and tabbook's
    # overrides of their templates show the selector (render/templates/)
    pages = [p for p in html.rglob("*.html") if "_" not in p.relative_to(html).parts[0][:1]]
    assert {p.stem for p in pages} >= {"search", "genindex"}
    assert len(pages) == 14
    for page in pages:
        links = _selector_links(page)
        assert len(links) == 1, page
        target = (page.parent / links[0][0]).resolve()
        assert target.is_file(), (page, links)
        in_old = target.is_relative_to((html / "v1").resolve())
        assert in_old != page.is_relative_to(html / "v1"), (page, target)  # the other edition
        same = target.relative_to((html / "v1").resolve() if in_old else html.resolve())
        mine = page.relative_to(html / "v1" if not in_old else html)
        assert (same == mine) == (links[0][2] == ""), (page, links)  # a note exactly where it is elsewhere


def test_the_fallbacks_of_the_fixture(built: Path) -> None:
    html = built / "build" / "html"
    [(link, name, note)] = _selector_links(html / "part" / "new.html")
    assert (link, name) == ("../v1/part/index.html", "First edition") and "nearest parent there, Part" in note
    [(link, name, note)] = _selector_links(html / "v1" / "intro.html")
    assert (link, name) == ("../index.html", "Current edition") and note.endswith("to its front page")


def test_a_stale_edition_is_an_error_naming_its_ref_and_page(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "book", execute=("current",))
    (repo / "build" / "html").mkdir(parents=True)
    (repo / "build" / "html" / "index.html").write_text("the last site", encoding="utf-8")
    proc = tabbook(repo, "site", "--no-pdfs", check=False)
    assert proc.returncode == 1
    assert re.search(r"^v1:part/kept\.md:\d+: \[plain\] freeze entry _freeze/part/kept/plain\.ipynb is missing",
                     proc.stderr, re.M), proc.stderr
    assert (repo / "build" / "html" / "index.html").read_text(encoding="utf-8") == "the last site"
    assert git(repo, "worktree", "list").count("\n") == 1


def test_a_ref_that_is_no_commit_is_an_error_at_the_key(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "book", execute=())
    config = repo / "config.ini"
    config.write_text(config.read_text(encoding="utf-8").replace("v1 v1", "v1 v9"), encoding="utf-8")
    proc = tabbook(repo, "site", "--no-pdfs", check=False)
    assert proc.returncode == 1
    line = config.read_text(encoding="utf-8").splitlines().index("versions = now main Current edition") + 1
    assert f"config.ini:{line}: [site] versions names 'v9' (edition v1), which is no commit" in proc.stderr


def test_a_later_build_renders_the_working_tree_again(built: Path) -> None:
    """Last in the module (it changes the fixture): the editions' pages do not survive a build of
    the working tree, though its Sphinx state from before the site says every page is current
    (the default edition's ``.buildinfo``, copied with its site, names another configuration,
    so Sphinx writes every page again)."""
    tabbook(built, "build")
    page = (built / "build" / "html" / "part" / "kept.html").read_text(encoding="utf-8")
    assert "output of the current edition" in page and "tabbook-editions" not in page
