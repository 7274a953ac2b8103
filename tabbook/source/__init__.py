"""Source: the d2lbook dialect read into sections, the toc walked.

``dialect`` defines every pattern of the dialect once, ``constructs`` every construct (its
kind, reader rule, shape, what the front page, slides and MyST renderer do with it) and the
markdown-it parser made from that table, ``model`` the data a page is read into (sections,
cells, blocks), ``read`` turns a page into cells with ``file:line`` (slide marks stripped),
``toc`` walks the table of contents, ``split`` gives one framework's view of a section,
``pycode`` masks a cell's IPython lines for ``ast`` and maps its rows back to Markdown lines.
Nothing here runs code or writes files; ``tabbook.check`` lints the whole book.
"""
