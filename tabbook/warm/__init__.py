"""The warm process: Sphinx and tabbook imported once, each build or rebuild run in a fork of it.

Why: a fresh ``tabbook build`` spends about a second importing Sphinx, myst-nb, the theme and
tabbook's extensions before it can re-render the one page a prose edit changed: half of that
build (issue 18). Two processes stay warm:

- **the warm builder** (:mod:`.server`, reached by :mod:`.client`): a background process per
  book that later ``tabbook build`` commands at a terminal hand over to, as Gradle's daemon and
  mypy's ``dmypy`` do;
- **the live preview** (:mod:`tabbook.serve`): sphinx-autobuild's server, whose rebuilds run in
  processes forked from it.

Both import the same things first (:mod:`.preload`: Sphinx, the extensions, the theme, what the
book's last HTML run recorded it loaded) and run work in forks through one routine
(:mod:`.fork`: "run this in a fork with these standard streams, environment and folder"); a
build in the warm builder runs its Sphinx through :func:`.launch.fork_sphinx`, handed to the
build as a parameter (``build.Options.sphinx``), never through a module flag.

The one part that lives elsewhere is the record of what a Sphinx run imported: a Sphinx
extension (:mod:`tabbook.render.ext.learn`), because every HTML run writes it, warm or not.

This package's ``__init__`` imports nothing, so ``tabbook build`` pays nothing for asking
whether a warm builder is on.
"""
