"""The configuration's keys are declared once (tabbook.config): every section, [site] included,
is read by load_config, an overlay's values count, and a bad value is an error at its line."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tabbook.config import (
    KEY_CLASSES,
    OVERLAY_ENV,
    environment_reference,
    key_reference,
    load_config,
    settings_of,
)
from tabbook.errors import BookError
from tabbook.render.context import render_context

ROOT = Path(__file__).resolve().parent.parent


def _line(path: Path, starts: str) -> int:
    return next(i for i, t in enumerate(path.read_text().splitlines(), 1) if t.startswith(starts))


def _error(root: Path) -> str:
    with pytest.raises(BookError) as err:
        load_config(root)
    return err.value.location_message()


def test_an_overlays_site_key_takes_effect(book: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert render_context(load_config(book)).front_page is True
    (book / "config.ini").write_text((book / "config.ini").read_text() + "\n[site]\nfront_page = true\n"
                                     "branch = trunk\n")
    overlay = book.parent / "elsewhere" / "tabbook.ini"
    overlay.parent.mkdir()
    overlay.write_text("[site]\nfront_page = false\n")
    monkeypatch.setenv(OVERLAY_ENV, str(overlay))
    options = render_context(load_config(book))
    assert options.front_page is False  # the overlay wins
    assert options.branch == "trunk"  # and config.ini's other keys stay


def test_a_bad_site_value_is_an_error_at_its_line(book: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ini = book / "config.ini"
    ini.write_text(ini.read_text() + "\n[site]\nbranch = main\nfront_page = maybe\n")
    line = _line(ini, "front_page")
    assert _error(book) == f"config.ini:{line}: [site] front_page must be True or False, not 'maybe'"
    # In an overlay, the overlay's file and line.
    ini.write_text(ini.read_text().replace("front_page = maybe", "front_page = no"))
    overlay = book / "tabbook.ini"
    overlay.write_text("# local settings\n[site]\n\nfront_page = perhaps\n")
    assert _error(book) == f"{overlay.resolve()}:4: [site] front_page must be True or False, not 'perhaps'"
    overlay.unlink()
    assert load_config(book).site.front_page is False


def test_a_misspelt_site_key_is_an_error_at_its_line(book: Path) -> None:
    ini = book / "config.ini"
    ini.write_text(ini.read_text() + "\n[site]\nfrontpage = false\n")
    message = _error(book)
    assert message.startswith(f"config.ini:{_line(ini, 'frontpage')}: [site] frontpage is not a key of [site]")
    assert "front_page" in message


def test_keys_that_describe_the_book_cannot_come_from_an_overlay(book: Path) -> None:
    overlay = book / "tabbook.ini"
    overlay.write_text("[build]\ncell_timeout = 5\n\n[project]\nname = other\n")
    assert _error(book) == (f"{overlay.resolve()}:5: [project] name describes the book, not how it is "
                            "built here: set it in config.ini, not in an overlay")
    overlay.write_text("[build]\ncell_timeout = 5\n")
    assert load_config(book).cell_timeout == 5


@pytest.mark.parametrize(("old", "new", "message"), [
    ("cell_timeout = 60", "cell_timeout = soon", "[build] cell_timeout must be an integer (seconds)"),
    ("default_tab = alpha", "default_tab = gamma", "[build] default_tab 'gamma' is not one of the tabs (alpha, beta)"),
])
def test_bad_values_are_errors_at_their_line(book: Path, old: str, new: str, message: str) -> None:
    ini = book / "config.ini"
    ini.write_text(ini.read_text().replace(old, new))
    assert _error(book) == f"config.ini:{_line(ini, new.split(' =')[0] + ' =')}: {message}"


def test_d2lbooks_defaults_fill_what_config_ini_leaves_out(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """d2lbook's quick-start config (only ``[build] notebooks``): name d2lbook, the title from the
    index page's heading, one tab run in the builder's Python; ``index`` may leave out ``.md``."""
    monkeypatch.delenv(OVERLAY_ENV, raising=False)
    (tmp_path / "index.md").write_text("```python\n# not a heading\n```\n\n# My Notes\n\n```toc\npage\n```\n")
    (tmp_path / "config.ini").write_text("[build]\nnotebooks = *.md\n")
    config = load_config(tmp_path)
    assert (config.name, config.title, config.tabs, config.default_tab) == ("d2lbook", "My Notes", ("python",), "python")
    assert config.framework("python").python == "current"
    # d2lbook's own config_default.ini says ``tabs =``: empty is the same one-language book.
    (tmp_path / "config.ini").write_text("[build]\nnotebooks = *.md\ntabs =\n")
    config = load_config(tmp_path)
    assert (config.tabs, config.default_tab, config.framework("python").python) == (("python",), "python", "current")


def test_config_ini_is_read_with_d2lbooks_interpolation(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """d2lbook's configparser interpolates: ``%%`` is ``%``. A lone ``%`` (on which d2lbook stops) is
    read as written, with a warning at its line."""
    monkeypatch.delenv(OVERLAY_ENV, raising=False)
    (tmp_path / "index.md").write_text("# Notes\n")
    (tmp_path / "config.ini").write_text("[project]\ncopyright = 100%% ours\nauthor = 50% mine\n")
    config = load_config(tmp_path)
    assert (config.copyright, config.author) == ("100% ours", "50% mine")
    assert [p.shown() for p in config.problems] == [
        "config.ini:3: [project] author has a % that is not %% nor %(name)s: read as written (d2lbook stops "
        "here) [config-value]"]


def test_an_interpolation_bomb_is_an_error_at_the_keys_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each line of ten ``%(name)s`` references to the line above multiplies the value by ten:
    configparser would build 10⁷ characters here and 10⁹ for nine lines (minutes, gigabytes, no
    message). The size is measured before anything is expanded, so both fail at once, at the
    line of the key read; a value that stays small is interpolated as before."""
    monkeypatch.delenv(OVERLAY_ENV, raising=False)
    (tmp_path / "index.md").write_text("# Notes\n")

    def write(levels: int) -> None:
        chain = "".join(f"a{i} = {f'%(a{i - 1})s' * 10}\n" for i in range(1, levels + 1))
        (tmp_path / "config.ini").write_text(f"[project]\na0 = xxxxxxxxxx\n{chain}"
                                             f"author = small %(a1)s\ntitle = T %(a{levels})s\n")

    for levels in (5, 6, 9):
        write(levels)
        assert _error(tmp_path) == (
            f"config.ini:{levels + 4}: [project] title expands to more than 1,000,000 characters through its "
            "%(name)s references: write the value out, or use %% for a literal %")
    write(4)
    config = load_config(tmp_path)
    assert (len(config.title), config.author) == (2 + 10 ** 5, "small " + "x" * 100)


def test_a_file_a_key_names_that_does_not_exist_is_read_past(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """d2lbook goes on without a favicon, a logo or a stylesheet its config.ini names but the
    book lacks (d2l-java's, fetched by its build script): so does tabbook, with a warning at the key."""
    monkeypatch.delenv(OVERLAY_ENV, raising=False)
    (tmp_path / "index.md").write_text("# Notes\n")
    (tmp_path / "static").mkdir()
    (tmp_path / "static" / "a.css").write_text("p {}\n")
    (tmp_path / "config.ini").write_text("[html]\nfavicon = static/icon.png\ninclude_css = static/a.css static/b.css\n")
    config = load_config(tmp_path)
    assert (config.html.favicon, config.html.include_css) == (None, ("static/a.css",))
    assert [p.shown() for p in config.problems] == [
        "config.ini:2: [html] favicon names static/icon.png, which does not exist: left unset [config-missing-file]",
        "config.ini:3: [html] include_css names no file of the book: static/b.css (left out) [config-missing-file]"]
    assert config.framework("python").label == "Python"
    (tmp_path / "config.ini").write_text("[project]\nname = notes\ntitle = Given\n[build]\nindex = index\n"
                                         "tabs = pytorch\n")
    config = load_config(tmp_path)
    assert (config.name, config.title, config.index) == ("notes", "Given", tmp_path.resolve() / "index.md")
    assert config.framework("pytorch").python == "3.11"  # a named tab keeps its own environment


def test_every_key_is_declared_once_with_its_help() -> None:
    """One declaration per (section, key); each has help; README lists them all (written from
    the declarations by key_reference)."""
    declared = [(d.section, d.key) for cls in KEY_CLASSES for _, d in settings_of(cls)]
    assert len(declared) == len(set(declared)) and len(declared) > 30
    assert all(d.help for cls in KEY_CLASSES for _, d in settings_of(cls))
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert key_reference() in readme, "README's key list is stale: paste tabbook.config.key_reference()"


#: A TABBOOK_ name used as an environment variable: quoted, after $ or a backtick, or set with =.
VARIABLE = re.compile(r"""(?:["'`$])(TABBOOK_[A-Z][A-Z0-9_]*)|\b(TABBOOK_[A-Z][A-Z0-9_]*)=""")


def test_every_environment_variable_is_declared_in_one_place() -> None:
    """Issue 40: every TABBOOK_* variable the repository reads or sets is a key's environment form
    or a declared option, switch or hand-off, and README lists them (environment_reference)."""
    listed = set(re.findall(r"^\| `(TABBOOK_\w+)` \|", environment_reference(), re.M))
    used: dict[str, str] = {}
    files = [ROOT / "Makefile", *(p for p in ROOT.glob("*.md") if p.name != "README.md"), *(p for d in ("tabbook", "tests", "bench", "scripts", ".ci")
                                                        for p in (ROOT / d).rglob("*") if p.is_file())]
    for path in files:
        if path.suffix in (".py", ".md", ".sh", ".txt", ".ini", ".toml", ".yml", "") and "__pycache__" not in str(path):
            for m in VARIABLE.finditer(path.read_text(encoding="utf-8", errors="replace")):
                used.setdefault(m.group(1) or m.group(2), str(path.relative_to(ROOT)))
    assert {name: where for name, where in used.items() if name not in listed} == {}
    assert listed - set(used) == set(), "declared but never used"
    assert environment_reference() in (ROOT / "README.md").read_text(encoding="utf-8"), \
        "README's list of environment variables is stale: paste tabbook.config.environment_reference()"


def test_the_overlay_is_passed_explicitly_not_through_the_environment(
        book: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A Dask worker reads the configuration with the client's overlay, given as an argument:
    the process's environment is neither read for it nor changed (it used to be swapped)."""
    import os

    from tabbook.execute import cluster
    from tabbook.execute.runner import Unit

    overlay = book.parent / "client" / "tabbook.ini"
    overlay.parent.mkdir()
    overlay.write_text("[build]\ncell_timeout = 7\n")
    assert load_config(book, overlay).cell_timeout == 7
    elsewhere = book.parent / "worker.ini"
    elsewhere.write_text("[build]\ncell_timeout = 9\n")
    monkeypatch.setenv(OVERLAY_ENV, str(elsewhere))
    before = dict(os.environ)
    unit = Unit("sec.md", "alpha", (), "tabbook-alpha", "json", book, 60)
    request = cluster.Request("b1", str(book), str(overlay), unit, "env", "lib")
    assert cluster._worker_config(request).cell_timeout == 7
    assert dict(os.environ) == before


def test_an_interpreter_chosen_on_the_command_line_wins_over_the_key(
        book: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    from tabbook.config import PYTHON_ENV

    overlay = book / "tabbook.ini"
    overlay.write_text("[framework:alpha]\ninterpreter = /no/such/python\n")
    assert _error(book) == f"{overlay.resolve()}:2: [framework:alpha] interpreter names /no/such/python, which does not exist"
    monkeypatch.setenv(PYTHON_ENV, f"alpha={sys.executable}")
    assert load_config(book).framework("alpha").interpreter == Path(sys.executable).absolute()


def test_a_misspelt_key_of_any_section_tabbook_reads_is_a_warning_at_its_line(book: Path) -> None:
    """Issue 41: ``cell_timout`` was ignored and the book silently got the default timeout.
    A warning (d2lbook ignores such keys too), at its line, saying which key was meant."""
    from tabbook.check import check_book

    ini = book / "config.ini"
    ini.write_text(ini.read_text().replace("[build]\n", "[build]\ncell_timout = 5\nmax_output = 10\n", 1)
                   .replace("[framework:alpha]\n", "[framework:alpha]\nlable = A\n", 1) + "\n[nowhere]\nanything = 1\n")
    from tabbook.problems import Problem

    warnings: list[BookError] = check_book(load_config(book))
    assert {w.kind for w in warnings} == {Problem.CONFIG_UNKNOWN_KEY}  # each a warning, an error under --strict
    said = [w.location_message().removesuffix(" [config-unknown-key]") for w in warnings]
    assert f"config.ini:{_line(ini, 'cell_timout')}: [build] cell_timout is not a key of [build] (did you mean " \
           "cell_timeout?)" in said
    assert f"config.ini:{_line(ini, 'max_output')}: [build] max_output is not a key of [build] (did you mean " \
           "max_output_bytes?)" in said
    assert f"config.ini:{_line(ini, 'lable')}: [framework:alpha] lable is not a key of [framework:alpha] (did you " \
           "mean label?)" in said
    assert not any("anything" in w for w in said)  # a section tabbook does not read is not its business


def test_a_name_and_tabs_that_would_be_paths_are_refused_at_their_line(book: Path) -> None:
    ini = book / "config.ini"
    text = ini.read_text()
    for old, new, message in (
            ("name = fixture", "name = ../../out/x", "[project] name '../../out/x' is not a name for files"),
            ("tabs = alpha, beta", "tabs = alpha, ../beta", "[build] tabs names the tab '../beta'"),
            ("tabs = alpha, beta", "tabs = alpha, be/ta", "[build] tabs names the tab 'be/ta'"),
            ("version = 0.0.1", 'version = 1"; import os #', "[project] version '1\"; import os #' is not a version")):
        ini.write_text(text.replace(old, new, 1))
        assert _error(book).startswith(f"config.ini:{_line(ini, new)}: {message}")
    ini.write_text(text.replace("name = fixture", "name = Machine Learning Systems 2.0", 1))
    assert load_config(book).name == "Machine Learning Systems 2.0"  # spaces and dots make a name


def test_config_ini_that_is_not_utf8_or_not_ini_is_located(book: Path) -> None:
    ini = book / "config.ini"
    ini.write_bytes(ini.read_bytes().replace(b"[build]\n", b"[build]\n# caf\xe9\n", 1))
    line = ini.read_bytes().split(b"\n").index(b"# caf\xe9") + 1
    assert _error(book) == f"config.ini:{line}:6: not UTF-8 text: byte 0xe9 at column 6 (save the file as UTF-8)"
    ini.write_bytes(ini.read_bytes().replace(b"# caf\xe9\n", b"tabs = a\ntabs = b\n", 1))
    assert _error(book).startswith(f"config.ini:{line + 1}: cannot parse: option 'tabs' in section 'build' already exists")


@pytest.mark.parametrize("size", ["9000000T", "4194304T", "99999999999999999999"])
def test_a_memory_limit_past_what_rlimit_holds_is_refused(book: Path, size: str) -> None:
    ini = book / "config.ini"
    ini.write_text(ini.read_text().replace("[build]\n", f"[build]\nmemory_limit = {size}\n", 1))
    assert f"[build] memory_limit {size!r} is more address space than a process can have" in _error(book)


def test_files_keys_name_to_publish_stay_inside_the_book(book: Path, tmp_path: Path) -> None:
    """``[html] favicon`` and the globs of ``[build] non-notebooks`` are copied into the site and
    the notebook zips: a path out of the book, or a link that leads out, is refused at its line."""
    secret = tmp_path / "secret.md"
    secret.write_text("# Not the book's\n")
    ini = book / "config.ini"
    text = ini.read_text()
    for added, message in (("[html]\nfavicon = ../secret.md\n", "[html] favicon names ../secret.md, which is outside"),
                           ("[build]\nnon-notebooks = ../*.md\n", "[build] non-notebooks names ../*.md, which is outside"),
                           ("[build]\nnon-notebooks = notes/*.md\n", "[build] non-notebooks matches notes/leak.md, a "
                                                                     "symbolic link that leads outside")):
        (book / "notes").mkdir(exist_ok=True)
        if not (book / "notes" / "leak.md").is_symlink():
            (book / "notes" / "leak.md").symlink_to(secret)
        section, line = added.split("\n")[:2]
        body = text.replace(f"{section}\n", f"{section}\n{line}\n", 1) if section in text else f"{text}\n{added}"
        ini.write_text(body)
        assert _error(book).startswith(f"config.ini:{_line(ini, line)}: {message}")
