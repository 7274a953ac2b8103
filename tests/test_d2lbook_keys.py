"""d2lbook's configuration keys (issue 29, item 3): each one declared with d2lbook's default,
and each one tabbook honours shown by its effect on the fixture book that sets them all
(``tests/fixtures/d2lbook_keys``): one HTML build and one PDF build, shared by the tests."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from prerequisites import skip_unless

from tabbook.config import KEY_CLASSES, OVERLAY_ENV, load_config, settings_of
from tabbook.errors import BookError
from tabbook.execute.store import KEY_VERSION, KeyParts, _key
from tabbook.render import latex_conf
from tabbook.render.context import render_context
from tabbook.render.pdf import post_latex, tex_available

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = Path(__file__).resolve().parent / "fixtures" / "d2lbook_keys"

needs_tex = skip_unless(tex_available() and shutil.which("pdftotext") and shutil.which("pdffonts"),
                        "TeX is not installed (make test installs it: scripts/install-tex.sh)")

#: Every key of d2lbook 1.0.3's config_default.ini (the names only), by section.
D2LBOOK_KEYS = {
    "project": "name title author release copyright lang",
    "translation": "origin_repo origin_lang translator terminology",
    "build": "index notebooks rsts non-notebooks exclusions dependencies resources eval_notebook "
             "source_dir output_dir warning_is_error sphinx_extensions sphinx_configs tabs origin_repo",
    "html": "header_links favicon html_logo include_css include_js",
    "pdf": "main_font sans_font mono_font post_latex latex_logo bibfile latex_url style",
    "library": "save_filename save_mark save_patterns version version_file root_dir",
    "deploy": "google_analytics_tracking_id github_repo s3_bucket other_file_s3urls",
    "colab": "github_repo exclusions libs libs_header gpu_pattern replace_svg_url",
    "sagemaker": "github_repo kernel libs libs_header",
    "slides": "top_left top_right github_repo",
}


def run(book: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TABBOOK_CACHE": str(book.parent / ".cache")}
    env.pop(OVERLAY_ENV, None)
    return subprocess.run([sys.executable, "-m", "tabbook", "-C", str(book), *args], cwd=ROOT,
                          capture_output=True, text=True, env=env, timeout=600)


def line_of(book: Path, section: str, key: str) -> int:
    from tabbook.settings import key_line

    line = key_line((book / "config.ini").read_text(), section, key)
    assert line is not None
    return line


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The fixture book built once as HTML (its two units executed): (book, the build's output)."""
    book = tmp_path_factory.mktemp("keys") / "book"
    shutil.copytree(FIXTURE, book)
    proc = run(book, "build", "html")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return book, proc.stdout + proc.stderr


@pytest.fixture(scope="module")
def html(built: tuple[Path, str]) -> Path:
    return built[0] / "build" / "html"


@pytest.fixture(scope="module")
def pdf(built: tuple[Path, str]) -> tuple[Path, str]:
    """The same book's PDF (its outputs reused from the store): (book, the build's output)."""
    book = built[0]
    proc = run(book, "pdf")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return book, proc.stdout + proc.stderr


def page(html: Path, name: str = "page") -> str:
    return (html / f"{name}.html").read_text(encoding="utf-8")


# ---- the declarations --------------------------------------------------------------------------

def test_every_d2lbook_key_is_declared_and_optional(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    declared = {(d.section, d.key): d for cls in KEY_CLASSES for _, d in settings_of(cls)}
    missing = [(s, k) for s, keys in D2LBOOK_KEYS.items() for k in keys.split()
               if (s, k) not in declared and not any((s, k) in d.aliases for d in declared.values())]
    assert missing == []
    assert all(d.default is not None for d in declared.values())  # none is required
    # d2lbook's defaults where its keys are d2lbook's alone.
    defaults = {k: declared[k].default for k in [("project", "author"), ("project", "version"),
                                                  ("colab", "gpu_pattern"), ("build", "output_dir")]}
    assert defaults == {("project", "author"): "The contributors", ("project", "version"): "0.0.1",
                        ("colab", "gpu_pattern"): "gpu", ("build", "output_dir"): "_build"}
    # The fixture sets every key honoured, and some only accepted: all read without complaint.
    monkeypatch.delenv(OVERLAY_ENV, raising=False)
    shutil.copytree(FIXTURE, tmp_path / "book")
    config = load_config(tmp_path / "book")
    assert config.pdf.style == "cambridge" and config.deploy.s3_bucket == "s3://example-bucket"


@pytest.mark.parametrize(("section", "key", "value", "why"), [
    ("html", "header_links", "PDF, keys.pdf", "has 2 items, not triples of name, URL, icon"),
    ("build", "sphinx_configs", "html_title = ", "is not valid Python (invalid syntax)"),
    ("colab", "libs", "a, b, c, d", "'a, b, c, d': each line is TAB, LIBRARY, PIP ARGUMENT"),
    ("colab", "replace_svg_url", "img", "must be FOLDER, URL"),
])
def test_a_bad_value_is_an_error_at_its_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                             section: str, key: str, value: str, why: str) -> None:
    monkeypatch.delenv(OVERLAY_ENV, raising=False)
    book = tmp_path / "book"
    shutil.copytree(FIXTURE, book)
    ini = book / "config.ini"
    text = ini.read_text()
    start = text.index(f"\n{key} =", text.index(f"[{section}]")) + 1
    end = re.compile(r"\n(?=\S)").search(text, start + 1)
    ini.write_text(text[:start] + f"{key} = {value}" + text[end.start() if end else len(text):])
    with pytest.raises(BookError) as err:
        load_config(book)
    assert err.value.location_message().startswith(f"config.ini:{line_of(book, section, key)}: [{section}] {key} {why}")


@pytest.mark.parametrize(("section", "key", "value", "why"), [
    ("html", "favicon", "static/missing.png", "names static/missing.png, which does not exist: left unset"),
    ("html", "include_css", "static/*.scss", "names no file of the book: static/*.scss (left out)"),
    ("build", "dependencies", "nowhere.cfg", "names no file of the book: nowhere.cfg (left out)"),
])
def test_a_file_that_does_not_exist_is_read_past_with_a_warning(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                section: str, key: str, value: str, why: str) -> None:
    """d2lbook goes on without a file its keys name but the book lacks (d2lbook's contract): the
    key reads as unset (the patterns that match nothing left out), reported at its line."""
    monkeypatch.delenv(OVERLAY_ENV, raising=False)
    book = tmp_path / "book"
    shutil.copytree(FIXTURE, book)
    ini = book / "config.ini"
    text = ini.read_text()
    start = text.index(f"\n{key} =", text.index(f"[{section}]")) + 1
    end = re.compile(r"\n(?=\S)").search(text, start + 1)
    ini.write_text(text[:start] + f"{key} = {value}" + text[end.start() if end else len(text):])
    config = load_config(book)
    assert [p.shown() for p in config.problems] == [
        f"config.ini:{line_of(book, section, key)}: [{section}] {key} {why} [config-missing-file]"]


# ---- [project] ---------------------------------------------------------------------------------

def test_copyright_is_the_footers_line(html: Path) -> None:
    assert "Copyright &#169; 2031, Key Tester. Licensed under CC-BY-SA-4.0." in page(html)
    assert page(html).count("Copyright &#169;") == 1


def test_no_copyright_no_line(book: Path) -> None:
    """d2lbook's default, an empty copyright, shows none (tabbook used to print a fixed year)."""
    from tabbook.render.sphinx_conf import sphinx_settings

    settings = sphinx_settings(book)
    assert (settings["copyright"], settings["html_show_copyright"]) == ("", False)
    ini = book / "config.ini"
    ini.write_text(ini.read_text().replace("[project]\n", "[project]\ncopyright = 2020, Tests\n", 1))
    assert sphinx_settings(book)["copyright"] == "2020, Tests"


def test_lang_is_the_pages_language(html: Path) -> None:
    assert re.search(r'<html[^>]* lang="de"', page(html))
    assert (html / "_static" / "german-stemmer.js").is_file()  # Sphinx's search speaks German too


# ---- [html] ------------------------------------------------------------------------------------

def test_header_links_with_bundled_icons_above_every_page(html: Path) -> None:
    for name in ("index", "page", "other", "extra"):
        nav = re.search(r'<nav class="tabbook-header-links".*?</nav>', page(html, name), re.S)
        assert nav, name
        links = re.findall(r'<a class="tabbook-header-link" href="([^"]+)">(<svg .*?</svg>)<span>([^<]+)</span>',
                           nav.group(0))
        assert [(href, label) for href, _, label in links] == [
            ("./keys.pdf", "PDF"), ("https://github.com/example/keys", "GitHub")]
        assert "sd-octicon-file " in links[0][1] and "sd-octicon-mark-github " in links[1][1]
    # Drawn inline: no icon font, no stylesheet or script from another site.
    assert not re.search(r'<(?:link|script)[^>]+(?:href|src)="(?:https?:)?//', page(html))


def test_favicon_and_html_logo_are_the_books(html: Path) -> None:
    text = page(html)
    assert '<link rel="shortcut icon" href="_static/favicon.png">' in text
    assert re.search(r'<img class="sidebar-logo" src="_static/logo.png"', text)
    for name in ("favicon.png", "logo.png"):
        assert (html / "_static" / name).read_bytes() == (FIXTURE / "static" / name).read_bytes()


def test_include_css_and_include_js_load_after_tabbooks(html: Path) -> None:
    text = page(html)
    css = re.findall(r'<link rel="stylesheet"[^>]*href="_static/([^"?]+)', text)
    js = re.findall(r'<script src="_static/([^"?]+)', text)
    assert css.index("keys.css") > css.index("tabbook.css")
    assert js.index("keys.js") > js.index("tabbook.js")
    assert (html / "_static" / "keys.js").read_text() == (FIXTURE / "style" / "keys.js").read_text()


def test_a_changed_included_file_is_rendered_again(built: tuple[Path, str], html: Path) -> None:
    """A file a key names (here outside [build] resources) counts in the site's stamp: a build
    after it changed runs Sphinx again, which a build with nothing changed skips."""
    book, _ = built
    assert "nothing changed: build/html is current" in run(book, "build", "html").stdout
    css = book / "style" / "keys.css"
    css.write_text(css.read_text() + ".keys-changed { color: teal; }\n")
    proc = run(book, "build", "html")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "nothing changed" not in proc.stdout
    assert (html / "_static" / "keys.css").read_text() == css.read_text()


# ---- [build] -----------------------------------------------------------------------------------

def test_sphinx_configs_win_over_tabbooks_settings(html: Path) -> None:
    assert "<title>Square Roots - Keys via sphinx_configs</title>" in page(html)


def test_sphinx_extensions_are_loaded(html: Path) -> None:
    assert '<meta name="keyext" content="loaded">' in page(html)


def test_rsts_are_built_beside_the_markdown(html: Path) -> None:
    assert "This page is written in reStructuredText." in page(html, "extra")


def test_non_notebooks_are_neither_run_nor_rendered_but_zipped(built: tuple[Path, str], html: Path) -> None:
    book, _ = built
    report = json.loads((book / "build" / "report.json").read_text())
    assert sorted(u["section"] for u in report["units"]) == ["other.md", "page.md"]
    assert not (html / "notes.html").exists()
    with zipfile.ZipFile(html / "_downloads" / "notebooks" / "keys-python-notebooks.zip") as zf:
        assert sorted(zf.namelist()) == ["keys-python/notes.md", "keys-python/other.ipynb", "keys-python/page.ipynb"]
        assert zf.read("keys-python/notes.md") == (FIXTURE / "notes.md").read_bytes()


def test_dependencies_enter_every_units_key(built: tuple[Path, str]) -> None:
    book, _ = built
    assert "[dry-run] 2 reuse;" in run(book, "build", "--dry-run").stdout
    helper = book / "helper.cfg"
    before = helper.read_text()
    helper.write_text(before + "setting = 2\n")
    try:
        proc = run(book, "build", "--dry-run", "--json")
        assert proc.returncode == 0, proc.stderr
        plan = json.loads(proc.stdout)
        assert {(u["page"], u["state"]) for u in plan} == {("page.md", "run"), ("other.md", "run")}
        assert all(u["why"] == ["[build] dependencies"] for u in plan)
    finally:
        helper.write_text(before)
    assert "[dry-run] 2 reuse;" in run(book, "build", "--dry-run").stdout


def test_a_book_without_dependencies_keeps_its_keys() -> None:
    """A key without ``depends`` is the one tabbook computed before the key existed (so this
    book's committed _freeze/ stays current); with it, another."""
    parts = KeyParts(cells="c", env="e", library="l", python="3.11", kernel="k")
    assert parts.key == _key(KEY_VERSION, "c", "e", "l", "3.11", "k")
    assert KeyParts(cells="c", env="e", library="l", python="3.11", kernel="k", depends="d").key != parts.key


def test_warning_is_error_fails_the_build_on_a_warning(built: tuple[Path, str], tmp_path: Path) -> None:
    book = tmp_path / "book"
    shutil.copytree(FIXTURE, book)
    lenient = run(book, "build", "--no-render", "--no-execute")
    assert lenient.returncode == 0, lenient.stdout + lenient.stderr
    ini = book / "config.ini"
    ini.write_text(ini.read_text().replace("warning_is_error = False", "warning_is_error = True"))
    strict = run(book, "build", "--no-render", "--no-execute")
    assert strict.returncode != 0
    assert f"config.ini:{line_of(book, 'deploy', 'google_analytics_tracking_id')}: [deploy] " \
           "google_analytics_tracking_id is not emitted" in strict.stdout + strict.stderr


# ---- [colab]: the notebooks a reader downloads --------------------------------------------------

def notebook(html: Path, name: str) -> dict:
    return json.loads((html / "_downloads" / "notebooks" / f"{name}-python.ipynb").read_text())


def test_colab_libs_install_what_the_notebook_imports(html: Path) -> None:
    cells = notebook(html, "page")["cells"]
    assert cells[0]["source"].startswith("The following additional libraries are needed")
    assert cells[1]["source"] == "!pip install mathlib==1.2.3\n"  # ==RELEASE is the book's release
    assert cells[2]["source"].startswith("import math")
    # A notebook importing none of them starts with its own code.
    assert notebook(html, "other")["cells"][0]["source"] == 'print("nothing to install")'


def test_colab_gpu_pattern_asks_for_a_gpu(html: Path) -> None:
    assert notebook(html, "page")["metadata"]["accelerator"] == "GPU"
    assert "accelerator" not in notebook(html, "other")["metadata"]


def test_colab_replace_svg_url_is_read_but_moves_nothing(built: tuple[Path, str], html: Path) -> None:
    """The downloadable notebooks hold code and outputs only, so no image link to move (README)."""
    assert load_config(built[0]).colab.replace_svg_url == ("img", "https://example.org/keys/_images")
    assert "example.org/keys/_images" not in (html / "_downloads" / "notebooks" / "page-python.ipynb").read_text()


# ---- [deploy] ----------------------------------------------------------------------------------

def test_google_analytics_is_not_emitted_and_the_build_says_so(built: tuple[Path, str], html: Path) -> None:
    book, output = built
    line = line_of(book, "deploy", "google_analytics_tracking_id")
    assert f"warning: config.ini:{line}: [deploy] google_analytics_tracking_id is not emitted" in output
    for path in html.rglob("*.html"):
        text = path.read_text(encoding="utf-8")
        assert "UA-00000000-1" not in text and "googletagmanager" not in text and "google-analytics" not in text


# ---- [pdf] -------------------------------------------------------------------------------------

def pdffonts(path: Path) -> str:
    return subprocess.run(["pdffonts", str(path)], capture_output=True, text=True, check=True).stdout


@needs_tex
def test_installed_fonts_are_used(pdf: tuple[Path, str]) -> None:
    book, _ = pdf
    fonts = pdffonts(book / "build" / "pdf" / "keys-python.pdf")
    assert "DejaVuSerif" in fonts  # main_font
    assert "DejaVuSansMono" in fonts  # mono_font
    assert "TeXGyrePagella" not in fonts and "Inconsolata" not in fonts


@needs_tex
def test_a_missing_font_falls_back_with_a_located_warning(pdf: tuple[Path, str]) -> None:
    book, output = pdf
    line = line_of(book, "pdf", "sans_font")
    assert (f"warning: config.ini:{line}: [pdf] sans_font 'No Such Sans Font' is not installed (fc-list "
            "knows no such family): falling back to TeX Gyre Heros") in output
    assert "TeXGyreHeros" in pdffonts(book / "build" / "pdf" / "keys-python.pdf")


def test_fonts_fall_back_only_when_missing(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv(OVERLAY_ENV, raising=False)
    shutil.copytree(FIXTURE, tmp_path / "book")
    config = load_config(tmp_path / "book")
    monkeypatch.setattr(latex_conf, "installed_fonts", lambda: frozenset({"dejavu serif", "no such sans font"}))
    fonts, _ = latex_conf.chosen_fonts(render_context(config).fonts)
    warnings = latex_conf.font_warnings(config)
    assert fonts == {"main_font": "DejaVu Serif", "sans_font": "No Such Sans Font", "mono_font": "Inconsolata"}
    assert [w.location_message() for w in warnings] == [
        f"config.ini:{line_of(tmp_path / 'book', 'pdf', 'mono_font')}: [pdf] mono_font 'DejaVu Sans Mono' is "
        "not installed (fc-list knows no such family): falling back to Inconsolata"]


@needs_tex
def test_latex_logo_is_on_the_title_page(pdf: tuple[Path, str]) -> None:
    book, _ = pdf
    tex = (book / "build" / "latex" / "python" / "book.tex").read_text()
    assert r"\sphinxincludegraphics{logo.png}" in tex
    images = subprocess.run(["pdfimages", "-list", str(book / "build" / "pdf" / "keys-python.pdf")],
                            capture_output=True, text=True, check=True).stdout.splitlines()[2:]
    assert [(fields[0], fields[3], fields[4]) for fields in map(str.split, images)] == [("1", "64", "32")]


@needs_tex
def test_post_latex_runs_on_the_tex_before_typesetting(pdf: tuple[Path, str]) -> None:
    book, _ = pdf
    text = subprocess.run(["pdftotext", str(book / "build" / "pdf" / "keys-python.pdf"), "-"],
                          capture_output=True, text=True, check=True).stdout
    assert "Post-processed by post_latex." in text


def test_a_failing_post_latex_is_an_error_at_its_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(OVERLAY_ENV, raising=False)
    book = tmp_path / "book"
    shutil.copytree(FIXTURE, book)
    (book / "static" / "post_latex.py").write_text("import sys\nsys.exit('no \\\\end{document} here')\n")
    tex = tmp_path / "book.tex"
    tex.write_text("\\begin{document}\n")
    with pytest.raises(BookError) as err:
        post_latex(load_config(book), "python", tex, log=lambda _: None)
    message = err.value.location_message()
    assert message.startswith(f"config.ini:{line_of(book, 'pdf', 'post_latex')}: [pdf] post_latex "
                              "static/post_latex.py failed on")
    assert "(exit 1)" in message and "no \\end{document} here" in message


def test_sphinx_configs_that_fail_are_an_error_at_the_key(book: Path) -> None:
    from tabbook.render.sphinx_conf import sphinx_settings

    ini = book / "config.ini"
    ini.write_text(ini.read_text().replace("[build]\n", "[build]\nsphinx_configs = html_title = undefined_name\n", 1))
    message = (f"config.ini:{line_of(book, 'build', 'sphinx_configs')}: [build] sphinx_configs failed: "
               "NameError: name 'undefined_name' is not defined")
    with pytest.raises(BookError) as err:
        sphinx_settings(book)
    assert err.value.location_message() == message
    # A build says just that, not Sphinx's crash report around it.
    proc = run(book, "build", "html", "--no-execute")
    assert proc.returncode == 1 and message in proc.stderr + proc.stdout
    assert "Traceback" not in proc.stderr + proc.stdout
