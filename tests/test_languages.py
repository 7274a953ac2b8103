"""``[site] languages`` (tabbook.render.languages, tabbook.render.ext.languages): the key read and
checked at its line; pages mapped by path, then by label, a page missing in one language linked
nothing; the notes that say a translation is older (or its original newer) by commit date, and
nothing without git; a sibling at a git ref; the links' HTML; and one built pair of sites, laid
out side by side, whose every language link resolves and whose searches stay apart."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tabbook.config import load_config
from tabbook.errors import BookError
from tabbook.render.languages import (
    Pages,
    commit_dates,
    head_html,
    match,
    nav_html,
    translations,
)
from tabbook.render.linkcheck import broken_links

sys.path.insert(0, str(Path(__file__).resolve().parent))
from language_books import commit, make_books  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def _pages(labels: dict[str, list[str]], dates: dict[str, int] | None = None) -> Pages:
    owners: dict[str, str] = {}
    for doc, names in labels.items():
        for name in names:
            owners.setdefault(name, doc)
    return Pages({doc: doc + ".md" for doc in labels}, labels, owners, dates or {})


# ---- mapping ------------------------------------------------------------------------------------

def test_pages_map_by_path_first_then_by_their_own_label() -> None:
    own = _pages({"index": [], "a/moved": ["sec_moved", "fig_x"], "same": ["sec_same"],
                  "part": ["sec_renamed_there", "subsec_shared"], "alone": ["sec_alone"], "bare": []})
    other = _pages({"index": [], "b/renamed": ["sec_moved"], "same": ["sec_other_name"],
                    "elsewhere": ["sec_elsewhere", "fig_x", "subsec_shared"]})
    assert match(own, other) == {
        "index": "index",
        "a/moved": "b/renamed",  # its own label, not fig_x's page
        "same": "same",  # the path wins over the labels
    }  # "part": only a subsection went there; "alone", "bare": no counterpart, no guess


def test_two_books_map_each_other_alike_when_only_one_pages_own_label_is_shared() -> None:
    # the sibling's page opens with a figure's label that this page defines further down
    own = _pages({"shift": ["sec_shift", "fig_cats"], "other": ["sec_other"]})
    sibling = _pages({"environment": ["fig_cats", "sec_environment"], "other": ["sec_other"]})
    assert match(own, sibling) == {"shift": "environment", "other": "other"}
    assert match(sibling, own) == {"environment": "shift", "other": "other"}


def test_the_fixture_books_map_both_ways(tmp_path: Path) -> None:
    en, fr = make_books(tmp_path)
    from_en = translations(load_config(en))
    from_fr = translations(load_config(fr))
    assert sorted(from_en) == ["basics/autograd", "basics/tensors", "index", "intro"]  # not extra
    assert sorted(from_fr) == ["basics/gradients", "basics/tensors", "index", "intro"]
    assert ("other", "fr", "../fr/basics/gradients.html", "") in from_en["basics/autograd"]
    assert ("other", "en", "../en/basics/autograd.html", "") in from_fr["basics/gradients"]
    # each page lists itself and the x-default (the first line of the key: English)
    assert from_en["intro"][0] == ("self", "en", "intro.html", "")
    assert from_en["intro"][-1] == ("x-default", "x-default", "intro.html", "")
    assert from_fr["intro"][-1] == ("x-default", "x-default", "../en/intro.html", "")


# ---- freshness ----------------------------------------------------------------------------------

def test_a_translation_committed_before_its_original_is_said_to_be_older_on_both_sides(tmp_path: Path) -> None:
    en, fr = make_books(tmp_path)
    from_en = translations(load_config(en))
    from_fr = translations(load_config(fr))
    assert ("other", "fr", "../fr/basics/tensors.html", "older 2024-02-01 2024-03-05") in from_en["basics/tensors"]
    assert ("other", "en", "../en/basics/tensors.html", "newer 2024-03-05 2024-02-01") in from_fr["basics/tensors"]
    # the French intro was committed after the English one: current, so nothing is said
    assert all(note == "" for *_, note in from_en["intro"])
    assert all(note == "" for *_, note in from_fr["intro"])


def test_without_git_nothing_is_said_about_dates(tmp_path: Path) -> None:
    en, fr = make_books(tmp_path, git=False)
    assert commit_dates(en) == {}
    for book in (en, fr):
        links = translations(load_config(book))
        assert links["basics/tensors"] and all(note == "" for *_, note in links["basics/tensors"])


def test_commit_dates_are_the_last_commit_of_each_file_relative_to_a_book_in_a_subfolder(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    commit(repo, {"book/a.md": "a", "book/b.md": "b", "other.md": "o"}, "2024-01-01")
    commit(repo, {"book/a.md": "a2"}, "2024-06-01")
    dates = commit_dates(repo / "book")
    assert set(dates) == {"a.md", "b.md"}
    assert dates["a.md"] - dates["b.md"] == (31 + 29 + 31 + 30 + 31) * 86400  # Jan to May 2024


def test_commit_dates_are_kept_by_commit_between_commands(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import tabbook.render.languages as languages

    en, fr = make_books(tmp_path)
    first = translations(load_config(en))
    logs: list[Path] = []
    real = languages.commit_dates

    def counted(folder: Path, ref: str = "HEAD") -> dict[str, int]:
        logs.append(folder)
        return real(folder, ref)

    monkeypatch.setattr(languages, "commit_dates", counted)
    assert translations(load_config(en)) == first and logs == []  # both books' dates from the memo
    commit(fr, {"basics/tensors.md": "# Tenseurs\n:label:`sec_tensors`\n\nÀ jour.\n"}, "2024-03-10")
    again = translations(load_config(en))
    assert logs == [fr]  # only the book with a new commit is read again
    assert ("other", "fr", "../fr/basics/tensors.html", "") in again["basics/tensors"]  # no longer older


def test_a_sibling_at_a_git_ref_of_this_repository(tmp_path: Path) -> None:
    en, fr = make_books(tmp_path)
    git = ["git", "-C", str(en)]
    subprocess.run([*git, "checkout", "-q", "-b", "fr"], check=True)
    for path in en.iterdir():
        if path.name != ".git":
            shutil.rmtree(path) if path.is_dir() else path.unlink()
    commit(en, {rel: (fr / rel).read_text() for rel in ("index.md", "intro.md", "basics/tensors.md",
                                                        "basics/gradients.md", "config.ini")}, "2024-04-01")
    subprocess.run([*git, "checkout", "-q", "main"], check=True)
    ini = en / "config.ini"
    ini.write_text(ini.read_text().replace("fr ../fr", "fr git:fr https://fr.example.org/"))
    links = translations(load_config(en))
    assert ("other", "fr", "https://fr.example.org/basics/gradients.html", "") in links["basics/autograd"]
    assert "extra" not in links
    assert not list(tmp_path.glob("tabbook-language-*"))  # (its tree is read from a temporary folder)
    ini.write_text(ini.read_text().replace("git:fr", "git:nosuchref"))
    with pytest.raises(BookError) as err:
        translations(load_config(en))
    line = next(i for i, t in enumerate(ini.read_text().splitlines(), 1) if t.startswith("languages"))
    assert err.value.location_message() == (f"config.ini:{line}: [site] languages fr: git:nosuchref: "
                                            "nosuchref is not a commit of this book's git repository")


# ---- the key ------------------------------------------------------------------------------------

@pytest.mark.parametrize(("value", "why"), [
    ("en .\n    fr ../nowhere", "fr: ../nowhere is not a book's folder (it has no config.ini)"),
    ("en .\n    e! ../fr", "'e!' is not a language tag (en, zh, zh-CN, pt_BR, ...)"),
    ("en .\n    en ../fr", "names en twice"),
    ("en .\n    fr ../fr https://fr.example.org", "fr: the site address 'https://fr.example.org' is a "
                                                   "folder's: end it with /"),
    ("en .\n    fr ../fr javascript:alert(1)/", "'javascript:alert(1)/': a javascript: link runs script in "
                                                "the reader's browser; give an http(s) or a relative URL"),
    ("en .\n    fr", "line 'fr' is not TAG SOURCE [URL] (e.g. zh ../d2l-zh https://zh.d2l.ai/)"),
    ("en .\n    fr git:", "fr: git: names no ref (git:REF, e.g. git:zh or git:origin/zh)"),
    ("en .\n    de .", "names this book (.) more than once"),
])
def test_a_bad_languages_value_is_an_error_at_its_line(tmp_path: Path, value: str, why: str) -> None:
    en, _ = make_books(tmp_path, git=False)
    ini = en / "config.ini"
    ini.write_text(re.sub(r"languages = en \.\n    fr \.\./fr", lambda _: "languages = " + value, ini.read_text()))
    line = next(i for i, t in enumerate(ini.read_text().splitlines(), 1) if t.startswith("languages"))
    with pytest.raises(BookError) as err:
        load_config(en)
    assert err.value.location_message() == f"config.ini:{line}: [site] languages {why}"


def test_the_book_itself_may_go_unnamed_its_tag_then_from_project_lang(tmp_path: Path) -> None:
    en, _ = make_books(tmp_path, git=False)
    ini = en / "config.ini"
    ini.write_text(ini.read_text().replace("languages = en .\n    fr ../fr", "languages = fr ../fr"))
    links = translations(load_config(en))["intro"]
    assert links == (("self", "en", "intro.html", ""), ("other", "fr", "../fr/intro.html", ""),
                     ("x-default", "x-default", "intro.html", ""))


def test_without_the_key_no_page_has_links(tmp_path: Path) -> None:
    en, _ = make_books(tmp_path, git=False)
    ini = en / "config.ini"
    ini.write_text(ini.read_text().replace("languages = en .\n    fr ../fr", "languages ="))
    assert translations(load_config(en)) == {}


# ---- the HTML -----------------------------------------------------------------------------------

LINKS = (("self", "en", "a/b.html", ""), ("other", "zh_CN", "https://zh.example.org/a/c.html", ""),
         ("other", "ar", "../ar/a/b.html", "older 2024-01-01 2024-02-02"),
         ("other", "fr", "../fr/a/b.html", "newer 2024-03-01 2024-02-02"),
         ("x-default", "x-default", "a/b.html", ""))


def test_the_head_has_every_alternate_with_its_own_and_the_x_default() -> None:
    assert head_html(LINKS, "../") == (
        '<link rel="alternate" hreflang="en" href="../a/b.html">\n'
        '<link rel="alternate" hreflang="zh-CN" href="https://zh.example.org/a/c.html">\n'
        '<link rel="alternate" hreflang="ar" href="../../ar/a/b.html">\n'
        '<link rel="alternate" hreflang="fr" href="../../fr/a/b.html">\n'
        '<link rel="alternate" hreflang="x-default" href="../a/b.html">\n')


def test_the_visible_line_names_each_other_language_in_its_own_language_with_its_note() -> None:
    assert nav_html(LINKS, "../") == (
        '<nav class="tabbook-downloads tabbook-languages" aria-label="Translations"><p>'
        '<span class="tabbook-downloads-kind">Translations</span> '
        '<a href="https://zh.example.org/a/c.html" hreflang="zh-CN" lang="zh-CN">简体中文</a> '
        '<a href="../../ar/a/b.html" hreflang="ar" lang="ar" dir="rtl">العربية</a> '
        '<span class="tabbook-languages-older">(older: last changed 2024-01-01, this page 2024-02-02)</span> '
        '<a href="../../fr/a/b.html" hreflang="fr" lang="fr">Français</a> '
        '<span class="tabbook-languages-newer">(newer: changed 2024-03-01, after this page (2024-02-02); '
        'this translation may be behind)</span></p></nav>')
    assert nav_html(LINKS[:1] + LINKS[-1:], "") == ""  # no other language: no line
    french = nav_html((("other", "en", "../en/a.html", ""), ("self", "fr", "a.html", "")), "")
    assert french == ('<nav class="tabbook-downloads tabbook-languages" aria-label="Traductions"><p>'
                      '<span class="tabbook-downloads-kind">Traductions</span> '
                      '<a href="../en/a.html" hreflang="en" lang="en">English</a></p></nav>')


def test_the_link_checker_leaves_another_languages_site_to_it(tmp_path: Path) -> None:
    site = tmp_path / "html"
    site.mkdir()
    (site / "a.html").write_text('<link rel="alternate" hreflang="fr" href="../fr/a.html">'
                                 '<a hreflang="fr" href="../fr/a.html">fr</a><a href="../fr/a.html">x</a>'
                                 '<a hreflang="en" href="gone.html">me</a>')
    assert broken_links(site) == ["a.html:1: broken link ../fr/a.html", "a.html:1: broken link gone.html"]


# ---- one built pair of sites --------------------------------------------------------------------

def _build(book: Path) -> None:
    done = subprocess.run([str(ROOT / ".venv" / "bin" / "tabbook"), "-C", str(book), "build", "html"],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr


def test_two_built_sites_side_by_side_link_each_other_page_for_page(tmp_path: Path) -> None:
    en, fr = make_books(tmp_path / "books")
    for book in (en, fr):
        _build(book)
    site = tmp_path / "site"
    for book in (en, fr):
        shutil.copytree(book / "build" / "html", site / book.name)
    assert broken_links(site / "en") == [] and broken_links(site / "fr") == []
    assert broken_links(site) == []  # side by side, every language link resolves
    tensors = (site / "en" / "basics" / "tensors.html").read_text()
    assert '<link rel="alternate" hreflang="fr" href="../../fr/basics/tensors.html">' in tensors
    assert '<link rel="alternate" hreflang="x-default" href="../basics/tensors.html">' in tensors
    nav = re.search(r'<nav class="[^"]*tabbook-languages.*?</nav>', tensors, re.S)
    assert nav and "older: last changed 2024-02-01, this page 2024-03-05" in nav.group(0)
    assert "tabbook-languages" not in (site / "en" / "extra.html").read_text()  # no French page
    gradients = (site / "fr" / "basics" / "gradients.html").read_text()
    assert 'href="../../en/basics/autograd.html" hreflang="en" lang="en">English</a>' in gradients
    intro = (site / "en" / "intro.html").read_text()
    assert 'href="../fr/intro.html" hreflang="fr"' in intro  # (no "./" before it)
    # a page the sibling gains is linked by the next (incremental) build, as a clean one would
    assert "tabbook-languages" not in (en / "build" / "html" / "extra.html").read_text()
    (fr / "plus.md").write_text("# En plus\n:label:`sec_extra`\n\nSeulement ici.\n", encoding="utf-8")
    _build(en)
    assert 'href="../fr/plus.html" hreflang="fr" lang="fr">Français</a>' in (en / "build" / "html" / "extra.html").read_text()
    # the search stays per language: each site indexes its own pages only
    for lang, own, other in (("en", "Tensors", "Tenseurs"), ("fr", "Tenseurs", "Tensors")):
        index = (site / lang / "searchindex.js").read_text()
        titles = json.loads(index[index.index("(") + 1:index.rindex(")")])["titles"]
        assert own in titles and other not in titles
