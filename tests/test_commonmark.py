"""CommonMark where d2lbook follows it (issue 30, item 3), one fixture per construct.

Roles are not read inside code spans, code blocks or HTML comments; fences nest by length; a
page no toc lists builds as an orphan with a located warning; ``[build] index`` may be spelled
as d2lbook spells it (no ``.md``) or name another page, and one outside the book is a located
error; the front page's one-line summaries are never cut inside a role.
"""

from __future__ import annotations

from pathlib import Path

from test_d2lbook_build import make_book, tabbook

from tabbook.render.front import LINE_MAX, one_line
from tabbook.render.myst import to_myst
from tabbook.source.read import read_section

TABS = ("pytorch", "jax")

SYNTAX = """\
# Syntax
:label:`sec_syntax`

To refer to a section, change `:num:` to `:numref:`, e.g. :numref:`sec_syntax`.
Double ticks too: ``:ref:`nowhere` `` is code.

<!-- :numref:`in_a_comment` and :cite:`in_a_comment` -->

    :numref:`in_indented_code`
"""


def test_roles_in_code_spans_comments_and_code_blocks_are_text() -> None:
    section = read_section(SYNTAX, "syntax.md", TABS, "pytorch")
    assert [(role, target) for role, target, _ in section.refs] == [("numref", "sec_syntax")]
    myst = to_myst(SYNTAX)
    assert "change `:num:` to `:numref:`, e.g. {numref}`sec_syntax`." in myst
    assert "``:ref:`nowhere` ``" in myst
    assert "<!-- :numref:`in_a_comment` and :cite:`in_a_comment` -->" in myst  # kept as written
    assert "    :numref:`in_indented_code`" in myst


MANUAL = """\
# A manual

A table of contents, as the dialect writes it:

```md
````toc
chapter_one
````
```

And shown the other way round:

````md
```toc
chapter_two
```
````

The end.
"""


def test_fences_nest_by_length() -> None:
    section = read_section(MANUAL, "manual.md", TABS, "pytorch")
    assert section.toc == ()  # both toc blocks are examples inside other fences
    assert [c.kind for c in section.cells] == ["markdown"]
    myst = to_myst(MANUAL)
    # CommonMark would end a ``` block at the ```` line: the MyST fence is made longer.
    assert "`````md\n````toc\nchapter_one\n````\n`````" in myst
    assert "````md\n```toc\nchapter_two\n```\n````" in myst  # already longer: kept
    assert "{toctree}" not in myst


def test_a_summary_is_never_cut_inside_a_role() -> None:
    words = "Linear models are old " + "and very well studied " * 7
    text = f"# T\n\n{words}:cite:`Legendre.1805,Gauss.1809,Galton.1886` and more. Next sentence.\n"
    assert len(words) < LINE_MAX < len(words) + 60  # the cut falls inside the role
    line = one_line(read_section(text, "t.md", TABS, "pytorch"))
    assert line.endswith("studied…") and ":cite" not in line and "`" not in line
    short = "# T\n\nSee e.g. :numref:`sec_a.b`. Then more.\n"
    assert one_line(read_section(short, "t.md", TABS, "pytorch")) == "See e.g. {numref}`sec_a.b`."


def _set_index(book: Path, value: str) -> None:
    config = book / "config.ini"
    config.write_text(config.read_text().replace("[build]\n", f"[build]\nindex = {value}\n", 1))


def test_an_orphan_page_builds_with_a_warning_and_any_index_name_works(tmp_path: Path) -> None:
    book, overlay = make_book(tmp_path)
    (book / "chapter_a" / "demo.md").write_text("# Demo\n\nA page no toc lists.\n")
    _set_index(book, "index")  # d2lbook's spelling: no .md
    proc = tabbook(book, overlay, "build")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert ("warning: chapter_a/demo.md:1: section is not listed in any ```toc block: built as an orphan "
            "page (no toc lists it)") in proc.stdout
    html = book / "build" / "html"
    assert "A page no toc lists." in (html / "chapter_a" / "demo.html").read_text()
    assert "demo.html" not in (html / "index.html").read_text()  # in no toctree
    # The root page under another name is Sphinx's root document.
    (book / "index.md").rename(book / "contents.md")
    (book / "config.ini").write_text((book / "config.ini").read_text().replace("index = index\n", ""))
    _set_index(book, "contents.md")
    proc = tabbook(book, overlay, "build")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Chapter A" in (html / "contents.html").read_text()
    # One outside the book is an error at its line of config.ini, not a traceback.
    (book / "config.ini").write_text((book / "config.ini").read_text().replace("index = contents.md\n", ""))
    _set_index(book, "../elsewhere")
    proc = tabbook(book, overlay, "build")
    assert proc.returncode == 1
    assert "config.ini:8: [build] index '../elsewhere' is outside the book's folder" in proc.stderr
    assert "Traceback" not in proc.stderr
