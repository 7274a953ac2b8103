"""Execution limits (issue 33, item 5): ``cell_timeout`` validated, an output-size cap per cell
with a visible note, and kernels started with an allow-listed environment plus what the book
declares (``[build] kernel_env``), not the builder's whole environment."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from test_d2lbook_build import make_book, tabbook

from tabbook.config import load_config
from tabbook.errors import BookError
from tabbook.execute.envs import kernel_env
from tabbook.execute.shape import cap_outputs

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("value", ["0", "-5"])
def test_a_cell_timeout_below_one_second_is_an_error_at_its_line(book: Path, value: str) -> None:
    ini = book / "config.ini"
    ini.write_text(re.sub(r"(?m)^cell_timeout = .*$", f"cell_timeout = {value}", ini.read_text()))
    line = next(i for i, t in enumerate(ini.read_text().splitlines(), 1) if t.startswith("cell_timeout"))
    with pytest.raises(BookError) as err:
        load_config(book)
    assert err.value.location_message() == f"config.ini:{line}: [build] cell_timeout must be at least 1 (seconds)"


def test_kernel_env_names_are_checked(book: Path) -> None:
    ini = book / "config.ini"
    ini.write_text(ini.read_text().replace("[build]\n", "[build]\nkernel_env = GOOD_NAME 9bad\n", 1))
    with pytest.raises(BookError, match=r"config.ini:\d+: \[build\] kernel_env '9bad' is not the name of an "
                                        r"environment variable"):
        load_config(book)


def _stream(text: str) -> dict[str, object]:
    return {"output_type": "stream", "name": "stdout", "text": text}


def test_output_over_the_cap_is_cut_with_a_note_and_errors_are_kept() -> None:
    error = {"output_type": "error", "ename": "E", "evalue": "v", "traceback": ["t"]}
    image = {"output_type": "display_data", "metadata": {}, "data": {"image/png": "A" * 500}}
    cell = {"cell_type": "code", "outputs": [_stream("é" * 300), image, _stream("after"), error]}
    cap_outputs(cell, 100)
    outs = cell["outputs"]
    assert outs[0] == _stream("é" * 50)  # 100 bytes of two-byte characters, cut between characters
    assert outs[1] == error  # the image did not fit; what followed it is dropped, the error kept
    assert outs[2]["name"] == "stderr" and "output truncated: this cell produced 1,105 bytes of output; " \
        "[build] max_output_bytes keeps 100" in outs[2]["text"]
    assert len(outs) == 3

    small = {"cell_type": "code", "outputs": [_stream("fine"), image]}
    cap_outputs(small, 1000)
    assert small["outputs"] == [_stream("fine"), image]  # under the cap: untouched
    cap_outputs(cell := {"cell_type": "code", "outputs": [_stream("x" * 50)]}, 0)
    assert cell["outputs"] == [_stream("x" * 50)]  # 0: no cap


def test_kernels_get_the_allow_list_and_the_books_names_only(book: Path) -> None:
    ini = book / "config.ini"
    ini.write_text(ini.read_text().replace("[build]\n", "[build]\nkernel_env = BOOK_DATA\n", 1))
    config = load_config(book)
    builder = {"PATH": "/bin", "HOME": "/home/a", "LANG": "C.UTF-8", "LC_ALL": "C", "CUDA_VISIBLE_DEVICES": "0",
               "XLA_FLAGS": "--x", "TF_FORCE_GPU_ALLOW_GROWTH": "true", "TABBOOK_CACHE": "/c", "TMPDIR": "/t",
               "BOOK_DATA": "/data", "GITHUB_TOKEN": "ghp_secret", "AWS_SECRET_ACCESS_KEY": "k",
               "CI_JOB_TOKEN": "t", "PYTHONPATH": "/elsewhere"}
    env = kernel_env(config, builder)
    for name in ("PATH", "HOME", "LANG", "LC_ALL", "CUDA_VISIBLE_DEVICES", "XLA_FLAGS", "TF_FORCE_GPU_ALLOW_GROWTH",
                 "TABBOOK_CACHE", "TMPDIR", "BOOK_DATA"):
        assert env[name] == builder[name], name
    assert not {"GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY", "CI_JOB_TOKEN"} & set(env)
    # the book's root first, then the checkout tabbook runs from (not the builder's PYTHONPATH)
    assert env["PYTHONPATH"].split(os.pathsep) == [str(book), str(ROOT)]
    assert env["JUPYTER_PATH"].endswith("jupyter")


PAGE = """\
# Limits

```{.python .input}
%%tab pytorch
import os
print('token:', os.environ.get('SECRET_TOKEN', 'absent'), 'data:', os.environ.get('BOOK_DATA', 'absent'))
```

```{.python .input}
%%tab pytorch
print('y' * 300_000)
print('after the flood')
```

```{.python .input}
%%tab pytorch
import sys, time
sys.stdout.write('one '); sys.stdout.flush(); time.sleep(0.5)  # two stream messages
sys.stdout.write('message\\n'); sys.stdout.flush()
```
"""


def test_a_build_caps_a_flood_and_keeps_the_builders_secrets_from_kernels(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    book, overlay = make_book(tmp_path, eval_notebook=True)
    ini = book / "config.ini"
    ini.write_text(ini.read_text().replace("[build]\n", "[build]\nmax_output_bytes = 20000\n"
                                           "kernel_env = BOOK_DATA\n", 1))
    chapter = book / "chapter_a" / "index.md"
    chapter.write_text(chapter.read_text().replace("second\n", "second\nlimits\n", 1))
    (book / "chapter_a" / "limits.md").write_text(PAGE)
    monkeypatch.setenv("SECRET_TOKEN", "s3cr3t")
    monkeypatch.setenv("BOOK_DATA", "/srv/data")
    proc = tabbook(book, overlay, "build", "--builder", "")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    entry = book / "_freeze" / "chapter_a" / "limits" / "pytorch.ipynb"
    cells = [c for c in json.loads(entry.read_text())["cells"] if c["cell_type"] == "code"]
    first = "".join("".join(o.get("text", "")) for o in cells[0]["outputs"])
    assert first.strip() == "token: absent data: /srv/data"
    outputs = cells[1]["outputs"]
    kept = "".join(o["text"] if isinstance(o["text"], str) else "".join(o["text"]) for o in outputs)
    assert kept.startswith("y" * 1000) and "after the flood" not in kept
    assert "[tabbook] output truncated: this cell produced 300,017 bytes of output; [build] max_output_bytes " \
        "keeps 20,000" in kept
    assert entry.stat().st_size < 40_000
    # One print in two messages is one output: an entry does not depend on how the kernel flushed.
    assert [o["name"] for o in cells[2]["outputs"]] == ["stdout"]
    assert "".join(cells[2]["outputs"][0]["text"]) == "one message\n"
    assert "s3cr3t" not in entry.read_text() and os.environ["SECRET_TOKEN"] == "s3cr3t"
