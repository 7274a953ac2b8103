"""Build-time math: TeX → HTML + MathML with KaTeX, run by node, so pages load no math script.

A reader's browser gets finished markup, one small stylesheet and the few KaTeX fonts a page uses,
all from the site itself: no CDN, nothing typeset at load, and MathML for screen readers.

KaTeX comes from the npm registry, pinned with its integrity hash by ``tabbook/node/package-lock.json``,
and is installed on demand (``npm ci``) into a cache keyed by that lock file, the way framework
environments are: ``$TABBOOK_CACHE`` or ``~/.cache/tabbook``, under ``node/<hash>/``.
"""

from __future__ import annotations

import hashlib
import html
import json
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Set
from pathlib import Path
from typing import TypedDict

from tabbook.errors import Log
from tabbook.files import (  # one cache for venvs and KaTeX
    Memo,
    atomic_target,
    cache_dir,
    copy_atomic,
    write_atomic,
    write_if_changed,
)

NODE_PROJECT = Path(__file__).resolve().parent / "node"
RENDER_SCRIPT = NODE_PROJECT / "katex-render.js"


class MathUnavailable(Exception):
    """KaTeX cannot run here (no node, or the install failed); the message says what to do."""


class TexError(Exception):
    """KaTeX rejected a formula; the message is KaTeX's."""


def install_dir() -> Path:
    lock = (NODE_PROJECT / "package-lock.json").read_bytes()
    return cache_dir() / "node" / hashlib.sha256(lock).hexdigest()[:12]


def ensure_katex(log: Log = print) -> Path:
    """The installed KaTeX package directory, installing it first if needed."""
    target = install_dir()
    package = target / "node_modules" / "katex"
    if (package / "dist" / "katex.min.css").is_file():
        return package
    npm, node = shutil.which("npm"), shutil.which("node")
    if not (npm and node):
        raise MathUnavailable("math needs Node.js and npm (Debian: apt-get install nodejs npm)")
    log(f"[math] installing KaTeX into {target}")
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=".install-"))
    try:
        for name in ("package.json", "package-lock.json"):
            shutil.copy2(NODE_PROJECT / name, tmp / name)
        proc = subprocess.run(
            [npm, "ci", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error"],
            cwd=tmp, capture_output=True, text=True,
        )
        if proc.returncode != 0:
            raise MathUnavailable(f"npm ci failed for KaTeX: {proc.stderr.strip()[-800:]}")
        try:
            tmp.rename(target)  # atomic: a concurrent build either sees all of it or none
        except OSError:
            if not (package / "dist" / "katex.min.css").is_file():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return package


class Katex:
    """One node process rendering formulas on request (JSON lines), results cached by input."""

    def __init__(self, package: Path, macros: dict[str, str] | None = None) -> None:
        self.package = package
        self.macros = dict(macros or {})
        self._proc: subprocess.Popen[str] | None = None
        self._pid = 0
        self._cache: dict[tuple[str, bool, bool], str] = {}
        self.version = ""

    def _start(self) -> subprocess.Popen[str]:
        # A forked Sphinx worker must not share its parent's pipes: one process per pid.
        if self._proc is not None and self._pid == os.getpid() and self._proc.poll() is None:
            return self._proc
        node = shutil.which("node")
        if not node:
            raise MathUnavailable("node is not on PATH")
        self._proc = subprocess.Popen(
            [node, str(RENDER_SCRIPT), str(self.package)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            text=True, encoding="utf-8", bufsize=1,
        )
        self._pid = os.getpid()
        hello = self._proc.stdout.readline() if self._proc.stdout else ""
        try:
            self.version = json.loads(hello)["version"]
        except (ValueError, KeyError) as exc:
            raise MathUnavailable(f"the KaTeX renderer did not start: {hello!r}") from exc
        return self._proc

    def render(self, tex: str, display: bool, lenient: bool = False) -> str:
        """KaTeX's HTML and MathML of ``tex``; :class:`TexError` when it cannot read it, unless
        ``lenient``: then what it cannot read is shown as its TeX in the error colour."""
        key = (tex, display, lenient)
        if key in self._cache:
            return self._cache[key]
        proc = self._start()
        assert proc.stdin and proc.stdout
        proc.stdin.write(json.dumps({"tex": tex, "display": display, "macros": self.macros,
                                     "lenient": lenient}) + "\n")
        proc.stdin.flush()
        line = proc.stdout.readline()
        if not line:
            raise MathUnavailable("the KaTeX renderer stopped")
        reply = json.loads(line)
        if "error" in reply:
            raise TexError(reply["error"])
        out = self._cache[key] = str(reply["html"])
        return out

    def close(self) -> None:
        if self._proc is not None and self._pid == os.getpid():
            if self._proc.stdin:
                self._proc.stdin.close()
            try:
                self._proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._proc.kill()
        self._proc = None


_TAG = re.compile(r"<[^>]*>")
_MATHML = re.compile(r'<span class="katex-mathml">.*?</math></span>', re.S)


def glyphs_of(rendered: str) -> set[str]:
    """The characters KaTeX's HTML part of ``rendered`` draws with its fonts."""
    return set(html.unescape(_TAG.sub("", _MATHML.sub("", rendered)))) - {"\n"}


_OTHER_FONT_FORMATS = re.compile(r',\s*url\([^)]*\.(?:woff|ttf)\)\s*format\("(?:woff|truetype)"\)')
_CSS_RULE = re.compile(r"([^{}]+)\{([^{}]*)\}")
_CSS_CLASS = re.compile(r"\.([A-Za-z_-][\w-]*)")
_CSS_NOT = re.compile(r":not\([^)]*\)")
_CLASS_ATTR = re.compile(r'class="([^"]*)"')
_FAMILY = re.compile(r"KaTeX_\w+")


def classes_of(rendered: str) -> set[str]:
    """The CSS classes used in KaTeX's output."""
    return {c for attr in _CLASS_ATTR.findall(rendered) for c in attr.split()}


def prune_stylesheet(css: str, classes: Set[str]) -> str:
    """KaTeX's stylesheet cut to the rules whose selectors only name ``classes`` (most of its 23 kB
    are size-change and rarely used layout rules), and to the @font-face rules of the font families
    those rules use. Browsers fetch only the fonts a page draws with anyway; this saves CSS bytes."""
    kept: list[str] = []
    faces: list[tuple[str, str]] = []
    for selectors, body in _CSS_RULE.findall(css):
        selectors = selectors.strip()
        if selectors.startswith("@font-face"):
            faces.append((selectors, body))
            continue
        ok = [sel for sel in selectors.split(",") if set(_CSS_CLASS.findall(_CSS_NOT.sub("", sel))) <= classes]
        if ok:
            kept.append(",".join(ok) + "{" + body + "}")
    used = {m for rule in kept for m in _FAMILY.findall(rule)}
    fonts = [f"{sel}{{{body}}}" for sel, body in faces if set(_FAMILY.findall(body)) & used]
    return "".join(fonts + kept)


def _stylesheet(package: Path, classes: Set[str]) -> tuple[str, str]:
    """The stylesheet for one set of KaTeX classes: its path under ``_static`` and its text."""
    css = _OTHER_FONT_FORMATS.sub("", (package / "dist" / "katex.min.css").read_text(encoding="utf-8"))
    css = prune_stylesheet(css, classes)
    return f"katex/katex-{hashlib.sha256(css.encode()).hexdigest()[:10]}.css", css


def remove_unused_stylesheets(package: Path, class_sets: list[set[str]], static_dir: Path) -> None:
    """Remove the ``katex/katex-*.css`` no page links now (``class_sets``: each math page's
    classes): an earlier build's stylesheet for formulas since removed is not in a clean build."""
    keep = {_stylesheet(package, classes)[0] for classes in {frozenset(c) for c in class_sets if c}}
    for path in (static_dir / "katex").glob("katex-*.css"):
        if f"katex/{path.name}" not in keep:
            path.unlink()


def page_stylesheet(package: Path, classes: set[str], static_dir: Path) -> str:
    """Write the stylesheet for one set of KaTeX classes as ``katex/katex-<hash>.css`` under
    ``static_dir`` (pages using the same constructs share it; a content-named file is never stale
    in a browser's cache). Returns its path relative to ``static_dir``."""
    name, css = _stylesheet(package, classes)
    target = static_dir / name
    if not target.is_file():
        write_atomic(target, css)
    return name


def subset_font(src: Path, dst: Path, text: str) -> bool:
    """Write ``src`` reduced to the glyphs of ``text`` as woff2; False if fontTools is missing."""
    try:
        from fontTools import subset
    except ImportError:
        return False
    import logging

    logging.getLogger("fontTools").setLevel(logging.WARNING)  # it reports every table at INFO
    options = subset.Options()
    options.flavor = "woff2"
    options.layout_features = ["*"]
    font = subset.load_font(str(src), options)
    subsetter = subset.Subsetter(options)
    subsetter.populate(text=text)
    subsetter.subset(font)
    with atomic_target(dst) as tmp:
        subset.save_font(font, str(tmp), options)
    return True


class _CutFonts(TypedDict, total=False):
    """What the fonts cut last hold (the memo beside them): the glyphs, and whether they were cut."""

    glyphs: str
    subsetted: bool

def publish_fonts(package: Path, static_dir: Path, glyphs: set[str], state: Path) -> Path:
    """Write KaTeX's woff2 fonts (the stylesheets' @font-face rules name only those; every browser
    that renders this site reads woff2) and its licence to ``static_dir/katex``.

    Each font is cut down to ``glyphs``, the characters the whole site typesets (the build
    environment keeps them per document, so pages an incremental build does not rewrite count
    too), so a math page loads a few kB of fonts rather than ~100 kB. ``state`` records what the
    fonts on disk hold: they are cut again only when that changes. Without fontTools, whole fonts."""
    dist = package / "dist"
    out = static_dir / "katex"
    (out / "fonts").mkdir(parents=True, exist_ok=True)
    if (package / "LICENSE").is_file():
        write_if_changed(out / "LICENSE.txt", (package / "LICENSE").read_bytes())
    memo: Memo[_CutFonts] = Memo(state, {"katex": str(package)})
    known = memo.load() or {}
    union = set(glyphs)
    fonts = sorted((dist / "fonts").glob("*.woff2"))
    # A site without formulas (empty union) is current too: its cut fonts are cut again only
    # when a formula appears. Whole fonts (no fontTools) are recorded as not subsetted.
    fresh = known.get("subsetted") is True and \
        set(known.get("glyphs", "")) == union and all((out / "fonts" / f.name).is_file() for f in fonts)
    if fresh:
        return out
    text = "".join(sorted(union))
    subsetted = True
    for font in fonts:
        dst = out / "fonts" / font.name
        if not subset_font(font, dst, text):
            copy_atomic(font, dst)
            subsetted = False
    memo.save({"glyphs": text if subsetted else "", "subsetted": subsetted})
    return out
