"""``make check``: lint the book's sources without starting a kernel.

Every Markdown file under the book is read (each reports its first parse
error), then the book-wide checks run: labels and references, images, toc
membership, ``#@save`` placement, ``%%tab`` placement. All problems are
returned together so one run lists everything to fix.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tabbook.config import Config
from tabbook.errors import BookError, BookErrors
from tabbook.library.pysource import mask_magics
from tabbook.source.dialect import IMAGE, SAVE_MARK
from tabbook.source.read import Section, read_section
from tabbook.source.split import resolve_tabs

REPO_DOCS = {"README.MD", "CONTRIBUTING.MD", "BENCHMARKS.MD", "CHANGELOG.MD", "LICENSE.MD", "AGENTS.MD"}
IGNORED_DIRS = {"build", "_freeze", ".venv", "tests", "d2l", "envs", "node_modules", "bench"}


def book_markdown_files(config: Config) -> list[Path]:
    out = []
    for path in sorted(config.root.rglob("*.md")):
        rel = path.relative_to(config.root)
        if rel.parts[0] in IGNORED_DIRS or rel.parts[0].startswith("."):
            continue
        if len(rel.parts) == 1 and rel.name.upper() in REPO_DOCS:
            continue  # the repository's own documents are not book pages
        out.append(path)
    return out


def _errors(exc: BookError) -> list[BookError]:
    return list(exc.errors) if isinstance(exc, BookErrors) else [exc]


def _toc_members(config: Config, sections: dict[str, Section]) -> set[str]:
    members = {config.rel(config.index)}
    for section in sections.values():
        base = Path(section.path).parent
        for block in section.toc:
            for entry in block.entries:
                members.add(str(base / (entry if entry.endswith(".md") else entry + ".md")))
    return members


def _check_save(section: Section, problems: list[BookError], tabs: tuple[str, ...]) -> None:
    for cell in section.code_cells:
        if "save" not in cell.flags:
            continue
        for fw in cell.tabs:
            try:
                source = resolve_tabs(cell.source, fw, (cell.path, cell.line), cell.source_lines)
                ast.parse(mask_magics(source)[0])
            except BookError as exc:
                problems.append(exc)
                break
            except SyntaxError as exc:
                n = (exc.lineno or 1) - 1
                line = cell.source_lines[n] if n < len(cell.source_lines) else cell.line + 1 + n
                problems.append(BookError(f"[{fw}] syntax error in a #@save cell: {exc.msg}", cell.path, line))
                break
        for i, raw in enumerate(cell.source.split("\n")):
            if SAVE_MARK.search(raw) and raw[:1] in (" ", "\t") and raw.strip() != "#@save":
                problems.append(BookError("#@save marks a statement that is not top-level", cell.path,
                                          cell.line + 1 + i))


def check_book(config: Config) -> list[BookError]:
    """All problems found in the book's sources (empty list: clean)."""
    problems: list[BookError] = []
    sections: dict[str, Section] = {}
    for path in book_markdown_files(config):
        rel = config.rel(path)
        try:
            sections[rel] = read_section(path.read_text(encoding="utf-8"), rel, config.tabs, config.default_tab)
        except BookError as exc:
            problems.extend(_errors(exc))
    labels: dict[str, str] = {}
    for section in sections.values():
        for name, line in section.labels.items():
            if name in labels:
                problems.append(BookError(f"duplicate label {name!r} (also at {labels[name]})", section.path, line))
            else:
                labels[name] = f"{section.path}:{line}"
    members = _toc_members(config, sections)
    for section in sections.values():
        for role, target, line in section.refs:
            name = target.rsplit("<", 1)[-1].rstrip(">").strip()  # "text <label>" or "label"
            if name not in labels:
                problems.append(BookError(f":{role}: to undefined label {name!r}", section.path, line))
        if section.path not in members:
            problems.append(BookError("section is not listed in any ```toc block", section.path, 1))
        for block in section.toc:
            for entry in block.entries:
                target = Path(section.path).parent / (entry if entry.endswith(".md") else entry + ".md")
                if not (config.root / target).is_file():
                    problems.append(BookError(f"toc entry {entry!r}: no file {target}", section.path, block.line))
        for cell in section.cells:
            if cell.kind != "markdown":
                continue
            for i, raw in enumerate(cell.source.split("\n")):
                for m in IMAGE.finditer(raw):
                    src = m.group(1)
                    if "://" in src:
                        continue
                    if not (config.root / Path(section.path).parent / src).resolve().is_file():
                        problems.append(BookError(f"image file {src} does not exist", section.path, cell.line + i))
        _check_save(section, problems, config.tabs)
    if not problems:
        # The library stage knows #@save rules best (add_to_class targets, syntax): ask it.
        from tabbook.library.generate import generate_library
        from tabbook.source.toc import toc_sections

        try:
            generate_library(config, toc_sections(config))
        except BookError as exc:
            problems.extend(e for e in _errors(exc)
                            if e.location_message() not in {p.location_message() for p in problems})
    problems.sort(key=lambda e: (e.path or "", e.line or 0))
    return problems
