"""capped.answering: a new kernel is ready once it answered kernel_info and IOPub carried that
request's idle status; it asks again while IOPub has not joined, and a dead kernel is an error."""

from __future__ import annotations

import asyncio
import threading
from queue import Empty
from typing import Any

import pytest

from tabbook.execute import capped


def run(coro: Any) -> None:
    """Run ``coro`` to its end on a loop of its own, in a thread of its own: earlier tests of the
    suite (nbclient's synchronous wrappers) may leave an event loop marked running here."""
    failure: list[BaseException] = []

    def target() -> None:
        try:
            asyncio.run(coro)
        except BaseException as exc:  # noqa: BLE001 - handed back to the test
            failure.append(exc)

    thread = threading.Thread(target=target)
    thread.start()
    thread.join()
    if failure:
        raise failure[0]


class Channel:
    def __init__(self, script: list[Any]) -> None:
        self.script = script  # each get: a message, or Empty to raise

    async def get_msg(self, timeout: float) -> dict[str, Any]:
        if not self.script:
            raise Empty
        item = self.script.pop(0)
        if item is Empty:
            raise Empty
        return item(self.owner) if callable(item) else item


class FakeClient:
    """Replies to each kernel_info from scripts: shell and iopub items may depend on the last id."""

    def __init__(self, shell: list[Any], iopub: list[Any], alive: bool = True) -> None:
        self.ids: list[str] = []
        self.shell_channel, self.iopub_channel = Channel(shell), Channel(iopub)
        self.shell_channel.owner = self.iopub_channel.owner = self
        self.alive = alive
        self.handled: list[dict[str, Any]] = []

    def kernel_info(self) -> str:
        self.ids.append(f"id{len(self.ids)}")
        return self.ids[-1]

    async def is_alive(self) -> bool:
        return self.alive

    def _handle_kernel_info_reply(self, msg: dict[str, Any]) -> None:
        self.handled.append(msg)


def reply(kc: FakeClient) -> dict[str, Any]:
    return {"msg_type": "kernel_info_reply", "parent_header": {"msg_id": kc.ids[-1]}, "content": {}}


def status(state: str, parent: str | None = None):
    def make(kc: FakeClient) -> dict[str, Any]:
        return {"msg_type": "status", "content": {"execution_state": state},
                "parent_header": {"msg_id": parent or kc.ids[-1]}}
    return make


def test_ready_at_the_idle_status_of_its_own_request() -> None:
    kc = FakeClient([reply], [status("busy"), status("idle", parent="someone-else"), status("idle")])
    run(capped.answering(kc, timeout=5))
    assert kc.ids == ["id0"] and len(kc.handled) == 1
    assert kc.iopub_channel.script == []  # it read up to its own idle status, not past it


def test_asks_again_while_iopub_has_not_joined() -> None:
    kc = FakeClient([reply], [Empty, status("idle")])
    run(capped.answering(kc, timeout=5))
    assert kc.ids == ["id0", "id1"]  # the second request's idle status was the one seen
    assert len(kc.handled) == 1  # the reply was handled once


def test_a_kernel_that_dies_before_replying_is_an_error() -> None:
    kc = FakeClient([Empty], [], alive=False)
    with pytest.raises(RuntimeError, match="died before replying"):
        run(capped.answering(kc, timeout=5))


def test_a_kernel_that_never_answers_times_out() -> None:
    kc = FakeClient([], [])
    with pytest.raises(RuntimeError, match="didn't respond"):
        run(capped.answering(kc, timeout=0.01))
