"""Dialect prose → MyST Markdown (what myst-nb parses). Pure functions of text.

``:label:`` after a heading becomes a ``(label)=`` target above it; an image
followed by ``:label:``/``:width:`` becomes a ``{figure}``; ``$$…$$`` followed
by ``:eqlabel:`` becomes labelled dollar math; inline roles map to Sphinx
roles; a ```` ```toc ```` block becomes a ``{toctree}``. Slide marks are removed.
"""

from __future__ import annotations

import re

from tabbook.source.dialect import (
    EQLABEL,
    IMAGE_LINE,
    LABEL,
    ROLE,
    ROLE_MAP,
    WIDTH,
    is_toc_opener,
    strip_slide_marks,
)


def convert_roles(line: str) -> str:
    def sub(m: re.Match[str]) -> str:
        target = m.group(2)
        if m.group(1) in ("cite", "citet", "citep"):
            target = ",".join(t.strip() for t in target.split(","))
        return f"{{{ROLE_MAP[m.group(1)]}}}`{target}`"

    return ROLE.sub(sub, line)


def _fence_len(text: str) -> int:
    runs = [len(m.group(0)) for m in re.finditer(r"`{3,}", text)]
    return max([3, *runs]) + 1


def toc_to_toctree(block: str) -> str:
    lines = block.split("\n")
    body = lines[1:-1]
    return "\n".join(["```{toctree}", *body, "```"])


def to_myst(text: str) -> str:
    """Convert one prose cell of the dialect to MyST Markdown."""
    text = strip_slide_marks(text)
    lines = text.split("\n")
    out: list[str] = []
    block_start = 0  # index in ``out`` where the current/previous block begins
    in_math = False
    in_fence: str | None = None
    prev_blank = True
    i = 0
    while i < len(lines):
        raw = lines[i]
        stripped = raw.strip()
        if in_fence is not None:
            out.append(raw)
            if stripped.startswith(in_fence) and set(stripped) == {in_fence[0]}:
                in_fence = None
            i += 1
            continue
        if not in_math and re.match(r"^(`{3,}|~{3,})", stripped):
            fence = re.match(r"^(`{3,}|~{3,})", stripped).group(1)  # type: ignore[union-attr]
            if is_toc_opener(stripped):
                end = i + 1
                while end < len(lines) and lines[end].strip() != "```":
                    end += 1
                out.append(toc_to_toctree("\n".join(lines[i:end + 1])))
                i = end + 1
                continue
            block_start = len(out)
            in_fence = fence
            out.append(raw)
            i += 1
            continue
        m_label = LABEL.match(raw)
        m_eq = EQLABEL.match(raw)
        prev = out[block_start] if block_start < len(out) else ""
        img = IMAGE_LINE.match(prev) if block_start == len(out) - 1 else None
        if img and (m_label or WIDTH.match(raw)):
            # A lone image line followed by :label: and/or :width: (either order) → figure.
            name = width = None
            while i < len(lines) and (LABEL.match(lines[i]) or WIDTH.match(lines[i])):
                if (m := LABEL.match(lines[i])) and name is None:
                    name = m.group(1).strip()
                elif (m := WIDTH.match(lines[i])) and width is None:
                    width = m.group(1).strip()
                else:
                    break
                i += 1
            caption = convert_roles(img.group("cap"))
            fig = ["```{figure} " + img.group("src")]
            if name:
                fig.append(f":name: {name}")
            if width:
                fig.append(f":width: {width}")
            fig += ["", caption, "```"] if caption else ["```"]
            out[block_start:] = fig
            continue
        if m_label and prev.lstrip().startswith("|") and all(
                x.lstrip().startswith("|") for x in out[block_start:] if x.strip()):
            # A pipe table followed by :label: → a numbered {table}; its caption is a
            # ": caption" line just above the table (pandoc's spelling).
            name = m_label.group(1).strip()
            caption = ""
            j = block_start - 1
            while j >= 0 and not out[j].strip():
                j -= 1
            if j >= 0 and out[j].startswith(": "):
                caption = out[j][2:].strip()
                del out[j:block_start]
                block_start = j
            body = [x for x in out[block_start:] if x.strip()]
            out[block_start:] = ["```{table} " + caption, f":name: {name}", "", *body, "```"]
            i += 1
            continue
        if m_label:
            name = m_label.group(1).strip()
            out.insert(block_start, f"({name})=")
            if block_start > 0 and out[block_start - 1].strip():
                out.insert(block_start, "")
            i += 1
            continue
        if m_eq:
            name = m_eq.group(1).strip()
            for j in range(len(out) - 1, -1, -1):
                if out[j].rstrip().endswith("$$"):
                    out[j] = out[j].rstrip() + f" ({name})"
                    break
            i += 1
            continue
        if WIDTH.match(raw):
            i += 1
            continue
        if not stripped:
            prev_blank = True
            out.append(raw)
            i += 1
            continue
        if prev_blank or stripped.startswith("#") or IMAGE_LINE.match(raw):
            block_start = len(out)
        prev_blank = False
        if stripped.startswith("$$"):
            count = stripped.count("$$")
            if count == 1:
                in_math = not in_math
            elif not in_math:
                out.append(raw)  # one-line display math: no roles inside
                i += 1
                continue
        elif in_math and stripped.endswith("$$"):
            in_math = False
        out.append(raw if in_math else convert_roles(raw))
        i += 1
    return "\n".join(out).strip("\n")


def wrap_div(text: str, classes: list[str]) -> str:
    """A MyST ``{div}`` whose fence is longer than any fence inside ``text``."""
    fence = "`" * _fence_len(text)
    return f"{fence}{{div}} {' '.join(classes)}\n\n{text}\n{fence}"
