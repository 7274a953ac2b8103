"""Render: executed notebooks → the site and the PDFs.

``sources`` writes Sphinx's sources (``merge`` and ``myst`` make each page), ``sphinx`` runs it
with the settings of ``sphinx_conf``/``latex_conf`` and the extensions in ``ext``; ``pdf``,
``site``, ``apiref``, ``katex``, ``slides``, ``front`` and ``linkcheck`` serve the reader's
outputs (``tabbook.build.build_pdfs`` runs the build the PDFs are made from, then ``pdf``).
"""
