"""Source: the d2lbook dialect read into sections, the toc walked.

``dialect`` defines every construct once, ``read`` turns a page into cells with ``file:line``,
``toc`` walks the table of contents, ``split`` gives one framework's view of a section,
``pycode`` masks a cell's IPython lines for ``ast`` and maps its rows back to Markdown lines.
Nothing here runs code or writes files; ``tabbook.check`` lints the whole book.
"""
