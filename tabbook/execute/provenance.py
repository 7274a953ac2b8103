"""Where a unit ran, as its entry records it: the probe cell run after the unit's cells
(versions, GPUs), and the provenance record made from what it printed.

Why a module of its own: the worker makes the record, the store checks it, and the pages,
the merge, the plan and the build read it; the probe and the record's fields are one concern.
"""

from __future__ import annotations

import json
import platform
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict, cast

from tabbook.execute.job import CPU_ONLY, Provenance
from tabbook.execute.shape import coalesce_streams
from tabbook.nbjson import NotebookCell

if TYPE_CHECKING:
    from tabbook.execute.job import Job

# Run in the kernel after the section's cells. The GPU probe is the framework's
# ``gpu_probe`` from config.ini: run in a namespace of its own with the framework
# imported; its last statement is an expression giving the GPU names. A probe that
# fails never fails the build: no GPUs are recorded, and why, in the provenance.
# The framework is never imported here: when the section's cells did not import it
# (numpy-only code, prose sections), its version comes from the installed
# distribution's metadata and no GPU can have been used, so none is probed. An import
# of TensorFlow or MXNet only to read a version string costs seconds per unit.
PROBE = r"""
import json as _j, platform as _pl, ast as _ast, sys as _sys
_info = {"python": _pl.python_version(), "gpus": []}
_m = _sys.modules.get($mod)
if _m is not None:
    _info["framework_version"] = getattr(_m, "__version__", "?")
else:
    _info["framework_imported"] = False
    try:
        from importlib import metadata as _md
        _d = _md.packages_distributions().get($mod.split(".")[0], [])
        _info["framework_version"] = _md.version(_d[0]) if _d else "?"
    except Exception as _e:
        _info["framework_version"] = "unavailable: %s" % _e
if $probe and _m is not None:
    try:
        _ns = {}
        exec("import " + $mod, _ns)
        _tree = _ast.parse($probe)
        _last = _ast.Expression(_tree.body.pop().value)
        exec(compile(_tree, "<gpu_probe>", "exec"), _ns)
        _info["gpus"] = [str(_g) for _g in eval(compile(_last, "<gpu_probe>", "eval"), _ns)]
    except Exception as _e:
        _info["gpu_probe_error"] = "%s: %s" % (type(_e).__name__, _e)
    finally:
        _ns = _tree = _last = None
print("TABBOOK-PROBE " + _j.dumps(_info))
"""


def probe_source(import_name: str, gpu_probe: str) -> str:
    """The probe cell's code for a framework (``gpu_probe`` "" = report no GPUs)."""
    from string import Template

    return Template(PROBE).substitute(mod=repr(import_name), probe=repr(gpu_probe))


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def one_line(value: object, limit: int = 500) -> str:
    """A value the provenance records as one line of printable text, at most ``limit``
    characters: what the store's schema accepts (``entrycheck.provenance_problem``). A GPU probe's
    exception may say anything, over several lines."""
    text = " ".join("".join(c if c.isprintable() else " " for c in str(value)).split())
    return text if len(text) <= limit else text[:limit - 1] + "…"


class ProbeInfo(TypedDict, total=False):
    """What the probe cell prints (:data:`PROBE`), as JSON."""

    python: str
    gpus: list[str]
    framework_version: str
    framework_imported: bool  # False: the cells never imported the framework
    gpu_probe_error: str


def probe_info(probe: NotebookCell) -> ProbeInfo:
    """What the probe cell printed (:data:`PROBE`): versions, GPUs, why the GPU probe failed."""
    coalesce_streams(probe)  # its line may have come in two messages
    for out in probe.get("outputs", []):
        for line in out.get("text", "").splitlines():
            if line.startswith("TABBOOK-PROBE "):
                return cast(ProbeInfo, dict(json.loads(line[len("TABBOOK-PROBE "):])))
    return {}


#: Modules a tab may name as its ``import`` that are Python itself, not a framework: the
#: kernel's own packages (a tab of plain Python, d2lbook's one-language book, imports IPython
#: only to check that its interpreter can run a kernel). Their version is not the tab's.
KERNEL_MODULES = frozenset({"IPython", "ipykernel"})


def framework_of(import_name: str) -> bool:
    """Whether ``import_name`` is a framework whose version the provenance should record: not a
    module of the standard library (``statistics``: its version is Python's, recorded anyway)
    nor one of :data:`KERNEL_MODULES`."""
    top = import_name.split(".")[0]
    return top not in sys.stdlib_module_names and top not in KERNEL_MODULES


#: The keys every provenance the worker makes has, in the order it records them.
RECORDED = ("framework", "framework_version", "python", "cpu", "gpus", "device", "date", "host_platform")


def provenance(job: Job, info: ProbeInfo) -> Provenance:
    """Where the unit ran: each text one line, as the store's schema wants (``entrycheck.provenance_problem``).
    A tab whose ``import`` is no framework (:func:`framework_of`) records its version as "?"
    (unknown), which the pages leave out rather than show IPython's version as the tab's."""
    gpus = [one_line(g) for g in info.get("gpus", [])][:256]
    version = one_line(info.get("framework_version", "?")) if framework_of(job.import_name) else "?"
    probe_error = one_line(info["gpu_probe_error"]) if info.get("gpu_probe_error") else None
    unimported = info.get("framework_imported") is False  # the outputs do not depend on it, nor on a GPU
    return Provenance(
        framework=job.framework, framework_version=version, python=one_line(info.get("python", "?")),
        cpu=one_line(cpu_model()), gpus=tuple(gpus), device=f"{len(gpus)}× {gpus[0]}" if gpus else CPU_ONLY,
        date=datetime.now(UTC).strftime("%Y-%m-%d"), host_platform=one_line(platform.platform(terse=True)),
        gpu_probe_error=probe_error, framework_imported=False if unimported else None,
        keys=(*RECORDED, *(("gpu_probe_error",) if probe_error else ()), *(("framework_imported",) if unimported else ())))


