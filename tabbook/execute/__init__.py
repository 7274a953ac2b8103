"""Stage 3, execute: each (section, framework) unit run in its own kernel, only when stale.

``plan`` decides what runs and stores what ran, ``store`` is the committed freeze store,
``runner`` and ``worker`` run units in parallel subprocesses, ``envs`` makes the framework
environments and their kernels.
"""
