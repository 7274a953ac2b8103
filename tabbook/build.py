"""The orchestrator: calls the stages in order and nothing else.

read (toc order) → check references → library → split + freeze lookup →
execute what is stale → merge → render (Sphinx) → report. Each stage is a
module of its own; this file only wires them and handles I/O at the edges.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tabbook.config import Config
from tabbook.errors import BookError, BookErrors
from tabbook.execute.runner import Runner, Unit, UnitResult
from tabbook.execute.store import (
    KeyParts,
    cells_hash,
    entry_key,
    entry_path,
    load_entry,
    store_entry,
    text_hash,
    write_atomic,
)
from tabbook.source.read import Section
from tabbook.source.split import split_section


@dataclass(frozen=True)
class Options:
    force: bool = False  # re-execute everything
    frameworks: tuple[str, ...] | None = None  # execute only these
    only: tuple[str, ...] | None = None  # sections (paths) to execute
    render: bool = True
    freeze_dir: Path | None = None  # another store (tests execute into a temp store)
    jobs: int = 0  # 0 = core count
    shard: tuple[int, int] | None = None  # (i, n): execute units i, i+n, ...
    frozen_only: bool = False  # never execute: a stale entry is an error
    builder: str = "html"


@dataclass
class UnitStatus:
    section: str
    framework: str
    status: str  # executed | reused | failed | skipped
    seconds: float = 0.0
    error: str | None = None


@dataclass
class BuildResult:
    units: list[UnitStatus] = field(default_factory=list)
    seconds: float = 0.0
    sphinx_seconds: float = 0.0
    execute_seconds: float = 0.0  # wall time of the execution stage (units run in parallel)
    library_changed: list[str] = field(default_factory=list)

    def as_report(self) -> dict[str, Any]:
        return {
            "units": [
                {"section": u.section, "framework": u.framework, "status": u.status,
                 "seconds": round(u.seconds, 3), **({"error": u.error} if u.error else {})}
                for u in self.units
            ],
            "seconds": round(self.seconds, 3),
            "sphinx_seconds": round(self.sphinx_seconds, 3),
            "execute_seconds": round(self.execute_seconds, 3),
            "library_changed": self.library_changed,
        }


def key_for(config: Config, section: Section, fw: str, library: dict[str, str]) -> tuple[KeyParts, list]:
    from tabbook.execute.envs import lock_hash

    framework = config.framework(fw)
    cells = split_section(section, fw)
    lib_text = library.get(f"{config.library_dir.name}/{framework.module}.py")
    parts = KeyParts(
        cells=cells_hash(cells), env=lock_hash(framework), library=text_hash(lib_text),
        python=framework.python, kernel=framework.kernel_name,
    )
    return parts, cells


def _kernel_env(config: Config) -> dict[str, str]:
    from tabbook.execute.envs import jupyter_dir

    env = dict(os.environ)
    env["JUPYTER_PATH"] = str(jupyter_dir(config).resolve())
    env["PYTHONPATH"] = str(Path(__file__).resolve().parent.parent)
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    return env


def prepare_kernels(config: Config, frameworks: set[str], log=print) -> None:
    from tabbook.execute.envs import check_env, ensure_env, write_kernelspec

    for fw in sorted(frameworks, key=config.tabs.index):
        framework = config.framework(fw)
        env = ensure_env(config, framework, create=True, log=log)
        check_env(config, framework, env)
        write_kernelspec(config, framework, env)


def execute_stage(
    config: Config, sections: list[Section], library: dict[str, str], opts: Options, result: BuildResult,
    log=print,
) -> dict[tuple[str, str], dict[str, Any]]:
    """Look every unit up in the freeze store; execute the stale ones. Returns notebooks."""
    store = opts.freeze_dir or config.freeze_dir
    notebooks: dict[tuple[str, str], dict[str, Any]] = {}
    todo: list[tuple[Unit, KeyParts]] = []
    stale: list[BookError] = []
    for section in sections:
        for fw in config.tabs:
            parts, cells = key_for(config, section, fw, library)
            if not cells:
                continue
            path = entry_path(store, section.path, fw)
            entry = load_entry(path)
            selected = (opts.frameworks is None or fw in opts.frameworks) and (
                opts.only is None or section.path in opts.only
            )
            if entry_key(entry) == parts.key and not (opts.force and selected):
                notebooks[(section.path, fw)] = entry  # type: ignore[assignment]
                result.units.append(UnitStatus(section.path, fw, "reused"))
                continue
            if opts.frozen_only:
                why = "missing" if entry is None else "stale (its code, environment or library changed)"
                stale.append(BookError(f"[{fw}] freeze entry {config.rel(path)} is {why}", section.path))
                continue
            if not selected:
                result.units.append(UnitStatus(section.path, fw, "skipped"))
                continue
            unit = Unit(
                section=section.path, framework=fw, cells=tuple(cells),
                kernel_name=config.framework(fw).kernel_name,
                import_name=config.framework(fw).import_name,
                cwd=(config.root / section.path).parent, timeout=config.cell_timeout,
                stderr_filters=config.stderr_filters,
                gpu_probe=config.framework(fw).gpu_probe,
            )
            todo.append((unit, parts))
    if stale:
        raise BookErrors(stale)
    if opts.shard:
        i, n = opts.shard
        todo = todo[i::n]
    if not todo:
        return notebooks
    prepare_kernels(config, {u.framework for u, _ in todo}, log=log)
    jobs = opts.jobs or os.cpu_count() or 1
    runner = Runner(jobs, _kernel_env(config), progress=log)
    results: list[UnitResult] = runner.run([u for u, _ in todo])
    failures: list[BookError] = []
    for (unit, parts), res in zip(todo, results, strict=False):
        if not res.ok or res.notebook is None:
            result.units.append(UnitStatus(unit.section, unit.framework, "failed", res.seconds, res.error))
            failures.append(BookError(res.error or "failed"))
            continue
        nb = res.notebook
        for cell in nb["cells"]:
            cell["metadata"].pop("tabbook", None)
        nb["metadata"]["tabbook"] = {
            "key": parts.key, "key_parts": parts.as_dict(), "section": unit.section,
            "framework": unit.framework, "provenance": res.provenance, "seconds": round(res.seconds, 2),
        }
        target = entry_path(store, unit.section, unit.framework)
        try:
            store_entry(target, nb)
        except OSError as exc:
            result.units.append(UnitStatus(unit.section, unit.framework, "failed", res.seconds, str(exc)))
            failures.append(BookError(f"cannot write {config.rel(target)}: {exc.strerror or exc}", unit.section))
            continue
        notebooks[(unit.section, unit.framework)] = nb
        result.units.append(UnitStatus(unit.section, unit.framework, "executed", res.seconds))
    if failures:
        raise BookErrors(failures)
    return notebooks


def source_dir(config: Config) -> Path:
    return config.build_dir / "src"


def merge_stage(
    config: Config, sections: list[Section], notebooks: dict[tuple[str, str], dict[str, Any]],
    extra_pages: dict[str, str] | None = None,
) -> None:
    """Write Sphinx's source tree: one merged notebook (or MyST page) per section."""
    from tabbook.render.merge import merge_section
    src = source_dir(config)
    src.mkdir(parents=True, exist_ok=True)
    labels = {fw: config.framework(fw).label for fw in config.tabs}
    wanted: set[Path] = set()
    for section in sections:
        stem = section.path[:-3]
        executed = {fw: notebooks[(section.path, fw)] for fw in config.tabs if (section.path, fw) in notebooks}
        if section.code_cells:
            doc = merge_section(section, executed, config.tabs, labels)
            _write_if_changed(src / f"{stem}.ipynb", json.dumps(doc, indent=1, ensure_ascii=False, sort_keys=True))
            wanted.add(src / f"{stem}.ipynb")
        else:
            doc = merge_section(section, {}, config.tabs, labels)
            text = "\n\n".join(c["source"] for c in doc["cells"])
            if config.root / section.path == config.index and extra_pages:
                pages = "\n".join(p[:-3] for p in extra_pages)
                text += f"\n\n```{{toctree}}\n:caption: Appendix\n:maxdepth: 1\n\n{pages}\n```"
            _write_if_changed(src / f"{stem}.md", text + "\n")
            wanted.add(src / f"{stem}.md")
    for rel, text in (extra_pages or {}).items():
        _write_if_changed(src / rel, text)
        wanted.add(src / rel)
    for name in ("img", "static"):
        link = src / name
        if (config.root / name).is_dir() and not link.exists():
            link.symlink_to((config.root / name).resolve(), target_is_directory=True)
    bib = config.root / "references.bib"
    if bib.is_file():
        _write_if_changed(src / "references.bib", bib.read_text(encoding="utf-8"))
    for path in list(src.rglob("*")):
        if path.suffix in (".md", ".ipynb") and path.is_file() and path not in wanted \
                and not any(p.is_symlink() for p in path.parents if src in p.parents):
            path.unlink()


def _write_if_changed(path: Path, text: str) -> None:
    """Keep mtimes of unchanged pages so Sphinx re-reads only what changed."""
    if path.is_file() and path.read_text(encoding="utf-8") == text:
        return
    write_atomic(path, text)


def render_stage(config: Config, builder: str = "html", out: Path | None = None,
                 overrides: dict[str, str] | None = None) -> None:
    out = out or config.build_dir / builder
    cmd = [
        sys.executable, "-m", "sphinx", "-b", builder, "-c", str(config.root),
        str(source_dir(config)), str(out), "-d", str(config.build_dir / "doctrees" / builder),
        "-q", "--keep-going",
    ]
    for k, v in (overrides or {}).items():
        cmd += ["-D", f"{k}={v}"]
    env = dict(os.environ)
    env["PYTHONPATH"] = str(Path(__file__).resolve().parent.parent)
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    sys.stderr.write(proc.stderr)
    if proc.returncode != 0:
        raise BookError(f"Sphinx failed (exit {proc.returncode}); see the messages above")


def write_report(config: Config, result: BuildResult) -> None:
    write_atomic(config.build_dir / "report.json", json.dumps(result.as_report(), indent=1) + "\n")


def build(config: Config, opts: Options, log=print) -> BuildResult:
    """Run the whole pipeline; the report is written even when a stage fails."""
    from tabbook.library.generate import generate_library, write_library
    from tabbook.source.toc import toc_sections

    t0 = time.monotonic()
    result = BuildResult()
    try:
        from tabbook.source.check import check_book

        problems = check_book(config)
        if problems:
            raise problems[0] if len(problems) == 1 else BookErrors(problems)
        sections = toc_sections(config)
        library = generate_library(config, sections)
        result.library_changed = write_library(config, library)
        for path in result.library_changed:
            log(f"[lib] wrote {path}")
        run_sections = sections
        if opts.only:
            known = {s.path for s in sections}
            missing = [p for p in opts.only if p not in known]
            if missing:
                raise BookError(f"not in the table of contents: {', '.join(missing)}")
        t_exec = time.monotonic()
        try:
            notebooks = execute_stage(config, run_sections, library, opts, result, log=log)
        finally:
            result.execute_seconds = time.monotonic() - t_exec
        if opts.render:
            from tabbook.render.apiref import api_reference_markdown

            extra = {"api.md": api_reference_markdown(config, library)}
            if (config.root / "references.bib").is_file():
                extra["references.md"] = "# References\n\n```{bibliography}\n:all:\n```\n"
            merge_stage(config, sections, notebooks, extra)
            if opts.builder:  # "" = write Sphinx's sources only (the PDF driver renders per framework)
                t1 = time.monotonic()
                render_stage(config, opts.builder)
                result.sphinx_seconds = time.monotonic() - t1
    finally:
        result.seconds = time.monotonic() - t0
        config.build_dir.mkdir(parents=True, exist_ok=True)
        write_report(config, result)
    return result


def clean(config: Config) -> None:
    shutil.rmtree(config.build_dir, ignore_errors=True)
