"""``python -m tabbook``: the command line (see tabbook.cli)."""

from tabbook.cli import main

raise SystemExit(main())
