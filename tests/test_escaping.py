"""The author's text reaches HTML as text where a reviewer would not expect script (issue 49):
config.ini's title, links that would run script refused at their line, and the declared policy
for HTML in the pages, ``[html] raw_html = allow|escape``, tested both ways."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tabbook.addresses import script_url
from tabbook.config import load_config
from tabbook.errors import BookError
from tabbook.new import new_book
from tabbook.render.context import render_context


@pytest.fixture
def book(tmp_path: Path) -> Path:
    new_book(tmp_path / "book")
    return tmp_path / "book"


def _add(book: Path, text: str) -> int:
    """Append ``text`` to config.ini; the line its last line lands on."""
    config = book / "config.ini"
    config.write_text(config.read_text() + text)
    return len(config.read_text().splitlines())


def _error(book: Path) -> str:
    with pytest.raises(BookError) as err:
        load_config(book)
    return err.value.location_message()


@pytest.mark.parametrize("url", ["javascript:alert(1)", "JavaScript:alert(1)", "java\tscript:alert(1)",
                                 "\x01javascript:alert(1)", "vbscript:msgbox", "data:text/html,<script>x</script>",
                                 "DATA:image/svg+xml;base64,PHN2Zz4="])
def test_a_script_link_is_recognised(url: str) -> None:
    assert script_url(url) is not None


@pytest.mark.parametrize("url", ["https://github.com/o/r", "d2l-en.pdf", "/course", "#top", "mailto:a@b.c",
                                 "https://example.com/javascript:x", "notes/data:1"])
def test_a_plain_link_is_not(url: str) -> None:
    assert script_url(url) is None


@pytest.mark.parametrize("url", ["javascript:alert(document.cookie)", "vbscript:msgbox(1)",
                                 "data:text/html;base64;PHNjcmlwdD4="])  # (a comma would split the item)
def test_a_header_link_that_runs_script_is_an_error_at_its_line(book: Path, url: str) -> None:
    line = _add(book, f"\n[html]\nheader_links = GitHub, https://github.com/o/r, fab fa-github,\n"
                      f"    Click me, {url}, fas fa-link\n")
    said = _error(book)
    assert said.startswith(f"config.ini:{line - 1}:") or said.startswith(f"config.ini:{line}:"), said
    assert "runs script" in said and "header_links" in said


def test_plain_header_links_are_kept(book: Path) -> None:
    _add(book, "\n[html]\nheader_links = PDF, d2l-en.pdf, fas fa-file-pdf, GitHub, https://github.com/o/r, fab fa-github\n")
    assert [u for _, u, _ in load_config(book).html.header_links] == ["d2l-en.pdf", "https://github.com/o/r"]


@pytest.mark.parametrize(("section", "key"), [("site", "pdf_url"), ("site", "colab_url")])
def test_a_link_template_that_runs_script_is_an_error_at_its_line(book: Path, section: str, key: str) -> None:
    line = _add(book, f"\n[{section}]\n{key} = javascript:alert('{{fw}}')\n")
    said = _error(book)
    assert said.startswith(f"config.ini:{line}:") and "runs script" in said, said


@pytest.mark.parametrize("lang", ['en" onload="alert(1)', "en><script>", "e"])
def test_lang_is_a_language_tag(book: Path, lang: str) -> None:
    config = book / "config.ini"
    config.write_text(config.read_text().replace("[project]\n", f"[project]\nlang = {lang}\n", 1))
    line = config.read_text().splitlines().index(f"lang = {lang}") + 1
    said = _error(book)
    assert said.startswith(f"config.ini:{line}:") and "language tag" in said, said


def test_lang_tags_d2lbook_books_use_are_kept(book: Path) -> None:
    config = book / "config.ini"
    config.write_text(config.read_text().replace("[project]\n", "[project]\nlang = zh_CN\n", 1))
    assert load_config(book).lang == "zh_CN"


def test_raw_html_is_allow_or_escape_and_the_books_own(book: Path, tmp_path: Path) -> None:
    assert load_config(book).html.raw_html == "allow"  # d2lbook's behaviour
    assert render_context(load_config(book)).raw_html == "allow"
    line = _add(book, "\n[html]\nraw_html = sanitize\n")
    said = _error(book)
    assert said.startswith(f"config.ini:{line}:") and "allow" in said and "escape" in said, said
    config = book / "config.ini"
    config.write_text(config.read_text().replace("raw_html = sanitize", "raw_html = escape"))
    assert render_context(load_config(book)).raw_html == "escape"
    overlay = tmp_path / "tabbook.ini"
    overlay.write_text("[html]\nraw_html = allow\n")
    with pytest.raises(BookError):  # a contributor's overlay does not decide it
        load_config(book, overlay)


# ---- the policy in a Sphinx run: the extension alone, on MyST pages --------------------------

PAGE = """# Page

Inline <b onclick="inline()">tag</b> in a sentence.

<script>block()</script>

<!-- a hidden note -->

```{raw} html
<script>directive()</script>
```

```{eval-rst}
.. raw:: html

   <script>rst()</script>
```

```{raw} html
:class: tabbook-generated
<script>claimed()</script>
```

:::{only} html
```{raw} html
:class: tabbook-generated
<script>generated()</script>
```
:::
"""


def _text(html: str) -> str:
    """What ``html`` shows: its tags taken out (its entities left as they are)."""
    return re.sub(r"\s+", " ", re.sub(r"<[^>]*>", "", html))


def _sphinx(tmp_path: Path, mode: str) -> str:
    """The HTML of PAGE, built as the root page by Sphinx with myst-parser and the policy."""
    from sphinx.application import Sphinx

    src = tmp_path / mode / "src"
    src.mkdir(parents=True)
    (src / "conf.py").write_text("extensions = ['myst_parser', 'tabbook.render.ext.rawhtml']\n"
                                 f"tabbook_raw_html = {mode!r}\nmyst_enable_extensions = ['colon_fence']\n")
    (src / "index.md").write_text(PAGE)
    out = tmp_path / mode / "html"
    app = Sphinx(str(src), str(src), str(out), str(tmp_path / mode / "doctrees"), "html",
                 status=None, warning=None, freshenv=True)
    app.build()
    body = (out / "index.html").read_text()
    return body[body.index('<div class="body"'):]


def test_allow_publishes_the_pages_html(tmp_path: Path) -> None:
    body = _sphinx(tmp_path, "allow")
    for script in ("block()", "directive()", "rst()", "claimed()", "generated()"):
        assert f"<script>{script}</script>" in body
    assert '<b onclick="inline()">tag</b>' in body and "<!-- a hidden note -->" in body
    assert "tabbook-generated" not in body  # the mark is taken off: the same bytes as unmarked


def test_escape_shows_the_pages_html_as_text(tmp_path: Path) -> None:
    body = _sphinx(tmp_path, "escape")
    for script in ("block()", "directive()", "rst()", "claimed()"):
        assert f"<script>{script}" not in body
        assert f"&lt;script&gt;{script}&lt;/script&gt;" in body
    assert "<b onclick" not in body and '<code class="tabbook-raw-html' in body
    assert "&lt;b onclick=&quot;inline()&quot;&gt;tag&lt;/b&gt; in a sentence" in _text(body)
    assert "hidden note" not in body
    # The builder's own block (the front page's, appended after the page) is still published;
    # the same mark in the author's text above it is not honoured.
    assert "<script>generated()</script>" in body
    assert "tabbook-generated" not in body


# ---- a whole build: the title, the front page, a page -----------------------------------------

def test_a_book_with_script_in_its_title_and_pages(book: Path) -> None:
    config = book / "config.ini"
    text = config.read_text()
    text = re.sub(r"(?m)^title = .*$", 'title = Evil <script>alert("title")</script> & Co', text)
    config.write_text(text + "\n[html]\nraw_html = escape\n")
    page = book / "averages.md"
    page.write_text(page.read_text() + "\nSee <img src=x onerror=alert(2)> here.\n\n<script>alert(3)</script>\n")
    env = {**os.environ, "TABBOOK_WARM": "0"}
    run = subprocess.run([sys.executable, "-m", "tabbook", "-C", str(book), "build", "html"],
                         capture_output=True, text=True, env=env, timeout=900)
    assert run.returncode == 0, run.stdout + run.stderr
    html = book / "build" / "html"
    index, averages = (html / "index.html").read_text(), (html / "averages.html").read_text()
    for page_html in (index, averages):
        assert "<script>alert" not in page_html
        assert "Evil &lt;script&gt;alert" in page_html  # the sidebar's brand, as text
        assert re.search(r"<title>[^<]*Evil &lt;script&gt;alert\(&#34;title&#34;\)&lt;/script&gt; &amp; Co</title>",
                         page_html), re.findall(r"<title>.*?</title>", page_html)
    assert "<img src=x" not in averages and "See &lt;img src=x onerror=alert(2)&gt; here." in _text(averages)
    assert "&lt;script&gt;alert(3)&lt;/script&gt;" in averages
    assert 'class="tabbook-picker"' in index and "tabbook-generated" not in index  # the front page's own HTML
