"""The execution worker's pure helpers."""

from __future__ import annotations

import copy
import time

from hypothesis import given, settings
from hypothesis import strategies as st

from tabbook.execute.shape import cap_error, coalesce_streams, drop_noise


def test_drop_noise_removes_only_matching_stderr_lines() -> None:
    cell = {"outputs": [
        {"output_type": "stream", "name": "stderr", "text": "I0000 port.cc:153] oneDNN custom operations are on\n"},
        {"output_type": "stream", "name": "stderr", "text": "noise 1\nreal warning\n"},
        {"output_type": "stream", "name": "stdout", "text": "noise 1\n"},
    ]}
    drop_noise(cell, [r"oneDNN custom operations", r"^noise \d"])
    assert cell["outputs"] == [
        {"output_type": "stream", "name": "stderr", "text": "real warning\n"},
        {"output_type": "stream", "name": "stdout", "text": "noise 1\n"},
    ]


# --- stream outputs merged in linear time, as nbclient merges them (issue 41, faults 16-17) --------

stream_text = st.text(st.sampled_from(["a", "b", "\r", "\n", "\b", " "]), max_size=12)
outputs = st.lists(st.one_of(
    st.tuples(st.sampled_from(["stdout", "stderr"]), stream_text).map(
        lambda t: {"output_type": "stream", "name": t[0], "text": t[1]}),
    st.just({"output_type": "display_data", "data": {"text/plain": "d"}, "metadata": {}}),
), max_size=6)


@settings(max_examples=500, deadline=None)
@given(outputs)
def test_streams_merge_as_nbclient_merges_them(outs: list[dict]) -> None:
    """Each stream's texts joined into its first output, carriage returns applied with nbclient's
    own regex, stdout moved before an adjacent stderr: what entries held before stays so."""
    from nbclient.client import _RGX_CARRIAGERETURN

    cell = {"outputs": copy.deepcopy(outs)}
    coalesce_streams(cell)
    want: list[dict] = []
    first: dict[str, dict] = {}
    for out in copy.deepcopy(outs):
        if out["output_type"] != "stream":
            want.append(out)
        elif out["name"] in first:
            first[out["name"]]["text"] += out["text"]
        else:
            first[out["name"]] = out
            want.append(out)
    for out in first.values():
        out["text"] = _RGX_CARRIAGERETURN.sub("", out["text"])
    names = [(o["output_type"], o.get("name")) for o in want]
    if ("stream", "stderr") in names:
        i = names.index(("stream", "stderr"))
        if names[i + 1:i + 2] == [("stream", "stdout")]:
            want.insert(i, want.pop(i + 1))
    assert cell["outputs"] == want


def test_a_long_line_merges_in_linear_time() -> None:
    """nbclient's regex tried every position of a line: 4 MB took hours. Now a few milliseconds
    per megabyte; the bound here is generous, two orders of magnitude above what it takes."""
    cell = {"outputs": [{"output_type": "stream", "name": "stdout", "text": "x" * 2_000_000},
                        {"output_type": "stream", "name": "stdout", "text": "y" * 2_000_000 + "\rz\n"}]}
    start = time.process_time()
    coalesce_streams(cell)
    assert time.process_time() - start < 2.0
    assert cell["outputs"][0]["text"] == "z\n"


def test_an_error_is_capped_keeping_its_head_its_innermost_lines_and_a_note() -> None:
    content = {"ename": "ValueError", "evalue": "m" * 50_000,
               "traceback": [f"frame {i}" for i in range(1000)] + ["ValueError: " + "m" * 50_000]}
    capped = cap_error(content, 10_000)
    assert capped["ename"] == "ValueError" and capped["evalue"] == "m" * 5_000
    size = sum(len(line) for line in capped["traceback"]) + len(capped["evalue"])
    assert size < 11_000
    assert capped["traceback"][-2].startswith("ValueError: mmm") and capped["traceback"][-2].endswith("…")
    assert capped["traceback"][-1].startswith("[tabbook] error output truncated: it had 108,902 bytes")
    assert cap_error(content, 0) is content and cap_error({"evalue": "x", "traceback": []}, 10) == \
        {"evalue": "x", "traceback": []}
