"""Stage 1, source: the d2lbook dialect read into sections, the toc walked, the book checked.

``dialect`` defines every construct once, ``read`` turns a page into cells with ``file:line``,
``toc`` walks the table of contents, ``split`` gives one framework's view of a section, ``check``
lints the whole book. Nothing here runs code or writes files.
"""
