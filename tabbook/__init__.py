"""tabbook: build a literate, multi-framework book from d2lbook-dialect Markdown.

The pipeline stages live one per module (read, split, library, execute, freeze,
merge, render); ``build`` only calls them in order. This file imports nothing so
that ``python -m tabbook`` starts fast.
"""

__version__ = "0.1.0"
