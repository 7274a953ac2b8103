"""tabbook: build a literate, multi-framework book from d2lbook-dialect Markdown.

The pipeline is one subpackage per stage, in order: ``source`` → ``library`` →
``execute`` → ``render``, around a :class:`~tabbook.book.Book` read once;
``build`` only calls them, ``cli`` is the one command line. Modules import only down the
layers errors → config → files → source → book → library → check → execute → render →
build → tools (warm, serve, new) → cli (ARCHITECTURE.md; ``tests/test_import_graph.py`` checks
it). This file imports nothing so that ``python -m tabbook`` starts fast.
"""

__version__ = "0.1.0"
