"""A framework is configuration: a book with a framework tabbook has never heard of.

The extra framework, "plain" (Python's own ``statistics``), runs in the builder's
interpreter (``python = current``), so the end-to-end build needs no install. Its
per-framework facts (GPU probe, heavy modules, import-cost baseline) come from
its ``[framework:plain]`` section only. The configured probes of the four real
frameworks are checked against stand-in packages that report fake GPUs.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tabbook.config import load_config
from tabbook.errors import BookError
from tabbook.execute.provenance import probe_source

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = Path(__file__).resolve().parent / "fixtures" / "book"

CONFIG = """\
[project]
name = fifth
title = Fifth Framework Book
author = Tests
version = 0.0.1

[build]
index = index.md
tabs = alpha, plain
default_tab = alpha
cell_timeout = 60

[framework:alpha]
label = Alpha
module = alpha
import = json
python = current
# A probe that finds no GPU: outputs are recorded as computed on the CPU only.
gpu_probe = [name for name in json.__all__ if name == "gpu"]

[framework:plain]
label = Plain Python
module = plain
import = statistics
python = current
# Statements, then the expression giving the GPU names; the framework is imported.
gpu_probe = prefix = "Pseudo GPU"; [prefix + " " + statistics.__name__]
heavy_modules = statistics
import_stack = import statistics, fractions
"""

SECTION = """\
# Plain Section

Prose shared by every framework.

```{.python .input}
%%tab plain
import statistics

def spread(xs):  #@save
    \"\"\"The population standard deviation of ``xs``.\"\"\"
    return statistics.pstdev(xs)

print('plain spread:', spread([2, 4, 4, 4, 5, 5, 7, 9]))
```

```{.python .input}
%%tab alpha
print('alpha ran')
```
"""


def tabbook(book: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tabbook", "-C", str(book), *args],
        cwd=ROOT, capture_output=True, text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT), "TABBOOK_CACHE": str(book / ".cache")},
    )


def make_book(root: Path, config: str = CONFIG) -> Path:
    book = root / "book"
    book.mkdir()
    shutil.copy(FIXTURE / "conf.py", book / "conf.py")
    (book / "config.ini").write_text(config)
    (book / "index.md").write_text("# Fifth Framework Book\n\n```toc\n:maxdepth: 2\n\nplain\n```\n")
    (book / "plain.md").write_text(SECTION)
    return book


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    book = make_book(tmp_path_factory.mktemp("fifth"))
    proc = tabbook(book, "build")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return book


def test_the_extra_framework_executes_into_the_freeze_store(built: Path) -> None:
    data = json.loads((built / "build" / "report.json").read_text())
    assert {(u["section"], u["framework"]): u["status"] for u in data["units"]} == {
        ("plain.md", "alpha"): "executed", ("plain.md", "plain"): "executed"}
    nb = json.loads((built / "_freeze" / "plain" / "plain.ipynb").read_text())
    meta = nb["metadata"]["tabbook"]
    assert meta["framework"] == "plain" and len(meta["key"]) == 64
    outputs = "".join(o.get("text", "") for c in nb["cells"] for o in c.get("outputs", []))
    assert "plain spread: 2.0" in outputs


def test_the_configured_gpu_probe_is_what_the_provenance_records(built: Path) -> None:
    plain = json.loads((built / "_freeze" / "plain" / "plain.ipynb").read_text())["metadata"]["tabbook"]
    assert plain["provenance"]["gpus"] == ["Pseudo GPU statistics"]
    assert plain["provenance"]["device"] == "1× Pseudo GPU statistics"
    assert plain["provenance"]["framework_version"] == "?"  # statistics has no __version__
    alpha = json.loads((built / "_freeze" / "plain" / "alpha.ipynb").read_text())["metadata"]["tabbook"]
    assert alpha["provenance"]["gpus"] == [] and alpha["provenance"]["device"] == "CPU only"
    assert "gpu_probe_error" not in plain["provenance"] and "gpu_probe_error" not in alpha["provenance"]
    html = (built / "build" / "html" / "plain.html").read_text()
    assert "Plain Python outputs computed on 1× Pseudo GPU statistics" in html
    assert "Alpha outputs computed on CPU only" in html


def test_the_extra_framework_tab_is_rendered_with_its_label(built: Path) -> None:
    html = (built / "build" / "html" / "plain.html").read_text()
    labels = dict(re.findall(r'class="sd-tab-label" data-sync-group="tab" data-sync-id="(\w+)"[^>]*>\s*([^<]+)</label>',
                             html))
    assert labels == {"alpha": "Alpha", "plain": "Plain Python"}
    assert "plain spread: 2.0" in html and "alpha ran" in html


def test_the_extra_framework_gets_its_library_module(built: Path) -> None:
    text = (built / "d2l" / "plain.py").read_text()
    assert "def spread(xs):" in text and "import statistics" in text
    assert "def spread" not in (built / "d2l" / "alpha.py").read_text()
    assert "from d2l import plain" in (built / "d2l" / "__init__.py").read_text()


def test_libtest_reports_a_framework_without_lib_tests_as_skipped(built: Path, tmp_path: Path) -> None:
    from tabbook.execute.wheeltest import missing_test, run_framework

    config = load_config(built)
    outcome = run_framework(config, "plain", tmp_path / "no.whl", Path(sys.executable), tmp_path)
    assert outcome.status == "skipped"
    assert outcome.detail == "no tests/lib/test_plain.py: d2l.plain is untested (add that file)"
    assert missing_test(load_config(ROOT), "pytorch") is None  # the real book's frameworks have theirs


def test_per_framework_facts_come_from_config(built: Path) -> None:
    config = load_config(built)
    plain, alpha = config.framework("plain"), config.framework("alpha")
    assert plain.heavy_modules == ("statistics",) and alpha.heavy_modules == ("json",)
    assert plain.import_stack == "import statistics, fractions" and alpha.import_stack == "import json"
    assert config.heavy_modules == {"statistics", "json"}
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        import import_cost
    finally:
        sys.path.remove(str(ROOT / "bench"))
    assert import_cost.unwanted_modules(config, plain) == {"json"} | import_cost.PLOTTING


def test_the_real_book_keeps_its_framework_facts() -> None:
    config = load_config(ROOT)
    assert config.framework("jax").import_stack == "import jax, flax.linen, optax"
    assert set(config.framework("jax").heavy_modules) == {"jax", "jaxlib", "flax", "optax"}
    assert set(config.framework("tensorflow").heavy_modules) == {"tensorflow", "keras"}
    assert config.framework("pytorch").import_stack == "import torch"
    assert config.heavy_modules == {"torch", "jax", "jaxlib", "flax", "optax", "tensorflow", "keras", "mxnet"}
    assert all(fw.gpu_probe for fw in config.frameworks.values())


FAKES = {
    "torch/__init__.py": """
        class cuda:
            device_count = staticmethod(lambda: 2)
            get_device_name = staticmethod(lambda i: f"Fake H100 #{i}")
    """,
    "jax/__init__.py": """
        class _Device:
            def __init__(self, platform, kind):
                self.platform, self.device_kind = platform, kind
        def devices():
            return [_Device("cpu", "cpu"), _Device("gpu", "Fake H200")]
    """,
    "tensorflow/__init__.py": "from tensorflow import config\n",
    "tensorflow/config/__init__.py": """
        from tensorflow.config import experimental
        class _Device:
            def __init__(self, name):
                self.name = name
        def list_physical_devices(kind):
            return [_Device("/physical_device:GPU:0"), _Device("/physical_device:GPU:1")] if kind == "GPU" else []
    """,
    "tensorflow/config/experimental.py": """
        def get_device_details(device):
            return {"device_name": "Fake A100"} if device.name.endswith("0") else {}
    """,
    "mxnet/__init__.py": "from mxnet import context\n",
    "mxnet/context.py": "def num_gpus():\n    return 3\n",
}


def test_the_real_books_gpu_probes_report_what_the_old_hard_coded_probe_did(tmp_path: Path) -> None:
    for rel, text in FAKES.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(textwrap.dedent(text))
    config = load_config(ROOT)
    expected = {
        "pytorch": ["Fake H100 #0", "Fake H100 #1"],
        "jax": ["Fake H200"],
        "tensorflow": ["Fake A100", "/physical_device:GPU:1"],
        "mxnet": ["GPU 0", "GPU 1", "GPU 2"],
    }
    for tab, gpus in expected.items():
        fw = config.framework(tab)
        # as after a section whose cells imported the framework
        code = f"import {fw.import_name}\n" + probe_source(fw.import_name, fw.gpu_probe)
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path,
                              env={**os.environ, "PYTHONPATH": str(tmp_path)})
        assert proc.returncode == 0, proc.stderr
        info = json.loads(proc.stdout.split("TABBOOK-PROBE ", 1)[1])
        assert info["gpus"] == gpus, tab
        assert "gpu_probe_error" not in info, info


def test_the_probe_never_imports_the_framework_itself(tmp_path: Path) -> None:
    """Cells that never imported the framework: its version from the installed metadata, no GPU
    probed, and the module still not imported (an import only for a version costs seconds)."""
    code = probe_source("pytest", "[pytest.no_such_gpu()]") + "\nimport sys; print('IMPORTED', 'pytest' in sys.modules)"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path)
    info = json.loads(proc.stdout.split("TABBOOK-PROBE ", 1)[1].splitlines()[0])
    import pytest as installed

    assert info["framework_version"] == installed.__version__ and info["framework_imported"] is False
    assert info["gpus"] == [] and "gpu_probe_error" not in info
    assert "IMPORTED False" in proc.stdout


def test_a_failing_probe_records_no_gpu_and_why() -> None:
    proc = subprocess.run([sys.executable, "-c", probe_source("json", "json.no_such_function()")],
                          capture_output=True, text=True)
    info = json.loads(proc.stdout.split("TABBOOK-PROBE ", 1)[1])
    assert info["gpus"] == []
    assert info["gpu_probe_error"] == "AttributeError: module 'json' has no attribute 'no_such_function'"


def _config_error(tmp_path: Path, old: str, new: str) -> str:
    assert old in CONFIG
    book = make_book(tmp_path, CONFIG.replace(old, new, 1))
    with pytest.raises(BookError) as err:
        load_config(book)
    return err.value.location_message()


def test_an_unparsable_gpu_probe_is_a_located_config_error(tmp_path: Path) -> None:
    line = max(i for i, t in enumerate(CONFIG.splitlines(), 1) if t.startswith("gpu_probe = "))
    message = _config_error(tmp_path, '[prefix + " " + statistics.__name__]', "[prefix + ")
    assert message.startswith(f"config.ini:{line}: [framework:plain] gpu_probe is not valid Python (")


@pytest.mark.parametrize(("old", "new", "why"), [
    ('[prefix + " " + statistics.__name__]', 'gpus = ["x"]',
     "[framework:plain] gpu_probe must end with an expression giving the list of GPU names"),
    ("heavy_modules = statistics", "heavy_modules = statistics, not-a-module",
     "[framework:plain] heavy_modules 'not-a-module' is not a top-level module name"),
    ("import_stack = import statistics, fractions", "import_stack = statistics",
     "[framework:plain] import_stack must be import statements only, e.g. import jax, flax.linen, optax"),
])
def test_bad_framework_keys_are_located_config_errors(tmp_path: Path, old: str, new: str, why: str) -> None:
    key = why.split()[1]
    line = max(i for i, t in enumerate(CONFIG.splitlines(), 1) if t.startswith(f"{key} = "))
    assert _config_error(tmp_path, old, new) == f"config.ini:{line}: {why}"


def test_the_fifth_framework_build_fails_cleanly_with_a_bad_key(tmp_path: Path) -> None:
    book = make_book(tmp_path, CONFIG.replace("heavy_modules = statistics", "heavy_modules = 3d"))
    proc = tabbook(book, "build", "--no-render")
    assert proc.returncode == 1
    assert "config.ini:" in proc.stderr and "heavy_modules '3d' is not a top-level module name" in proc.stderr


def test_every_configured_framework_has_a_pyproject_extra() -> None:
    import tomllib

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    modules = {fw.module for fw in load_config(ROOT).frameworks.values()}
    assert modules <= set(extras), f"pyproject.toml has no extra for {sorted(modules - set(extras))}"
