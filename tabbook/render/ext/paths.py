"""What a page may read: files inside the book, and TeX that reads no file.

**Files.** A page names files in many ways, and Sphinx, docutils and MyST read or copy whatever
they name: ``{download}`` and MyST links to files (copied into ``_downloads/``), images (into
``_images/``), ``{include}`` and ``{literalinclude}`` (pasted into the page), ``raw``'s and
``csv-table``'s ``:file:`` and ``:url:``, a ``graphviz`` file. Sphinx reads the pages from
``build/src``, so ``../../../x`` already leads out of the book, and ``/etc/passwd`` is a name
like any other: a pull request that only edits Markdown would publish the build machine's
files. One rule decides, :func:`tabbook.settings.leads_outside` (the one the builder applies to
pages, resources and entries): a file is read only when where it really leads (symbolic links
followed; the book's resources are linked into ``build/src`` and lead back into the book) is
inside the book's folder. Everything else is refused before it is opened, with a warning at its
line that fails every build, strict or not (:data:`tabbook.render.diagnostics.STOPS`), and
nothing is read: the directive renders nothing, the image or download is dropped. A URL is
never fetched (``:url:``: the site would carry what the build machine's network answers, a
cloud metadata service included). :data:`READERS` names every directive that reads a file and
where its names are; ``tests/test_confinement.py`` walks the installed Sphinx's, docutils' and
MyST's registries and fails on a reader this module does not know.

**TeX.** Declared math (``$…$``, ``$$…$$``, ``{math}``) and ``{raw} latex`` reach xelatex as they
are, and TeX can read and write files (``\\input``, ``\\openin``, ``\\write``…) or change
what its text means (``\\catcode``, ``^^`` notation, ``\\csname``, ``\\scantokens``). Each
such formula or block is refused the same way (:func:`tex_problem`) and shown as text; the HTML
build refuses it too, so a page fails the same way in every format.

A ``.. raw:: html`` with ``:file: frontpage.html`` (d2l-en's front page, which its build script
copies beside the generated reST) names a file relative to the page; Sphinx reads the page from
``build/src``, where no such file is. :class:`BookRaw` looks for it beside the page in the book
too, so a book's own front page is used when the book has it; when it has not, the block is left
out with a warning at its line (``missing-include``: :mod:`tabbook.problems`), where
docutils would report a severe error naming a generated path.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from docutils import nodes
from docutils.parsers.rst import Directive, directives
from docutils.parsers.rst.directives.misc import Include, Raw
from sphinx import addnodes
from sphinx.application import Sphinx
from sphinx.util import logging
from sphinx.util.typing import ExtensionMetadata

from tabbook.render.formats import LATEX_NAME
from tabbook.settings import leads_outside

logger = logging.getLogger(__name__)

#: Every directive that reads a file its page names, by name, and where the names are:
#: ``"argument"`` (the first argument), or options naming a file (``"file"``) or a URL
#: (``"url"``, never fetched). Images and figures are read for their size only, and copied
#: later; they are checked here and again, as every image is (MyST's ``![]()`` is no
#: directive), before Sphinx's collectors copy them (:func:`refuse_outside_files`).
READERS: dict[str, tuple[str, ...]] = {
    "include": ("argument",),  # docutils', Sphinx's, and MyST's (myst_parser.mocking)
    "literalinclude": ("argument",),
    "raw": ("file", "url"),
    "csv-table": ("file", "url"),
    "image": ("argument",),
    "figure": ("argument",),
    "graphviz": ("argument",),  # sphinx.ext.graphviz, when a book loads it
}
#: The doctree nodes whose file Sphinx copies into the site (its image and download collectors).
COPIED = (nodes.image, addnodes.download_reference)


def _book(env: Any) -> Path | None:
    """The book's folder, or None where this extension is not loaded: MyST's include class is
    replaced for the whole process, so another Sphinx application in it (a test's, a book's
    second run without tabbook) reaches the check without the config value."""
    root = getattr(env.config, "tabbook_root", "")
    return Path(root) if root else None


def _is_uri(name: str) -> bool:
    return "://" in name or name.startswith("data:")


def _outside(book: Path, candidates: list[str | Path]) -> Path | None:
    """Where the first of ``candidates`` that leads out of ``book`` leads, or None."""
    for path in candidates:
        if (real := leads_outside(book, Path(path))) is not None:
            return real
    return None


def refusal(what: str, named: str, real: Path | None) -> str:
    """The one wording of a refused path (``real``: where it leads; None: a URL)."""
    if real is None:
        return f"{what} names the URL {named}: the builder fetches nothing from the network (put the file in the book)"
    if ".git" in real.parts:
        return (f"{what} {named} is in the repository's .git folder (it leads to {real}): the builder "
                "publishes nothing of the repository's own metadata")
    return (f"{what} {named} is outside the book's folder (it leads to {real}): the builder reads no file "
            "outside the book")


def _where(node: nodes.Node | None, source: str | None, line: int | None) -> nodes.Element:
    """A node that locates a warning: ``node`` itself, or one at ``source:line``."""
    if isinstance(node, nodes.Element) and (node.source or node.line):
        return node
    at = nodes.Element()
    at.source, at.line = source, line
    return at


def _stop(message: str, location: nodes.Node) -> None:
    # An error in every build (no kind: tabbook.render.diagnostics.STOPS): the site would publish
    # a file of the machine, or the PDF read one.
    logger.warning(message, location=location, type="tabbook", subtype="error")


#: The readers that find a file as Sphinx does (``/x`` from the source folder, else beside the
#: page); the others as docutils does (beside the current source: an included file's own).
SPHINX_RESOLVED = frozenset({"include", "literalinclude", "graphviz", "image", "figure"})


def _standard(named: str) -> list[str | Path]:
    """An include's ``<name>``: docutils' standard definitions (``<isonum.txt>``), read from
    docutils' own folder: nothing to check when it stays there, else where it leads."""
    standard = Path(Include.standard_include_path)
    there = standard / named[1:-1]
    return [] if os.path.realpath(there).startswith(os.path.realpath(standard) + os.sep) else [there]


def _candidates(directive: Directive, named: str) -> list[str | Path]:
    """Where ``named`` is read from, as the directive finds it (a name leading out is refused)."""
    document = directive.state.document
    settings = document.settings
    if directive.name == "include" and named.startswith("<") and named.endswith(">"):
        return _standard(named)
    env = getattr(settings, "env", None)
    if env is not None and (directive.name in SPHINX_RESOLVED or (os.path.isabs(named) and not os.path.exists(named))):
        # Sphinx's readers, and Sphinx's csv-table for an absolute name that does not exist.
        return [env.relfn2path(named, env.docname)[1]]
    root_prefix = getattr(settings, "root_prefix", "")
    if root_prefix and named.startswith("/"):
        return [Path(root_prefix) / named[1:]]
    source = directive.state_machine.get_source_and_line(directive.lineno)[0] or document.current_source or ""
    return [Path(os.path.abspath(source)).parent / named]


def named_files(directive: Directive, name: str) -> Iterator[tuple[str, Path | None]]:
    """The files and URLs a reader directive would read that it may not: (the name as written,
    where it leads; None for a URL)."""
    for how in READERS.get(name, ()):
        value = directive.arguments[0] if how == "argument" and directive.arguments else directive.options.get(how)
        if not isinstance(value, str) or not value.strip():
            continue
        named = "".join(s.strip() for s in value.splitlines()) if how == "argument" else value.strip()
        if how == "url" or (name in ("image", "figure") and _is_uri(named)):
            if how == "url":
                yield named, None
            continue
        env = getattr(directive.state.document.settings, "env", None)
        book = _book(env) if env is not None else None
        if book is not None and (real := _outside(book, _candidates(directive, named))) is not None:
            yield named, real


def _refused(directive: Directive) -> list[nodes.Node] | None:
    """None when the directive may run; else what it renders instead (nothing), its refusal said."""
    said = False
    for named, real in named_files(directive, directive.name):
        source, line = directive.state_machine.get_source_and_line(directive.lineno)
        what = "image file" if directive.name in ("image", "figure") else f"{directive.name}::"
        _stop(refusal(what, named, real), _where(None, source, line))
        said = True
    return [] if said else None


class _Confined:
    """Mixed in before a reader directive's class: its files are checked before it runs."""

    def run(self) -> list[nodes.Node]:
        refused = _refused(self)  # type: ignore[arg-type]
        return refused if refused is not None else super().run()  # type: ignore[misc]


def confined(cls: type[Directive]) -> type[Directive]:
    """``cls`` with its files checked first (itself when it already is)."""
    if issubclass(cls, _Confined):
        return cls
    return type(cls.__name__, (_Confined, cls), {"__module__": cls.__module__, "__doc__": cls.__doc__})


def confine_readers(app: Sphinx) -> None:
    """Replace every registered reader directive by its confined form; at ``builder-inited``, so
    the directives of extensions loaded after tabbook's (``[build] sphinx_extensions``) are too."""
    for name in READERS:
        cls = directives._directives.get(name)  # type: ignore[attr-defined]
        if cls is None and name in directives._directive_registry:  # type: ignore[attr-defined]
            module, class_name = directives._directive_registry[name]  # type: ignore[attr-defined]
            cls = getattr(__import__(f"docutils.parsers.rst.directives.{module}", fromlist=[class_name]), class_name)
        if isinstance(cls, type) and issubclass(cls, Directive) and not issubclass(cls, _Confined):
            app.add_directive(name, confined(cls), override=True)
    _confine_myst_include()


def _confine_myst_include() -> None:
    """MyST runs an ``{include}`` through a class of its own (whatever class is registered), which
    reads the file itself: its ``run`` is checked the same way."""
    try:
        from myst_parser.mdit_to_docutils import base
        from myst_parser.mocking import MockIncludeDirective
    except ImportError:
        return
    if issubclass(base.MockIncludeDirective, _ConfinedMystInclude):
        return

    class ConfinedMystInclude(_ConfinedMystInclude, MockIncludeDirective):  # type: ignore[misc]
        """MyST's include, its file checked first."""

    base.MockIncludeDirective = ConfinedMystInclude  # type: ignore[misc]


class _ConfinedMystInclude:
    def run(self) -> list[nodes.Element]:
        document, named = self.document, "".join(s.strip() for s in self.arguments[0].splitlines())  # type: ignore[attr-defined]
        env = getattr(document.settings, "env", None)
        book = _book(env) if env is not None else None
        if book is not None:
            # As MyST finds it under Sphinx: docutils' folder for <name>, else Sphinx's way (relfn2path).
            standard = named.startswith("<") and named.endswith(">")
            found = _standard(named) if standard else [env.relfn2path(named, env.docname)[1]]
            if (real := _outside(book, found)) is not None:
                _stop(refusal(f"{self.name}::", named, real), _where(None, document["source"], self.lineno))  # type: ignore[attr-defined]
                return []
        return super().run()  # type: ignore[misc]


def refuse_outside_files(app: Sphinx, doctree: nodes.document) -> None:
    """Drop, with a warning at its line, every image and download whose file is outside the book's
    folder: before Sphinx's image and download collectors (priority 500) record it to copy."""
    book = _book(app.env)
    if book is None:
        return
    for node in list(doctree.findall(lambda n: isinstance(n, COPIED))):
        image = isinstance(node, nodes.image)
        target = node.get("uri", "") if image else node.get("reftarget", "")
        if not target or _is_uri(target) or (image and target.endswith("*")):
            continue
        _, file = app.env.relfn2path(target, app.env.docname)
        if (real := leads_outside(book, Path(file))) is not None:
            what = "image file" if image else "download"
            _stop(refusal(what, target, real), node)
            if node.parent is not None:
                node.parent.remove(node)


class BookRaw(Raw):
    """docutils' ``raw``, its ``:file:`` found beside the page in the book as well."""

    def run(self) -> list[nodes.Node]:
        named = self.options.get("file")
        env = self.state.document.settings.env
        root = getattr(env.config, "tabbook_root", "")
        if not named or not root:
            return super().run()
        here = Path(self.state.document.current_source or "").parent / named
        book = Path(root).resolve()
        there = (book / Path(env.docname).parent / named).resolve()
        if here.is_file():
            return super().run()
        if there.is_file() and there.is_relative_to(book):
            self.options["file"] = str(there)
            return super().run()
        # docutils' own report, so it is located as its others are (inside an eval_rst block too);
        # its words say its kind (tabbook.render.diagnostics).
        return [self.reporter.warning(f"{self.name}:: {self.arguments[0]} :file: {named} does not exist "
                                      "beside the page: the block is left out", line=self.lineno)]


# --- TeX ----------------------------------------------------------------------------------------

#: Control sequences that read or write files, run programs, or change how TeX reads what
#: follows (so that a name not written in the text could mean one of the others): never in a
#: page's TeX. Names, not patterns: ``\\input`` and ``\\inputencoding`` differ.
TEX_REFUSED = frozenset({
    # files read
    "input", "include", "includeonly", "InputIfFileExists", "IfFileExists", "openin", "read", "readline",
    "ifeof", "usepackage", "RequirePackage", "documentclass", "LoadClass", "LoadClassWithOptions",
    "includegraphics", "includepdf", "includesvg", "includestandalone", "import", "subimport",
    "inputminted", "lstinputlisting", "verbatiminput", "VerbatimInput", "listinginput", "bibliography",
    "addbibresource", "externaldocument", "pdffiledump", "pdffilesize", "pdffilemoddate", "pdfmdfivesum",
    "pdfximage", "pdfobj", "pdfstream", "XeTeXpicfile", "XeTeXpdffile", "filedump", "filesize",
    "filemoddate", "mdfivesum", "font", "@input", "@@input", "@iinput",
    # files written, programs run
    "write", "immediate", "openout", "closeout", "newwrite", "special", "shipout", "directlua",
    "latelua", "luaexec", "luadirect", "ShellEscape", "write18", "filecontents",
    # what the text means: catcodes, names made from characters, input read again
    "catcode", "csname", "scantokens", "scantextokens", "everyeof", "everypar", "everymath",
    "everydisplay", "everyhbox", "everyvbox", "everyjob", "everycr", "endlinechar", "makeatletter",
    "ExplSyntaxOn", "primitive", "pdfprimitive", "output", "batchmode", "nonstopmode", "scrollmode",
})
#: Environments that write files.
TEX_REFUSED_ENVIRONMENTS = frozenset({"filecontents", "filecontents*", "VerbatimOut", "luacode", "luacode*"})
_CONTROL = re.compile(r"\\([A-Za-z@]+|.)")
_BEGIN = re.compile(r"\\begin\s*\{\s*([^}\s]*)\s*\}")


def tex_problem(tex: str) -> str | None:
    """Why ``tex`` (a formula or a raw LaTeX block from the book) may not reach TeX, or None.

    Why a list of names and not a parser: TeX is read token by token, and a file is reached only
    through a primitive or macro named in the text. What could make a name that is not in the
    text (``^^69nput`` is ``input``, ``\\csname``, a changed ``\\catcode``, ``\\scantokens``,
    a definition that builds one) is refused as well, so the names written are the names TeX
    sees. KaTeX knows none of them either."""
    if "^^" in tex:
        return "uses TeX's ^^ character notation, which can spell any command"
    for m in _CONTROL.finditer(tex):
        name = m.group(1)
        if name in TEX_REFUSED:
            return f"uses \\{name}, which reads or writes files or changes how TeX reads the text"
    for m in _BEGIN.finditer(tex):
        if m.group(1) in TEX_REFUSED_ENVIRONMENTS:
            return f"opens the environment {m.group(1)}, which writes a file"
    return None


def refuse_file_tex(app: Sphinx, doctree: nodes.document) -> None:
    """Replace, with a warning at its line, every formula and raw LaTeX block whose TeX could read
    or write a file (:func:`tex_problem`) by its text as a literal: every builder, so a page
    fails the same way in HTML and in the PDFs."""
    for node in list(doctree.findall(lambda n: isinstance(n, (nodes.math, nodes.math_block, nodes.raw)))):
        if isinstance(node, nodes.raw) and LATEX_NAME not in str(node.get("format", "")).split():
            continue
        tex = node.astext()
        if (why := tex_problem(tex)) is None:
            continue
        what = "raw LaTeX" if isinstance(node, nodes.raw) else "math"
        _stop(f"{what} {why}: refused (the builder's TeX reads no file)", node)
        if node.parent is not None:
            node.replace_self(nodes.literal(tex, tex) if isinstance(node, nodes.math)
                              else nodes.literal_block(tex, tex))


def setup(app: Sphinx) -> ExtensionMetadata:
    app.add_directive("raw", BookRaw, override=True)
    # The book's folder, from tabbook.render.sphinx_conf; empty (a plain Sphinx project): no check.
    app.add_config_value("tabbook_root", "", "env", types=frozenset({str}))
    app.connect("builder-inited", confine_readers)
    # Before Sphinx's image and download collectors (priority 500) record the files to copy, and
    # before tabbook.render.ext.math collects the formulas.
    app.connect("doctree-read", refuse_outside_files, priority=400)
    app.connect("doctree-read", refuse_file_tex, priority=400)
    return {"version": "0.1", "parallel_read_safe": True, "parallel_write_safe": True}
