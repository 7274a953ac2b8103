"""Build hooks of the tabbook distribution: where the package's files are, and its version.

In this checkout the package is the builder's own folder two levels up (``../../tabbook``); in
an unpacked sdist it lies beside this file (the sdist carries it as ``tabbook/``, with this
file). Hatchling's static ``force-include`` names a single place, and one that does not exist
in the unpacked sdist, so the wheel would not build from it: these hooks look in both, so the
wheel built from the sdist is the wheel built from the checkout. An editable install (the
Makefile's builder venv) copies nothing: its ``.pth`` puts the checkout on the path
(``dev-mode-dirs``), so the ``tabbook`` command always runs the code as it is.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface
from hatchling.metadata.plugin.interface import MetadataHookInterface


def package_dir(root: str) -> Path:
    """``tabbook/`` beside this file (an unpacked sdist), else the checkout's, two levels up."""
    for candidate in (Path(root) / "tabbook", Path(root).parent.parent / "tabbook"):
        if (candidate / "__init__.py").is_file():
            return candidate.resolve()
    raise FileNotFoundError(f"no tabbook package beside {root} nor two levels up")


class CustomMetadataHook(MetadataHookInterface):
    def update(self, metadata: dict[str, Any]) -> None:
        text = (package_dir(self.root) / "__init__.py").read_text(encoding="utf-8")
        found = re.search(r'^__version__ = "([^"]+)"', text, re.MULTILINE)
        if found is None:
            raise ValueError("tabbook/__init__.py has no __version__ line")
        metadata["version"] = found.group(1)


class CustomBuildHook(BuildHookInterface):
    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if version == "editable":
            return
        build_data["force_include"][str(package_dir(self.root))] = "tabbook"
        if self.target_name == "sdist":
            build_data["force_include"][str(Path(self.root) / "hatch_build.py")] = "hatch_build.py"
