"""The notebook client a worker drives: nbclient's, with each cell's output capped while it
runs (``[build] max_output_bytes``) and a kernel taken as ready once it answered and its IOPub
carried that answer (:func:`answering`).

Why a module of its own: it is the one place that subclasses nbclient's client; the worker
only asks for it (:func:`capped_client`).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from tabbook.execute.shape import cap_error, text_head, text_size
from tabbook.nbjson import CellOutput

if TYPE_CHECKING:
    from jupyter_client.asynchronous.client import AsyncKernelClient
    from jupyter_client.blocking.client import BlockingKernelClient
    from jupyter_client.client import KernelClient
    from nbclient import NotebookClient
    from nbformat import NotebookNode

def message_size(msg: CellOutput) -> int:
    """Bytes of an output message's text or data, as :func:`~.shape.output_size` counts them stored."""
    content = msg.get("content") or {}
    if msg.get("msg_type") == "stream":
        return text_size(content.get("text", ""))
    data = content.get("data")
    return sum(text_size(v) for v in data.values()) if isinstance(data, dict) else 0


#: How long one ``kernel_info`` request waits for its reply (the kernel may still be starting)
#: before it is sent again.
ASK_SECONDS = 1.0
#: How long it then waits for that request's idle status on IOPub before asking again. The
#: kernel publishes it right after the reply; when it does not come, IOPub had not joined yet
#: (ZeroMQ retries a connection every 0.1 s, and a PUB socket drops what it sends before its
#: subscriber has joined), and only a new request can show that it has.
IOPUB_SECONDS = 0.05


async def answering(kc: AsyncKernelClient | BlockingKernelClient, timeout: float) -> None:
    """Return once the kernel has answered ``kernel_info`` and its IOPub channel has carried
    the idle status of that request; RuntimeError if it dies first or takes ``timeout`` seconds.

    Why not jupyter_client's ``wait_for_ready``: after the reply it drains IOPub until 0.2 s
    pass with no message, a fixed 0.2 s on every kernel's start, a fifth of a small unit. What
    the wait is for, a subscription that receives (a PUB socket drops what it sends before the
    subscriber has joined, so a cell's first output could be lost), is shown by the idle status
    of our own request arriving. Status messages still queued are harmless: nbclient keeps only
    the messages whose parent is the request it sent."""
    from queue import Empty

    from nbclient.util import ensure_async

    deadline = time.monotonic() + timeout
    asked: set[str] = set()
    replied = False
    while time.monotonic() < deadline:
        asked.add(kc.kernel_info())
        try:
            while not replied:
                msg = await ensure_async(kc.shell_channel.get_msg(timeout=ASK_SECONDS))
                if msg["msg_type"] == "kernel_info_reply" and msg["parent_header"].get("msg_id") in asked:
                    kc._handle_kernel_info_reply(msg)  # noqa: SLF001 - as wait_for_ready does
                    replied = True
            while True:
                msg = await ensure_async(kc.iopub_channel.get_msg(timeout=IOPUB_SECONDS))
                if (msg["msg_type"] == "status" and msg["content"].get("execution_state") == "idle"
                        and msg["parent_header"].get("msg_id") in asked):
                    return
        except Empty:  # no reply yet, or IOPub not joined yet: ask again
            if not await ensure_async(kc.is_alive()):
                raise RuntimeError("Kernel died before replying to kernel_info") from None
    raise RuntimeError(f"Kernel didn't respond in {timeout:.0f} seconds")


def capped_client(limit: int, produced: dict[int, int]) -> type[NotebookClient]:
    """nbclient's NotebookClient keeping at most ``limit`` bytes of each cell's output while the
    cell runs; ``produced`` receives, per cell index, how many bytes it sent.

    Why while it runs: a cell printing 100 MB in a loop would otherwise be held whole by this
    worker, in its result file and in the builder that reads it, before :func:`~.shape.cap_outputs`
    cut it. Output past the limit is dropped as it arrives (text is cut at the limit, a display
    that does not fit is dropped, and so is everything after it, so the order stays);
    :func:`~.shape.cap_outputs` then adds the note saying how much there was. Errors are never dropped.
    (A limit of 0 caps nothing: the client of a kernel started ahead, :func:`~.worker.prestart`.)

    Its kernel counts as started once it answers (:func:`answering`)."""

    from nbclient import NotebookClient
    from nbclient.util import ensure_async, run_hook, run_sync

    class Capped(NotebookClient):
        async def async_start_new_kernel_client(self) -> KernelClient:
            """nbclient's own, but the kernel counts as started once it answers
            (:func:`answering`), not 0.2 s later."""
            assert self.km is not None
            try:
                self.kc = kc = self.km.client()
                started = kc.start_channels  # None or a coroutine, by client class: awaited either way
                await ensure_async(started())
                await answering(self.kc, self.startup_timeout)
            except Exception:
                await self._async_cleanup_kernel()
                raise
            self.kc.allow_stdin = False
            await run_hook(self.on_notebook_start, notebook=self.nb)
            return self.kc

        start_new_kernel_client = run_sync(async_start_new_kernel_client)

        def output(self, outs: list[NotebookNode], msg: CellOutput, display_id: str | None,
                   cell_index: int) -> NotebookNode | None:
            kind = msg.get("msg_type")
            if kind == "error":  # capped on its own: it explains a failure, so it is never dropped
                msg = {**msg, "content": cap_error(msg.get("content") or {}, limit)}
            if limit <= 0 or kind not in ("stream", "display_data", "execute_result"):
                return super().output(outs, msg, display_id, cell_index)
            size = message_size(msg)
            before = produced.get(cell_index, 0)
            produced[cell_index] = before + size
            room = limit - before
            if size <= room:
                return super().output(outs, msg, display_id, cell_index)
            if kind == "stream" and room > 0:
                text = text_head(msg["content"].get("text", ""), room)
                msg = {**msg, "content": {**msg["content"], "text": text}}
                return super().output(outs, msg, display_id, cell_index)
            return None

    return Capped


