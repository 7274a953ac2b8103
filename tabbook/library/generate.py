"""Library: the book's ``#@save`` code → the ``d2l`` package, one module per framework.

``generate_library`` is a pure function from the sections (table-of-contents
order) to file texts; ``write_library`` is the only place that touches disk,
and does it atomically, so a failed build never leaves a truncated
``d2l/torch.py`` behind (d2lbook's failure). What is saved, how classes absorb
``add_to_class`` methods and how redefinitions replace earlier ones is
:mod:`tabbook.library.extract`; how the import header is derived and why plotting
imports are deferred into the functions that use them is :mod:`tabbook.library.imports`.

Every saved function and class says where it is defined: its docstring starts
with ``Defined in "<section title>" (<page>.html).`` — the line the API
reference (:mod:`tabbook.render.apiref`) reads back to link each object to its section.
``d2l/__init__.py`` carries the version from ``config.ini`` (which
``pyproject.toml`` reads, so the wheel and the book agree) and imports no
framework (its text is :mod:`tabbook.library.initfile`'s).

``python -m tabbook lib`` regenerates; ``--check`` exits 1 when the
committed files are stale (what CI runs).

A d2lbook book's module may start with hand-written code: everything above
d2lbook's marker line (:data:`D2LBOOK_MARKER`) in the existing file is kept
verbatim at the top (:func:`hand_written_tops` reads it, the only read this
stage makes), and the aliases of its ``[library-<tab>]`` section
(:class:`tabbook.config.LibraryKeys`) close the module. Names they define count as
defined. Every problem names the Markdown line that has it.
"""

from __future__ import annotations

import ast
import os
import re
from dataclasses import dataclass
from pathlib import Path

from tabbook.config import Config
from tabbook.errors import BookError, BookErrors, leads_out, raise_all
from tabbook.files import sync_folder, write_beside
from tabbook.library import pysource as ps
from tabbook.library.extract import (
    LIBRARY_NAME,
    LibraryPieces,
    Loc,
    Piece,
    remap,
    saved_chunks,
    top_names,
)
from tabbook.library.imports import (
    Binding,
    bindings,
    body_uses,
    choose,
    deftime_nodes,
    getattr_lines,
    header_lines,
    import_block,
    names_loaded,
    undefined_names,
)
from tabbook.library.initfile import GENERATED_MARK, init_text, package_dir
from tabbook.library.scopes import hidden_reads, local_names
from tabbook.settings import leads_outside
from tabbook.source.model import Section
from tabbook.source.pycode import line_mapper, mask_magics
from tabbook.source.split import split_section

#: d2lbook's line between a module's hand-written top and its generated code.
D2LBOOK_MARKER = "#################   WARNING   ################"
#: How the module reaches itself where ``d2l.X`` cannot be written ``X`` (tabbook.library.scopes).
SELF_BINDING = f"{LIBRARY_NAME} = sys.modules[__name__]"
# Lint codes that judge the book's teaching style rather than correctness (``l = loss(...)``,
# ``for self.epoch in range(...)``, ``f = lambda ...``, ``ignore=[]`` defaults): exempted in the
# generated modules themselves, so they pass ``ruff check`` under any configuration of the repo.
BOOK_STYLE_CODES = ("E731", "E741", "B006", "B007", "B008", "B020", "B023", "B905", "UP008", "UP031",
                    "UP032")


def _wrap(prefix: str, items: list[str], width: int = 100) -> list[str]:
    lines, cur = [], prefix
    for item in items:
        if len(cur) + len(item) + 2 > width and cur.strip(" #"):
            lines.append(cur.rstrip(", "))
            cur = prefix
        cur += item + ", "
    lines.append(cur.rstrip(", "))
    return lines


def _render_piece(piece: Piece, lazy: dict[str, Binding], site: str = "") -> str:
    """A piece's final text: lazy imports put in, the 'Defined in' docstring line added
    (``site``: the site's address, ``[site] url``)."""
    lazy_names = set(lazy)

    def with_lazy(text: str) -> str:
        node = ast.parse(text).body[0]
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return text
        used = body_uses(node, lazy_names)
        mine = local_names(node, set(used)) if used else set()  # a parameter ``display`` is not IPython's
        return ps.insert_body_lines(text, import_block([lazy[n] for n in used if n not in mine]))

    if piece.kind == "stmt":
        return piece.text
    if piece.kind == "def":
        return ps.add_docstring_line(with_lazy(piece.text), piece.origin.note(site))
    parts = [piece.text]
    prev_kind = None
    for m in piece.members:
        text = with_lazy(m.text) if m.kind == "def" else m.text
        if m.added:
            text = ps.add_docstring_line(text, m.origin.note(site))
        if prev_kind is not None and (m.kind != "stmt" or prev_kind != "stmt"):
            parts.append("")
        parts.append(ps.indent(text, piece.body_indent))
        prev_kind = m.kind
    return ps.add_docstring_line("\n".join(parts), piece.origin.note(site))


def _assembled_text(piece: Piece) -> str:
    """A piece as one statement (a class with its members, no docstring notes): rows = ``row_locs``."""
    if piece.kind != "class":
        return piece.text
    return "\n".join([piece.text, *(ps.indent(m.text, piece.body_indent) for m in piece.members)])


def _assembled(piece: Piece) -> ast.stmt:
    return ast.parse(_assembled_text(piece)).body[0]


class CallTimeName(BookError):
    """Saved code uses a name no section saves, only inside function bodies.

    The module still imports; only a call that reaches the name fails. A build that
    runs nothing (execution off) reports these as warnings and goes on, as d2lbook
    would; ``check``, ``lib`` and an executing build keep them errors.
    """


def _import_time_names(tree: ast.Module) -> set[str]:
    """Names (and ``d2l.X`` attributes) read while the module is imported, not inside functions."""
    nodes = [n for stmt in tree.body for n in deftime_nodes(stmt)]
    names = set(names_loaded(nodes))
    for root in nodes:
        for n in ast.walk(root):
            if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == LIBRARY_NAME:
                names.add(n.attr)
    return names


def _raise(errors: list[BookError]) -> None:
    if errors:
        unique = _unique(errors)
        raise_all(unique)


def _unique(errors: list[BookError]) -> list[BookError]:
    seen: dict[str, BookError] = {}
    for e in errors:
        for one in (e.errors if isinstance(e, BookErrors) else [e]):
            seen.setdefault(one.location_message(), one)
    return list(seen.values())


_DEFINES = re.compile(r"^(?:(?:async\s+)?def|class)\s+(\w+)|^(\w+)\s*(?::[^=]*)?=[^=]", re.MULTILINE)


def _collect(config: Config, tab: str, sections: list[Section]
             ) -> tuple[LibraryPieces, list[Binding], set[str], list[BookError], set[str]]:
    """Walk the framework's cells: saved pieces, import candidates, ``d2l.NAME`` references,
    the problems met (every one: a failed cell does not stop the walk) and the names the
    failed code seems to define (so they are not reported again as undefined)."""
    lib = LibraryPieces(tab)
    candidates: list[Binding] = []
    book_refs: set[str] = set()
    errors: list[BookError] = []
    unsure: set[str] = set()
    multi = len(config.tabs) > 1

    def failed(exc: BookError, source: str) -> None:
        errors.append(exc)
        unsure.update(a or b for a, b in _DEFINES.findall(source))

    for section in sections:
        try:
            cells = split_section(section, tab)
        except BookError as exc:
            failed(exc, "\n".join(c.source for c in section.cells if "save" in c.flags))
            continue
        for fc in cells:
            line_of = line_mapper(fc, config.default_tab, multi)
            saved = "save" in fc.cell.flags
            try:
                tree = ast.parse(mask_magics(fc.source)[0])
            except SyntaxError:
                tree = None  # not saved: the execute stage reports it with its traceback
            if tree is not None:
                candidates += bindings(tree, fc.cell.path, line_of, saved)
                book_refs |= {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)
                              and isinstance(n.value, ast.Name) and n.value.id == LIBRARY_NAME}
            if not saved:
                continue
            try:
                chunks = saved_chunks(fc, section.title, line_of, whole_cell=config.save == "cell")
            except BookError as exc:
                failed(exc, fc.source)
                continue
            for text, origin, locs in chunks:
                try:
                    lib.add(text, origin, locs)
                except BookError as exc:
                    failed(exc, text)
    return lib, candidates, book_refs, errors, unsure


def hand_written_top(text: str) -> str:
    """What precedes d2lbook's marker line in a module (its hand-written code); "" if no marker."""
    lines = text.splitlines(keepends=True)
    for i, line in enumerate(lines):
        if line.strip() == D2LBOOK_MARKER:
            return "".join(lines[:i])
    return ""


#: Key of :func:`hand_written_tops` for d2lbook's ``[library] version_file`` as it is on disk.
VERSION_FILE = "__init__"
VERSION_LINE = re.compile(r'^__version__\s*=\s*["\'][^"\']*["\']', re.M)


def version_file(config: Config) -> str:
    """d2lbook's ``[library] version_file`` (root-relative), or "" when the book names none."""
    return next((fw.library.version_file for fw in config.frameworks.values() if fw.library.version_file), "")


def _inside(config: Config, path: Path) -> Path:
    """``path``, refused when a symbolic link leads it out of the book: its hand-written top
    would be published in the library, and the generated module written there."""
    if (real := leads_outside(config.root, path)) is not None:
        raise leads_out(Path(os.path.relpath(path, config.root)).as_posix(), real)
    return path


def hand_written_tops(config: Config) -> dict[str, str]:
    """Each framework's hand-written top, read from its module file as it is on disk; and under
    :data:`VERSION_FILE` the book's own ``version_file``, which d2lbook only updates."""
    tops = {}
    for tab in config.tabs:
        path = _inside(config, config.library_dir / f"{config.frameworks[tab].module}.py")
        if path.is_file():
            tops[tab] = hand_written_top(path.read_text(encoding="utf-8"))
    rel = version_file(config)
    if rel and _inside(config, config.root / rel).is_file():
        tops[VERSION_FILE] = (config.root / rel).read_text(encoding="utf-8")
    return {tab: top for tab, top in tops.items() if top}


def versioned(text: str, version: str) -> str:
    """A hand-written version file with its ``__version__`` set (added when missing), as d2lbook does."""
    line = f'__version__ = "{version}"'
    if VERSION_LINE.search(text):
        return VERSION_LINE.sub(line, text, count=1)
    return text.rstrip("\n") + f"\n\n{line}\n"


def _bound(tree: ast.Module) -> set[str]:
    """Names a hand-written part binds anywhere (coarse, like :func:`undefined_names`)."""
    out: set[str] = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            out.add(n.id)
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(n.name)
        elif isinstance(n, ast.alias):
            out.add(n.asname or n.name.split(".")[0])
    return out


def _public(tree: ast.Module) -> list[str]:
    """Module-level names a hand-written part defines (not imports), in order, no private ones."""
    out: list[str] = []
    for stmt in tree.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found = [stmt.name]
        elif isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            found = [n.id for t in targets for n in ast.walk(t)
                     if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)]
        else:
            found = []
        out += [n for n in found if not n.startswith("_") and n not in out]
    return out


def _sys_binding() -> Binding:
    return Binding("sys", "sys", None, None, "", 0, False)


@dataclass
class _Module:
    """What one framework's module is made of, before it is written out: the saved pieces,
    the hand-written top and the ``[library-<tab>]`` aliases, the names they need and the
    imports chosen for them (``lazy``: plotting imports deferred into function bodies)."""

    tab: str
    top: str
    top_path: str
    lib: LibraryPieces  # the saved pieces, their sources, the names rewritten
    nodes: list[ast.stmt]  # each piece as ast sees it
    top_tree: ast.Module
    alias_tree: ast.Module
    aliases: list[str]
    defined: set[str]
    chosen: dict[str, Binding]
    lazy: dict[str, Binding]
    self_binding: bool
    unsure: set[str]


def framework_module(config: Config, tab: str, sections: list[Section], top: str = "",
                     deferred: list[BookError] | None = None) -> str:
    """The text of ``d2l/<module>.py`` for one framework. Raises BookError(s).

    ``top``: the module's hand-written code, kept verbatim above the generated code.
    Assembly (:func:`_assemble`) is kept apart from validation (:func:`_check_lazy_imports`
    before, :func:`_check_names` after): every problem is collected, then all are raised,
    except names used only at call time, which go to ``deferred`` when given."""
    errors: list[BookError] = []
    module = _module_parts(config, tab, sections, top, errors)
    _check_lazy_imports(module, errors)
    text, row_loc = _assemble(config, module)
    try:
        tree = ast.parse(text)
    except SyntaxError as exc:  # only the hand-written top can do this; reported above
        _raise(errors or [BookError(f"generated code is not valid Python: {exc.msg}", module.top_path, exc.lineno)])
        raise
    _check_names(config, module, text, tree, row_loc, errors)
    if deferred is not None and errors and all(isinstance(e, CallTimeName) for e in errors):
        deferred.extend(_unique(errors))
        return text
    _raise(errors)
    return text


def _module_parts(config: Config, tab: str, sections: list[Section], top: str,
                  errors: list[BookError]) -> _Module:
    """Collect the saved code of ``tab`` and choose the imports the module needs."""
    fw = config.frameworks[tab]
    top_path = fw.library.lib_file or f"{package_dir(config)}/{fw.module}.py"
    lib, candidates, book_refs, found, unsure = _collect(config, tab, sections)
    errors += found
    top_tree = ast.Module(body=[], type_ignores=[])
    if top:
        try:
            top_tree = ast.parse(top)
        except SyntaxError as exc:
            errors.append(BookError(f"the hand-written code above the {D2LBOOK_MARKER.split()[1]} "
                                    f"line is not valid Python: {exc.msg}", top_path, exc.lineno))
    aliases = fw.library.alias_lines()
    alias_tree = ast.parse("\n".join(aliases))  # config.py checked it parses
    nodes = [_assembled(p) for p in lib.pieces]
    defined = set().union(set(), *(top_names(p) for p in lib.pieces)) | _bound(top_tree) | _bound(alias_tree)
    needed = (set(names_loaded([*nodes, alias_tree])) | book_refs) - defined
    self_binding = LIBRARY_NAME in needed
    if self_binding:  # some d2l.X could not become X, or saved code uses d2l itself
        needed = (needed - {LIBRARY_NAME}) | ({"sys"} - defined)
        defined.add(LIBRARY_NAME)
        candidates = [*candidates, _sys_binding()]
    chosen = choose(candidates, needed)
    lazy = {n: b for n, b in chosen.items() if b.lazy}
    return _Module(tab, top, top_path, lib, nodes, top_tree, alias_tree, aliases, defined, chosen, lazy,
                   self_binding, unsure)


def _check_lazy_imports(module: _Module, errors: list[BookError]) -> None:
    """A deferred plotting import must not be used while the code is defined (at import time)."""
    for piece, node in zip(module.lib.pieces, module.nodes, strict=True):
        locs = piece.row_locs()
        used = names_loaded(deftime_nodes(node))
        for name in sorted(set(used) & set(module.lazy)):
            path, line = locs[min(used[name], len(locs)) - 1]
            errors.append(BookError(
                f"{name} (a plotting import, deferred so that importing the library "
                f"stays light) is used when the code is defined, not inside a function body",
                path, line,
            ))
    early = sorted(set(names_loaded([module.alias_tree])) & set(module.lazy))
    if early:
        errors.append(BookError(f"the aliases of [library-{module.tab}] use {', '.join(early)} (a plotting "
                                f"import, deferred so that importing the library stays light)",
                                "config.ini"))


def _assemble(config: Config, module: _Module) -> tuple[str, dict[int, Loc]]:
    """The module's text (the hand-written top, the generated banner and docstring, imports,
    ``__all__``, the pieces, the aliases, ``__getattr__``) and, for each generated row, the
    Markdown line it came from."""
    fw = config.frameworks[module.tab]
    top, lib = module.top, module.lib
    label, name, pkg = fw.label, config.library_dir.name, package_dir(config)
    out: list[str] = top.split("\n")[:-1] if top else []
    generated_from = len(out)
    if top:
        out += [D2LBOOK_MARKER,
                f"# Below: {GENERATED_MARK} from the book's #@save code -- DO NOT EDIT; the code above"]
        out += ["# the marker is kept as written. Edit the sections instead, then run "
                "`python -m tabbook lib`. Sources:"]
    else:
        out += [f"# {pkg}/{fw.module}.py: {GENERATED_MARK} from the book's #@save code -- DO NOT EDIT."]
        out += ["# Edit the sections instead, then run `python -m tabbook lib`. Sources:"]
    out += _wrap("#   ", lib.sources) if lib.sources else ["#   (no section saves code yet)"]
    out += [f"# ruff: noqa: {', '.join(BOOK_STYLE_CODES)}"]
    if not top:
        out += [
            f'"""{config.title}: the code the book saves, {label} version.',
            "",
            f"Use it the way the book does: ``from {name} import {fw.module} as {name}``.",
            '"""',
        ]
    header = header_lines(module.chosen)
    if header:
        out += [""] + header
    if module.self_binding:
        out += ["", f"{SELF_BINDING}  # the module itself, for the d2l.X a local name X would hide"]
    public = [n for p in lib.pieces for n in sorted(top_names(p)) if not n.startswith("_")]
    public = list(dict.fromkeys(public + _public(module.top_tree) + _public(module.alias_tree)))
    if public:
        out += ["", "__all__ = ["] + [x + "," for x in _wrap("    ", [f'"{n}"' for n in public])] + ["]"]
    row_loc: dict[int, Loc] = {row: (module.top_path, row) for row in range(1, generated_from + 1)}
    for piece in lib.pieces:
        out += ["", ""]
        start = len(out) + 1
        rendered = _render_piece(piece, module.lazy, config.site.url).split("\n")
        for k, loc in enumerate(remap(_assembled_text(piece).split("\n"), piece.row_locs(), rendered)):
            row_loc[start + k] = loc
        out += rendered
    if module.aliases:
        out += ["", "", "# Alias defined in config.ini"]
        out += module.aliases
    tail = getattr_lines(module.chosen)
    if tail:
        out += ["", ""] + tail
    text = "\n".join(out[:generated_from])
    text = (text + "\n" if text else "") + ps.strip_trailing_whitespace("\n".join(out[generated_from:])) + "\n"
    return text, row_loc


def _check_names(config: Config, module: _Module, text: str, tree: ast.Module, row_loc: dict[int, Loc],
                 errors: list[BookError]) -> None:
    """Every name the assembled module reads is defined, and each ``d2l.X`` written ``X`` still
    reaches the module's ``X``; a name only read when a function runs is a :class:`CallTimeName`."""
    label = config.frameworks[module.tab].label
    lib, lazy, unsure = module.lib, module.lazy, module.unsure

    def where(loc: Loc | None) -> tuple[str | None, int | None]:
        return (loc[0], loc[1] or None) if loc else (None, None)

    known = module.defined | set(module.chosen)
    at_import = _import_time_names(tree)

    def missing_name(name: str, message: str, loc: Loc | None) -> BookError:
        return (BookError if name in at_import else CallTimeName)(message, *where(loc))

    refs = [r for piece in lib.pieces for r in piece.all_refs()]
    for missing, loc, _ in refs:
        if missing not in known and missing not in unsure:
            errors.append(missing_name(
                missing, f"saved code uses d2l.{missing}, but no section saves {missing} ({label})", loc))
    # The check of the rewrite itself: each d2l.X written X must still reach the module's X.
    rewritten_at = {(r.name, r.loc) for r in refs if r.rewritten}
    # (A deferred plotting import put into a body binds the very object the module's would.)
    for hidden, row in hidden_reads(text, {r.name for r in refs if r.rewritten} - set(lazy)):
        if (hidden, row_loc.get(row)) in rewritten_at:
            errors.append(BookError(
                f"generated code reads {hidden} where the book wrote d2l.{hidden}, but a local "
                f"{hidden} hides the library's there (a tabbook bug: please report it)",
                *where(row_loc.get(row))))
    for missing, row in undefined_names(tree):
        if missing in unsure or missing in lazy:
            continue  # code that failed above may define it; a deferred import is reported above
        if missing in lib.rewritten:
            message = f"saved code uses d2l.{missing}, but no section saves {missing} ({label})"
        else:
            message = f"saved code uses {missing}, but no section saves it and no {label} cell imports it"
        errors.append(missing_name(missing, message, row_loc.get(row)))


def generate_library(config: Config, sections: list[Section],
                     tops: dict[str, str] | None = None, deferred: list[BookError] | None = None) -> dict[str, str]:
    """Paths relative to the book root → full text of every file of the ``d2l`` package.

    Pure: reads no file (``tops``: each tab's hand-written top, see
    :func:`hand_written_tops`). Errors of all frameworks are gathered and raised
    together (one per Markdown location) as :class:`BookError`/:class:`BookErrors`.
    ``deferred``: a module whose only problems are :class:`CallTimeName` is still
    generated, and those problems are appended there instead of raised.
    """
    pkg = package_dir(config)
    files = {f"{pkg}/__init__.py": init_text(config)}
    if VERSION_FILE in (tops or {}):  # a d2lbook book's own package docstring stays
        files = {version_file(config): versioned(tops[VERSION_FILE], config.version)}  # type: ignore[index]
    errors: list[BookError] = []
    for tab in config.tabs:
        top = (tops or {}).get(tab, "")
        try:
            files[f"{pkg}/{config.frameworks[tab].module}.py"] = framework_module(
                config, tab, sections, top, deferred)
        except BookError as exc:
            errors.append(exc)
    _raise(errors)
    return files


def _obsolete(config: Config, files: dict[str, str]) -> list[str]:
    """Generated modules on disk that the book no longer produces (a framework was dropped)."""
    pkg = package_dir(config)
    out = []
    if config.library_dir.is_dir():
        for path in sorted(config.library_dir.glob("*.py")):
            rel = f"{pkg}/{path.name}"
            if rel not in files and GENERATED_MARK in path.read_text(encoding="utf-8")[:500]:
                out.append(rel)
    return out


def stale_library(config: Config, files: dict[str, str]) -> list[str]:
    """Paths whose file on disk differs from ``files`` (missing counts), plus obsolete ones."""
    stale = []
    for rel, text in files.items():
        path = config.root / rel
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            stale.append(rel)
    return stale + _obsolete(config, files)


def write_library(config: Config, files: dict[str, str]) -> list[str]:
    """Write the changed files atomically; remove obsolete generated modules. Returns changed paths.

    Every new text is first written to a temporary file beside its target;
    only when all are written do the ``os.replace`` calls run, so an error
    (disk full, permissions) leaves every existing file as it was.
    """
    changed = [rel for rel in stale_library(config, files) if rel in files]
    for rel in changed:
        _inside(config, config.root / rel)
    temps: list[tuple[str, Path]] = []
    try:
        for rel in changed:
            temps.append((rel, write_beside(config.root / rel, files[rel])))
    except BaseException:
        for _, tmp in temps:
            tmp.unlink(missing_ok=True)
        raise
    for rel, tmp in temps:
        os.replace(tmp, config.root / rel)
    for folder in {(config.root / rel).parent for rel, _ in temps}:
        sync_folder(folder)  # the renames survive a crash (write_beside synced each file's data)
    obsolete = _obsolete(config, files)
    for rel in obsolete:
        (config.root / rel).unlink()
    return changed + obsolete
