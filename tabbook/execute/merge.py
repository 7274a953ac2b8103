"""Merge freeze stores: the entries that shard runs or CI jobs wrote, gathered into one store.

A book too big for one machine is executed in pieces (``build --shard i/N``, one job per
framework, one Dask worker pool per site), each into a store of its own. Merging is not a
plain copy: two pieces can both hold an entry for the same (section, framework) — a stale one
from the committed store a job started from and the current one the job made — so the book
decides. An entry is *current* when its key is the key the book gives that unit now (or it is a
GPU entry of the same code, as :meth:`FreezeStore.lookup` has it); only current entries are
merged, a current entry in the target is never replaced by one that is not, and entries are
copied byte for byte, so the merged store is exactly what the runs wrote.

Everything is validated before anything is written, and each file is written atomically: a
merge that fails (a damaged entry, an entry filed under the wrong path) changes nothing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from tabbook.config import Config
from tabbook.errors import BookError, Log, raise_all
from tabbook.execute.entrycheck import MAX_DEPTH, META, entry_problem
from tabbook.execute.store import Entry, FreezeStore, KeyParts, gpu_entry_current
from tabbook.files import write_atomic


@dataclass
class MergeResult:
    written: list[str] = field(default_factory=list)  # target paths, relative to the target store
    unchanged: int = 0  # the target already held these exact bytes
    stale: list[str] = field(default_factory=list)  # units with a source entry not current for the book: left out
    foreign: list[str] = field(default_factory=list)  # entries of units the book does not have
    conflicts: list[str] = field(default_factory=list)  # several current versions: the first source's kept


@dataclass(frozen=True)
class _Candidate:
    source: Path  # the entry file
    text: str
    # Its metadata.tabbook's key, section and framework (checked to be texts).
    key: str
    section: str
    framework: str


def _read_entry(store: FreezeStore, path: Path) -> _Candidate:
    """One entry file, checked: JSON, a notebook with the store's metadata, filed where it belongs."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise BookError(f"cannot read this freeze entry: {exc}", str(path)) from exc
    try:
        nb = json.loads(text)
    except json.JSONDecodeError as exc:
        raise BookError(f"not a freeze entry: invalid JSON ({exc.msg})", str(path), exc.lineno) from exc
    except RecursionError:
        raise BookError(f"not a freeze entry: its JSON is nested more than {MAX_DEPTH} levels deep",
                        str(path)) from None
    if (problem := entry_problem(nb, store.max_output_bytes)) is not None:
        raise BookError(f"not a freeze entry: {problem}; it is not merged (fix or delete it in its store)",
                        str(path))
    meta = (nb.get("metadata") or {}).get(META)
    if not isinstance(meta, dict) or not all(isinstance(meta.get(k), str) for k in ("key", "section", "framework")):
        raise BookError("not a freeze entry: metadata.tabbook lacks key, section or framework", str(path), 1)
    expected = store.path(meta["section"], meta["framework"])
    if expected.resolve() != path.resolve():
        rel = expected.relative_to(store.root)
        raise BookError(f"entry of {meta['section']} [{meta['framework']}] filed under the wrong path "
                        f"(it belongs at {rel})", str(path), 1)
    return _Candidate(path, text, meta["key"], meta["section"], meta["framework"])


def _is_current(key: str, nb_text: str, parts: KeyParts | None) -> bool:
    if parts is None:
        return False
    if key in (parts.key, parts.legacy_key):  # the legacy key: see KeyParts.legacy_key
        return True
    return gpu_entry_current(Entry(json.loads(nb_text)), parts)


def current_keys(config: Config) -> dict[tuple[str, str], KeyParts]:
    """The key of every (section, framework) unit of the book as it is now (read once)."""
    from tabbook.book import read_book
    from tabbook.execute.plan import unit_key
    from tabbook.library.cache import book_library

    book = read_book(config)  # every page: a build executes the orphans (pages no toc lists) too
    book.raise_problems()
    keys: dict[tuple[str, str], KeyParts] = {}
    for section in book.rendered:
        for fw in config.tabs:
            parts, cells = unit_key(config, section, fw, book_library(book))
            if cells:
                keys[(section.path, fw)] = parts
    return keys


def merge_stores(config: Config, sources: list[Path], target: Path,
                 log: Log = print) -> MergeResult:
    """Merge the current entries of ``sources`` into ``target`` (see the module's docstring)."""
    for src in sources:
        if not src.is_dir():
            raise BookError(f"merge-stores: {src} is not a directory")
    keys = current_keys(config)
    goal = FreezeStore(target)
    found: dict[tuple[str, str], list[_Candidate]] = {}
    errors: list[BookError] = []
    for src in sources:
        store = FreezeStore(src, max_output_bytes=config.max_output_bytes)
        for path in store.entries():
            try:
                cand = _read_entry(store, path)
            except BookError as exc:
                errors.append(exc)
                continue
            found.setdefault((cand.section, cand.framework), []).append(cand)
    if errors:
        raise_all(errors)

    result = MergeResult()
    writes: list[tuple[Path, str]] = []
    for unit in sorted(found):
        parts = keys.get(unit)
        current = [c for c in found[unit] if _is_current(c.key, c.text, parts)]
        name = f"{unit[0]} [{unit[1]}]"
        if parts is None:
            result.foreign.append(name)
            continue
        if len(current) < len(found[unit]):
            result.stale.append(name)
        if not current:
            continue
        chosen = current[0]
        if len({c.text for c in current}) > 1:
            result.conflicts.append(f"{name}: {len(current)} current versions; kept {chosen.source}")
        dest = goal.checked_path(*unit)
        try:
            existing = dest.read_text(encoding="utf-8") if dest.is_file() else None
        except (OSError, UnicodeDecodeError):
            existing = None
        if existing == chosen.text:
            result.unchanged += 1
            continue
        writes.append((dest, chosen.text))
    for dest, text in writes:
        write_atomic(dest, text)
        result.written.append(dest.relative_to(goal.root).as_posix())
    for line in result.conflicts:
        log(f"[merge] note: {line}")
    return result
