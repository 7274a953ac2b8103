"""The execution worker's pure helpers."""

from __future__ import annotations

from tabbook.execute.worker import drop_noise


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
