"""Stage 2, library: the book's ``#@save`` code → the ``d2l`` package, one module per framework.

``generate`` is the stage (pure, then atomic writes); ``extract``, ``imports`` and ``pysource``
are its parts; ``wheeltest`` tests the built wheel the way readers install it.
"""
