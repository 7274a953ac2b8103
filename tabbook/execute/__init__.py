"""Execute: each (section, framework) unit run in its own kernel, only when stale.

``plan`` decides what runs and stores what ran, with the runner the build hands it:
``runner`` and ``worker`` (parallel subprocesses here) or ``cluster`` (a Dask cluster's
workers); ``store`` is the committed freeze store, ``envs`` makes the framework environments and
their kernels, ``merge`` joins stores, ``wheelhouse`` downloads for an offline machine and
``wheeltest`` tests the ``d2l`` wheel in each environment.
"""
