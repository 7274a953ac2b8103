"""The normalized text of a syntax tree, the same under every Python the builder may run on.

Library keys (:mod:`tabbook.library.reach`) hash definitions by this text. A GPU machine often
runs another Python than the host that reads its entries back (3.12 against 3.11 here), and
``ast.dump``'s text moves between versions: 3.12 gives functions and classes ``type_params``,
3.13 leaves empty fields out. This module imports nothing but :mod:`ast`, so a test can run it
under each interpreter the machine has and compare.
"""

from __future__ import annotations

import ast

#: Fields later Pythons added to nodes that Python 3.11 also has, always empty in code 3.11 reads.
LATER_FIELDS = frozenset({"type_params"})


def dump(node: ast.AST) -> str:
    """A statement's normalized text: its syntax tree without positions (comments are gone).

    The text is Python 3.11's ``ast.dump(node, annotate_fields=False)`` whatever Python runs
    the build: a key computed on a GPU machine's Python 3.12 (where functions and classes gain
    ``type_params`` and nested format specs an empty string part, and 3.13's ``dump`` leaves out
    empty fields) must equal the one a 3.11 host computes, or every GPU entry would turn stale
    at the first library edit anywhere."""
    return _dump(node)[0]


def _dump(node: object) -> tuple[str, bool]:
    """(text, simple) as 3.11's ``ast.dump`` formats a value without indentation."""
    if isinstance(node, ast.AST):
        cls = type(node)
        args: list[str] = []
        simple = True
        keywords = False
        for name in node._fields:
            if name in LATER_FIELDS:
                continue
            try:
                value = getattr(node, name)
            except AttributeError:
                keywords = True
                continue
            if isinstance(node, ast.JoinedStr) and name == "values":  # 3.12 adds '' parts to format specs
                value = [v for v in value if not (isinstance(v, ast.Constant) and v.value == "")]
            if value is None and getattr(cls, name, ...) is None:
                keywords = True
                continue
            text, plain = _dump(value)
            simple = simple and plain
            args.append(f"{name}={text}" if keywords else text)
        return f"{cls.__name__}({', '.join(args)})", simple and len(args) <= 3 and not args
    if isinstance(node, list):
        return ("[]", True) if not node else ("[" + ", ".join(_dump(x)[0] for x in node) + "]", False)
    return repr(node), True
