"""Render: everything only the LaTeX builder (the per-framework PDFs) needs.

Kept apart from the tab and site modules so that an HTML build never runs, and a reader of
this module never has to skip, code that exists for print:

- one framework per PDF: the provenance note names only that framework, and the API reference
  drops the sections of the other frameworks' library modules (:class:`OneFramework`);
- outputs LaTeX cannot show are converted or replaced by a note before myst-nb picks a mime
  type (:class:`PrintableOutputs`), long tracebacks are shortened;
- SVG images become vector PDFs through ``rsvg-convert``: sphinxcontrib-svg2pdfconverter's
  ``sphinxcontrib.rsvgconverter`` (set up here), whose output lands in the doctree cache's
  ``images/``, so the per-framework builds sharing that cache each convert into the same place;
- the chapters of an "Appendix" toctree are lettered (:class:`LatexAppendix`);
- the title page names the edition (``\\tabbookedition``).

``tabbook_framework`` is read at write time only, so one doctree cache serves every PDF.
"""

from __future__ import annotations

import re
import shutil
from html.parser import HTMLParser
from typing import Any

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.config import Config
from sphinx.transforms.post_transforms import SphinxPostTransform
from sphinx.util.typing import ExtensionMetadata

from tabbook.render.formats import LATEX_NAME, PDF, ForFormat, Format, Images, Tabs, format_of_transform
from tabbook.render.names import APPENDIX_CAPTION, PROVENANCE_CLASS, UNSUPPORTED_CLASS

#: The class of the note that stands for a missing image in a PDF.
MISSING_IMAGE_CLASS = "tabbook-missing-image"
OBJECT_REPR = re.compile(r"^<[\w.]+ object(?: at 0x[0-9a-fA-F]+)?>$")


class OneFramework(SphinxPostTransform):
    """A one-framework document (not HTML, ``tabbook_framework`` set) speaks of that framework
    only: its provenance note and its API reference. (The framework cells themselves are
    filtered by :class:`tabbook.render.ext.tabs.GroupFrameworkTabs`.)"""

    default_priority = 150

    def run(self, **kwargs: Any) -> None:
        config = self.config
        only = config.tabbook_framework if format_of_transform(self).tabs is Tabs.ONE else None
        if not only:
            return
        labels = dict(config.tabbook_labels)
        _keep_provenance_of(self.document, labels.get(only, only))
        modules = dict(config.tabbook_modules)
        _drop_module_sections(self.document, {m for fw, m in modules.items() if fw != only})


def _keep_provenance_of(document: nodes.document, label: str) -> None:
    """In a one-framework document, the provenance note names that framework only."""
    for note in list(document.findall(nodes.container)):
        if PROVENANCE_CLASS not in note.get("classes", []):
            continue
        for item in list(note.findall(nodes.list_item)):
            if not item.astext().startswith(f"{label} "):
                item.parent.remove(item)
        for lst in list(note.findall(nodes.bullet_list)):
            if len(lst.children) == 1:  # one line left: a sentence, not a list
                lst.replace_self(lst.children[0].children)
            elif not lst.children:
                lst.parent.remove(lst)


def _drop_module_sections(document: nodes.document, modules: set[str]) -> None:
    """Drop the sections documenting another framework's library module (API reference)."""
    ids = {f"module-{m}" for m in modules}
    for section in list(document.findall(nodes.section)):
        targets = [section, *(c for c in section.children if isinstance(c, nodes.target))]
        if section.parent is not None and any(ids & set(t.get("ids", [])) for t in targets):
            section.parent.remove(section)


class MissingImages(ForFormat, SphinxPostTransform):
    """LaTeX: an image whose file does not exist becomes a framed note naming it.

    The HTML build shows a broken image and the build warns (``missing-image``, at the Markdown
    line); xelatex stopped at ``Unable to load picture``, so the whole PDF was lost for one
    figure. The build's warning is the same; the PDF shows where the figure is missing."""

    default_priority = 190  # before Sphinx's image converters (200) look for the file

    @staticmethod
    def applies(fmt: Format) -> bool:
        return fmt.images is Images.PRINT

    def run(self, **kwargs: Any) -> None:
        import os

        for image in list(self.document.findall(nodes.image)):
            uri = str(image.get("uri", ""))
            if not uri or "://" in uri or uri.startswith("data:"):
                continue
            candidates = image.get("candidates") or {}
            paths = [str(p) for p in candidates.values() if p and p != "?"] or [uri]
            if any(os.path.isfile(os.path.join(self.env.srcdir, p)) for p in paths):
                continue
            # As the author wrote it (img/x.png): build/src mirrors the book's folder.
            shown = full = os.path.normpath(os.path.join(self.env.srcdir, uri))
            for base in (str(self.env.srcdir), str(getattr(self.config, "tabbook_root", "") or "")):
                if base and not os.path.relpath(full, base).startswith(".."):
                    shown = os.path.relpath(full, base)
                    break
            note = nodes.literal("", f"missing image: {shown}", classes=[MISSING_IMAGE_CLASS])
            image.replace_self(nodes.inline("", "", nodes.raw("", "\\fbox{", format=LATEX_NAME), note,
                                            nodes.raw("", "}", format=LATEX_NAME)))


class LatexAppendix(ForFormat, SphinxPostTransform):
    """LaTeX: the documents of a root toctree captioned ``APPENDIX_CAPTION`` ("Appendix…") start LaTeX's ``\\appendix``.

    Sphinx's LaTeX builder inlines every toctree and drops their captions; its
    own ``latex_appendices`` would print such pages twice. A raw ``\\appendix``
    before the first of them letters those chapters (A, B, ...) instead.
    A bibliography page whose entries Sphinx moves to the end is dropped
    (its heading would stand alone), the entries form the "Bibliography".
    """

    default_priority = 800  # after Sphinx gathers the citations (BibliographyTransform, 750)

    @staticmethod
    def applies(fmt: Format) -> bool:
        return fmt.one_document

    def run(self, **kwargs: Any) -> None:
        from sphinx import addnodes

        root = self.config.root_doc
        if self.document.get("docname") != root:
            return
        appendix: list[str] = []
        for toctree in self.env.get_doctree(root).findall(addnodes.toctree):
            if str(toctree.get("caption") or "").lower().startswith(APPENDIX_CAPTION.lower()):
                appendix += [doc for _title, doc in toctree.get("entries", [])]
        starts = [n for n in self.document.findall(addnodes.start_of_file) if n.get("docname") in appendix]
        for start in starts:
            sections = [c for c in start.children if isinstance(c, nodes.section)]
            title = sections[0].next_node(nodes.title) if len(sections) == 1 else None
            if title is not None and sections[0].astext().strip() == title.astext().strip():
                start.parent.remove(start)  # nothing left but the title (a moved bibliography)
        starts = [n for n in starts if n.parent is not None]
        if starts:
            starts[0].parent.insert(starts[0].parent.index(starts[0]),
                                    nodes.raw("", "\\appendix\n", format=LATEX_NAME))


class _HTMLText(HTMLParser):
    """The text of an HTML fragment, one line per block element, scripts dropped."""

    BLOCKS = {"p", "div", "tr", "br", "li", "h1", "h2", "h3", "h4", "table", "pre"}

    def __init__(self) -> None:
        super().__init__()
        self.parts: list[str] = []
        self.skip = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("script", "style"):
            self.skip += 1
        elif tag in self.BLOCKS:
            self.parts.append("\n")
        elif tag in ("td", "th"):
            self.parts.append("\t")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style"):
            self.skip = max(0, self.skip - 1)

    def handle_data(self, data: str) -> None:
        if not self.skip:
            self.parts.append(data)


def html_to_text(html: str) -> str:
    parser = _HTMLText()
    parser.feed(html)
    lines = ["  ".join(" ".join(cell.split()) for cell in line.split("\t")).strip()
             for line in "".join(parser.parts).splitlines()]
    return "\n".join(line for line in lines if line)


def _note(text: str) -> nodes.container:
    return nodes.container("", nodes.paragraph(text, text), classes=[UNSUPPORTED_CLASS])


class PrintableOutputs(ForFormat, SphinxPostTransform):
    """LaTeX: replace notebook outputs that print cannot show, before myst-nb chooses.

    myst-nb's ``SelectMimeType`` (priority 4) drops a bundle with no printable
    mime type, with a warning. Here (priority 3) an HTML-only output becomes its
    text plus a note, an SVG-only one is left to the rsvg converter (sphinxcontrib.rsvgconverter;
    noted when rsvg-convert is missing) and anything else (widgets, JavaScript) becomes a note.
    A bare ``<… object>`` repr beside a richer type does not count as printable.
    Long tracebacks are shortened to the book's own frame and the error.
    """

    default_priority = 3

    @staticmethod
    def applies(fmt: Format) -> bool:
        return fmt.printable_outputs

    def run(self, **kwargs: Any) -> None:
        from myst_nb.core.render import get_mime_priority

        priority = get_mime_priority(PDF.builder, self.config.nb_mime_priority_overrides)
        have_rsvg = shutil.which(self.config.rsvg_converter_bin) is not None
        _shorten_tracebacks(self.document)
        for bundle in list(self.document.findall(nodes.container)):
            if bundle.get("nb_element") != "mime_bundle":
                continue
            by_type = {c.get("mime_type"): c for c in bundle.children if isinstance(c, nodes.Element)}
            plain = by_type.get("text/plain")
            if plain is not None and len(by_type) > 1 and OBJECT_REPR.match(plain.astext().strip()):
                bundle.remove(plain)  # "<IPython.core.display.HTML object>" says nothing in print
                del by_type["text/plain"]
            chosen = next((m for m in priority if m in by_type), None)
            if chosen == "image/svg+xml" and not have_rsvg:
                bundle.replace_self(_note("[A vector figure is shown here in the online version: "
                                          "rsvg-convert was not installed when this PDF was built.]"))
            elif chosen is None and "text/html" in by_type:
                text = html_to_text(by_type["text/html"].astext())
                out: list[nodes.Element] = [_note("[HTML output, shown as text; the online version shows it "
                                                  "as it was rendered.]")]
                if text:
                    out.append(nodes.literal_block(text, text, classes=["output", "text_plain"], language="none"))
                bundle.replace_self(out)
            elif chosen is None and by_type:
                kinds = ", ".join(sorted(str(m) for m in by_type))
                bundle.replace_self(_note(f"[Interactive output ({kinds}): see the online version of the book.]"))


FRAME = re.compile(r"^(Cell In\[|File |Input In \[)")


def _shorten_tracebacks(document: nodes.document) -> None:
    for block in list(document.findall(nodes.literal_block)):
        if "traceback" not in block.get("classes", []):
            continue
        text = block.astext()
        short = shorten_traceback(text)
        if short != text:
            new = nodes.literal_block(short, short, classes=list(block["classes"]))
            if block.get("language"):
                new["language"] = block["language"]
            new.source, new.line = block.source, block.line
            block.replace_self(new)


def shorten_traceback(text: str) -> str:
    """Keep a traceback's header, the book's own frame and the error; count the library frames.

    Framework tracebacks run to a hundred lines of library internals: fine behind
    a scroll bar, pages of noise on paper. The online version keeps them whole.
    """
    lines = text.rstrip().split("\n")
    starts = [i for i, line in enumerate(lines) if FRAME.match(line)]
    if len(starts) < 3:
        return text
    end = len(lines)
    while end > starts[-1] and lines[end - 1].strip():
        end -= 1  # the error message: the last paragraph
    if end <= starts[-1]:
        return text
    head = lines[:starts[1]]
    while head and not head[-1].strip():
        head.pop()
    hidden = len(starts) - 1
    note = f"[... {hidden} frame{'s' if hidden > 1 else ''} inside the library omitted in print ...]"
    return "\n".join([*head, "", note, "", *lines[end:]]).rstrip("\n")


def _latex_edition(app: Sphinx, config: Config) -> None:
    """Name the PDF's framework on its title page (``\\tabbookedition``, see tabbook.sty)."""
    from tabbook.render.latex_conf import tex_text

    fw = config.tabbook_framework
    if not fw or not isinstance(config.latex_elements, dict):
        return
    label = tex_text(dict(config.tabbook_labels).get(fw, fw))
    elements = dict(config.latex_elements)
    elements["preamble"] = elements.get("preamble", "") + f"\\def\\tabbookedition{{{label}}}\n"
    config.latex_elements = elements


def setup_latex(app: Sphinx) -> None:
    """Register the LaTeX-only transforms, the SVG converter and the edition title."""
    app.setup_extension("tabbook.render.ext.tabs")  # tabbook_framework, tabbook_labels
    app.setup_extension("sphinxcontrib.rsvgconverter")  # SVG -> vector PDF (rsvg_converter_bin)
    app.add_config_value("tabbook_modules", {}, "", types=frozenset({dict}))
    app.add_post_transform(OneFramework)
    app.add_post_transform(PrintableOutputs)
    app.add_post_transform(LatexAppendix)
    app.add_post_transform(MissingImages)
    app.connect("config-inited", _latex_edition)


def setup(app: Sphinx) -> ExtensionMetadata:
    setup_latex(app)
    return {"version": "0.1", "parallel_read_safe": True, "parallel_write_safe": True}
