"""Source: the d2lbook dialect read into sections, the toc walked.

``dialect`` defines every construct once, ``model`` the data a page is read into (sections,
cells, blocks), ``read`` turns a page into cells with ``file:line`` (slide marks stripped),
``toc`` walks the table of contents, ``split`` gives one framework's view of a section,
``pycode`` masks a cell's IPython lines for ``ast`` and maps its rows back to Markdown lines.
Nothing here runs code or writes files; ``tabbook.check`` lints the whole book.
"""
