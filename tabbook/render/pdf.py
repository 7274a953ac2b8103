"""``make pdf``: one PDF per framework, typeset by xelatex through latexmk.

``python -m tabbook [-C ROOT] pdf [--frameworks a,b] [--frozen] [--force]``

1. The ordinary pipeline (:func:`tabbook.build.build`, called by
   :func:`tabbook.build.build_pdfs`, which then calls :func:`write_pdfs`) checks the book, executes
   what is stale (nothing when the freeze store is current: no kernel starts),
   merges ``build/src`` and reads it once into the LaTeX doctree cache.
2. Per framework, Sphinx's LaTeX builder writes ``build/latex/<fw>/book.tex``
   from that cache with ``-D tabbook_framework=<fw>``: the extension keeps that
   framework's cells, outputs and prose tabs and drops every tab label.
3. latexmk + xelatex typeset it; the PDF is copied to
   ``build/pdf/<book>-<fw>.pdf`` (:func:`pdf_paths`).

A LaTeX failure raises a :class:`BookError` naming the ``.tex`` file, the book
section it came from and the error lines of the LaTeX log with their context.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from tabbook.config import Config, config_error
from tabbook.errors import BookError, Log, raise_all
from tabbook.files import BuildDir, copy_atomic
from tabbook.render.formats import PDF
from tabbook.render.latex_conf import TEX_NAME, font_warnings
from tabbook.render.sphinx import WARNINGS_ENV, sphinx_command, sphinx_env

#: Which of a LaTeX run's problems were not reported yet (tabbook.build._not_said, handed down).
Unsaid = Callable[[list[BookError]], list[BookError]]

TOOLS = ("xelatex", "latexmk", "rsvg-convert")
INSTALL_HINT = "run scripts/install-tex.sh (Debian packages, once)"
ERROR_LINE = re.compile(r"^(!|\S+\.(?:tex|sty|cls|def|cfg):\d+: )")
FILE_LINE = re.compile(r"^(?P<file>\S+\.tex):(?P<line>\d+): ")
TEX_LINE = re.compile(r"^l\.(?P<line>\d+) ")
DOC_LABEL = re.compile(r"\\label\{\\detokenize\{(?P<doc>[^}]*)::doc\}\}")
MISSING = re.compile(r"File `[^']+' not found|cannot be found|Font .* not loadable")
UNDEFINED_REF = re.compile(r"LaTeX Warning: (?:Hyper r|R)eference `([^']*)' on page \d+ undefined")


def pdf_paths(config: Config) -> dict[str, Path]:
    """Framework name → where ``make pdf`` writes its PDF (``build/pdf/<book>-<fw>.pdf``)."""
    return {fw: BuildDir(config.build_dir).pdf / f"{config.name}-{fw}.pdf" for fw in config.tabs}


def tex_dir(config: Config, framework: str) -> Path:
    return BuildDir(config.build_dir).latex(framework)


def missing_tools() -> list[str]:
    return [tool for tool in TOOLS if shutil.which(tool) is None]


def tex_available() -> bool:
    return not missing_tools()


def missing_tools_error() -> BookError | None:
    """What to install when TeX is missing (None: it is there)."""
    missing = missing_tools()
    return BookError(f"cannot build PDFs: {', '.join(missing)} not found; {INSTALL_HINT}") if missing else None


# ---- LaTeX log → a message a person can act on (pure functions) ----------

@dataclass(frozen=True)
class LatexError:
    excerpt: str  # the error line and its context from the log
    tex_line: int | None  # line in the .tex file, when the log says


def log_errors(log: str, limit: int = 3) -> list[LatexError]:
    """The first ``limit`` errors of a TeX log: each ``!``/``file:line:`` line with its context.

    TeX prints an error, then the help/context lines, then ``l.<n> <source>``
    and the rest of that source line; the excerpt runs to the line after that
    (or to a blank line / 12 lines at most).
    """
    lines = log.splitlines()
    errors: list[LatexError] = []
    i = 0
    while i < len(lines) and len(errors) < limit:
        if not ERROR_LINE.match(lines[i]):
            i += 1
            continue
        start, tex_line = i, None
        if m := FILE_LINE.match(lines[i]):
            tex_line = int(m.group("line")) if m.group("file").endswith(TEX_NAME) else None
        j = i + 1
        while j < len(lines) and j - start < 12:
            if m := TEX_LINE.match(lines[j]):
                tex_line = tex_line or int(m.group("line"))
                j += 2 if j + 1 < len(lines) and lines[j + 1].strip() else 1
                break
            if not lines[j].strip() or ERROR_LINE.match(lines[j]):
                break
            j += 1
        errors.append(LatexError("\n".join(lines[start:j]).rstrip(), tex_line))
        i = max(j, i + 1)
    return errors


def section_of(tex: str, line: int) -> str | None:
    """The Sphinx document (``chapter/section``) that wrote line ``line`` of ``book.tex``."""
    doc = None
    for m in DOC_LABEL.finditer("\n".join(tex.splitlines()[:line])):
        doc = m.group("doc")
    return doc


def source_excerpt(tex: str, line: int, around: int = 3) -> str:
    lines = tex.splitlines()
    lo, hi = max(1, line - around), min(len(lines), line + around)
    return "\n".join(f"{'>' if n == line else ' '}{n:6d} | {lines[n - 1]}" for n in range(lo, hi + 1))


def undefined_references(log: str) -> list[str]:
    return sorted(set(UNDEFINED_REF.findall(log)))


def latex_failure(config: Config, framework: str, tex_path: Path, log: str, tail: str) -> BookError:
    """A :class:`BookError` saying what failed, where in the book and the log's own words."""
    tex = tex_path.read_text(encoding="utf-8", errors="replace") if tex_path.is_file() else ""
    errors = log_errors(log)
    source: str | None = None
    parts: list[str] = []
    for err in errors:
        parts.append(_indent(err.excerpt))
        if err.tex_line and tex:
            doc = section_of(tex, err.tex_line)
            if doc and source is None:
                source = next((f"{doc}{ext}" for ext in (".md", ".ipynb")
                               if (config.root / f"{doc}{ext}").is_file()), f"{doc}.md")
            parts.append(f"  {TEX_NAME} around line {err.tex_line}"
                         + (f" (from {doc})" if doc else "") + ":\n" + _indent(source_excerpt(tex, err.tex_line)))
    if not errors:
        parts.append("  no error lines in the LaTeX log; latexmk said:\n" + _indent(tail or "(nothing)"))
    if any(MISSING.search(err.excerpt) for err in errors):
        parts.append(f"  a TeX package or font is missing: {INSTALL_HINT}")
    log_path = tex_path.with_suffix(".log")
    head = f"[{framework}] LaTeX failed on {config.rel(tex_path)}" + (f" (section {source})" if source else "")
    tail_note = f"full log: {config.rel(log_path)}" if log_path.is_file() else ""
    return BookError("\n".join([head + ":", *parts, tail_note]).rstrip(), source)


def _indent(text: str, by: str = "    ") -> str:
    return "\n".join(by + line for line in text.splitlines())


# ---- the stages ------------------------------------------------------------

def write_latex(config: Config, framework: str, log: Log = print, unsaid: Unsaid = list) -> Path:
    """Sphinx LaTeX builder → ``build/latex/<fw>/book.tex``, from the shared doctree cache.

    Its warnings are recorded (:mod:`tabbook.render.ext.diagnostics`) and said located, as the
    build says them, and only those ``unsaid`` keeps (not the doctree build's again, given when
    this run reads a page anew): they were Sphinx's own lines, naming ``build/src/…ipynb:100003``,
    each a second time. Sphinx's stderr is shown only when it ran without recording (a crash)."""
    from tabbook.render.diagnostics import collect

    out = tex_dir(config, framework)
    cmd = sphinx_command(config, PDF.builder, out, {"tabbook_framework": framework})
    records = BuildDir(config.build_dir).warnings / f"latex-pdf-{framework}.json"
    records.unlink(missing_ok=True)
    proc = subprocess.run(cmd, env={**sphinx_env(config), WARNINGS_ENV: str(records)}, capture_output=True, text=True)
    if records.is_file():
        found = collect(config, records, mark=False)
        for problem in unsaid([*found.errors, *found.warnings]):
            log(f"[pdf:{framework}] warning: {problem.shown()}")
    else:
        for line in proc.stderr.splitlines():
            log(f"[pdf:{framework}] {line}")
    if proc.returncode != 0 or not (out / TEX_NAME).is_file():
        if records.is_file():  # what it said on the way (a traceback): not shown above
            for line in proc.stderr.strip().splitlines()[-15:]:
                log(f"[pdf:{framework}] {line}")
        raise BookError(f"[{framework}] Sphinx's LaTeX builder failed (exit {proc.returncode}); "
                        "see the messages above")
    return out / TEX_NAME


def post_latex(config: Config, framework: str, tex_path: Path, log: Log = print) -> None:
    """``[pdf] post_latex``: the book's script run on the written .tex file before it is typeset,
    as d2lbook runs it (``python SCRIPT FILE.tex`` from the book's root; a failure stops the PDF).
    Its Python is the builder's own, which d2lbook's ``python`` is too."""
    script = config.pdf.post_latex
    if script is None:
        return
    proc = subprocess.run([sys.executable, str(script), str(tex_path)], cwd=config.root,
                          capture_output=True, text=True)
    for line in proc.stdout.splitlines():
        log(f"[pdf:{framework}] {line}")
    if proc.returncode != 0:
        said = "\n".join(proc.stderr.strip().splitlines()[-15:]) or "(nothing on stderr)"
        raise config_error(config, "pdf", "post_latex", f"{config.rel(script)} failed on "
                           f"{config.rel(tex_path)} (exit {proc.returncode}):\n{_indent(said)}")


def typeset(config: Config, framework: str, tex_path: Path, log: Log = print) -> Path:
    """latexmk + xelatex in the .tex file's folder; returns the finished PDF in build/pdf/."""
    cmd = ["latexmk", "-xelatex", "-interaction=nonstopmode", "-halt-on-error", "-file-line-error",
           tex_path.name]
    proc = subprocess.run(cmd, cwd=tex_path.parent, capture_output=True, text=True,
                          env={**sphinx_env(config), "max_print_line": "200"})
    log_path = tex_path.with_suffix(".log")
    log_text = log_path.read_text(encoding="utf-8", errors="replace") if log_path.is_file() else ""
    built = tex_path.with_suffix(".pdf")
    if proc.returncode != 0 or not built.is_file():
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
        raise latex_failure(config, framework, tex_path, log_text, tail)
    for ref in undefined_references(log_text):
        log(f"[pdf:{framework}] warning: undefined reference {ref!r} (its target is not in this PDF)")
    dest = pdf_paths(config)[framework]
    copy_atomic(built, dest)
    return dest


def pdf_frameworks(config: Config, frameworks: tuple[str, ...] | None) -> tuple[str, ...]:
    """The frameworks to typeset (all tabs by default), checked against the book's tabs."""
    wanted = frameworks or config.tabs
    for fw in wanted:
        if fw not in config.tabs:
            raise BookError(f"unknown framework {fw!r} (tabs: {', '.join(config.tabs)})")
    return tuple(wanted)


def write_pdfs(config: Config, wanted: tuple[str, ...], jobs: int = 0, log: Log = print,
               unsaid: Unsaid = list) -> dict[str, Path]:
    """Each framework's LaTeX from the doctree cache a ``latex`` build filled, typeset;
    returns framework → PDF. (:func:`tabbook.build.build_pdfs` runs that build first;
    ``unsaid``: of a LaTeX run's problems, those that build did not report.)"""
    workers = max(1, min(jobs or os.cpu_count() or 1, len(wanted), 2))
    for warning in font_warnings(config):  # [pdf] *_font not installed: tabbook's font instead
        log(f"warning: {warning.location_message()}")
    done: dict[str, Path] = {}
    failures: list[BookError] = []
    with ThreadPoolExecutor(workers) as pool:
        futures = {}
        for fw in wanted:  # Sphinx runs one at a time: they share one doctree cache
            try:
                tex = write_latex(config, fw, log=log, unsaid=unsaid)
                post_latex(config, fw, tex, log=log)
            except BookError as err:
                failures.append(err)
                continue
            log(f"[pdf:{fw}] typesetting {config.rel(tex)}")
            futures[fw] = pool.submit(typeset, config, fw, tex, log)
        for fw, future in futures.items():
            try:
                done[fw] = future.result()
                log(f"[pdf:{fw}] wrote {config.rel(done[fw])}")
            except BookError as err:
                failures.append(err)
    if failures:
        raise_all(failures)
    return done
