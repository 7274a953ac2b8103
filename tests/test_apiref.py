"""The API reference page, read back from generated library files."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from library_fixtures import make_config

from tabbook.config import Config
from tabbook.library.generate import generate_library
from tabbook.render.apiref import api_reference_markdown
from tabbook.source.read import read_section

DEVICES = '''\
# Devices

```{.python .input}
%%tab pytorch
class Trainer:  #@save
    """Trains *models*."""
    def __init__(self, max_epochs, num_gpus=0):
        self.max_epochs = max_epochs

    def fit(self, model):
        """Fit the model."""
        return model

    @property
    def size(self):
        return 1

    def _private(self):
        pass

def try_gpu(i=0):  #@save
    """GPU i or the CPU."""
    return i
```
'''

TRAINER = '''\
# Training

```{.python .input}
%%tab pytorch
@d2l.add_to_class(d2l.Trainer)  #@save
def prepare_batch(self, batch, *, flag=True):
    return batch
```
'''


@pytest.fixture
def config(tmp_path: Path) -> Config:
    return make_config(tmp_path)


def page(config: Config) -> str:
    sections = [read_section(DEVICES, "chapter_gpus/devices.md", config.tabs, config.default_tab),
                read_section(TRAINER, "chapter_gpus/training.md", config.tabs, config.default_tab)]
    return api_reference_markdown(config, generate_library(config, sections))


def test_page_lists_objects_with_signature_docstring_and_section(config: Config) -> None:
    md = page(config)
    assert md.startswith("# API reference\n") and "## PyTorch\n" in md and "## JAX\n" in md
    assert "```{py:module} d2l.torch\n```" in md
    assert "````{py:class} Trainer(max_epochs, num_gpus=0)\nTrains *models*.\n\n" in md
    assert "Defined in {doc}`Devices </chapter_gpus/devices>`." in md
    assert "```{py:method} prepare_batch(batch, *, flag=True)\nDefined in {doc}`Training </chapter_gpus/training>`." in md
    assert "```{py:property} size\n```" in md and "_private" not in md
    assert "```{py:method} fit(model)\nFit the model.\n```" in md  # defined where its class is
    assert "```{py:function} try_gpu(i=0)\nGPU i or the CPU.\n" in md
    assert "The book saves no JAX code yet." in md


def test_page_builds_with_sphinx_without_warnings(config: Config, tmp_path: Path) -> None:
    pytest.importorskip("myst_nb")
    src = tmp_path / "src"
    (src / "chapter_gpus").mkdir(parents=True)
    (src / "api.md").write_text(page(config))
    (src / "chapter_gpus" / "devices.md").write_text("# Devices\n")
    (src / "chapter_gpus" / "training.md").write_text("# Training\n")
    (src / "index.md").write_text(textwrap.dedent("""\
        # Home

        ```{toctree}
        api
        chapter_gpus/devices
        chapter_gpus/training
        ```

        {py:func}`d2l.torch.try_gpu` and {py:meth}`d2l.torch.Trainer.prepare_batch`.
    """))
    (src / "conf.py").write_text("extensions = ['myst_nb']\nnb_execution_mode = 'off'\n")
    proc = subprocess.run([sys.executable, "-m", "sphinx", "-W", "-q", "-b", "html", str(src),
                           str(tmp_path / "out")], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    html = (tmp_path / "out" / "api.html").read_text()
    assert 'id="d2l.torch.Trainer.prepare_batch"' in html and 'id="d2l.torch.try_gpu"' in html
    assert 'href="chapter_gpus/training.html"' in html
