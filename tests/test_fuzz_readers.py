"""Fuzzing the readers of what a user or a forged change writes (issue 41, item 6): the config
reader and the store reader take any bytes and say what is wrong at a place, never with a
traceback; an entry the store reader accepts is one every consumer of entries can show.

(The Markdown reader has its own: ``tests/test_fuzz.py``, grammar, mutations and raw bytes.)
Bounded by hypothesis' example counts: seconds in ``make test``.
"""

from __future__ import annotations

import json
import os
import re
from functools import cache
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tabbook.config import KEY_CLASSES, load_config
from tabbook.errors import BookError, BookErrors
from tabbook.execute.entrycheck import read_entry
from tabbook.execute.store import Entry
from tabbook.render.front import computed_lines
from tabbook.render.merge import describe_provenance, merge_section
from tabbook.render.myst import myst_text
from tabbook.render.site import reader_notebook
from tabbook.settings import settings_of
from tabbook.source.model import Section
from tabbook.source.read import read_section

ROOT = Path(__file__).resolve().parent.parent
#: Examples per property; ``TABBOOK_FUZZ_EXAMPLES`` asks for more (a long run by hand).
SETTINGS = settings(max_examples=int(os.environ.get("TABBOOK_FUZZ_EXAMPLES", "150")), deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                            HealthCheck.function_scoped_fixture])

# --- the config reader ----------------------------------------------------------------------------

DECLARED = sorted({(d.section.replace("framework:*", "framework:pytorch"), d.key)
                   for cls in KEY_CLASSES for _, d in settings_of(cls)})
values = st.one_of(
    st.sampled_from(["", "0", "1", "-1", "True", "maybe", "9000000T", "8G", "1e400", "../x", "/etc", "/etc/passwd",
                     "img/ static/", "pytorch, jax", "../../../evil", "a b c", "x" * 300, "\u2028", "%(x)s",
                     "*.md */*.md", "import os", "def f(:", "[", "caf\u00e9", "tab.selected('x')", "a -> b, c"]),
    st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=40),
)
key_lines = st.one_of(
    st.sampled_from(DECLARED).flatmap(lambda sk: values.map(lambda v: (sk[0], f"{sk[1]} = {v}"))),
    st.tuples(st.sampled_from(["project", "build", "site", "html", "pdf", "nowhere", "framework:pytorch"]),
              st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=30)),
)


@st.composite
def config_texts(draw: st.DrawFn) -> bytes:
    """An INI of known and unknown sections and keys with odd values, sometimes raw bytes."""
    if draw(st.integers(0, 9)) == 0:
        return draw(st.binary(max_size=200))
    sections: dict[str, list[str]] = {"project": ["name = fuzz"], "build": ["tabs = pytorch"]}
    for section, line in draw(st.lists(key_lines, max_size=8)):
        sections.setdefault(section, []).append(line.replace("\n", " ") if draw(st.booleans()) else line)
    text = "".join(f"[{s}]\n" + "\n".join(lines) + "\n\n" for s, lines in sections.items())
    return text.encode("utf-8", "surrogatepass")


def _located(err: BookError, names: set[str]) -> None:
    for e in err.errors if isinstance(err, BookErrors) else [err]:
        assert e.path in names, e.location_message()
        assert "Traceback" not in e.message


@SETTINGS
@given(config_texts())
def test_the_config_reader_takes_any_text(tmp_path_factory, data: bytes) -> None:  # noqa: ANN001 - pytest fixture
    """A Config, or a BookError at config.ini; a problem read past is at config.ini too."""
    root = tmp_path_factory.getbasetemp() / "fuzz-config"
    root.mkdir(exist_ok=True)
    (root / "config.ini").write_bytes(data)
    (root / "index.md").write_text("# Fuzz\n")
    try:
        config = load_config(root)
    except BookError as err:
        _located(err, {"config.ini"})
        return
    for problem in config.problems:
        _located(problem, {"config.ini"})
    assert all(re.fullmatch(r"[\w-]+", tab) for tab in config.tabs)  # names that make safe file names
    assert "/" not in config.name and not config.name.startswith(".")


# --- the store reader --------------------------------------------------------------------------------

SEED_ENTRY = ROOT / "_freeze" / "chapter_gpus" / "devices" / "pytorch.ipynb"
SEED_PAGE = ROOT / "chapter_gpus" / "devices.md"
odd = st.one_of(
    st.none(), st.booleans(), st.integers(-2**70, 2**70), st.floats(allow_nan=True),
    st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=30),
    st.sampled_from(["<img src=x onerror=alert(1)>", "```{literalinclude} /etc/passwd\n```", "$\\input{/etc/hostname}$",
                     "{download}`/etc/passwd`", "\x1b[31m", "x" * 2000, "iVBORw0KGgo=", "not base64!"]),
    st.lists(st.integers(), max_size=3), st.dictionaries(st.text(max_size=5), st.integers(), max_size=3),
)


def _paths(value: Any, at: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place in a JSON value (a key of an object, an index of a list)."""
    out = [at]
    if isinstance(value, dict):
        for k, v in value.items():
            out += _paths(v, (*at, k))
    elif isinstance(value, list):
        for i, v in enumerate(value[:4]):
            out += _paths(v, (*at, i))
    return out


def _set(value: Any, at: tuple[Any, ...], new: Any) -> Any:
    if not at:
        return new
    value[at[0]] = _set(value[at[0]], at[1:], new)
    return value


@st.composite
def entry_texts(draw: st.DrawFn) -> str:
    """A real entry with a few places replaced by odd values, nested deep, or cut short."""
    kind = draw(st.integers(0, 9))
    text = SEED_ENTRY.read_text(encoding="utf-8")
    if kind == 0:
        return draw(st.binary(max_size=300)).decode("utf-8", "replace")
    if kind == 1:
        return text[:draw(st.integers(0, len(text)))]
    if kind == 2:
        depth = draw(st.integers(1, 5000))
        return '{"cells": ' + "[" * depth + "]" * depth + "}"
    nb = json.loads(text)
    places = _paths(nb)
    for _ in range(draw(st.integers(1, 4))):
        nb = _set(nb, draw(st.sampled_from(places)), draw(odd))
        places = _paths(nb) if isinstance(nb, dict | list) else [()]
    return json.dumps(nb)


TABS = ("pytorch", "jax", "tensorflow", "mxnet")


@cache
def _seed_section() -> Section:
    return read_section(SEED_PAGE.read_text(encoding="utf-8"), "chapter_gpus/devices.md", TABS, "pytorch")


@SETTINGS
@given(entry_texts())
def test_the_store_reader_takes_any_text_and_what_it_accepts_can_be_shown(tmp_path_factory, text: str) -> None:  # noqa: ANN001
    """read_entry: a notebook or a damaged-entry error at the entry; an accepted entry merges
    into its page, is offered to readers, and its provenance shows as text only."""
    path = tmp_path_factory.getbasetemp() / "fuzz-entry.ipynb"
    path.write_text(text, encoding="utf-8")
    try:
        nb = read_entry(path, "_freeze/x/pytorch.ipynb")
    except BookError as err:
        assert err.path == "_freeze/x/pytorch.ipynb" and err.message.startswith("damaged freeze entry:"), str(err)
        return
    merge_section(_seed_section(), {"pytorch": nb}, TABS, {fw: fw.title() for fw in TABS})
    reader_notebook(nb)
    prov = Entry(nb).provenance
    for line in [*computed_lines("PyTorch", [prov]), describe_provenance("PyTorch", prov)]:
        assert only_text(line), line  # whatever the entry holds is shown as text, never read as MyST


def only_text(myst: str) -> bool:
    """Whether ``myst`` is one paragraph of plain text to MyST (the extensions tabbook enables)."""
    from markdown_it.renderer import RendererHTML
    from myst_parser.config.main import MdParserConfig
    from myst_parser.parsers.mdit import create_md_parser

    md = create_md_parser(MdParserConfig(enable_extensions={"dollarmath", "amsmath", "colon_fence"},
                                         dmath_double_inline=True), RendererHTML)
    tokens = md.parse(myst)
    kinds = [t.type for t in tokens]
    children = {c.type for t in tokens if t.type == "inline" for c in t.children or []}
    return kinds == ["paragraph_open", "inline", "paragraph_close"] and children <= {"text"}


def test_only_text_sees_markup() -> None:
    assert only_text(myst_text("<img src=x onerror=alert(1)> $\\input{x}$ {download}`/etc/passwd` **b** [l](u)"))
    for markup in ("<img src=x>", "$x$", "{download}`/etc/passwd`", "**b**", "```{raw} latex\n\\input{x}\n```"):
        assert not only_text(markup), markup
