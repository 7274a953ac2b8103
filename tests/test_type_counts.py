"""The builder's records stay typed (issue 51 item 3): the untyped mappings and ``Any`` across
``tabbook/`` do not grow back, and no state that has an enum is spelt as a string literal.

The figures are the counts when the records were typed; lower them when a change types more,
never raise them: a new record is a dataclass, an enum or a TypedDict, and nbformat's JSON goes
by its names in :mod:`tabbook.nbjson`.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "tabbook"
#: ``grep -ro 'dict\[str, Any\]' tabbook --include='*.py' | wc -l``
UNTYPED_MAPPINGS = 34
#: ``grep -row Any tabbook --include='*.py' | wc -l`` (imports and prose included)
#: (264 before wt/types2 typed what had a type: Sphinx's, nbclient's, Dask's and Starlette's own
#: names, TypedDicts for the records, object where a value is only passed on)
ANY = 142


def _sources() -> list[tuple[Path, str]]:
    return [(p, p.read_text(encoding="utf-8")) for p in sorted(PACKAGE.rglob("*.py"))]


def count(pattern: str) -> int:
    return sum(len(re.findall(pattern, text)) for _, text in _sources())


def test_untyped_mappings_do_not_grow_back() -> None:
    found = count(r"dict\[str, Any\]")
    assert found <= UNTYPED_MAPPINGS, f"{found} dict[str, Any] in tabbook/ (at most {UNTYPED_MAPPINGS}): type the record"


def test_any_does_not_grow_back() -> None:
    found = count(r"\bAny\b")
    assert found <= ANY, f"{found} Any in tabbook/ (at most {ANY})"


#: String values of enums that replaced string states, and where the literal may still appear
#: (its declaration).
ENUM_STATES = {"key": "Match", "legacy": "Match", "differs": "VerdictState", "stale": "VerdictState",
               "CPU only": "CPU_ONLY"}


def test_no_state_is_compared_as_a_string_literal() -> None:
    """``x == "legacy"``, ``x in ("differs", "stale")``, ``device != "CPU only"``: each has its
    enum member or constant now."""
    found = []
    for path, text in _sources():
        for node in ast.walk(ast.parse(text)):
            if not isinstance(node, ast.Compare):
                continue
            for side in (node.left, *node.comparators):
                values = side.elts if isinstance(side, ast.Tuple | ast.List | ast.Set) else [side]
                for value in values:
                    if isinstance(value, ast.Constant) and value.value in ENUM_STATES:
                        found.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno}: {value.value!r} "
                                     f"(use {ENUM_STATES[value.value]})")
    assert not found, "\n".join(found)


def test_the_check_sees_a_literal_state(tmp_path: Path) -> None:
    """The walk above finds what it looks for (so its silence means something)."""
    tree = ast.parse('if matched in ("key", "legacy") or device != "CPU only":\n    pass\n')
    compares = [n for n in ast.walk(tree) if isinstance(n, ast.Compare)]
    literals = [v.value for c in compares for side in (c.left, *c.comparators)
                for v in (side.elts if isinstance(side, ast.Tuple) else [side]) if isinstance(v, ast.Constant)]
    assert [v for v in literals if v in ENUM_STATES] == ["key", "legacy", "CPU only"]
