"""The reader's site: options, per-section download links, and the files they point to.

Pure functions decide what a page links to (:func:`page_links`); the I/O at the edges copies the
executed notebooks from the freeze store and any built PDFs into the HTML tree
(:func:`publish_downloads`), so the site is self-contained and works offline.

Options come from the render context (:class:`tabbook.render.context.RenderContext`, made from the
configuration): ``[project] repository`` (an "Open in Colab" link is shown only when it names a
GitHub repository, or when ``[site] colab_url`` is set), the ``[site]`` keys (``branch``,
``colab_url``, ``pdf_url``, ``front_page``) and d2lbook's ``[colab]`` keys.

Every page offers the PDF and, where the section has slide marks, the slides of the framework the
reader chose (one link each that follows the tab choice: ``tabbook.js``); a site built without
PDFs says so on the page. Each framework's notebooks are also published as one zip.
"""

from __future__ import annotations

import io
import json
import re
import shutil
import zipfile
from dataclasses import dataclass
from pathlib import Path

from tabbook.execute.entrycheck import read_entry
from tabbook.execute.store import FreezeStore, new_notebook, public_copy, text
from tabbook.files import Memo, write_if_changed
from tabbook.nbjson import Notebook, NotebookCell
from tabbook.render.context import SLIDES, RenderContext, github_repo
from tabbook.render.package import INDEX

DOWNLOADS = "_downloads"  # under the HTML output directory
#: Said where the PDFs would be when the site was built without them (``make site`` adds them).
NO_PDF_NOTE = "not in this build"


def notebook_entry(opts: RenderContext, docname: str, fw: str) -> Path:
    """The freeze store's executed notebook of a page (docname ``chapter/sec``) for a framework."""
    return FreezeStore(Path(opts.freeze_dir)).path(docname, fw)


def notebook_target(docname: str, fw: str) -> str:
    """Where the reader's copy lives in the site, relative to the HTML root."""
    return f"{DOWNLOADS}/notebooks/{docname}-{fw}.ipynb"


def pdf_target(name: str, fw: str) -> str:
    return f"{DOWNLOADS}/pdf/{name}-{fw}.pdf"


def pdf_url(opts: RenderContext, fw: str) -> str:
    """Where a framework's PDF is linked: the configured URL, else its copy inside the site."""
    return opts.pdf_url.format(name=opts.name, fw=fw) if opts.pdf_url else pdf_target(opts.name, fw)


def zip_target(name: str, fw: str) -> str:
    """One framework's notebooks, every section, as one zip (relative to the HTML root)."""
    return f"{DOWNLOADS}/notebooks/{name}-{fw}-notebooks.zip"


def deck_target(docname: str, fw: str) -> str:
    """A section's slides for one framework (relative to the HTML root)."""
    return f"{SLIDES}/{docname}-{fw}.html"


@dataclass(frozen=True)
class Link:
    kind: str  # "Notebook" | "PDF" | "Slides" | "Colab" | "Source"
    label: str  # framework label
    url: str  # relative to the HTML root, or absolute (http...)
    fw: str = ""  # the framework it is for ("" for the source)


def page_links(opts: RenderContext, docname: str, notebooks: set[str], pdfs: set[str],
               source: str = "", slides: set[str] | frozenset[str] = frozenset()) -> list[Link]:
    """Links for one page: ``notebooks`` are the frameworks with an executed notebook for it,
    ``pdfs`` the frameworks whose PDF exists (or is configured by URL), ``source`` the page's
    Markdown file (root-relative) when it is a page of the book, ``slides`` the frameworks with a
    deck of it. The PDFs are the whole book's, so every page offers them. Pure."""
    links: list[Link] = []
    fws = [fw for fw in opts.tabs if fw in notebooks]
    for fw in fws:
        links.append(Link("Notebook", opts.labels.get(fw, fw), notebook_target(docname, fw), fw))
    for fw in opts.tabs:
        if fw in pdfs:
            links.append(Link("PDF", opts.labels.get(fw, fw), pdf_url(opts, fw), fw))
    for fw in opts.tabs:
        if fw in slides:
            links.append(Link("Slides", opts.labels.get(fw, fw), deck_target(docname, fw), fw))
    if opts.colab_url and opts.repo:
        freeze = Path(opts.freeze_dir)
        try:
            rel_store = freeze.relative_to(Path(opts.root)).as_posix()
        except ValueError:
            rel_store = freeze.name
        for fw in fws:
            path = f"{rel_store}/{notebook_entry(opts, docname, fw).relative_to(freeze).as_posix()}"
            url = opts.colab_url.format(repo=opts.repo, branch=opts.branch, path=path)
            links.append(Link("Colab", opts.labels.get(fw, fw), url, fw))
    if opts.repo and github_repo(opts.repo) == opts.repo and source:
        links.append(Link("Source", Path(source).name, f"https://github.com/{opts.repo}/blob/{opts.branch}/{source}"))
    return links


def available_notebooks(opts: RenderContext, docname: str) -> set[str]:
    return {fw for fw in opts.tabs if notebook_entry(opts, docname, fw).is_file()}


def source_of(opts: RenderContext, docname: str) -> str:
    """The book's Markdown file behind a page, root-relative, or "" for generated pages."""
    return f"{docname}.md" if (Path(opts.root) / f"{docname}.md").is_file() else ""


def links_for(opts: RenderContext, docname: str) -> list[Link]:
    """:func:`page_links` with what exists on disk now."""
    return page_links(opts, docname, available_notebooks(opts, docname), available_pdfs(opts),
                      source_of(opts, docname), available_slides(opts, docname))


def available_slides(opts: RenderContext, docname: str) -> set[str]:
    """Frameworks with a deck of this page (the build writes decks before Sphinx runs)."""
    if not opts.slides_dir:
        return set()
    return {fw for fw in opts.tabs if (Path(opts.slides_dir).parent / deck_target(docname, fw)).is_file()}


def available_pdfs(opts: RenderContext) -> set[str]:
    if opts.pdf_url:
        return set(opts.tabs)
    return {fw for fw in opts.tabs if (Path(opts.pdf_dir) / f"{opts.name}-{fw}.pdf").is_file()}


def reader_notebook(nb: Notebook, trusted: bool = False) -> Notebook:
    """A freeze entry as a reader gets it: a plain Python 3 kernel, the provenance kept, the store's
    bookkeeping (keys, hashes) dropped, its outputs cleaned unless the book trusts them."""
    from tabbook.render.sanitize import untrusted_notebook

    out = public_copy(nb if trusted else untrusted_notebook(nb))
    out.setdefault("metadata", {})["kernelspec"] = new_notebook([])["metadata"]["kernelspec"]
    return out


# ---- d2lbook's [colab] keys, on the notebooks a reader downloads ---------------------------------

IMPORTED = re.compile(r"^\s*(?:from\s+([\w]+)[\w.]*\s+import|import\s+([\w]+))", re.M)


def install_cell(nb: Notebook, libs: list[tuple[str, str]], version: str) -> str:
    """``[colab] libs``: the pip lines for the libraries the notebook's code imports ("" for none),
    ``==RELEASE`` standing for the book's version, as d2lbook writes them for Colab."""
    wanted = dict(libs)
    found: list[str] = []
    for cell in nb.get("cells", []):
        if cell.get("cell_type") != "code":
            continue
        for m in IMPORTED.finditer(text(cell.get("source", ""))):
            name = m.group(1) or m.group(2)
            if name in wanted and name not in found:
                found.append(name)
    return "".join(f"!pip install {wanted[n].replace('==RELEASE', f'=={version}')}\n" for n in found)


#: The id of a reader notebook's first cell, the one that installs what it needs.
INSTALL_CELL = "tabbook-install"


def lock_install_cell(opts: RenderContext, fw: str, docname: str) -> str:
    """The install line generated from the framework's locks (:mod:`tabbook.execute.readerlock`):
    the book's package from the wheel its zip carries, and the locks' pins; "" when the book
    has none (no package, or d2lbook's ``[colab] libs``)."""
    from tabbook.execute.readerlock import find_links_for, install_source

    if not opts.install_package or fw not in opts.install_pins:
        return ""
    name, requirement = opts.install_package[:2]
    return install_source(requirement, opts.install_pins[fw], find_links_for(docname),
                          opts.install_locks.get(fw, ""), name)


def for_colab(nb: Notebook, opts: RenderContext, fw: str, docname: str = "") -> Notebook:
    """A reader's notebook with d2lbook's ``[colab]`` keys applied: a first cell installing the
    ``libs`` its code imports (under ``libs_header``), and ``accelerator: GPU`` when its code
    contains ``gpu_pattern`` (what Colab reads when the notebook is opened there). A book that
    packages its library and sets no ``libs`` gets the install line of its locks instead
    (:func:`lock_install_cell`). Pure."""
    cells = nb.get("cells", [])
    code = [text(c.get("source", "")) for c in cells if c.get("cell_type") == "code"]
    if opts.gpu_pattern and any(opts.gpu_pattern in source for source in code):
        nb.setdefault("metadata", {})["accelerator"] = "GPU"
    libs = [(lib, pip) for tab, lib, pip in opts.libs if tab in ("", fw)]
    pip = install_cell(nb, libs, opts.version) if libs else lock_install_cell(opts, fw, docname)
    if pip:
        first: list[NotebookCell] = [{"cell_type": "code", "execution_count": None, "id": INSTALL_CELL, "metadata": {},
                  "outputs": [], "source": pip}]
        if opts.libs_header and libs:  # d2lbook's header is about its libs; the lock's line says what it is
            first.insert(0, {"cell_type": "markdown", "id": "tabbook-install-header", "metadata": {},
                             "source": opts.libs_header})
        nb["cells"] = first + cells
    return nb


# ---- [html] header_links ----------------------------------------------------------------------

#: Font Awesome names (what d2lbook books write) → the bundled Octicons drawn for them; any
#: other name gets a plain link icon.
ICONS = {
    "fa-file-pdf": "file", "fa-file": "file", "fa-python": "file-code", "fa-github": "mark-github",
    "fa-book": "book", "fa-user-graduate": "mortar-board", "fa-graduation-cap": "mortar-board",
    "fa-external-link-alt": "link-external", "fa-external-link": "link-external",
    "fa-external-link-square-alt": "link-external", "fa-download": "download", "fa-home": "home",
    "fa-globe": "globe", "fa-comment": "comment", "fa-comments": "comment-discussion",
    "fa-youtube": "video", "fa-video": "video", "fa-file-archive": "file-zip", "fa-code": "code",
    "fa-link": "link", "fa-users": "people", "fa-user": "person", "fa-play": "play",
}


def icon_svg(fontawesome: str) -> str:
    """An inline SVG for a Font Awesome class list (``fas fa-file-pdf``), from sphinx-design's
    bundled Octicons: nothing is fetched from a CDN."""
    from sphinx_design.icons import get_octicon

    name = next((ICONS[c] for c in fontawesome.split() if c in ICONS), "link")
    return get_octicon(name, height="1em", classes=["tabbook-header-icon"])


def header_links_html(links: tuple[tuple[str, str, str], ...], to_root: str) -> str:
    """The ``[html] header_links`` bar; a relative URL is relative to the site's root (``to_root``:
    the page's way there). Empty without links."""
    from html import escape

    if not links:
        return ""
    items = []
    for name, url, icon in links:
        href = url if re.match(r"^[a-z][a-z0-9+.-]*:|^/|^#", url, re.I) else to_root + url
        items.append(f'<a class="tabbook-header-link" href="{escape(href)}">{icon_svg(icon)}'
                     f"<span>{escape(name)}</span></a>")
    return f'<nav class="tabbook-header-links" aria-label="Book links">{"".join(items)}</nav>'


def site_wheel(opts: RenderContext, outdir: Path) -> Path | None:
    """The book's wheel in the site's own index, which the build publishes before Sphinx writes
    the downloads (None: no package, or a build that publishes none, such as the preview)."""
    if not opts.install_package:
        return None
    wheels = sorted((outdir / INDEX / opts.install_package[0]).glob("*.whl"))
    return wheels[-1] if wheels else None


def zip_bytes(files: dict[str, str | bytes]) -> bytes:
    """A zip of ``files`` (name → text) that depends on nothing else: sorted names, fixed dates,
    so an unchanged book gives a byte-identical file (and the copy is not rewritten)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name in sorted(files):
            info = zipfile.ZipInfo(name, date_time=(2000, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            data = files[name]
            zf.writestr(info, data.encode("utf-8") if isinstance(data, str) else data)
    return buf.getvalue()


def write_zip(path: Path, files: dict[str, str | bytes]) -> None:
    """Write the zip of ``files`` atomically, only when its bytes change."""
    write_if_changed(path, zip_bytes(files))


def _copy_if_changed(src: Path, dst: Path) -> None:
    if dst.is_file() and dst.stat().st_size == src.stat().st_size and dst.stat().st_mtime >= src.stat().st_mtime:
        return
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(src, dst)


#: What the last :func:`publish_downloads` made of each entry: ``build/.html-downloads.json`` for
#: ``build/html`` (beside the site, so it is never published with it).
PUBLISHED = ".{}-downloads.json"


def _reader_code(opts: RenderContext | None = None) -> str:
    """The options an entry's reader copy depends on besides the builder (which every memo key
    holds): the ``[colab]`` keys and the ``non-notebooks`` files."""
    import hashlib

    h = hashlib.sha256()
    if opts is not None:
        h.update(json.dumps([opts.libs, opts.libs_header, opts.gpu_pattern, opts.version, opts.install_package,
                             opts.install_pins, opts.install_locks], sort_keys=True).encode())
        for rel in opts.non_notebooks:
            path = Path(opts.root) / rel
            h.update(rel.encode() + b"\0" + (path.read_bytes() if path.is_file() else b"") + b"\0")
    return h.hexdigest()


def publish_downloads(opts: RenderContext, docnames: list[str], outdir: Path) -> int:
    """Copy each page's executed notebooks (reader form) and the built PDFs into ``outdir``.
    Returns the number of files now published.

    Every HTML build calls this for every page, so it must not read every entry each time:
    a book of hundreds of sections in four frameworks has thousands, and an edit of one
    sentence would pay for all of them (issue 14). An entry whose file (size, modification
    time) and the code that converts it are what they were at the last publication, with
    its copy still in place, is skipped (the record: ``PUBLISHED``, beside the site).
    """

    # A memo beside the site (any outdir, not only build/html); a new builder, other [colab]
    # options or another trust setting republish all.
    memo: Memo[dict[str, list[int]]] = Memo(outdir.parent / PUBLISHED.format(outdir.name),
                {"site": outdir.name, "reader": _reader_code(opts), "trusted": opts.trusted_outputs})
    before = memo.load() or {}
    published: dict[str, list[int]] = {}
    count = 0
    per_fw: dict[str, dict[str, str | bytes]] = {}  # framework -> {path in its zip: notebook text}
    dirty: set[str] = set()  # frameworks with a notebook converted again in this run
    for docname in docnames:
        for fw in sorted(available_notebooks(opts, docname)):
            src = notebook_entry(opts, docname, fw)
            target = notebook_target(docname, fw)
            dst = outdir / target
            stat = src.stat()
            seen = [stat.st_size, stat.st_mtime_ns]
            count += 1
            published[target] = seen
            if before.get(target) == seen and dst.is_file():
                text = dst.read_text(encoding="utf-8")  # for the zip: the copy is what it would be
            else:
                entry = read_entry(src, max_output_bytes=opts.max_output_bytes)
                text = json.dumps(for_colab(reader_notebook(entry, trusted=True) if opts.trusted_outputs
                                            else reader_notebook(entry), opts, fw, docname),
                                  indent=1, ensure_ascii=False) + "\n"
                write_if_changed(dst, text)
                dirty.add(fw)
            per_fw.setdefault(fw, {})[f"{opts.name}-{fw}/{docname}.ipynb"] = text
    wheel = site_wheel(opts, outdir)
    if wheel is not None:  # what the install lines install the book's package from: a change rezips
        published[f"{INDEX}/{wheel.name}"] = [wheel.stat().st_size, wheel.stat().st_mtime_ns]
    for fw, files in per_fw.items():
        for rel in opts.non_notebooks:  # [build] non-notebooks: Markdown as it is, beside the notebooks
            path = Path(opts.root) / rel
            if path.is_file():
                files[f"{opts.name}-{fw}/{rel}"] = path.read_text(encoding="utf-8")
        if wheel is not None and fw in opts.install_pins:
            files[f"{opts.name}-{fw}/{wheel.name}"] = wheel.read_bytes()
        zipped = outdir / zip_target(opts.name, fw)
        # Zipping every notebook again costs what the book weighs: only when one changed.
        if fw in dirty or published != before or not zipped.is_file():
            write_zip(zipped, files)
        count += 1
    # What an earlier build published and no page offers now (a page removed or renamed, a
    # framework gone): a clean build would not have it.
    zips = {zip_target(opts.name, fw) for fw in per_fw}
    folder = outdir / DOWNLOADS / "notebooks"
    for path in folder.iterdir() if folder.is_dir() else ():
        target = path.relative_to(outdir).as_posix()
        if path.is_file() and target not in published and target not in zips:
            path.unlink()
    memo.save(published)
    if not opts.pdf_url:
        for fw in sorted(available_pdfs(opts)):
            _copy_if_changed(Path(opts.pdf_dir) / f"{opts.name}-{fw}.pdf", outdir / pdf_target(opts.name, fw))
            count += 1
    return count


_BLOCK_COMMENT = re.compile(r"/\*.*?\*/", re.S)


def compact_js(text: str) -> str:
    """Our own scripts without comment lines, doc comments, indentation or blank lines. Only whole
    lines are touched (never code on a line), so nothing can change meaning."""
    text = re.sub(r"(?m)^[ \t]*/\*\*?.*?\*/[ \t]*\n", "", text, flags=re.S)
    lines = (line.strip() for line in text.splitlines())
    return "\n".join(line for line in lines if line and not line.startswith("//")) + "\n"


def compact_css(text: str) -> str:
    """Our own stylesheet without comments, indentation or line breaks."""
    lines = (line.strip() for line in _BLOCK_COMMENT.sub("", text).splitlines())
    return "".join(line + (" " if not line.endswith(("{", "}", ";", ",")) else "") for line in lines if line)
