"""One Sphinx warning as it crosses from the Sphinx process back to the builder.

:mod:`tabbook.render.ext.diagnostics` records each warning of a Sphinx run (as JSON, in the file
``$TABBOOK_WARNINGS`` names); :mod:`tabbook.render.diagnostics` reads them back and locates each
at the Markdown line it came from. Both sides use this record, so neither knows the other's
keys by heart; its JSON form (:meth:`SphinxWarning.as_dict`) is the file's, unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TypedDict

from tabbook.problems import Problem

_SLUGS = {kind.slug: kind for kind in Problem}


class WarningRecord(TypedDict):
    """A warning as the warnings file holds it (JSON)."""

    level: str
    location: str | None
    message: str
    type: str | None
    subtype: str | None


@dataclass(frozen=True)
class SphinxWarning:
    """A warning (or worse) Sphinx, docutils or an extension logged: its level, where Sphinx put
    it (``path:line``, a path, or None), its message and Sphinx's ``type``/``subtype``. ``kind``:
    set when the builder rewords one (:func:`tabbook.render.diagnostics.short_message`): the kind
    it then has, whatever its type said; never written to the file."""

    level: str = "WARNING"
    location: str | None = None
    message: str = ""
    type: str | None = None
    subtype: str | None = None
    kind: Problem | None = None

    @property
    def typed(self) -> tuple[str | None, str | None]:
        return (self.type, self.subtype)

    def reworded(self, message: str, kind: Problem) -> SphinxWarning:
        """The same warning said in the builder's words, of ``kind`` (its type dropped)."""
        return replace(self, message=message, type=None, subtype=None, kind=kind)

    def as_dict(self) -> WarningRecord:
        """Its JSON form, as the warnings file holds it."""
        return {"level": self.level, "location": self.location, "message": self.message,
                "type": self.type, "subtype": self.subtype}

    @classmethod
    def from_dict(cls, data: object) -> SphinxWarning:
        """A record of the warnings file; what is not the record's shape is read as absent (the
        file is the builder's own, but a crashed run may have left anything)."""
        if not isinstance(data, dict):
            return cls(message=str(data))

        def optional(name: str) -> str | None:
            value = data.get(name)
            return None if value is None else str(value)

        kind = data.get("kind")
        return cls(level=str(data.get("level", "WARNING")), location=optional("location") or None,
                   message=str(data.get("message", "")), type=optional("type"), subtype=optional("subtype"),
                   kind=_SLUGS.get(kind) if isinstance(kind, str) else None)
