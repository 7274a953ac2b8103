from pathlib import Path

from tabbook.render.sphinx_conf import sphinx_settings

globals().update(sphinx_settings(Path(__file__).resolve().parent))
