"""What a unit's outputs look like once stored: streams merged, noise dropped, outputs and
error tracebacks capped at ``[build] max_output_bytes``, sizes counted as the store counts them,
and the cell lines an error is reported at.

Why a module of its own: the worker shapes the outputs, the capped client counts them as they
arrive, and the store checks them with the same counts; none of this needs a kernel.
"""

from __future__ import annotations

import json

from tabbook.nbjson import CellOutput, NotebookCell

#: Characters of a failing cell's traceback that the build's error message keeps (its end).
ERROR_CHARS = 20_000


def short_error(text: str, limit: int = ERROR_CHARS) -> str:
    """A long error text's head (the cell) and end (where it raised), saying how much was left out."""
    if len(text) <= limit:
        return text
    head = limit // 4
    return f"{text[:head]}\n[… {len(text) - limit:,} characters left out …]\n{text[head - limit:]}"


def strip_ansi(text: str) -> str:
    import re

    return re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", text)


def error_outputs(cell: NotebookCell) -> list[CellOutput]:
    return [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]


def cell_line(cell: NotebookCell | None) -> int | None:
    """The Markdown line of a cell's fence (None: no cell, the unit as a whole)."""
    return None if cell is None else int(cell["metadata"]["tabbook"]["line"])


def raising_line(cell: NotebookCell | None) -> int | None:
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
    for out in error_outputs(cell):
        text = strip_ansi("\n".join(out.get("traceback", [])))
        for m in re.finditer(r"Cell In\[(\d+)\], line (\d+)", text):
            if count is None or int(m.group(1)) == count:
                rows.append(int(m.group(2)))
    lines = cell["metadata"]["tabbook"].get("lines") or []
    if rows and 0 < rows[-1] <= len(lines):
        return int(lines[rows[-1] - 1])
    return cell_line(cell)


def drop_noise(cell: NotebookCell, patterns: tuple[str, ...] | list[str]) -> None:
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


def coalesce_streams(cell: NotebookCell) -> None:
    """A cell's stream outputs merged per stream, carriage returns applied, as nbclient's
    ``coalesce_streams`` does (its backspace step never runs: its loop's condition is false from
    the start), in time linear in the output.

    Why: a print may reach the worker as one message or two, as the kernel's threads flush;
    merged, an entry does not depend on that. nbclient's own merge appends to a string held in
    the output (a copy per message) and scans each long line with a regex from every position:
    a single 1 MB line kept the worker busy for minutes after its cell ended."""
    outputs = cell.get("outputs") or []
    merged: list[CellOutput] = []
    texts: dict[str, list[str]] = {}
    first: CellOutput = {}
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


def text_size(value: object) -> int:
    """Bytes of a notebook value as stored (text: UTF-8; JSON data: its serialization)."""
    if isinstance(value, str):
        return len(value.encode("utf-8", "surrogatepass"))
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return sum(text_size(v) for v in value)
    return len(json.dumps(value, default=str))


def output_size(out: CellOutput) -> int:
    """Bytes of a stream's text, an error's message and traceback, or a display's contents (every
    mime type's): what ``[build] max_output_bytes`` counts, here and when the store reads an
    entry (:func:`tabbook.execute.entrycheck.entry_problem`)."""
    if out.get("output_type") == "stream":
        return text_size(out.get("text", ""))
    if out.get("output_type") == "error":
        return text_size(out.get("evalue", "")) + text_size(out.get("traceback") or [])
    data = out.get("data")
    return sum(text_size(v) for v in data.values()) if isinstance(data, dict) else text_size(data)


def text_head(text: str | list[str], limit: int) -> str:
    """The first ``limit`` bytes of a text, cut at a character boundary."""
    joined = "".join(text) if isinstance(text, list) else text
    return joined.encode("utf-8", "surrogatepass")[:max(limit, 0)].decode("utf-8", "ignore")


def cap_outputs(cell: NotebookCell, limit: int, produced: int = 0) -> None:
    """Keep at most ``limit`` bytes of a cell's output (``[build] max_output_bytes``; 0: all).

    Why: outputs are committed in the store and published on the page; a cell printing 100 MB by
    mistake would put all of it in git and in every reader's browser. Text is kept up to the
    limit, a display that does not fit whole is dropped, and a note at the end says how much
    there was. Error outputs are kept: they explain a failure or a ``#@raises`` cell.
    ``produced``: the bytes the cell sent while it ran (:func:`~.capped.capped_client` dropped what was
    over the limit then, so the outputs alone no longer say how much there was)."""
    if limit <= 0 or cell.get("cell_type") != "code":
        return
    outputs = cell.get("outputs", [])
    total = max(produced, sum(output_size(o) for o in outputs if o.get("output_type") != "error"))
    if total <= limit:
        return
    kept: list[CellOutput] = []
    room = limit
    for out in outputs:
        kind = out.get("output_type")
        if kind == "error":
            kept.append(out)
        elif kind == "stream":
            if room > 0:
                text = text_head(out.get("text", ""), room)
                room -= text_size(text)
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


def cap_error(content: CellOutput, limit: int) -> CellOutput:
    """An error's ``evalue`` and ``traceback`` kept within ``limit`` bytes (``[build]
    max_output_bytes``; 0: all): the message's head, each traceback line's head, the innermost
    lines (a traceback ends where it raised), and a line saying how much there was.

    Why: a cell (a ``#@raises`` one included) may raise with a message of 60 MB; kept whole it
    went into the entry, the page and the build's own error message."""
    evalue, trace = content.get("evalue", ""), list(content.get("traceback") or [])
    total = text_size(evalue) + text_size(trace)
    if limit <= 0 or total <= limit:
        return content
    half, per_line = limit // 2, max(limit // 8, 200)
    lines: list[str] = []
    room = half
    for line in reversed(trace):
        line = text_head(line, per_line) + ("…" if text_size(line) > per_line else "")
        if text_size(line) > room:
            break
        lines.insert(0, line)
        room -= text_size(line)
    note = (f"[tabbook] error output truncated: it had {total:,} bytes; [build] max_output_bytes keeps "
            f"{limit:,}" + (f" ({len(trace) - len(lines)} traceback lines left out)" if len(lines) < len(trace) else ""))
    return {**content, "evalue": text_head(evalue, half), "traceback": [*lines, note]}


def size_text(size: int) -> str:
    for unit, scale in (("T", 1024**4), ("G", 1024**3), ("M", 1024**2)):
        if size >= scale and size % scale == 0:
            return f"{size // scale}{unit}"
    return f"{size:,} bytes"


def out_of_memory(cell: NotebookCell | None) -> bool:
    return cell is not None and any("MemoryError" in (o.get("ename") or "") for o in error_outputs(cell))


