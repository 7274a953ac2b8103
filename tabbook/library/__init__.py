"""Library: the book's ``#@save`` code → the ``d2l`` package, one module per framework.

``generate`` is the stage (pure, then atomic writes); ``extract``, ``imports``, ``scopes`` and
``pysource`` are its parts; ``cache`` makes the library once per command (kept on the Book) and
between commands (``build/``'s ``library`` memo, :class:`tabbook.files.Memo`). ``tabbook.execute.wheeltest`` tests the built
wheel the way readers install it.
"""
