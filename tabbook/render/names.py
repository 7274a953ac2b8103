"""The names merge writes and the Sphinx extensions read: one declaration of the contract.

``merge`` tags cells and wraps prose in ``{div}`` blocks with these classes; the
extensions find them in the doctree; the stylesheet styles them. Declaring them
once means the two sides cannot drift apart.
"""

from __future__ import annotations

#: Tag of a code cell that ran in one framework: ``tabbook-fw-jax``.
FW_PREFIX = "tabbook-fw-"
#: Tag of the run (consecutive framework cells) a cell belongs to: one run becomes one tab set.
RUN_PREFIX = "tabbook-run-"
#: Class of the note that says where each framework's outputs were computed.
PROVENANCE_CLASS = "tabbook-provenance"
#: Class of an output replaced by a note because the target format cannot show it.
UNSUPPORTED_CLASS = "tabbook-unsupported"
#: sphinx-design sync group of the framework tabs: ``?tab=jax`` selects a framework on any page.
SYNC_GROUP = "tab"
#: Caption of the root toctree that lists generated pages; in LaTeX those become the appendix.
APPENDIX_CAPTION = "Appendix"
#: Class of the ``{div}`` that opens a solution: its text is the solution's summary line.
SOLUTION_START_CLASS = "tabbook-solution-start"
#: Class of the empty ``{div}`` that closes a solution.
SOLUTION_END_CLASS = "tabbook-solution-end"
#: Class of the ``<details>`` element a solution becomes on the site.
SOLUTION_CLASS = "tabbook-solution"
