"""``python -m tabbook``: the command line (see tabbook.cli)."""

from .cli import main

raise SystemExit(main())
