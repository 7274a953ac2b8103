"""The edition selector: every page links the same page in the book's other editions.

``[site] versions`` lists a book's editions (git refs); ``tabbook site`` builds each from its own
commit (:mod:`tabbook.editions`) and hands each build the pages of all of them, as
:class:`Edition` rows of the render context. Here, from those rows alone (pure: no Sphinx, no
git), is where a page's link to another edition goes and what the reader is told:

- the same page when that edition has it;
- else the page's nearest parent in this edition's table of contents that the other edition has
  (a section moved or removed: its chapter), with a note saying so;
- else the other edition's front page, with a note.

The selector is a ``<details>`` of plain links: it works without JavaScript, sets no cookie and
stores nothing (which edition a reader last chose is not the builder's to remember: the link
they followed says it). The current edition is named, not linked (``aria-current``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from html import escape

#: Pages Sphinx writes in every edition's site besides the toc's (the generated index and the
#: search page), so a link from one goes to the same page in the other.
SPHINX_PAGES = ("genindex", "search")


@dataclass(frozen=True)
class Edition:
    """One edition as every page of every edition sees it."""

    label: str  # its folder in the site ("" for the default, at the root)
    title: str  # what the selector shows ("Fourth edition")
    folder: str  # "" (the default edition) or "LABEL/": where its site lies under the root
    root_doc: str  # its front page's docname ("index")
    pages: tuple[tuple[str, str], ...]  # (docname, title) of each page its site has, in toc order
    parents: tuple[tuple[str, str], ...] = ()  # (docname, its toc parent's docname)

    def has(self, docname: str) -> bool:
        return any(name == docname for name, _ in self.pages)

    def title_of(self, docname: str) -> str:
        return next((title for name, title in self.pages if name == docname), docname)

    def ancestors(self, docname: str) -> list[str]:
        """The page's parents in this edition's table of contents, nearest first."""
        up = dict(self.parents)
        out: list[str] = []
        while docname in up and up[docname] not in out:
            docname = up[docname]
            out.append(docname)
        return out

    def as_row(self) -> tuple[object, ...]:
        """The JSON-able form the render context carries (tuples all the way down)."""
        return (self.label, self.title, self.folder, self.root_doc, self.pages, self.parents)

    @classmethod
    def from_row(cls, row: tuple[object, ...] | list[object]) -> Edition:
        label, title, folder, root_doc, pages, parents = row
        return cls(str(label), str(title), str(folder), str(root_doc),
                   tuple((str(a), str(b)) for a, b in pages),  # type: ignore[attr-defined]
                   tuple((str(a), str(b)) for a, b in parents))  # type: ignore[attr-defined]


@dataclass(frozen=True)
class Choice:
    """One line of a page's selector."""

    edition: Edition
    target: str  # the docname the link goes to in that edition
    current: bool  # the edition this page belongs to
    note: str  # "" when the link goes to the same page


def choices(editions: tuple[Edition, ...], this: str, docname: str) -> list[Choice]:
    """Each edition's line of ``docname``'s selector, in the order ``[site] versions`` lists
    them; ``this`` is the label of the edition the page belongs to."""
    here = next(e for e in editions if e.label == this)
    out = []
    for edition in editions:
        if edition.label == this:
            out.append(Choice(edition, docname, True, ""))
            continue
        target, note = docname, ""
        if not edition.has(docname):
            parent = next((p for p in here.ancestors(docname) if edition.has(p)), None)
            if parent is not None and parent != edition.root_doc:
                target = parent
                note = (f"this page is not in the {edition.title}: the link goes to its nearest "
                        f"parent there, {edition.title_of(parent)}")
            else:
                target = edition.root_doc
                note = f"this page is not in the {edition.title}: the link goes to its front page"
        out.append(Choice(edition, target, False, note))
    return out


def href(from_edition: Edition, to_root: str, to: Edition, target_uri: str) -> str:
    """The relative link from a page of ``from_edition`` (``to_root``: that page's way to its
    edition's root, as Sphinx gives it) to ``target_uri`` (``chapter/page.html``) in ``to``."""
    prefix = to_root + "../" * from_edition.folder.count("/") + to.folder
    return (prefix.removeprefix("./") if prefix != "./" else prefix) + target_uri


def selector_html(editions: tuple[Edition, ...], this: str, docname: str, to_root: str,
                  target_uri: Callable[[str], str]) -> str:
    """The selector of one page: ``target_uri(docname)`` is the builder's file name of a page
    (``chapter/page.html``), ``to_root`` the page's relative way to its edition's root."""
    here = next(e for e in editions if e.label == this)
    items = []
    for choice in choices(editions, this, docname):
        name = escape(choice.edition.title)
        if choice.current:
            items.append(f'<li><strong aria-current="page">{name}</strong> (this edition)</li>')
            continue
        link = escape(href(here, to_root, choice.edition, target_uri(choice.target)))
        note = f' <span class="tabbook-edition-note">{escape(choice.note)}</span>' if choice.note else ""
        items.append(f'<li><a href="{link}">{name}</a>{note}</li>')
    return (f'<nav class="tabbook-editions" aria-label="Editions"><details>'
            f"<summary>Edition: {escape(here.title)}</summary><ul>{''.join(items)}</ul></details></nav>")
