"""What a warm process imports before it forks: what a build and its Sphinx run would import.

With Sphinx, myst-nb, sphinx-design, the theme and tabbook's extensions imported first, a fork
starts with all of them loaded, and a prose edit costs Sphinx's own work on one page rather than a
second of imports (issue 18). Each HTML run records the modules it ended up with
(:mod:`tabbook.render.ext.learn`, in ``build/warm-modules.json``); :class:`Preloaded` imports
them too, again whenever the record changes, between builds.
"""

from __future__ import annotations

import importlib
import json
import sys

from tabbook.config import Config
from tabbook.render.sphinx import learned_modules


def preload(config: Config) -> None:
    """Import what every build and Sphinx run of the book imports, and what its last HTML run recorded."""
    from tabbook import build  # noqa: F401 - imported to be inherited by every fork
    from tabbook.render.context import render_context
    from tabbook.render.sphinx_conf import leave_out_myst_nb_execution, sphinx_settings

    leave_out_myst_nb_execution()
    settings = sphinx_settings(config.root, render_context(config))
    names = ["sphinx.cmd.build", "sphinx.builders.html", "myst_nb.sphinx_ext", *settings["extensions"],
             settings["html_theme"]]
    try:
        names += json.loads(learned_modules(config).read_text())
    except (OSError, ValueError):
        pass
    for name in names:
        if name in sys.modules:
            continue
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - a module that cannot be imported alone is left to the build
            pass


def remember_entry_points() -> None:
    """Read the installed packages' entry points once, for every build this process forks.

    Sphinx, myst-nb, Pygments and pybtex look up their plugins on every run, and each lookup
    reads every installed distribution's metadata again (~0.1 s of a one-page re-render). The
    installed packages cannot change under the warm builder: a change gives another socket name
    (:func:`tabbook.warm.address.socket_path`), so it is never asked to build with them.
    """
    import importlib.metadata as stdlib_metadata

    modules: list = [stdlib_metadata]
    try:
        import importlib_metadata  # the backport myst-nb uses

        modules.append(importlib_metadata)
    except ImportError:
        pass
    for module in modules:
        every = module.entry_points()

        def entry_points(*, _every=every, **params):  # noqa: ANN001, ANN202 - the library's own signature
            return _every.select(**params) if params else _every

        module.entry_points = entry_points


class Preloaded:
    """The warm builder's imports, kept current: :meth:`refresh` imports again when the book's
    last HTML run has recorded new modules, so that the next fork starts with them loaded."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self._seen: int | None | bool = False  # the record's modification time when last imported

    def _record_time(self) -> int | None:
        try:
            return learned_modules(self.config).stat().st_mtime_ns
        except OSError:
            return None

    def refresh(self) -> bool:
        """Import what is new since the last call (everything, the first time); whether it did."""
        mtime = self._record_time()
        if self._seen is not False and mtime == self._seen:
            return False
        preload(self.config)
        self._seen = mtime
        return True
