"""The output formats are declared once (``tabbook/render/formats.py``) and asked, never spelled.

Why: a format-dependent step that compares Sphinx's builder name or format itself is one a new
format (EPUB) would have to find and re-judge; asking the declaration makes the new format's
entry the one place its answers are given.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import pkgutil
import re
from pathlib import Path
from types import SimpleNamespace

import pytest

from tabbook.render import formats
from tabbook.render.formats import (
    FORMATS,
    HTML,
    OTHER_HTML,
    PDF,
    PLAIN,
    ForFormat,
    Format,
    Images,
    Math,
    Solutions,
    Tabs,
    format_named,
    format_of,
)

PACKAGE = Path(__file__).resolve().parent.parent / "tabbook"
DECLARATION = PACKAGE / "render" / "formats.py"

#: The ways code has spelled a format question without the declaration.
#: (A block's kind ``"html"`` is the dialect's construct, not a format: ``kind == "html"`` is not one.)
_NAMES = r"(?:html|latex|dirhtml|singlehtml|epub|texinfo|man)"
SPELLED = {
    "a running builder's name or format read": re.compile(r"(?:\.builder|_builder_cls)\.(?:format|name)\b"),
    "Sphinx's transform filters (builders/formats lists)": re.compile(r"^\s+(?:builders|formats)\s*=\s*\(", re.M),
    "a builder name compared": re.compile(r"\bbuilder\s*[!=]=\s*[\"']"),
    "a format name compared": re.compile(rf"(?<!kind )[!=]=\s*[\"']{_NAMES}[\"']|[\"']{_NAMES}[\"']\s*[!=]="),
    "a raw format tested by its name": re.compile(r"[\"'](?:html|latex)[\"']\s+(?:not\s+)?in\b"),
}


def spelled_formats(package: Path) -> list[str]:
    """``file:LINE: what`` for each place in ``package`` outside the declaration that spells a
    format question itself."""
    found: list[tuple[Path, int, str]] = []
    for path in sorted(package.rglob("*.py")):
        if path.name == DECLARATION.name and path.parent.name == "render":
            continue
        text = path.read_text(encoding="utf-8")
        for what, pattern in SPELLED.items():
            for m in pattern.finditer(text):
                line = text.count("\n", 0, m.start()) + 1
                found.append((path, line, f"{path.relative_to(package.parent)}:{line}: {what}: {m.group(0).strip()}"))
    return [said for *_, said in sorted(found)]


def test_no_format_spelled_outside_the_declaration() -> None:
    assert spelled_formats(PACKAGE) == []


def test_the_guard_sees_each_spelling(tmp_path: Path) -> None:
    """Each pattern finds what it is for (and the declaration module itself is exempt)."""
    pkg = tmp_path / "tabbook"
    (pkg / "render" / "ext").mkdir(parents=True)
    (pkg / "render" / "ext" / "x.py").write_text(
        'if app.builder.format != "html":\n    pass\n'
        "class T:\n    builders = (\"latex\",)\n"
        'if opts.builder == "html":\n    pass\n'
        'if "latex" not in node["format"].split():\n    pass\n'
        'ok = fmt == "epub"\n'
        'construct = block.kind == "html"\nnamed = builder.name\n', encoding="utf-8")
    (pkg / "render" / "formats.py").write_text('x = builder.name == "html"\n', encoding="utf-8")
    found = spelled_formats(pkg)
    assert all(f.startswith("tabbook/render/ext/x.py:") for f in found)
    by_line: dict[int, set[str]] = {}
    for f in found:
        by_line.setdefault(int(f.split(":")[1]), set()).add(f.split(": ")[1])
    assert by_line == {
        1: {"a running builder's name or format read", "a format name compared"},
        4: {"Sphinx's transform filters (builders/formats lists)"},
        5: {"a builder name compared", "a format name compared"},
        7: {"a raw format tested by its name"},
        9: {"a format name compared"},
    }  # line 10, a block's kind, and line 11, a name of another builder, are not format questions


def test_builders_map_to_their_formats() -> None:
    assert format_named("html") is HTML
    assert format_named("latex") is PDF
    assert format_named("html", "html") is HTML
    # Builders tabbook does not declare get the fallback of their Sphinx output format.
    for name in ("dirhtml", "singlehtml", "epub"):
        assert format_named(name, "html") is OTHER_HTML
    for name in ("text", "man", "xml"):
        assert format_named(name, name) is PLAIN
    assert format_named("", None) is PLAIN  # the build's "sources only"
    assert format_of(SimpleNamespace(name="latex", format="latex")) is PDF
    assert format_of(SimpleNamespace(name="dirhtml", format="html")) is OTHER_HTML


def test_declarations_are_whole() -> None:
    """Every format names a driver that exists, builder names are each declared once, and the
    PDF's one-framework documents are what the transforms filter by."""
    names = [f.name for f in FORMATS]
    assert len(set(names)) == len(names)
    builders = [b for f in FORMATS for b in f.builders]
    assert len(set(builders)) == len(builders)
    for f in FORMATS:
        assert f.driver == "sphinx" or importlib.util.find_spec(f.driver) is not None, f
        assert isinstance(f.tabs, Tabs) and isinstance(f.math, Math)
        assert isinstance(f.solutions, Solutions) and isinstance(f.images, Images)
        if f.site:
            assert f.builders and f.prunes_stale and f.downloads, f  # the site is build/html's
    assert {f for f in FORMATS if f.site} == {HTML}
    assert HTML.builder == "html" and PDF.builder == "latex"
    with pytest.raises(ValueError, match="written by tabbook.render.slides"):
        _ = formats.SLIDES.builder
    # The site's other builders behave as its pages do, without what knows build/html's layout.
    assert OTHER_HTML == Format(**{**vars(HTML), "name": OTHER_HTML.name, "builders": (), "driver": "sphinx",
                                   "prunes_stale": False, "site": False})


class _Probe(ForFormat):
    env: SimpleNamespace

    @staticmethod
    def applies(fmt: Format) -> bool:
        return fmt.one_document


def test_a_transform_runs_where_its_format_says() -> None:
    probe = _Probe()
    probe.env = SimpleNamespace(_builder_cls=SimpleNamespace(name="latex", format="latex"))
    assert probe.is_supported()
    probe.env = SimpleNamespace(_builder_cls=SimpleNamespace(name="html", format="html"))
    assert not probe.is_supported()


def test_no_transform_filters_by_builder_name() -> None:
    """Loaded, not read: no tabbook post-transform keeps Sphinx's own name lists (which would
    run it by builder name whatever the declaration says)."""
    from sphinx.transforms.post_transforms import SphinxPostTransform

    import tabbook.render.ext as ext

    checked = 0
    for info in pkgutil.iter_modules(ext.__path__):
        module = importlib.import_module(f"tabbook.render.ext.{info.name}")
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if issubclass(cls, SphinxPostTransform) and cls.__module__ == module.__name__:
                checked += 1
                assert not cls.builders and not cls.formats, cls
    assert checked >= 8
