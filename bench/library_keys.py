"""How many units one edit of a saved block makes stale: three rules side by side (issue 32).

No execution: staleness is a property of the keys. For every saved block of the book (each
``#@save`` function or class, and each method ``add_to_class`` adds, found in the generated
module by the "Defined in" line of its docstring) and each framework, an edit of the block's
body makes stale:

* **whole library** (tabbook before issue 32): every unit of that framework, since each key
  hashed the whole generated module;
* **per name** (now): the page that holds the block (its code changed) and every unit whose
  code can reach the definition (:mod:`tabbook.library.reach`), or that keys on the whole
  library because the analysis cannot be sure;
* **d2lbook**: the edited page only — fewer, but the other pages that call the block keep
  outputs of the old code (the "missed" column).

Usage: ``python bench/library_keys.py [BOOK] [--overlay INI] [--json]`` (default: this book).
For d2l-en: ``python bench/library_keys.py /path/to/d2l-en --overlay books/d2l-en/tabbook.ini``.
Reads the book and generates its library in memory (the parse caches under BOOK/build are
the only files written).
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tabbook.book import read_book  # noqa: E402
from tabbook.config import load_config  # noqa: E402
from tabbook.library.cache import book_library  # noqa: E402
from tabbook.library.reach import HEADER, unit_reach  # noqa: E402
from tabbook.source.split import split_section  # noqa: E402

DEFINED = re.compile(r'Defined in "(?:[^"]*)" \(([^)]*)\.html\)')


def blocks(source: str) -> list[tuple[str, str]]:
    """(top-level name, page) of every saved block in a generated module."""
    out = []
    for node in ast.parse(source).body:
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            continue
        m = DEFINED.search(ast.get_docstring(node) or "")
        if m:
            out.append((node.name, m.group(1) + ".md"))
        if isinstance(node, ast.ClassDef):
            for member in node.body:
                if isinstance(member, ast.FunctionDef | ast.AsyncFunctionDef):
                    m = DEFINED.search(ast.get_docstring(member) or "")
                    if m:  # a method add_to_class added: a block of its own
                        out.append((node.name, m.group(1) + ".md"))
    return out


def measure(root: Path, overlay: Path | None = None) -> dict:
    config = load_config(root, overlay)
    t0 = time.monotonic()
    book = read_book(config, extra_files=False)
    library = book_library(book)
    sections = book.sections
    package = config.library_dir.name
    per_fw = {}
    for fw in config.tabs:
        framework = config.framework(fw)
        source = library.get(f"{package}/{framework.module}.py", "")
        units: dict[str, tuple[set[str], str | None]] = {}
        for section in sections:
            cells = split_section(section, fw)
            if cells:
                r = unit_reach([c.source for c in cells], source, package, framework.module)
                units[section.path] = (set(r.names) - {HEADER}, r.whole)
        rows = []
        for name, page in blocks(source):
            per_name = {p for p, (names, whole) in units.items() if whole or name in names}
            if page in units:
                per_name.add(page)
            rows.append({"block": name, "page": page, "whole": len(units), "per_name": len(per_name),
                         "d2lbook": int(page in units), "missed": len(per_name - {page})})
        whole_units = sorted(f"{p} ({w})" for p, (_, w) in units.items() if w)
        per_fw[fw] = {"units": len(units), "blocks": rows, "whole_units": whole_units}
    return {"book": str(root), "frameworks": per_fw, "seconds": round(time.monotonic() - t0, 1)}


def summary(rows: list[dict], column: str) -> str:
    values = [r[column] for r in rows]
    return f"{statistics.mean(values):.1f} / {max(values)}" if values else "-"


def report(result: dict) -> None:
    print(f"book: {result['book']} (analysed in {result['seconds']} s, nothing executed)")
    print("stale units per edit of one saved block, mean / worst:")
    print(f"{'framework':<12} {'units':>5} {'blocks':>6}  {'whole library':>13}  {'per name':>9}  "
          f"{'d2lbook':>8}  {'d2lbook missed':>14}")
    everything = []
    for fw, data in result["frameworks"].items():
        rows = data["blocks"]
        everything += rows
        print(f"{fw:<12} {data['units']:>5} {len(rows):>6}  {summary(rows, 'whole'):>13}  "
              f"{summary(rows, 'per_name'):>9}  {summary(rows, 'd2lbook'):>8}  {summary(rows, 'missed'):>14}")
    print(f"{'all':<12} {'':>5} {len(everything):>6}  {summary(everything, 'whole'):>13}  "
          f"{summary(everything, 'per_name'):>9}  {summary(everything, 'd2lbook'):>8}  "
          f"{summary(everything, 'missed'):>14}")
    for fw, data in result["frameworks"].items():
        if data["whole_units"]:
            print(f"{fw}: keyed on the whole library: {'; '.join(data['whole_units'])}")
        worst = max(data["blocks"], key=lambda r: r["per_name"], default=None)
        if worst:
            print(f"{fw}: worst block {worst['block']} ({worst['page']}): {worst['per_name']} of {data['units']}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("book", nargs="?", type=Path, default=ROOT)
    p.add_argument("--overlay", type=Path)
    p.add_argument("--json", action="store_true", help="print the per-block figures as JSON")
    args = p.parse_args(argv)
    result = measure(args.book.resolve(), args.overlay)
    if args.json:
        print(json.dumps(result, indent=1))
    else:
        report(result)
    # The target: no edit makes more units stale than the whole-library rule did (the per-name
    # rule can only be finer), and some edit makes fewer, on any book with more than one user.
    rows = [r for data in result["frameworks"].values() for r in data["blocks"]]
    ok = all(r["per_name"] <= r["whole"] for r in rows)
    print(f"target: per-name never above whole-library: {'met' if ok else 'NOT MET'}",
          file=sys.stderr if args.json else sys.stdout)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
