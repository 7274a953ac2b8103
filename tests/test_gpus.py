"""GPU machines without a GPU: a stand-in ``nvidia-smi`` on the PATH and units that report what they saw.

The runner gives each unit its own device(s) through ``CUDA_VISIBLE_DEVICES``, makes a unit that
wants several wait until it can have them together, lets a run-alone unit overlap nothing, and
two builds on one machine (two :class:`Devices` over one lock folder) never share a device.
"""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import pytest

from tabbook.execute.gpus import ALL, Devices, Gpu, Placement, detect, guess_need, parse_query, visible
from tabbook.execute.runner import Runner, Unit
from tabbook.source.model import Cell
from tabbook.source.split import FrameworkCell

H100 = "NVIDIA H100 80GB HBM3"


def smi_output(count: int) -> str:
    return "".join(f"{i}, GPU-{i:04d}aaaa-0000-0000-0000-000000000000, {H100}, 81559\n" for i in range(count))


def stand_in_smi(folder: Path, count: int) -> Path:
    """An ``nvidia-smi`` that answers the query as a machine with ``count`` H100s does."""
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "nvidia-smi"
    script.write_text(f"#!/bin/sh\ncase \"$*\" in *--query-gpu*) printf '%s' '{smi_output(count)}';; "
                      "*) echo unsupported >&2; exit 9;; esac\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return folder


def test_the_query_is_read_and_an_existing_cuda_visible_devices_is_honoured(tmp_path: Path) -> None:
    gpus = parse_query(smi_output(4))
    assert [g.index for g in gpus] == ["0", "1", "2", "3"] and gpus[0].name == H100 and gpus[0].memory_mib == 81559
    assert [g.index for g in visible(gpus, "2,0")] == ["2", "0"]
    assert [g.index for g in visible(gpus, "GPU-0003aaaa")] == ["3"]
    assert visible(gpus, "") == [] and visible(gpus, "-1") == []
    assert [g.index for g in visible(gpus, "1,7,2")] == ["1"]  # CUDA stops at the first unknown one
    path = f"{stand_in_smi(tmp_path / 'bin', 4)}{os.pathsep}{os.environ['PATH']}"
    assert len(detect({"PATH": path})) == 4
    assert [g.index for g in detect({"PATH": path, "CUDA_VISIBLE_DEVICES": "3,1"})] == ["3", "1"]
    assert detect({"PATH": str(tmp_path / "nowhere")}) == []  # no nvidia-smi: a CPU machine


def test_needs_are_guessed_from_the_code_as_d2lbook_guesses() -> None:
    assert guess_need("x = torch.ones(3)\nprint(x.sum())") == 0
    assert guess_need("X = X.to(d2l.try_gpu())") == 1
    assert guess_need("y = x.cuda()") == 1
    assert guess_need("with tf.device('/GPU:0'):\n    pass") == 1
    assert guess_need("devices = d2l.try_all_gpus()") == ALL
    assert guess_need("z = x.to('cuda:1')") == ALL
    assert guess_need("trainer = d2l.Trainer(max_epochs=2, num_gpus=2)") == ALL


def test_two_builds_on_one_machine_never_share_a_device(tmp_path: Path) -> None:
    gpus = parse_query(smi_output(2))
    first, second = Devices(gpus, folder=tmp_path), Devices(gpus, folder=tmp_path)
    a = first.try_take(1)
    b = second.try_take(1)
    assert a is not None and b is not None and a.placement.gpus != b.placement.gpus
    assert second.try_take(1) is None and first.try_take(1) is None  # both devices held
    assert first.try_take(ALL) is None
    first.give_back(a)
    c = second.try_take(1)
    assert c is not None and c.placement.gpus == a.placement.gpus
    assert second.try_take(0, alone=True) is None  # the machine is busy: nothing runs alone
    second.give_back(b)
    second.give_back(c)
    alone = first.try_take(0, alone=True)
    assert alone is not None and second.try_take(0) is None  # nothing starts beside it
    first.give_back(alone)
    both = second.try_take(ALL)
    assert both is not None and [g.index for g in both.placement.gpus] == ["0", "1"]


def test_a_unit_sees_only_its_gpus_and_its_memory_is_shared_politely() -> None:
    gpu = Gpu("3", "GPU-3", H100, 81559)
    env = Placement((gpu,), host_has_gpus=True).env({"PATH": "/bin", "TF_FORCE_GPU_ALLOW_GROWTH": "false"})
    assert env["CUDA_VISIBLE_DEVICES"] == "3" and env["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID"
    assert env["XLA_PYTHON_CLIENT_PREALLOCATE"] == "false"
    assert env["TF_FORCE_GPU_ALLOW_GROWTH"] == "false"  # the book's own setting wins
    assert Placement((), host_has_gpus=True).env({})["CUDA_VISIBLE_DEVICES"] == ""  # a CPU unit
    assert "CUDA_VISIBLE_DEVICES" not in Placement().env({})  # a machine without GPUs: untouched


REPORT = """import json, os, time
start = time.time()
time.sleep({sleep})
print(json.dumps({{"name": {name!r}, "gpus": os.environ.get("CUDA_VISIBLE_DEVICES"),
                  "start": start, "end": time.time()}}))
"""


def unit(name: str, gpus: int, alone: bool = False, sleep: float = 1.5) -> Unit:
    code = REPORT.format(name=name, sleep=sleep)
    cell = Cell(kind="code", source=code, path=f"{name}.md", line=1)
    return Unit(section=f"{name}.md", framework="alpha", cells=(FrameworkCell(0, cell, code),),
                kernel_name="python3", import_name="json", cwd=Path.cwd(), timeout=120, gpus=gpus, alone=alone)


def reports(results: list) -> dict[str, dict]:
    out = {}
    for res in results:
        assert res.ok, res.failure
        text = "".join(o.get("text", "") for o in res.notebook["cells"][0]["outputs"])
        data = json.loads(text.strip().splitlines()[-1])
        out[data["name"]] = data
    return out


def overlap(a: dict, b: dict) -> bool:
    return a["start"] < b["end"] and b["start"] < a["end"]


@pytest.fixture
def kernel_env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1]),
            "JUPYTER_PATH": str(Path(sys.prefix) / "share" / "jupyter")}


def test_on_a_four_gpu_machine_units_get_their_own_devices(tmp_path: Path, kernel_env: dict[str, str]) -> None:
    devices = Devices(parse_query(smi_output(4)), folder=tmp_path)
    units = [unit("pair", 2), unit("one-a", 1), unit("one-b", 1), unit("one-c", 1), unit("cpu", 0),
             unit("timing", 1, alone=True, sleep=1.0), unit("after", 1)]
    seen = reports(Runner(8, kernel_env, progress=lambda _m: None, devices=devices).run(units))
    assert sorted(seen["pair"]["gpus"].split(",")) == sorted(set(seen["pair"]["gpus"].split(",")))
    assert len(seen["pair"]["gpus"].split(",")) == 2
    assert seen["cpu"]["gpus"] == ""  # a CPU-only unit sees no GPU
    for name, data in seen.items():
        if name != "cpu":
            assert data["gpus"] and all(g in "0123" for g in data["gpus"].split(",")), data
    # at most one unit per GPU at a time
    names = list(seen)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            shared = set(seen[a]["gpus"].split(",")) & set(seen[b]["gpus"].split(",")) - {""}
            if shared:
                assert not overlap(seen[a], seen[b]), (a, b, shared)
    # the run-alone unit overlaps nothing, and the ones around it did run side by side
    for name in names:
        if name != "timing":
            assert not overlap(seen["timing"], seen[name]), name
    assert overlap(seen["pair"], seen["one-a"])
    assert devices.in_use == {g.uuid: 0 for g in devices.gpus}  # every device given back


def test_on_a_one_gpu_machine_a_two_gpu_unit_takes_the_one_and_waits_for_it(
        tmp_path: Path, kernel_env: dict[str, str]) -> None:
    devices = Devices(parse_query(smi_output(1)), folder=tmp_path)
    seen = reports(Runner(4, kernel_env, progress=lambda _m: None, devices=devices).run(
        [unit("first", 1), unit("all", ALL), unit("last", 1)]))
    assert {d["gpus"] for d in seen.values()} == {"0"}
    assert not overlap(seen["first"], seen["all"]) and not overlap(seen["all"], seen["last"])


# --- whole builds on stand-in machines ---------------------------------------------------------

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "book"
ROOT = Path(__file__).resolve().parents[1]

MULTI = """# Two GPUs
:label:`sec_multi`

```{.python .input}
%%tab alpha
import os
print('visible:', os.environ.get('CUDA_VISIBLE_DEVICES'))
```
"""

# The alpha "framework" reports as its GPUs the devices its unit was given.
PROBE = ("gpu_probe = import os; [f'Stand-in H100 {d}' "
         "for d in os.environ.get('CUDA_VISIBLE_DEVICES', '').split(',') if d]\n")


def gpu_book(tmp_path: Path) -> Path:
    import shutil

    book = tmp_path / "book"
    shutil.copytree(FIXTURE, book)
    (book / "multi.md").write_text(MULTI, encoding="utf-8")
    index = book / "index.md"
    index.write_text(index.read_text().replace("sec\n```", "sec\nmulti\n```"), encoding="utf-8")
    config = book / "config.ini"
    text = config.read_text().replace("cell_timeout = 60\n", "cell_timeout = 60\ngpus = multi.md 2\n")
    config.write_text(text.replace("[framework:alpha]\n", "[framework:alpha]\n" + PROBE, 1), encoding="utf-8")
    return book


def build(book: Path, gpus: int, tmp_path: Path, *args: str):
    import subprocess

    smi = stand_in_smi(tmp_path / f"smi{gpus}", gpus)
    env = {**os.environ, "PATH": f"{smi}{os.pathsep}{os.environ['PATH']}", "PYTHONPATH": str(ROOT),
           "TABBOOK_GPU_LOCKS": str(tmp_path / "locks"), "TABBOOK_CACHE": str(tmp_path / ".cache")}
    env.pop("CUDA_VISIBLE_DEVICES", None)
    return subprocess.run([sys.executable, "-m", "tabbook", "-C", str(book), "build", *args],
                          capture_output=True, text=True, env=env, cwd=ROOT)


def test_a_gpu_entry_is_kept_and_marked_on_a_lesser_machine(tmp_path: Path) -> None:
    """Computed on a 4-GPU machine (the two-GPU page got two devices), then its code changes and
    a 1-GPU machine builds: the entry is kept, the page and the report say so, ``--frozen`` fails,
    and ``--execute-here`` re-runs it there."""
    book = gpu_book(tmp_path)
    first = build(book, 4, tmp_path)
    assert first.returncode == 0, first.stdout + first.stderr
    entry = book / "_freeze" / "multi" / "alpha.ipynb"
    stored = json.loads(entry.read_text())
    assert len(stored["metadata"]["tabbook"]["provenance"]["gpus"]) == 2
    assert "visible: " in entry.read_text() and "[exec] 4 GPU(s)" in first.stdout

    page = book / "multi.md"
    page.write_text(page.read_text().replace("print('visible:'", "print('now visible:'"), encoding="utf-8")
    plan = json.loads(build(book, 1, tmp_path, "--dry-run", "--json").stdout)
    multi = next(u for u in plan if u["page"] == "multi.md")
    assert multi["state"] == "outdated" and multi["placement"] == "2 GPUs"
    assert any("computed on 2× Stand-in H100" in why for why in multi["why"])

    second = build(book, 1, tmp_path)
    assert second.returncode == 0, second.stdout + second.stderr
    assert "warning: multi.md:4: [alpha] outputs kept from an earlier version of the code" in second.stdout
    # and what a contributor without the GPUs can do about it (issue 52)
    assert "open a pull request" in second.stdout and "--execute-here --only multi.md --frameworks alpha" in second.stdout
    assert entry.read_text() == json.dumps(stored, indent=1, sort_keys=True, ensure_ascii=False) + "\n" \
        or json.loads(entry.read_text()) == stored  # the entry is untouched
    html = (book / "build" / "html" / "multi.html").read_text()
    assert "an earlier version of it ran" in html and "2× Stand-in H100" in html
    # the code shown is the code that made those outputs, not the edit they do not reflect
    assert "now visible" not in html and "visible:" in html
    report = json.loads((book / "build" / "report.json").read_text())
    assert [u["status"] for u in report["units"] if u["section"] == "multi.md"] == ["outdated"]

    frozen = build(book, 1, tmp_path, "--frozen", "--no-render")
    assert frozen.returncode == 1 and "multi.md:4:" in frozen.stderr and "stale" in frozen.stderr
    strict = build(book, 1, tmp_path, "--strict")
    assert strict.returncode == 1 and "multi.md:4: [alpha] outputs kept from an earlier version" in strict.stderr
    assert "an earlier version of it ran" in (book / "build" / "html" / "multi.html").read_text()  # still written

    here = build(book, 1, tmp_path, "--execute-here", "--no-render")
    assert here.returncode == 0, here.stdout + here.stderr
    again = json.loads(entry.read_text())
    assert again["metadata"]["tabbook"]["provenance"]["gpus"] == ["Stand-in H100 0"]
    assert "now visible: 0" in entry.read_text()


def test_units_per_gpu_lets_units_share_a_device(tmp_path: Path) -> None:
    devices = Devices(parse_query(smi_output(1)), per_gpu=2, folder=tmp_path)
    a, b = devices.try_take(1), devices.try_take(1)
    assert a is not None and b is not None and a.placement.gpus == b.placement.gpus
    assert devices.try_take(1) is None


def test_the_gpu_keys_are_read_and_a_bad_line_is_located(tmp_path: Path) -> None:
    from tabbook.config import load_config
    from tabbook.errors import BookError

    book = gpu_book(tmp_path)
    config_file = book / "config.ini"
    config_file.write_text(config_file.read_text().replace(
        "gpus = multi.md 2\n", "gpus = multi.md 2\n    chapter_*/many.md all\nrun_alone = sec.md\nunits_per_gpu = 3\n"))
    config = load_config(book)
    assert config.declared_gpus("multi.md") == 2 and config.declared_gpus("chapter_a/many.md") == ALL
    assert config.declared_gpus("sec.md") is None and config.runs_alone("sec.md") and config.units_per_gpu == 3
    text = config_file.read_text()
    config_file.write_text(text.replace("units_per_gpu = 3", "units_per_gpu = 0"))
    with pytest.raises(BookError) as err:
        load_config(book)
    line = text.splitlines().index("units_per_gpu = 3") + 1
    assert err.value.location_message() == f"config.ini:{line}: [build] units_per_gpu must be at least 1 (units)"
    config_file.write_text(text.replace("multi.md 2", "multi.md two"))
    with pytest.raises(BookError, match="page pattern and a GPU count"):
        load_config(book)
