"""What a page may read (issue 49, class A): files inside the book only, TeX that reads no file.

Snippet in, result out: each construct is put on a small MyST page under a book's
``build/src`` (where Sphinx reads the pages from) and built with the extensions the builder
loads; a file outside the book must be refused at its line and appear nowhere in the output.
The registries of the installed Sphinx, docutils and MyST are walked so that a directive or
role that reads a file and that :mod:`tabbook.render.ext.paths` does not know fails here.
One end-to-end build runs the issue's reproduction in a ``tabbook new`` book.
"""

from __future__ import annotations

import importlib
import inspect
import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

SECRET = "SECRET-outside-the-book-4242"
ROOT = Path(__file__).resolve().parents[1]


def _book(tmp_path: Path) -> tuple[Path, Path]:
    """A book folder with its ``build/src/chapter`` and, beside the book, a secret file."""
    (tmp_path / "secret.txt").write_text(SECRET + "\n", encoding="utf-8")
    (tmp_path / "secret.csv").write_text(f"a,b\n{SECRET},1\n", encoding="utf-8")
    book = tmp_path / "book"
    src = book / "build" / "src"
    (src / "chapter").mkdir(parents=True)
    (book / "inside.txt").write_text("insidebook\n", encoding="utf-8")
    return book, src


def _sphinx(book: Path, src: Path, page: str, builder: str = "html") -> tuple[str, Path]:
    """Build ``page`` (``chapter/page.md``) with the paths extension; (the warnings, the output)."""
    from sphinx.application import Sphinx

    (src / "chapter" / "page.md").write_text(page, encoding="utf-8")
    (src / "index.md").write_text("# Index\n\n```{toctree}\nchapter/page\n```\n", encoding="utf-8")
    out, warnings = book / "build" / builder, io.StringIO()
    app = Sphinx(str(src), None, str(out), str(book / "build" / "doctrees" / builder), builder,
                 confoverrides={"extensions": ["myst_parser", "tabbook.render.ext.paths"],
                                "tabbook_root": str(book), "myst_enable_extensions": ["dollarmath", "amsmath"],
                                "exclude_patterns": ["_build"]},
                 status=None, warning=warnings, freshenv=True)
    app.build()
    return warnings.getvalue(), out


def _published(out: Path) -> list[str]:
    """The files under ``out`` that carry the secret."""
    return [str(p) for p in out.rglob("*") if p.is_file() and SECRET.encode() in p.read_bytes()]


#: (id, page text, its line the refusal names, a part of the message)
OUTSIDE = [
    ("download-role", "# P\n\n{download}`../../../../secret.txt`\n", 3, "download ../../../../secret.txt is outside"),
    ("myst-link-to-a-file", "# P\n\n[the file](../../../../secret.txt)\n", 3, "download ../../../../secret.txt is outside"),
    ("literalinclude", "# P\n\n```{literalinclude} ../../../../secret.txt\n```\n", 3, "literalinclude:: ../../../../secret.txt is outside"),
    ("myst-include", "# P\n\nText.\n\n```{include} ../../../../secret.txt\n```\n", 5, "include:: ../../../../secret.txt is outside"),
    ("eval-rst-include", "# P\n\n```{eval-rst}\n.. include:: ../../../../secret.txt\n   :literal:\n```\n", 4,
     "include:: ../../../../secret.txt is outside"),
    ("eval-rst-literalinclude", "# P\n\n```{eval-rst}\nText.\n\n.. literalinclude:: ../../../../secret.txt\n```\n",
     6, "literalinclude:: ../../../../secret.txt is outside"),
    ("raw-file", "# P\n\n```{raw} html\n:file: ../../../../secret.txt\n```\n", 3, "raw:: ../../../../secret.txt is outside"),
    ("raw-file-absolute", "# P\n\n```{raw} html\n:file: {secret}\n```\n", 3, "secret.txt is outside"),
    ("eval-rst-raw-file", "# P\n\n```{eval-rst}\n.. raw:: html\n   :file: ../../../../secret.txt\n```\n", 4,
     "raw:: ../../../../secret.txt is outside"),
    ("csv-table-file", "# P\n\n```{csv-table} T\n:file: ../../../../secret.csv\n```\n", 3, "csv-table:: ../../../../secret.csv is outside"),
    ("raw-url", "# P\n\n```{raw} html\n:url: http://169.254.169.254/latest/meta-data/\n```\n", 3,
     "raw:: names the URL http://169.254.169.254"),
    ("csv-table-url", "# P\n\n```{csv-table} T\n:url: http://127.0.0.1:9/x.csv\n```\n", 3, "names the URL"),
    ("image", "# P\n\n```{image} ../../../../secret.txt\n```\n", 3, "image file ../../../../secret.txt is outside"),
    ("figure", "# P\n\n```{figure} ../../../../secret.txt\n\nA caption.\n```\n", 3, "image file ../../../../secret.txt is outside"),
    ("markdown-image", "# P\n\n![alt](../../../../secret.txt)\n", 3, "image file ../../../../secret.txt"),
]


@pytest.mark.parametrize(("page", "line", "message"), [c[1:] for c in OUTSIDE], ids=[c[0] for c in OUTSIDE])
def test_a_file_outside_the_book_is_refused_at_its_line(tmp_path: Path, page: str, line: int, message: str) -> None:
    book, src = _book(tmp_path)
    warnings, out = _sphinx(book, src, page.replace("{secret}", str(tmp_path / "secret.txt")))
    refusals = [w for w in warnings.splitlines() if "outside the book's folder" in w or "names the URL" in w]
    assert refusals, warnings
    assert f"page.md:{line}:" in refusals[0] and message in refusals[0], warnings
    assert "fetches nothing" in refusals[0] or "(it leads to" in refusals[0]
    assert _published(out) == []


def test_a_symbolic_link_out_of_the_book_is_outside(tmp_path: Path) -> None:
    book, src = _book(tmp_path)
    (book / "data").mkdir()
    (book / "data" / "leak.txt").symlink_to(tmp_path / "secret.txt")
    (src / "data").symlink_to(book / "data")  # how the builder links a resource into build/src
    warnings, out = _sphinx(book, src, "# P\n\n```{literalinclude} ../data/leak.txt\n```\n")
    assert "page.md:3:" in warnings and f"(it leads to {tmp_path / 'secret.txt'})" in warnings, warnings
    assert _published(out) == []


@pytest.mark.parametrize("page", ["# P\n\n{download}`../../../.git/config`\n",
                                  "# P\n\n```{literalinclude} ../../../.git/config\n```\n"],
                         ids=["download", "literalinclude"])
def test_the_books_git_folder_is_not_the_books(tmp_path: Path, page: str) -> None:
    """A CI checkout keeps its credentials in ``.git/config``: inside the book's folder, never the book's."""
    book, src = _book(tmp_path)
    (book / ".git").mkdir()
    (book / ".git" / "config").write_text(f"[http]\n\textraheader = AUTHORIZATION: basic {SECRET}\n", encoding="utf-8")
    warnings, out = _sphinx(book, src, page)
    assert "page.md:3:" in warnings and "is in the repository's .git folder" in warnings, warnings
    assert _published(out) == []


def test_files_inside_the_book_are_read_as_before(tmp_path: Path) -> None:
    book, src = _book(tmp_path)
    (book / "data").mkdir()
    (book / "data" / "table.csv").write_text("x,y\ntablerow,2\n", encoding="utf-8")
    (src / "data").symlink_to(book / "data")
    page = ("# P\n\n{download}`../../../inside.txt`\n\n```{literalinclude} ../../../inside.txt\n```\n\n"
            "```{csv-table} T\n:file: ../data/table.csv\n```\n\n```{include} ../data/table.csv\n:literal:\n```\n\n"
            "```{eval-rst}\n.. include:: <isonum.txt>\n```\n")
    warnings, out = _sphinx(book, src, page)
    assert "outside the book" not in warnings, warnings
    html = (out / "chapter" / "page.html").read_text(encoding="utf-8")
    assert html.count("tablerow") == 2 and "insidebook" in html
    assert any(out.glob("_downloads/*/inside.txt"))


@pytest.mark.parametrize("myst", [False, True], ids=["eval-rst", "myst"])
def test_a_docutils_standard_include_cannot_climb_out(tmp_path: Path, myst: bool) -> None:
    book, src = _book(tmp_path)
    rel = os.path.relpath(tmp_path / "secret.txt", Path(importlib.import_module("docutils.parsers.rst").__file__).parent
                          / "include")
    page = (f"# P\n\n```{{include}} <{rel}>\n:literal:\n```\n" if myst
            else f"# P\n\n```{{eval-rst}}\n.. include:: <{rel}>\n   :literal:\n```\n")
    warnings, out = _sphinx(book, src, page)
    assert f"include:: <{rel}> is outside the book's folder" in warnings, warnings
    assert _published(out) == [], warnings


# --- the registries: every reader is known -----------------------------------------------------

#: What a directive's source (its class and bases) does when it reads a file.
READS = ("relfn2path", "FileInput", "open(", "read_text(", "read_bytes(", "urlopen", "note_dependency",
         "record_dependencies")
#: Directives that match :data:`READS` and read no file a page names, and why.
NOT_READERS = {
    "autoclass": "tabbook.render.ext.apidoc: the book's own generated library (d2l/*.py)",
    "autofunction": "tabbook.render.ext.apidoc: the book's own generated library (d2l/*.py)",
    "automodule": "tabbook.render.ext.apidoc: the book's own generated library (d2l/*.py)",
    "autoattribute": "autodoc imports a module, as conf.py does: Python the book runs by design",
    "autodata": "autodoc imports a module", "autodecorator": "autodoc imports a module",
    "autoexception": "autodoc imports a module", "automethod": "autodoc imports a module",
    "autoproperty": "autodoc imports a module", "autotype": "autodoc imports a module",
    "autosummary": "imports modules; its stub pages are written from templates of Sphinx",
    "inheritance-diagram": "imports modules by name",
    "bibliography": "sphinxcontrib-bibtex: only the bib files of bibtex_bibfiles (the builder's, inside the book: "
                    "tabbook.book.named_bibfiles); a name not among them is ignored",
    "footbibliography": "sphinxcontrib-bibtex: only the bib files of bibtex_bibfiles", "testcode": "sphinx.ext.doctest: runs no file",
}
SPHINX_EXTENSIONS = ["myst_nb", "sphinx_design", "sphinx.ext.autodoc", "tabbook.render.ext", "sphinxcontrib.bibtex",
                     "sphinx.ext.graphviz", "sphinx.ext.autosummary", "sphinx.ext.doctest",
                     "sphinx.ext.inheritance_diagram", "sphinx.ext.ifconfig", "sphinx.ext.todo",
                     "sphinx.ext.mathjax"]


def _source(cls: type) -> str:
    text = []
    for base in inspect.getmro(cls):
        if base.__module__.startswith(("builtins", "docutils.parsers.rst.Directive")):
            continue
        try:
            text.append(inspect.getsource(base))
        except (OSError, TypeError):
            continue
    return "\n".join(text)


_REGISTRY_SCRIPT = r"""
import importlib, inspect, io, json, sys
from docutils.parsers.rst import directives, roles
from sphinx.application import Sphinx
src, out, exts = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
app = Sphinx(src, None, out, out + "/.doctrees", "html", confoverrides={"extensions": exts, "tabbook_root": src,
             "bibtex_bibfiles": []}, status=None, warning=io.StringIO())
found = {}
for name in sorted(set(directives._directives) | set(directives._directive_registry)):
    cls = directives._directives.get(name)
    if cls is None:
        module, cname = directives._directive_registry[name]
        cls = getattr(importlib.import_module("docutils.parsers.rst.directives." + module), cname)
    found[name] = [cls.__module__, cls.__qualname__]
for domain in app.env.domains.sorted():
    for name, cls in domain.directives.items():
        found[domain.name + ":" + name] = [cls.__module__, cls.__qualname__]
role_nodes = {}
for name in sorted(set(roles._roles) | set(roles._role_registry)):
    role = roles._roles.get(name)
    nodeclass = getattr(role, "nodeclass", None)
    text = ""
    try:
        text = inspect.getsource(type(role) if not inspect.isfunction(role) else role)
    except (OSError, TypeError):
        pass
    role_nodes[name] = [getattr(nodeclass, "__name__", ""), text]
collectors = {}
for listeners in app.events.listeners.values():
    for listener in listeners:
        owner = getattr(listener.handler, "__self__", None)
        if owner is not None and type(owner).__module__.startswith("sphinx.environment.collectors"):
            collectors[type(owner).__qualname__] = inspect.getsource(type(owner))
from myst_parser.mdit_to_docutils import base
from tabbook.render.ext.paths import READERS, _Confined
confined = {name: issubclass(directives._directives.get(name, object), _Confined) for name in READERS}
print(json.dumps({"directives": found, "roles": role_nodes, "collectors": collectors, "confined": confined,
                  "myst_include": base.MockIncludeDirective.__qualname__}))
"""


@pytest.fixture(scope="module")
def registries(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """What the installed Sphinx, docutils and MyST register once every extension a book loads
    (and Sphinx's own that read files) is set up and the builder started; in a subprocess, so
    the registrations stay out of this one."""
    import json

    tmp = tmp_path_factory.mktemp("registries")
    (tmp / "src").mkdir()
    (tmp / "src" / "index.md").write_text("# I\n", encoding="utf-8")
    proc = subprocess.run([sys.executable, "-c", _REGISTRY_SCRIPT, str(tmp / "src"), str(tmp / "out"),
                           json.dumps(SPHINX_EXTENSIONS)], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.splitlines()[-1])


def test_every_directive_that_reads_a_file_is_confined(registries: dict[str, object]) -> None:
    from tabbook.render.ext.paths import READERS

    found = registries["directives"]
    assert isinstance(found, dict) and len(found) > 100  # the registries were read
    readers = {}
    for name, (module, qualname) in found.items():
        obj: object = importlib.import_module(module)
        for part in qualname.split("."):
            obj = getattr(obj, part)
        text = _source(obj)  # type: ignore[arg-type]
        if any(mark in text for mark in READS):
            readers[name] = (module, qualname)
    unknown = {n: r for n, r in readers.items() if n.split(":")[-1] not in READERS and n not in NOT_READERS}
    assert unknown == {}, f"directives that read files and are neither confined nor explained: {unknown}"
    # The walk sees the readers it is meant to see (an empty or blind walk would pass the line above).
    assert {"include", "literalinclude", "raw", "csv-table", "graphviz"} <= set(readers), sorted(readers)


def test_every_reader_is_replaced_by_its_confined_form(registries: dict[str, object]) -> None:
    from tabbook.render.ext.paths import READERS

    confined = registries["confined"]
    assert isinstance(confined, dict)
    assert confined == dict.fromkeys(READERS, True)
    assert registries["myst_include"] == "_confine_myst_include.<locals>.ConfinedMystInclude"


def test_every_role_and_collector_that_reads_a_file_is_confined(registries: dict[str, object]) -> None:
    from tabbook.render.ext.paths import COPIED

    copied = {c.__name__ for c in COPIED}
    roles = registries["roles"]
    assert isinstance(roles, dict)
    # A role reads a file by making a node that a collector copies (download, nb-download, an image).
    making = {name for name, (nodeclass, text) in roles.items()
              if nodeclass in copied or any(m in text for m in (*READS, "download_reference", "nodes.image("))}
    assert {"download", "nb-download"} <= making
    reading_roles = {name for name, (nodeclass, text) in roles.items() if any(m in text for m in READS)
                     and nodeclass not in copied and "download_reference" not in text}
    assert reading_roles == set(), reading_roles
    # The collectors that find a node's file: the ones COPIED's nodes feed, and no other.
    collectors = registries["collectors"]
    assert isinstance(collectors, dict)
    resolving = {name for name, text in collectors.items() if "relfn2path" in text}
    assert resolving == {"ImageCollector", "DownloadFileCollector"}, resolving


# --- TeX ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("tex", [
    r"\input{/etc/hostname}", r"a \include {x}", r"\openin5=/etc/passwd", r"\read5 to\x", r"\immediate\write18{id}",
    r"\catcode`\@=11", r"\^^69nput{/etc/hostname}", r"\csname input\endcsname{/etc/hostname}",
    r"\scantokens{\input x}", r"\begin{filecontents}{x.tex}a\end{filecontents}", r"\usepackage{x}",
    r"\makeatletter\@@input x", r"\includegraphics{/etc/x.png}", r"\openout1=x", r"\lstinputlisting{/etc/passwd}",
])
def test_tex_that_reaches_a_file_is_refused(tex: str) -> None:
    from tabbook.render.ext.paths import tex_problem

    assert tex_problem(tex) is not None


@pytest.mark.parametrize("tex", [
    r"\frac{a}{b}", r"\begin{aligned} x &= 1 \\ y &= 2 \end{aligned}", r"\mathbf{x}^\top \mathbf{y}",
    r"\inputencoding", r"\readable", r"\textrm{bytes} / \textrm{bandwidth}", r"\newcommand{\R}{\mathbb{R}} \R",
    r"\def\x{1}\x", r"x^{2}", r"\left( \sum_{i=1}^n x_i \right)", r"\operatorname{write}",
])
def test_ordinary_math_passes(tex: str) -> None:
    from tabbook.render.ext.paths import tex_problem

    assert tex_problem(tex) is None


TEX_PAGE = ("# P\n\nInline $a \\input{/etc/hostname} b$ math.\n\n$$\n\\openin1=/etc/passwd\n$$\n\n"
            "```{math}\n\\immediate\\write18{id}\n```\n\n```{raw} latex\n\\input{/etc/hostname}\n```\n\n"
            "Fine $\\frac{1}{2}$.\n")


@pytest.mark.parametrize("builder", ["html", "latex"])
def test_math_and_raw_latex_that_read_files_are_refused_at_their_lines(tmp_path: Path, builder: str) -> None:
    book, src = _book(tmp_path)
    warnings, out = _sphinx(book, src, TEX_PAGE, builder)
    refused = [w for w in warnings.splitlines() if "refused (the builder's TeX reads no file)" in w]
    assert [w.split("page.md:")[1].split(":")[0] for w in refused] == ["3", "5", "9", "13"], warnings
    assert "uses \\input" in refused[0] and "uses \\openin" in refused[1] and "raw LaTeX" in refused[3]
    if builder == "latex":
        tex = next(out.glob("*.tex")).read_text(encoding="utf-8")
        assert "\\input{/etc/hostname}" not in tex and "\\openin1" not in tex and "\\write18" not in tex
        assert "\\textbackslash{}input" in tex  # shown as text
        assert "\\frac{1}{2}" in tex


def test_config_values_reach_latex_as_text() -> None:
    from tabbook.render.latex_conf import tex_text

    assert tex_text(r"X \input{/etc/hostname} Y") == r"X \textbackslash{}input\{/etc/hostname\} Y"
    assert tex_text("A & B_1 50% #1 ~ ^") == r"A \& B\_1 50\% \#1 \textasciitilde{} \textasciicircum{}"


# --- the reproduction, end to end -------------------------------------------------------

def test_a_download_of_etc_passwd_fails_the_build_and_publishes_nothing(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TABBOOK_WARM": "0"}
    tabbook = [sys.executable, "-m", "tabbook"]
    subprocess.run([*tabbook, "new", str(tmp_path / "book")], check=True, capture_output=True, env=env, timeout=120)
    page = tmp_path / "book" / "averages.md"
    text = page.read_text(encoding="utf-8")
    page.write_text(text + "\n{download}`../../../../../../../etc/passwd`\n", encoding="utf-8")
    config = tmp_path / "book" / "config.ini"
    config.write_text(config.read_text(encoding="utf-8").replace("title = ", "title = X \\input{/etc/hostname} "),
                      encoding="utf-8")
    proc = subprocess.run([*tabbook, "-C", str(tmp_path / "book"), "build", "html", "--strict"], capture_output=True,
                          text=True, env=env, timeout=600)
    line = text.count("\n") + 2
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert f"averages.md:{line}: download ../../../../../../../etc/passwd is outside the book's " \
           "folder (it leads to /etc/passwd)" in proc.stderr, proc.stderr
    html = tmp_path / "book" / "build" / "html"
    assert not list(html.rglob("passwd"))
    # The title is text in the PDFs' settings too (the LaTeX build's title page).
    from tabbook.config import load_config
    from tabbook.render.context import render_context
    from tabbook.render.latex_conf import latex_settings

    settings = latex_settings(render_context(load_config(tmp_path / "book")))
    assert settings["latex_documents"][0][2].startswith(r"X \textbackslash{}input\{/etc/hostname\}")


def test_a_bibliography_file_outside_the_book_is_an_error_at_its_line(tmp_path: Path) -> None:
    from tabbook.check import check_book
    from tabbook.config import load_config
    from tabbook.new import new_book

    book = tmp_path / "book"
    new_book(book)
    (tmp_path / "outside.bib").write_text("@book{x, title={Leak}, author={A}, year={2000}}\n", encoding="utf-8")
    (book / "refs.bib").write_text("@book{y, title={Ours}, author={B}, year={2001}}\n", encoding="utf-8")
    (book / "linked.bib").symlink_to(tmp_path / "outside.bib")
    page = book / "averages.md"
    text = page.read_text(encoding="utf-8")
    page.write_text(text + "\n:bibliography:`../outside.bib`\n\n:bibliography:`linked.bib`\n\n:bibliography:`refs.bib`\n"
                    "\n```\n:bibliography:`../shown-as-code.bib`\n```\n", encoding="utf-8")
    first = text.count("\n") + 2
    found = [e.shown() for e in check_book(load_config(book)) if "bibliography file" in e.shown()]
    assert found == [
        f"averages.md:{first}: bibliography file ../outside.bib is outside the book's folder (it leads to "
        f"{tmp_path / 'outside.bib'}): the builder reads no file outside the book",
        f"averages.md:{first + 2}: bibliography file linked.bib is outside the book's folder (it leads to "
        f"{tmp_path / 'outside.bib'}): the builder reads no file outside the book"]
