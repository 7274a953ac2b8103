"""Which sections of a d2lbook book (d2l-en) can run their PyTorch code without a network.

Issue 12: this machine reaches package registries only, so a d2l-en section whose code
downloads a data set, a pretrained model or a text corpus cannot be executed here. The
sections are walked in reading order (the ``toc`` blocks from ``index.md`` down, with
tabbook's own reader and toc walk), each split to its PyTorch code (``%%tab pytorch``/``all``
cells and untagged cells of the default tab, ``tab.selected`` branches resolved), and flagged
by these heuristics:

- **downloads**: the code itself downloads (``d2l.download``, ``download_extract``,
  ``DATA_HUB``/``DATA_URL``, ``torchvision.datasets``, ``requests.get``, ``urlretrieve``,
  ``torch.hub``, ``pretrained=True``/``weights=…``, ``!wget``/``!pip``), or it names a
  ``d2l`` class or function that downloads. Those names are found in the library file
  (``[library-pytorch] lib_file``, ``d2l/torch.py``) with ``ast``: a function or class is a
  downloader when its code matches the patterns above, calls or subclasses a downloader, or
  (class) has a method added with ``@d2l.add_to_class`` that does; to a fixed point.
  E.g. ``FashionMNIST``, ``TimeMachine``, ``MTFraEng``, every ``load_data_*``.
- **reads ../data**: the code reads under ``../data`` (where ``d2l.download`` puts files)
  and does not write there itself, so it depends on a file another section downloaded.
- **extra imports**: top-level modules imported that are neither the standard library nor in
  the d2l-en PyTorch lock (torch, torchvision, numpy, pandas, scipy, matplotlib, PIL,
  requests, IPython, matplotlib_inline, d2l): e.g. ``syne_tune``, ``gym``, ``gpytorch``.
  Reported apart: such a section is offline but needs more packages.

A section is *offline* when it neither downloads nor reads ``../data``. Heuristics, not
execution: a section may still fail for other reasons (``from d2l import torch as d2l``
needs an importable torchvision, GPU-only code, time).

Usage::

    .venv/bin/python bench/d2l_offline_sections.py --book /path/to/d2l-en
        [--framework pytorch] [--json FILE] [--list FILE] [--verbose]

Prints a summary; ``--list`` writes the offline sections one path a line (reading order,
after two ``#`` comment lines), ``--json`` every section with its reasons. The list for d2l-en
1.0.3 is committed as ``books/d2l-en/pytorch-offline-sections.txt``.
"""

from __future__ import annotations

import argparse
import ast
import configparser
import json
import re
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tabbook.errors import BookError  # noqa: E402
from tabbook.source.model import Section  # noqa: E402
from tabbook.source.read import read_section  # noqa: E402
from tabbook.source.split import split_section  # noqa: E402
from tabbook.source.toc import walk_toc  # noqa: E402

# Code that reaches the network by itself.
DOWNLOAD_PATTERNS = {
    "d2l.download": r"\bd2l\.download(_extract)?\b",
    "download()": r"(?<![\w.])download(_extract)?\(",
    "DATA_HUB": r"\bDATA_HUB\b",
    "DATA_URL": r"\bDATA_URL\b",
    "torchvision.datasets": r"\btorchvision\.datasets\b|\bfrom torchvision import datasets\b",
    "requests.get": r"\brequests\.(get|post)\(",
    "urlretrieve": r"\burlretrieve\b|\burlopen\(",
    "torch.hub": r"\btorch\.hub\b|\bhub\.load\(",
    "pretrained weights": r"\bpretrained\s*=\s*True\b|\bweights\s*=\s*(['\"]|torchvision|models\.|[A-Z]\w*_Weights)",
    "shell download": r"^\s*!\s*(wget|curl|pip|git\s+clone)\b",
    "tensorflow_datasets": r"\btensorflow_datasets\b|\btfds\.load\(",
}
DATA_READ = re.compile(r"""['"]\.\./data\b""")
DATA_WRITE = re.compile(r"\.to_csv\(|open\([^)]*['\"]w|os\.makedirs\(|\.mkdir\(|\.save\(|savez?\(")

# What the d2l-en PyTorch lock (books/d2l-en/pytorch.txt) provides, by import name.
LOCK_MODULES = {"torch", "torchvision", "numpy", "pandas", "scipy", "matplotlib", "mpl_toolkits", "PIL",
                "requests", "IPython", "matplotlib_inline", "d2l", "ipykernel"}


def _patterns_hit(code: str) -> list[str]:
    return [name for name, pat in DOWNLOAD_PATTERNS.items() if re.search(pat, code, re.M)]


def _add_to_class_target(node: ast.AST) -> str | None:
    """``@d2l.add_to_class(TimeMachine)`` / ``@add_to_class(TimeMachine)`` → ``TimeMachine``."""
    for dec in getattr(node, "decorator_list", []):
        if isinstance(dec, ast.Call) and dec.args:
            fn = dec.func
            name = fn.attr if isinstance(fn, ast.Attribute) else getattr(fn, "id", None)
            arg = dec.args[0]
            target = arg.attr if isinstance(arg, ast.Attribute) else getattr(arg, "id", None)
            if name == "add_to_class" and target:
                return target
    return None


def library_downloaders(lib_file: Path) -> tuple[dict[str, str], dict[str, set[str]]]:
    """Names in the library that download: name → why (a pattern, or the downloader it uses);
    and name → the modules outside the lock that it (or a library name it uses) imports."""
    text = lib_file.read_text()
    tree = ast.parse(text)
    code: dict[str, list[str]] = {}  # name -> source pieces
    refs: dict[str, set[str]] = {}
    for node in tree.body:
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        owner = _add_to_class_target(node) or node.name
        code.setdefault(owner, []).append(ast.get_source_segment(text, node) or "")
        names = refs.setdefault(owner, set())
        for sub in ast.walk(node):
            if isinstance(sub, ast.Name):
                names.add(sub.id)
            elif isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Name) and sub.value.id == "d2l":
                names.add(sub.attr)
        names.discard(owner)
    why: dict[str, str] = {}
    for name, pieces in code.items():
        hits = _patterns_hit("\n".join(pieces))
        if hits:
            why[name] = hits[0]
    changed = True
    while changed:
        changed = False
        for name, names in refs.items():
            if name in why:
                continue
            uses = sorted(n for n in names if n in why)
            if uses:
                why[name] = f"uses {uses[0]}"
                changed = True
    stdlib = set(sys.stdlib_module_names)
    needs = {name: {m for m in _imports("\n".join(pieces)) if m not in stdlib and m not in LOCK_MODULES}
             for name, pieces in code.items()}
    changed = True
    while changed:
        changed = False
        for name, names in refs.items():
            for used in names & needs.keys():
                if not needs[used] <= needs[name]:
                    needs[name] |= needs[used]
                    changed = True
    return why, {name: mods for name, mods in needs.items() if mods}


def _imports(code: str) -> set[str]:
    mods: set[str] = set()
    for m in re.finditer(r"^\s*(?:from\s+([A-Za-z_][\w.]*)\s+import|import\s+([A-Za-z_][\w., ]*))", code, re.M):
        if m.group(1):
            mods.add(m.group(1).split(".")[0])
        else:
            for part in m.group(2).split(","):
                part = part.strip().split(" ")[0]
                if part:
                    mods.add(part.split(".")[0])
    return mods


@dataclass
class Report:
    path: str
    title: str
    code_cells: int
    downloads: list[str] = field(default_factory=list)
    reads_data: bool = False
    extra_imports: list[str] = field(default_factory=list)
    unreadable: str = ""  # why tabbook's reader refused the page (then it was grepped)

    @property
    def offline(self) -> bool:
        return not self.downloads and not self.reads_data


def classify(section: Section, framework: str, downloaders: dict[str, str],
             lib_needs: dict[str, set[str]]) -> Report:
    cells = split_section(section, framework)
    code = "\n".join(c.source for c in cells)
    report = Report(section.path, section.title, len(cells))
    report.downloads = _patterns_hit(code)
    for name in sorted(downloaders):
        if name.startswith("_"):
            continue
        if re.search(rf"\bd2l\.{re.escape(name)}\b", code):
            report.downloads.append(f"d2l.{name} ({downloaders[name]})")
    # ``root='../data'`` as a default argument only says where downloads go: not a read.
    reads = DATA_READ.search(re.sub(r"""=\s*['"]\.\./data['"]""", "", code))
    report.reads_data = bool(reads) and not DATA_WRITE.search(code)
    stdlib = set(sys.stdlib_module_names)
    extra = {m for m in _imports(code) if m not in stdlib and m not in LOCK_MODULES}
    for name, mods in lib_needs.items():
        if re.search(rf"\bd2l\.{re.escape(name)}\b", code):
            extra |= mods
    report.extra_imports = sorted(extra)
    return report


def book_sections(book: Path) -> tuple[list[str], dict[str, Section], dict[str, str], configparser.ConfigParser]:
    """Reading order, the pages read, pages tabbook's reader refused (path → why), the config."""
    config = configparser.ConfigParser()
    config.read(book / "config.ini", encoding="utf-8")
    tabs = tuple(t.strip().lower() for t in config.get("build", "tabs", fallback="").split(",") if t.strip())
    tabs = tabs or ("pytorch",)
    index = config.get("build", "index", fallback="index")
    root = index if index.endswith(".md") else index + ".md"
    pages: dict[str, Section] = {}
    refused: dict[str, str] = {}

    def page(rel: str) -> Section | None:
        try:
            pages[rel] = read_section((book / rel).read_text(encoding="utf-8"), rel, tabs, tabs[0])
        except BookError as exc:
            refused[rel] = str(exc)
            return None
        return pages[rel]

    order, problems = walk_toc(root, page, lambda rel: (book / rel).is_file())
    for problem in problems:
        print(f"toc: {problem}", file=sys.stderr)
    return order, pages, refused, config


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--book", type=Path, required=True, help="the book's checkout (read only)")
    ap.add_argument("--framework", default="pytorch")
    ap.add_argument("--json", type=Path, help="write every section with its reasons here")
    ap.add_argument("--list", type=Path, help="write the offline sections here, one path a line")
    ap.add_argument("--verbose", "-v", action="store_true", help="print every section with its reasons")
    args = ap.parse_args()
    book = args.book.resolve()

    order, pages, refused, config = book_sections(book)
    lib_file = book / config.get(f"library-{args.framework}", "lib_file", fallback=f"d2l/{args.framework}.py")
    downloaders, lib_needs = library_downloaders(lib_file) if lib_file.is_file() else ({}, {})
    reports: list[Report] = []
    for rel in order:
        if rel in pages:
            reports.append(classify(pages[rel], args.framework, downloaders, lib_needs))
        else:
            # tabbook's reader refused the page (e.g. d2l.md nests prose tabs); grep it instead.
            text = (book / rel).read_text(encoding="utf-8")
            blocks = re.findall(r"```\{\.python \.input[^}]*\}\n(.*?)```", text, re.S)
            rep = Report(rel, "", len(blocks), unreadable=refused[rel])
            rep.downloads = _patterns_hit("\n".join(blocks))
            reports.append(rep)

    offline = [r for r in reports if r.offline]
    with_code = [r for r in reports if r.code_cells]
    summary = {
        "book": str(book), "framework": args.framework, "sections": len(reports),
        "sections_with_code": len(with_code), "offline": len(offline),
        "offline_with_code": sum(1 for r in offline if r.code_cells),
        "offline_with_code_lock_only": sum(1 for r in offline if r.code_cells and not r.extra_imports),
        "downloading": sum(1 for r in reports if r.downloads),
        "reading_downloaded_data": sum(1 for r in reports if r.reads_data and not r.downloads),
        "library_downloaders": sorted(n for n in downloaders if not n.startswith("_")),
        "library_extra_imports": {n: sorted(m) for n, m in sorted(lib_needs.items()) if not n.startswith("_")},
        "read_by_grep": sorted(refused),
    }
    if args.verbose:
        for r in reports:
            mark = "offline " if r.offline else "network "
            why = "; ".join(r.downloads + (["reads ../data"] if r.reads_data else []))
            extra = f" [needs {', '.join(r.extra_imports)}]" if r.extra_imports else ""
            print(f"{mark} {r.code_cells:3d} cells  {r.path}  {why}{extra}")
    if args.list:
        header = (f"# {len(offline)} of {len(reports)} sections of {book.name} whose {args.framework} code needs no "
                  f"network ({summary['offline_with_code']} of them with code), in reading order.\n"
                  f"# Made by bench/d2l_offline_sections.py (heuristics, not execution); '#' lines are comments.\n")
        args.list.write_text(header + "".join(f"{r.path}\n" for r in offline))
    if args.json:
        args.json.write_text(json.dumps({"summary": summary,
                                         "sections": [{**asdict(r), "offline": r.offline} for r in reports]},
                                        indent=1) + "\n")
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
