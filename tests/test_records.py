"""Stage records read as records (issue 51 item 3): what crosses a boundary is a dataclass or an
enum on both sides, and its serialised form is the one it always had, byte for byte."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import pytest

from tabbook.execute.job import CPU_ONLY, ErrorKind, Failure, Job, Provenance, Result, UnitError
from tabbook.execute.provenance import RECORDED, provenance
from tabbook.execute.store import Entry, FreezeStore, KeyParts, Match, match
from tabbook.problems import Problem
from tabbook.render.diagnostics import kind_of, to_error
from tabbook.render.warning import SphinxWarning

#: A provenance as an older worker may have written it: its own key order, a key this version
#: does not know, a GPU list.
OLD = {"device": "1× Tesla T4", "framework": "pytorch", "gpus": ["Tesla T4"], "python": "3.10.2",
       "framework_version": "1.13", "date": "2024-05-01", "cpu": "Xeon", "probe_host": "gpu-7"}


def test_a_stored_provenance_reads_as_fields_and_writes_back_byte_for_byte() -> None:
    prov = Provenance.from_dict(OLD)
    assert (prov.device, prov.gpus, prov.on_gpu, prov.not_executed) == ("1× Tesla T4", ("Tesla T4",), True, None)
    assert json.dumps(prov.as_dict()) == json.dumps(OLD)  # same keys, same order, the unknown one kept
    assert prov.text("host_platform", "?") == "?" and prov.text("framework_version") == "1.13"
    outdated = prov.with_(outdated="its cells changed")
    assert list(outdated.as_dict()) == [*OLD, "outdated"] and outdated.outdated == "its cells changed"
    assert not Provenance.from_dict(None) and Provenance.from_dict({}).as_dict() == {}


def test_the_worker_s_provenance_has_its_keys_in_the_order_it_always_wrote_them() -> None:
    job = Job(notebook={}, section="a.md", framework="plain", kernel_name="k", import_name="torch", cwd=".", timeout=1)
    prov = provenance(job, {"framework_version": "2.1", "python": "3.11.7", "gpus": [], "gpu_probe_error": "no\ndriver"})
    assert list(prov.as_dict()) == [*RECORDED, "gpu_probe_error"]
    assert (prov.device, prov.on_gpu, prov.gpu_probe_error) == (CPU_ONLY, False, "no driver")
    back = Result.from_json(Result(notebook={"cells": []}, provenance=prov).to_json())
    assert back.provenance == prov  # across the worker's result file unchanged


def test_a_store_match_is_a_member_of_match(tmp_path: Path) -> None:
    store = FreezeStore(tmp_path / "store")
    parts = KeyParts(cells="c", env="e", library="l", python="3.11", kernel="k")
    store.store("s.md", "jax", {"cells": [], "metadata": {}}, parts, Provenance.from_dict(OLD), 1.0)
    entry = store.load("s.md", "jax")
    assert match(entry, parts) is Match.KEY
    assert isinstance(entry, Entry) and entry.provenance.as_dict() == OLD
    other = KeyParts(cells="c", env="other", library="l", python="3.11", kernel="k")
    assert match(entry, other) is Match.GPU  # same code and library, GPU outputs
    assert match(entry, KeyParts(cells="x", env="e", library="l", python="3.11", kernel="k")) is None


def test_a_failure_s_error_keeps_its_kind() -> None:
    failure = Failure(ErrorKind.TIMEOUT, "[jax] cell exceeded the 6 s timeout", "ch/a.md", 12)
    error = failure.error()
    assert isinstance(error, UnitError) and error.failure.kind is ErrorKind.TIMEOUT
    assert error.location_message() == "ch/a.md:12: [jax] cell exceeded the 6 s timeout" == str(failure)
    again = pickle.loads(pickle.dumps(error))  # a Dask task's or a cache's copy
    assert again.failure == failure and again.location_message() == error.location_message()


def test_a_sphinx_warning_crosses_back_as_a_record() -> None:
    raw = {"level": "WARNING", "location": "/b/src/a.ipynb:10003", "message": "undefined label: 'x'",
           "type": "ref", "subtype": "ref"}
    warning = SphinxWarning.from_dict(raw)
    assert warning.as_dict() == raw and json.dumps(warning.as_dict()) == json.dumps(raw)
    assert kind_of(warning) is Problem.UNDEFINED_REFERENCE
    reworded = warning.reworded("said otherwise", Problem.HIGHLIGHTING)
    assert kind_of(reworded) is Problem.HIGHLIGHTING and reworded.typed == (None, None)
    assert SphinxWarning.from_dict({"message": "m", "location": ""}).location is None


def test_a_reworded_warning_keeps_its_kind_when_located(tmp_path: Path) -> None:
    from tabbook.config import load_config

    (tmp_path / "config.ini").write_text("[project]\nname = b\n", encoding="utf-8")
    (tmp_path / "index.md").write_text("# B\n", encoding="utf-8")
    record = SphinxWarning(location="page.md:4", type="misc", subtype="highlighting_failure",
                           message='Could not lex literal_block "x" as "json".')
    error = to_error(load_config(tmp_path), record, [])
    assert error.kind is Problem.HIGHLIGHTING and error.location_message() == (
        "page.md:4: code block is not valid json; shown without highlighting")


def test_a_sphinx_run_handed_the_typed_configuration_never_reads_config_ini(tmp_path: Path,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 51: config.ini is read once per build, by the builder; the Sphinx process gets the
    typed configuration it serialised (the render context), not the file."""
    from tabbook import config as config_module
    from tabbook.config import load_config
    from tabbook.render.context import ENV, render_context
    from tabbook.render.sphinx_conf import sphinx_settings

    (tmp_path / "config.ini").write_text("[project]\nname = b\ntitle = Typed once\n", encoding="utf-8")
    (tmp_path / "index.md").write_text("# B\n", encoding="utf-8")
    handed = tmp_path / "context.json"
    handed.write_text(render_context(load_config(tmp_path)).to_json(), encoding="utf-8")
    expected = sphinx_settings(tmp_path, render_context(load_config(tmp_path)))
    (tmp_path / "config.ini").write_text("[project\nnot an INI file", encoding="utf-8")

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the Sphinx process read config.ini")

    monkeypatch.setattr(config_module, "load_config", refuse)
    monkeypatch.setenv(ENV, str(handed))
    settings = sphinx_settings(tmp_path)
    assert settings["project"] == "Typed once" and settings == expected
    monkeypatch.delenv(ENV)  # started by hand, with nothing handed: then it reads the file
    with pytest.raises(AssertionError, match="read config.ini"):
        sphinx_settings(tmp_path)


def test_an_entry_s_key_parts_read_as_a_record_whatever_version_wrote_them() -> None:
    from tabbook.execute.store import StoredParts

    parts = KeyParts(cells="c", env="e", library="l", python="3.11", kernel="k", library_file="f",
                     library_names=(("f", "1"),))
    stored = Entry({"metadata": {"tabbook": {"key_parts": parts.as_dict()}}}).parts
    assert stored.versioned and (stored.cells, stored.library_names, stored.depends) == ("c", {"f": "1"}, "")
    assert stored.as_dict() == parts.as_dict() and list(stored.as_dict()) == list(parts.as_dict())
    version_1 = StoredParts.from_dict({"cells": "c", "env": "e", "library": "f", "python": "3.11", "kernel": "k"})
    assert version_1 and not version_1.versioned and version_1.library_names is None
    assert not StoredParts.from_dict(None) and not StoredParts.from_dict(["not", "an", "object"])
