"""Slide decks from the slide marks (tabbook.render.slides): what goes on which slide, for which
framework, with which outputs; and the deck's page (no foreign asset, outputs as text)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tabbook.check import check_book
from tabbook.config import load_config
from tabbook.render.slides import (
    Code,
    Renderer,
    Slide,
    build_deck,
    deck_html,
    error_text,
    lecture_code,
    marks,
    paginate,
    write_decks,
)
from tabbook.source.dialect import unclosed_slide_marks
from tabbook.source.model import Section
from tabbook.source.read import read_section

TABS = ("pytorch", "jax")

BOOK = '''# Devices

Intro the slides leave out.

[**A tensor lives on one device**], and (**operations need their inputs there**).

```{.python .input}
%%tab pytorch
import torch  # the framework
x = torch.ones(2)  #@save
```

```{.python .input}
%%tab pytorch
print(x.device)
```

```{.python .input}
%%tab jax
print('jax device')
```

## Copying

:begin_tab:`jax`
[**JAX puts arrays on the default device**]
:end_tab:

A link [**bold text**](https://example.org) is no mark; [~~slide-only words~~] are.

```{.python .input}
%%tab pytorch
#@hide_output
print('hidden output')
```
'''


def section(text: str = BOOK) -> Section:
    return read_section(text, "chapter/devices.md", TABS, "pytorch")


def executed(*cells: tuple[str, list[dict[str, Any]]]) -> dict[str, Any]:
    return {"cells": [{"cell_type": "code", "source": src, "outputs": outs, "metadata": {}} for src, outs in cells]}


def stream(text: str) -> dict[str, Any]:
    return {"output_type": "stream", "name": "stdout", "text": text}


def test_marks_in_order_and_links_are_not_marks() -> None:
    found = marks("[**one**] then (**two\n  lines**) and [**link**](http://x) and (~~only~~)\n```\n[**x**]\n```\n")
    assert [(m.text, m.new_slide) for m in found] == [("one", True), ("two lines", False), ("only", False)]


def test_marks_in_examples_and_delimiters_in_code_spans_are_text() -> None:
    # A four-backtick fence shows an example with a fence of three inside (d2lbook's own manual);
    # a delimiter in a code span explains the syntax; a code span inside a mark stays.
    text = ("````md\n(**in the example**)\n```python\nx\n```\n[**still the example**]\n````\n"
            "Write `(**` and `**)` around it, `` ` `` alone, then (~~e.g. `exp`~~) and [**x `(**`**]\n")
    assert [(m.text, m.new_slide) for m in marks(text)] == [("e.g. `exp`", False), ("x", True)]


def test_lecture_code_drops_comments_and_save_marks() -> None:
    src = "# setup\nimport torch  # the framework\nx = '#not a comment'  #@save\n#@save\ny = 1"
    assert lecture_code(src) == "import torch\nx = '#not a comment'\ny = 1"
    assert lecture_code("%timeit f()  # magic\n# gone\nz = 2") == "%timeit f()\nz = 2"


def test_pytorch_deck() -> None:
    nb = executed(("import torch  # the framework\nx = torch.ones(2)  #@save", []),
                  ("print(x.device)", [stream("cpu\n")]),
                  ("#@hide_output\nprint('hidden output')", [stream("hidden output\n")]))
    deck = build_deck(section(), "pytorch", "PyTorch", nb)
    assert deck is not None and deck.title == "Devices"
    assert [s.title for s in deck.slides] == ["", "", "Copying"]
    first = deck.slides[1]
    assert first.items[0] == "A tensor lives on one device operations need their inputs there"
    # A cell without outputs is shown with the next one; comments and #@save are gone.
    assert first.items[1] == Code("import torch\nx = torch.ones(2)\n\nprint(x.device)", (stream("cpu\n"),))
    last = deck.slides[2]
    assert last.items == ["Slide-only words", Code("print('hidden output')")]  # JAX prose is not PyTorch's


def test_jax_deck_has_its_prose_tab_and_its_outputs() -> None:
    deck = build_deck(section(), "jax", "JAX", executed(("print('jax device')", [stream("gpu?\n")])))
    assert deck is not None
    assert deck.slides[1].items[1] == Code("print('jax device')", (stream("gpu?\n"),))
    assert deck.slides[2].items[0] == "JAX puts arrays on the default device"


def test_no_marks_no_deck() -> None:
    text = "# Plain\n\nNo marks here.\n\n```{.python .input}\nprint(1)\n```\n"
    assert build_deck(read_section(text, "p.md", TABS, "pytorch"), "pytorch", "PyTorch", None) is None


def test_deck_page_is_self_contained_and_shows_outputs_as_text() -> None:
    nb = executed(("import torch\nx = torch.ones(2)", []),
                  ("print(x.device)", [stream("<script>alert(1)</script>\n")]),
                  ("print('hidden output')", []))
    deck = build_deck(section(), "pytorch", "PyTorch", nb)
    assert deck is not None
    page = deck_html(deck, Renderer(katex=None))
    assert 'src="../reveal/reveal.js"' in page and 'href="../reveal/reveal.css"' in page
    assert 'href="../../chapter/devices.html?tab=pytorch"' in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "<script>alert" not in page
    assert "http://" not in page and "https://" not in page
    assert page.count("<section>") == 3


def test_a_print_cut_into_two_stream_messages_makes_the_same_deck() -> None:
    """A kernel may send ``print(x)`` as ``x`` and then a newline (it depends on timing): the deck
    is the same either way, one output block, as the page shows it."""
    whole = executed(("import torch\nx = torch.ones(2)", []), ("print(x.device)", [stream("cpu\n")]),
                     ("print('hidden output')", []))
    cut = executed(("import torch\nx = torch.ones(2)", []),
                   ("print(x.device)", [stream("cpu"), stream("\n")]), ("print('hidden output')", []))
    pages = [deck_html(d, Renderer(katex=None)) for nb in (whole, cut)
             if (d := build_deck(section(), "pytorch", "PyTorch", nb)) is not None]
    assert len(pages) == 2 and pages[0] == pages[1]
    assert pages[1].count('<pre class="output stdout">') == 1


def test_write_decks_renders_only_what_changed_and_removes_decks_without_marks(tmp_path: Path) -> None:
    (tmp_path / "config.ini").write_text(
        "[project]\nname = b\ntitle = B\n[build]\nindex = index.md\ntabs = pytorch, jax\ndefault_tab = pytorch\n"
        "[framework:pytorch]\npython = current\nimport = json\n[framework:jax]\npython = current\nimport = json\n")
    (tmp_path / "index.md").write_text("# B\n\n```toc\nc/devices\n```\n")
    config = load_config(tmp_path)
    html_dir = tmp_path / "build" / "html"
    sec = section()
    nbs = {(sec.path, "pytorch"): executed(("print(x.device)", [stream("cpu\n")])),
           (sec.path, "jax"): executed(("print('jax device')", [stream("jax\n")]))}
    first = write_decks(config, [sec], nbs, html_dir)
    assert (first.decks, first.written) == (2, 2)
    deck = html_dir / "_slides" / "chapter" / "devices-jax.html"
    assert "jax device" in deck.read_text()
    assert (html_dir / "_slides" / "reveal" / "reveal.js").is_file()
    again = write_decks(config, [sec], nbs, html_dir)
    assert (again.decks, again.written) == (2, 0)  # nothing changed: nothing rendered or written
    nbs[(sec.path, "jax")] = executed(("print('jax device')", [stream("changed\n")]))
    assert write_decks(config, [sec], nbs, html_dir).written == 1
    assert "changed" in deck.read_text()
    plain = read_section(BOOK.replace("[**", "").replace("**]", "").replace("(**", "").replace("**)", "")
                         .replace("[~~", "").replace("~~]", ""), "chapter/devices.md", TABS, "pytorch")
    gone = write_decks(config, [plain], nbs, html_dir)
    assert (gone.decks, gone.removed) == (0, 2) and not deck.exists()


def test_unclosed_slide_marks_are_found_where_they_open() -> None:
    text = ("Closed [**here**] and (~~here~~); a link [**bold**](https://x) too.\n"
            "Code `f(**kwargs)` is not prose, nor\n```\n[**fenced**\n```\n"
            "but this (**one is left open.\n")
    assert unclosed_slide_marks(text) == [(5, "(**")]


def test_check_warns_at_the_line_of_an_unclosed_mark(tmp_path: Path) -> None:
    (tmp_path / "config.ini").write_text("[project]\nname = b\ntitle = B\n[build]\nindex = index.md\ntabs = pytorch\n"
                                         "[framework:pytorch]\npython = current\nimport = json\n")
    (tmp_path / "index.md").write_text("# B\n\nIntro.\n\nThe [**slide text\nruns on.\n")
    assert [w.shown() for w in check_book(load_config(tmp_path))] == [
        "index.md:5: slide mark [** is never closed by **]: the slides leave its text out [slide-mark]"]


def test_an_error_on_a_slide_is_its_statement_not_its_frames() -> None:
    """A traceback's frames filled whole slides (the `copying` decks): a slide shows the
    exception's statement, the last one when its message holds another traceback (MXNet's)."""
    frames = ["\x1b[0;31m---------\x1b[0m", "File /x/jax/_src/pjit.py:155, in _run\n    152   a = 1\n"
              "--> 155   raise ValueError(msg)\n    156 except E:", "\x1b[0;31mValueError\x1b[0m: devices differ"]
    page = Renderer(katex=None).output({"output_type": "error", "ename": "ValueError", "evalue": "devices differ",
                                         "traceback": frames})
    assert page == '<pre class="output error">ValueError: devices differ</pre>'
    nested = {"output_type": "error", "ename": "MXNetError", "traceback": [
        "File base.py:246", "\x1b[0;31mMXNetError\x1b[0m: Traceback (most recent call last):\n"
        '  File "imperative.cc", line 81\nMXNetError: Operator ones is not implemented for GPU.']}
    assert error_text(nested) == "MXNetError: Operator ones is not implemented for GPU."
    assert error_text({"ename": "", "traceback": ["a", "b\nc", "d"]}) == "b\nc\nd"


def test_a_slide_too_long_for_its_frame_is_cut_between_cells_under_its_heading() -> None:
    """The `copying` decks' title slide held five cells, shrunk past reading: a slide longer than
    a frame goes on over more slides, each with the heading, text kept with the code it leads to."""
    cell = Code("\n".join(f"x{k} = f({k})" for k in range(12)), (stream("out\n" * 3),))
    slide = Slide("Naming", ["Intro.", cell, "Then this:", cell, cell])
    pages = paginate(slide)
    assert [p.title for p in pages] == ["Naming"] * 3
    assert [p.items for p in pages] == [["Intro.", cell], ["Then this:", cell], [cell]]
    assert paginate(Slide("Short", ["One.", Code("x = 1")])) == [Slide("Short", ["One.", Code("x = 1")])]
    # The title slide's overflow goes on under the deck's title; one huge cell is a slide of its own.
    huge = Code("\n".join(["y = 2"] * 60))
    assert [(p.title, p.items) for p in paginate(Slide("", ["Intro.", cell, huge]), first=True, heading="Deck")] \
        == [("", ["Intro.", cell]), ("Deck", [huge])]
