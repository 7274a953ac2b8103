"""Execute one (section, framework) notebook with nbclient; run as a subprocess.

``python -m tabbook.execute.worker job.json result.json``: a :class:`~.job.Job` in, a
:class:`~.job.Result` out. The result file is written only at the end (atomically), holding the
executed notebook or a :class:`~.job.Failure` of its kind at ``file.md:LINE`` of the failing cell. SIGTERM becomes KeyboardInterrupt so that
nbclient's context manager shuts the kernel down before the worker exits. The worker is a
subreaper: when the unit ends, every process its cells started (daemons included) is killed.
Each cell's output is capped while it runs, and the kernel's memory on request.
"""

from __future__ import annotations

import json
import os
import platform
import signal
import sys
import tempfile
import time
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tabbook.execute.job import ErrorKind, Failure, Job, Result
from tabbook.execute.progress import record_cell
from tabbook.files import WORKER_PARENT_ENV, end_with_parent, write_atomic

if TYPE_CHECKING:
    from nbclient import NotebookClient

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


START_ATTEMPTS = 3

#: When each step of this worker's unit happened (``time.time()``), sent back in its result:
#: ``imports`` (nbclient imported), ``kernel_ready`` (it answered), ``go`` (a worker started
#: ahead got its job), ``first_cell``, ``cells_done`` (the probe starts), ``kernel_down``.
PHASES: dict[str, float] = {}


def _mark(phase: str) -> None:
    PHASES.setdefault(phase, time.time())


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def one_line(value: Any, limit: int = 500) -> str:
    """A value the provenance records as one line of printable text, at most ``limit``
    characters: what the store's schema accepts (``store.provenance_problem``). A GPU probe's
    exception may say anything, over several lines."""
    text = " ".join("".join(c if c.isprintable() else " " for c in str(value)).split())
    return text if len(text) <= limit else text[:limit - 1] + "…"


#: Characters of a failing cell's traceback that the build's error message keeps (its end).
ERROR_CHARS = 20_000


def _short(text: str, limit: int = ERROR_CHARS) -> str:
    """A long error text's head (the cell) and end (where it raised), saying how much was left out."""
    if len(text) <= limit:
        return text
    head = limit // 4
    return f"{text[:head]}\n[… {len(text) - limit:,} characters left out …]\n{text[head - limit:]}"


def _strip_ansi(text: str) -> str:
    import re

    return re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", text)


def _error_outputs(cell: dict[str, Any]) -> list[dict[str, Any]]:
    return [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]


def _line(cell: dict[str, Any] | None) -> int | None:
    """The Markdown line of a cell's fence (None: no cell, the unit as a whole)."""
    return None if cell is None else int(cell["metadata"]["tabbook"]["line"])


def _raising_line(cell: dict[str, Any] | None) -> int | None:
    """The Markdown line of the cell line that raised: the innermost frame of this cell in the traceback.

    IPython names a cell's frames ``Cell In[N], line K``; frames of functions
    defined in earlier cells carry another N and are skipped, so the line shown is
    the one of this cell the user wrote. Falls back to the cell's fence.
    """
    import re

    if cell is None:
        return None
    count = cell.get("execution_count")
    rows = []
    for out in _error_outputs(cell):
        text = _strip_ansi("\n".join(out.get("traceback", [])))
        for m in re.finditer(r"Cell In\[(\d+)\], line (\d+)", text):
            if count is None or int(m.group(1)) == count:
                rows.append(int(m.group(2)))
    lines = cell["metadata"]["tabbook"].get("lines") or []
    if rows and 0 < rows[-1] <= len(lines):
        return int(lines[rows[-1] - 1])
    return _line(cell)


def drop_noise(cell: dict[str, Any], patterns: tuple[str, ...] | list[str]) -> None:
    """Remove stderr lines matching ``patterns`` (config.ini ``stderr_filters``)."""
    import re

    if not patterns:
        return
    regexes = [re.compile(p) for p in patterns]
    kept = []
    for out in cell.get("outputs", []):
        if out.get("output_type") == "stream" and out.get("name") == "stderr":
            text = out.get("text", "")
            text = "".join(line for line in text.splitlines(keepends=True)
                           if not any(r.search(line) for r in regexes))
            if not text:
                continue
            out["text"] = text
        kept.append(out)
    cell["outputs"] = kept


def _carriage_returns(text: str) -> str:
    """A carriage return followed by more of its line drops what came before it on the line:
    what nbclient's ``.*\\r(?=[^\\n])`` substitution leaves, line by line (that regex tries
    every position of a long line, quadratic: minutes for a 1 MB line, in C, deaf to SIGTERM)."""
    if "\r" not in text:
        return text
    lines = text.split("\n")
    for i, line in enumerate(lines):
        cut = line.rfind("\r", 0, len(line) - 1)  # the last \r with a character after it
        if cut >= 0:
            lines[i] = line[cut + 1:]
    return "\n".join(lines)


def coalesce_streams(cell: dict[str, Any]) -> None:
    """A cell's stream outputs merged per stream, carriage returns applied, as nbclient's
    ``coalesce_streams`` does (its backspace step never runs: its loop's condition is false from
    the start), in time linear in the output.

    Why: a print may reach the worker as one message or two, as the kernel's threads flush;
    merged, an entry does not depend on that. nbclient's own merge appends to a string held in
    the output (a copy per message) and scans each long line with a regex from every position:
    a single 1 MB line kept the worker busy for minutes after its cell ended."""
    outputs = cell.get("outputs") or []
    merged: list[Any] = []
    texts: dict[str, list[str]] = {}
    first: dict[str, Any] = {}
    for out in outputs:
        if out.get("output_type") != "stream":
            merged.append(out)
            continue
        name = out.get("name")
        text = out.get("text", "")
        if name not in first:
            first[name] = out
            merged.append(out)
        texts.setdefault(name, []).append("".join(text) if isinstance(text, list) else text)
    for name, out in first.items():
        out["text"] = _carriage_returns("".join(texts[name]))
    for i, out in enumerate(merged):  # stdout before stderr when they meet, as nbclient orders them
        if out.get("output_type") == "stream" and out.get("name") == "stderr" and len(merged) >= i + 2 \
                and merged[i + 1].get("output_type") == "stream" and merged[i + 1].get("name") == "stdout":
            merged.insert(i, merged.pop(i + 1))
    if outputs:
        cell["outputs"] = merged


def _size(value: Any) -> int:
    """Bytes of a notebook value as stored (text: UTF-8; JSON data: its serialization)."""
    if isinstance(value, str):
        return len(value.encode("utf-8", "surrogatepass"))
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return sum(_size(v) for v in value)
    return len(json.dumps(value, default=str))


def output_size(out: dict[str, Any]) -> int:
    """Bytes of a stream's text, an error's message and traceback, or a display's contents (every
    mime type's): what ``[build] max_output_bytes`` counts, here and when the store reads an
    entry (:func:`tabbook.execute.store.entry_problem`)."""
    if out.get("output_type") == "stream":
        return _size(out.get("text", ""))
    if out.get("output_type") == "error":
        return _size(out.get("evalue", "")) + _size(out.get("traceback") or [])
    data = out.get("data")
    return sum(_size(v) for v in data.values()) if isinstance(data, dict) else _size(data)


def _head(text: str | list[str], limit: int) -> str:
    """The first ``limit`` bytes of a text, cut at a character boundary."""
    joined = "".join(text) if isinstance(text, list) else text
    return joined.encode("utf-8", "surrogatepass")[:max(limit, 0)].decode("utf-8", "ignore")


def cap_outputs(cell: dict[str, Any], limit: int, produced: int = 0) -> None:
    """Keep at most ``limit`` bytes of a cell's output (``[build] max_output_bytes``; 0: all).

    Why: outputs are committed in the store and published on the page; a cell printing 100 MB by
    mistake would put all of it in git and in every reader's browser. Text is kept up to the
    limit, a display that does not fit whole is dropped, and a note at the end says how much
    there was. Error outputs are kept: they explain a failure or a ``#@raises`` cell.
    ``produced``: the bytes the cell sent while it ran (:func:`capped_client` dropped what was
    over the limit then, so the outputs alone no longer say how much there was)."""
    if limit <= 0 or cell.get("cell_type") != "code":
        return
    outputs = cell.get("outputs", [])
    total = max(produced, sum(output_size(o) for o in outputs if o.get("output_type") != "error"))
    if total <= limit:
        return
    kept: list[Any] = []
    room = limit
    for out in outputs:
        kind = out.get("output_type")
        if kind == "error":
            kept.append(out)
        elif kind == "stream":
            if room > 0:
                text = _head(out.get("text", ""), room)
                room -= _size(text)
                if text:
                    kept.append({**out, "text": text})
        else:
            size = output_size(out)
            if size <= room:
                kept.append(out)
                room -= size
            else:
                room = 0  # what follows a display that did not fit is dropped too: the order stays
    kept.append({"output_type": "stream", "name": "stderr",
                 "text": f"\n[tabbook] output truncated: this cell produced {total:,} bytes of output; "
                         f"[build] max_output_bytes keeps {limit:,}\n"})
    cell["outputs"] = kept


def cap_error(content: dict[str, Any], limit: int) -> dict[str, Any]:
    """An error's ``evalue`` and ``traceback`` kept within ``limit`` bytes (``[build]
    max_output_bytes``; 0: all): the message's head, each traceback line's head, the innermost
    lines (a traceback ends where it raised), and a line saying how much there was.

    Why: a cell (a ``#@raises`` one included) may raise with a message of 60 MB; kept whole it
    went into the entry, the page and the build's own error message."""
    evalue, trace = content.get("evalue", ""), list(content.get("traceback") or [])
    total = _size(evalue) + _size(trace)
    if limit <= 0 or total <= limit:
        return content
    half, per_line = limit // 2, max(limit // 8, 200)
    lines: list[str] = []
    room = half
    for line in reversed(trace):
        line = _head(line, per_line) + ("…" if _size(line) > per_line else "")
        if _size(line) > room:
            break
        lines.insert(0, line)
        room -= _size(line)
    note = (f"[tabbook] error output truncated: it had {total:,} bytes; [build] max_output_bytes keeps "
            f"{limit:,}" + (f" ({len(trace) - len(lines)} traceback lines left out)" if len(lines) < len(trace) else ""))
    return {**content, "evalue": _head(evalue, half), "traceback": [*lines, note]}


def _message_size(msg: dict[str, Any]) -> int:
    """Bytes of an output message's text or data, as :func:`output_size` counts them stored."""
    content = msg.get("content") or {}
    if msg.get("msg_type") == "stream":
        return _size(content.get("text", ""))
    data = content.get("data")
    return sum(_size(v) for v in data.values()) if isinstance(data, dict) else 0


#: How long one ``kernel_info`` request waits for its reply (the kernel may still be starting)
#: before it is sent again.
ASK_SECONDS = 1.0
#: How long it then waits for that request's idle status on IOPub before asking again. The
#: kernel publishes it right after the reply; when it does not come, IOPub had not joined yet
#: (ZeroMQ retries a connection every 0.1 s, and a PUB socket drops what it sends before its
#: subscriber has joined), and only a new request can show that it has.
IOPUB_SECONDS = 0.05


async def answering(kc: Any, timeout: float) -> None:
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
    worker, in its result file and in the builder that reads it, before :func:`cap_outputs`
    cut it. Output past the limit is dropped as it arrives (text is cut at the limit, a display
    that does not fit is dropped, and so is everything after it, so the order stays);
    :func:`cap_outputs` then adds the note saying how much there was. Errors are never dropped.
    (A limit of 0 caps nothing: the client of a kernel started ahead, :func:`prestart`.)

    Its kernel counts as started once it answers (:func:`answering`)."""

    from nbclient import NotebookClient
    from nbclient.util import ensure_async, run_hook, run_sync

    class Capped(NotebookClient):
        async def async_start_new_kernel_client(self) -> Any:
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

        def output(self, outs: list[Any], msg: dict[str, Any], display_id: str | None,
                   cell_index: int) -> Any:
            kind = msg.get("msg_type")
            if kind == "error":  # capped on its own: it explains a failure, so it is never dropped
                msg = {**msg, "content": cap_error(msg.get("content") or {}, limit)}
            if limit <= 0 or kind not in ("stream", "display_data", "execute_result"):
                return super().output(outs, msg, display_id, cell_index)
            size = _message_size(msg)
            before = produced.get(cell_index, 0)
            produced[cell_index] = before + size
            room = limit - before
            if size <= room:
                return super().output(outs, msg, display_id, cell_index)
            if kind == "stream" and room > 0:
                text = _head(msg["content"].get("text", ""), room)
                msg = {**msg, "content": {**msg["content"], "text": text}}
                return super().output(outs, msg, display_id, cell_index)
            return None

    return Capped


def limit_memory(pid: int, limit: int) -> None:
    """Cap process ``pid``'s address space at ``limit`` bytes (``[build] memory_limit``).

    Why RLIMIT_AS, set from outside: it needs no cgroup (rarely delegated to a user), a cell
    cannot raise it again (the hard limit is lowered too), and an allocation past it fails in
    the cell, as a ``MemoryError`` at its line, instead of the machine swapping or the kernel's
    OOM killer choosing a victim. It counts address space, not resident memory: GPU frameworks
    reserve much of it, so the key is for CPU code or must be set generously."""
    import resource

    resource.prlimit(pid, resource.RLIMIT_AS, (limit, limit))


def _kernel_pid(client: Any) -> int | None:
    provisioner = getattr(getattr(client, "km", None), "provisioner", None)
    pid = getattr(provisioner, "pid", None)
    return pid if isinstance(pid, int) else None


def _size_text(size: int) -> str:
    for unit, scale in (("T", 1024**4), ("G", 1024**3), ("M", 1024**2)):
        if size >= scale and size % scale == 0:
            return f"{size // scale}{unit}"
    return f"{size:,} bytes"


def _out_of_memory(cell: dict[str, Any] | None) -> bool:
    return cell is not None and any("MemoryError" in (o.get("ename") or "") for o in _error_outputs(cell))


# --- every process of a unit ends with it -------------------------------------------------------

#: prctl(2)'s option that makes orphaned descendants children of this process (Linux >= 3.4).
PR_SET_CHILD_SUBREAPER = 36


def become_subreaper() -> bool:
    """Make this worker the parent of every orphan among its descendants; True if it is.

    Why: a cell may start a process that detaches (``setsid``, a double fork: a server, a
    ``nohup`` job). Its parent exits, so it is no longer below the kernel, and the worker's
    process group or session does not hold it either; without a subreaper it becomes init's
    and outlives the build. As a subreaper, the worker finds it among its own children when the
    unit ends (:func:`end_descendants`). Not Linux, or refused: False, and only processes still
    below the worker are ended."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (children first), from ``/proc``'s parent links."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
            ppid = int(text[text.rfind(")") + 2:].split()[1])
        except (OSError, ValueError, IndexError):
            continue  # ended meanwhile
        children.setdefault(ppid, []).append(int(stat.parent.name))
    out: list[int] = []
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def end_descendants(seconds: float = 10.0) -> int:
    """Kill (SIGKILL) and reap every process below this worker; how many there were.

    Called when the unit ends, its kernel already shut down: what is left is what the cells
    started and did not stop. Killed processes' own children are orphaned to this subreaper,
    so it repeats until none is left (or ``seconds`` pass)."""
    import time

    me = os.getpid()
    seen: set[int] = set()
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        pids = descendants(me)
        if not pids:
            break
        for pid in pids:
            seen.add(pid)
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        _reap()
        time.sleep(0.02)
    _reap()
    return len(seen)


#: The environment variable marking every process of one unit (its worker, kernel and whatever
#: its cells start), with a token of its own: how the runner finds them when the worker is gone.
UNIT_ENV = "TABBOOK_UNIT"


def marked(token: str) -> list[int]:
    """The processes whose environment holds ``TABBOOK_UNIT=token`` (this user's; ``/proc``)."""
    entry = f"{UNIT_ENV}={token}".encode()
    found = []
    for environ in Path("/proc").glob("[0-9]*/environ"):
        try:
            if entry in environ.read_bytes().split(b"\0"):
                found.append(int(environ.parent.name))
        except (OSError, ValueError):
            continue  # ended meanwhile, or another user's
    return [pid for pid in found if pid != os.getpid()]


def end_marked(token: str, seconds: float = 10.0) -> int:
    """Kill (SIGKILL) every process of a unit whose worker died: how many there were.

    Why: the worker ends what its cells started (it is their subreaper), but a worker killed
    outright (by a cell, ``os.kill(os.getppid(), 9)``; by the OOM killer) cannot; its kernel and
    a process a cell started in a session of its own are then init's. They still carry the
    unit's token in their environment (it is inherited), which is how the runner finds them.
    A process that cleared its own environment escapes this: it would need a cgroup."""
    import time

    seen: set[int] = set()
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and (pids := marked(token)):
        for pid in pids:
            seen.add(pid)
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        _reap()
        time.sleep(0.02)
    return len(seen)


def _reap() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def run(job: Job, clients: list[NotebookClient], started: NotebookClient | None = None) -> Result:
    """Execute the job's notebook, the GPU probe after it; the notebook with its provenance, or a
    failure. ``started``: the client of a kernel started ahead for this job (:func:`prestart`),
    used for its first attempt. Each client made is added to ``clients``, its kernel still
    running: the caller shuts them down (:func:`shut_down`) once the result is written."""
    import nbclient  # noqa: F401 - imported here, once, for the record of when imports ended
    import nbformat

    _mark("imports")
    nb = nbformat.from_dict(job.notebook)
    nb.cells.append(nbformat.v4.new_code_cell(probe_source(job.import_name, job.gpu_probe)))
    produced: dict[int, int] = {}
    failure = execute(job, nb, produced, clients, started)
    info = probe_info(nb.cells.pop())
    failure = failure or unmet_raises(job, nb.cells)
    if failure is not None:
        return Result(failure=failure)
    for index, cell in enumerate(nb.cells):
        cell.get("metadata", {}).pop("execution", None)
        coalesce_streams(cell)  # an entry never shows how a print was flushed
        drop_noise(cell, job.stderr_filters)
        cap_outputs(cell, job.max_output_bytes, produced.get(index, 0))
    return Result(notebook=dict(nb), provenance=provenance(job, info))


def shut_down(clients: list[NotebookClient]) -> None:
    """Shut each client's kernel down as nbclient does when a notebook ends (gracefully unless
    the client says ``immediate``); one that is gone already is skipped."""
    for client in clients:
        if client.km is None:
            continue
        try:
            client._cleanup_kernel()
        except Exception:  # noqa: BLE001, S110 - ending anyway: end_descendants takes what is left
            pass


def execute(job: Job, nb: Any, produced: dict[int, int], clients: list[NotebookClient],
            started: NotebookClient | None = None) -> Failure | None:
    """Run every cell of ``nb`` in a new kernel (its last cell is the probe); None when all ran.

    A kernel can die before its first reply when parallel kernels race for ports; nothing has
    run yet then, so starting it again is safe. ``started``'s kernel, started ahead
    (:func:`prestart`) and having run nothing, is the first attempt's, with its client, already
    answering. Kernels are left running (``clients``): the result is written first, and the
    worker shuts them down after, while the build goes on."""
    from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError

    running: list[int] = []  # the index of the cell that runs

    def on_cell_start(cell: Any, cell_index: int) -> None:
        running[:] = [cell_index]
        _mark("cells_done" if cell_index == len(nb.cells) - 1 else "first_cell")
        if job.progress and cell_index < len(nb.cells) - 1:  # the build shows it while the cell runs
            record_cell(Path(job.progress), f"{job.section}:{_line(nb.cells[cell_index])}")

    def on_notebook_start(notebook: Any) -> None:
        """Before the first cell: the kernel's memory cap."""
        _mark("kernel_ready")
        if job.memory_limit:
            pid = _kernel_pid(clients[-1])
            if pid is None:
                raise RuntimeError("[build] memory_limit: the kernel's process is not known, so it cannot be capped")
            limit_memory(pid, job.memory_limit)

    for attempt in range(START_ATTEMPTS):
        produced.clear()
        ahead = started if attempt == 0 else None
        clients.append(capped_client(job.max_output_bytes, produced)(
            nb, km=ahead.km if ahead is not None else None,
            timeout=job.timeout, kernel_name=job.kernel_name, resources={"metadata": {"path": job.cwd}},
            allow_errors=False, record_timing=False, interrupt_on_timeout=False,
            on_cell_start=on_cell_start, on_notebook_start=on_notebook_start,
            coalesce_streams=False))  # merged afterwards (coalesce_streams)
        client = clients[-1]
        # The kernel outlives execute() (shut_down, after the result is written); nbclient's
        # clean-up then treats a kernel started ahead as one it started itself.
        client.owns_km = False
        try:
            if ahead is not None and ahead.kc is not None:
                # What nbclient does once a client it starts answers (start_new_kernel_client):
                # the one started ahead answered already, and waiting for it again costs 0.2 s.
                client.kc, ahead.kc = ahead.kc, None
                client.kc.allow_stdin = False
                on_notebook_start(nb)
            client.execute()
            return None
        except (CellTimeoutError, DeadKernelError, CellExecutionError, RuntimeError) as exc:
            unstarted = isinstance(exc, RuntimeError) and not isinstance(exc, DeadKernelError) and not running
            if unstarted and attempt + 1 < START_ATTEMPTS:
                shut_down([client])
                continue
            cell = nb.cells[running[0]] if running and running[0] < len(nb.cells) - 1 else None
            return failure_of(job, exc, cell)
    return None  # not reached: the last attempt returns


def failure_of(job: Job, exc: Exception, cell: dict[str, Any] | None) -> Failure:
    """nbclient's error, as the failure of its kind at the cell's line (the line that raised)."""
    from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError

    fw, memory = f"[{job.framework}]", job.memory_limit
    if isinstance(exc, CellTimeoutError):
        return Failure(ErrorKind.TIMEOUT, f"{fw} cell exceeded the {job.timeout} s timeout", job.section, _line(cell))
    if isinstance(exc, DeadKernelError):
        note = f" (with [build] memory_limit = {_size_text(memory)}, it may have run out of memory)" if memory else ""
        return Failure(ErrorKind.DEAD_KERNEL, f"{fw} the kernel died while running this cell ({exc}){note}",
                       job.section, _line(cell))
    if isinstance(exc, CellExecutionError):
        text = _short(_strip_ansi(str(exc)))
        if memory and _out_of_memory(cell):
            return Failure(ErrorKind.MEMORY, f"{fw} MemoryError: the cell needed more memory than [build] "
                           f"memory_limit = {_size_text(memory)} allows (use less, or raise the key):\n{text}",
                           job.section, _raising_line(cell))
        return Failure(ErrorKind.CELL, f"{fw} unexpected error:\n{text}", job.section, _raising_line(cell))
    return Failure(ErrorKind.KERNEL, f"{fw} kernel {job.kernel_name} failed to start or run: {exc}", job.section)


def probe_info(probe: dict[str, Any]) -> dict[str, Any]:
    """What the probe cell printed (:data:`PROBE`): versions, GPUs, why the GPU probe failed."""
    coalesce_streams(probe)  # its line may have come in two messages
    for out in probe.get("outputs", []):
        for line in out.get("text", "").splitlines():
            if line.startswith("TABBOOK-PROBE "):
                return dict(json.loads(line[len("TABBOOK-PROBE "):]))
    return {}


def unmet_raises(job: Job, cells: list[dict[str, Any]]) -> Failure | None:
    """The first ``#@raises`` cell that did not raise, or raised something else."""
    for cell in cells:
        expected = cell["metadata"]["tabbook"].get("raises")
        if expected is None:
            continue
        errors = _error_outputs(cell)
        got = errors[0].get("ename", "") if errors else None
        if got is None:
            why = f"is marked #@raises {expected or 'an exception'} but did not raise"
        elif expected and got != expected and not got.endswith("." + expected):
            why = f"raised {got}, but is marked #@raises {expected}"
        else:
            continue
        return Failure(ErrorKind.RAISES, f"[{job.framework}] cell {why}", job.section, _line(cell))
    return None


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


def provenance(job: Job, info: dict[str, Any]) -> dict[str, Any]:
    """Where the unit ran: each text one line, as the store's schema wants (``store.provenance_problem``).
    A tab whose ``import`` is no framework (:func:`framework_of`) records its version as "?"
    (unknown), which the pages leave out rather than show IPython's version as the tab's."""
    gpus = [one_line(g) for g in info.get("gpus", [])][:256]
    version = one_line(info.get("framework_version", "?")) if framework_of(job.import_name) else "?"
    out: dict[str, Any] = {
        "framework": job.framework,
        "framework_version": version,
        "python": one_line(info.get("python", "?")),
        "cpu": one_line(cpu_model()),
        "gpus": gpus,
        "device": (f"{len(gpus)}× {gpus[0]}" if gpus else "CPU only"),
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
        "host_platform": one_line(platform.platform(terse=True)),
    }
    if info.get("gpu_probe_error"):
        out["gpu_probe_error"] = one_line(info["gpu_probe_error"])
    if info.get("framework_imported") is False:
        out["framework_imported"] = False  # the outputs do not depend on it, nor on a GPU
    return out


def _raise_interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def _stop_when_orphaned(builder: int | None = None) -> None:
    """End this worker (SIGTERM: its kernel is shut down) once its parent is gone, or the
    ``builder`` it runs a job for (a worker started ahead by the warm builder runs the job of
    one of its forks, which is not its parent).

    The worker runs in a session of its own so that a build can kill it with its kernel; the
    other side of that is that nothing kills it when the build itself is killed outright (a
    Dask worker process SIGKILLed mid-unit). Its result would go nowhere, so it stops.
    """
    import threading
    import time

    parent = os.getppid()

    def alive() -> bool:
        if builder is None:
            return True
        try:
            os.kill(builder, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            pass
        return True

    def watch() -> None:
        while os.getppid() == parent and alive():
            time.sleep(1)
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch, daemon=True).start()


#: The first argument of a worker started ahead of its job (:func:`prestart`).
PRESTART = "--prestart"
#: The line on a started-ahead worker's standard input that hands it its job (then the pid of the
#: build that hands it over, which it must not outlive); anything else, or the end of input, ends it.
GO = "go"


#: What a worker prints once its result is written: the builder goes on with it while the
#: worker shuts its kernel down (:class:`tabbook.execute.runner.Runner` waits for that later).
WRITTEN = "TABBOOK-RESULT-WRITTEN"


def prestart(kernel_name: str, cwd: str) -> NotebookClient | None:
    """Start the kernel a job will run in, before the job is known: the process, then a client
    that waits until it answers (``kernel_info``), exactly as nbclient starts one for a notebook
    (its own code, on an empty notebook); the client (its manager and channels) is returned for
    the job's. Nothing of the book runs: a page's first cell may set environment variables
    before its first import, so the kernel imports nothing but itself. None when it fails: the
    job then starts its kernel as usual."""
    import nbformat

    _mark("imports")
    starter = capped_client(0, {})(nbformat.v4.new_notebook(), kernel_name=kernel_name, resources={"metadata": {"path": cwd}},
                             shutdown_kernel="immediate")  # unused, it has run nothing
    starter.owns_km = False
    try:
        starter.km = starter.create_kernel_manager()
        starter.start_new_kernel()
        starter.start_new_kernel_client()
    except Exception:  # noqa: BLE001 - any failure: the job starts its own kernel
        shut_down([starter])
        return None
    _mark("kernel_ready")
    return starter


def _wait_for_job(started: NotebookClient | None) -> bool:
    """Block until the builder hands over the job (True) or discards this worker (False, its
    kernel shut down). The builder's pid on the line is watched like the parent's."""
    line = sys.stdin.readline().split()
    if line[:1] != [GO]:
        return False
    _mark("go")
    if len(line) > 1 and line[1].isdigit():
        _stop_when_orphaned(int(line[1]))
    return True


def main(argv: list[str]) -> int:
    signal.signal(signal.SIGTERM, _raise_interrupt)
    # A builder killed outright sends this worker SIGTERM: its kernel shut down, its processes ended.
    end_with_parent(signal.SIGTERM, WORKER_PARENT_ENV)
    become_subreaper()
    _stop_when_orphaned()
    # The kernel's connection file (its HMAC key: whoever reads it can run code in the kernel)
    # is a temporary file of this process (jupyter_client's mkstemp): made in the job's private
    # folder, which the runner removes however this worker ends, a cell that kills it included
    # (it was left in /tmp).
    tempfile.tempdir = str(Path(argv[3] if argv[0] == PRESTART else argv[0]).parent)
    started: NotebookClient | None = None
    clients: list[NotebookClient] = []
    try:
        if argv[0] == PRESTART:  # --prestart KERNEL_NAME CWD JOB RESULT: the job comes later
            kernel_name, cwd, argv = argv[1], argv[2], argv[3:]
            started = prestart(kernel_name, cwd)
            if not _wait_for_job(started):
                return 0
            job = Job.from_json(Path(argv[0]).read_text())
            if started is not None and (job.kernel_name, job.cwd) != (kernel_name, cwd):
                shut_down([started])  # not the kernel this job runs in: never used
                started = None
        else:
            job = Job.from_json(Path(argv[0]).read_text())
        result = run(job, clients, started)
        write_atomic(Path(argv[1]), replace(result, phases=dict(PHASES)).to_json())
        print(WRITTEN, flush=True)  # the build goes on with it; the kernel shuts down meanwhile
    finally:  # the kernel is shut down; what its cells started goes too, even on SIGTERM
        shut_down([*clients, *([started] if started is not None else [])])
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second SIGTERM must not cut the sweep short
        end_descendants()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
