"""nbformat's JSON, named: what a notebook, a cell and an output are as the builder holds them.

A unit's notebook crosses processes as nbformat 4 JSON (the worker's result, a freeze entry, a
page's merged notebook, a reader's download) and is read and written as that JSON, as nbclient,
jupyter-cache and MyST-NB hold it too (a ``NotebookNode`` is a dict). Its shape is nbformat's
schema, not this builder's: these names say which of the three a value is, where a bare
dictionary of anything said nothing. The builder's own records (a key's parts, a provenance, a
warning) are dataclasses (:mod:`tabbook.execute.job`, :mod:`tabbook.render.warning`), never these.
"""

from __future__ import annotations

from typing import Any, TypeAlias

#: A whole notebook: ``nbformat``, ``nbformat_minor``, ``metadata``, ``cells``.
Notebook: TypeAlias = dict[str, Any]
#: One of its cells: ``cell_type``, ``source``, ``metadata`` and, for code, ``outputs``.
NotebookCell: TypeAlias = dict[str, Any]
#: One output of a code cell (``output_type``: stream, display_data, execute_result, error), or
#: the content of a kernel's output message.
CellOutput: TypeAlias = dict[str, Any]
#: An output's ``data``: mime type → its content (text, a list of lines, base64, JSON).
MimeBundle: TypeAlias = dict[str, Any]
