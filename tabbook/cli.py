"""Command line: ``python -m tabbook build|check|lib|envs|clean``.

Library code raises :class:`BookError`; only this edge turns errors into
``file.md:LINE: message`` lines on stderr and a non-zero exit status.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from pathlib import Path

from tabbook.errors import BookError


def _shard(text: str) -> tuple[int, int]:
    i, n = text.split("/")
    if not (0 < int(n) and 0 <= int(i) < int(n)):
        raise argparse.ArgumentTypeError("--shard wants i/N with 0 <= i < N")
    return int(i), int(n)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="tabbook", description=__doc__)
    p.add_argument("-C", "--root", type=Path, default=Path.cwd(), help="book root (holds config.ini)")
    sub = p.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build", help="execute what is stale and render the site")
    b.add_argument("--force", action="store_true", help="re-execute every selected unit")
    b.add_argument("--frameworks", help="comma list: execute only these frameworks")
    b.add_argument("--only", nargs="+", metavar="SECTION.md", help="execute only these sections")
    b.add_argument("--no-render", action="store_true", help="stop after execution (no Sphinx)")
    b.add_argument("--freeze-dir", type=Path, help="use another freeze store (e.g. a temp dir)")
    b.add_argument("--jobs", type=int, default=0, help="parallel units (default: core count)")
    b.add_argument("--shard", type=_shard, help="i/N: execute every N-th stale unit from i")
    b.add_argument("--frozen", action="store_true", help="never execute; fail if the store is stale")
    b.add_argument("--builder", default="html")
    sub.add_parser("check", help="lint the sources without starting a kernel")
    sub.add_parser("envs", help="create the framework environments")
    sub.add_parser("clean", help="remove build/")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    from tabbook.config import load_config

    try:
        config = load_config(args.root)
        if args.command == "build":
            from tabbook.build import Options, build

            opts = Options(
                force=args.force,
                frameworks=tuple(args.frameworks.split(",")) if args.frameworks else None,
                only=tuple(os.path.normpath(p) for p in args.only) if args.only else None,
                render=not args.no_render, freeze_dir=args.freeze_dir, jobs=args.jobs,
                shard=args.shard, frozen_only=args.frozen, builder=args.builder,
            )
            for fw in opts.frameworks or ():
                if fw not in config.tabs:
                    raise BookError(f"--frameworks: unknown framework {fw!r} (tabs: {', '.join(config.tabs)})")
            result = build(config, opts)
            counts: dict[str, int] = {}
            for u in result.units:
                counts[u.status] = counts.get(u.status, 0) + 1
            summary = ", ".join(f"{v} {k}" for k, v in sorted(counts.items())) or "no code units"
            print(f"[done] {summary} in {result.seconds:.1f}s; report: build/report.json")
        elif args.command == "check":
            from tabbook.source.check import check_book

            problems = check_book(config)
            for p in problems:
                print(p.location_message(), file=sys.stderr)
            if problems:
                return 1
            print("[check] no problems found")
        elif args.command == "envs":
            from tabbook.execute.envs import main as envs_main

            os.chdir(config.root)
            return envs_main([])
        elif args.command == "clean":
            from tabbook.build import clean

            clean(config)
    except BookError as err:
        print(err.location_message(), file=sys.stderr)
        return 1
    except OSError as exc:
        where = exc.filename or "tabbook"
        print(f"{where}: cannot write or read: {exc.strerror or exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("[tabbook] interrupted; nothing half-written was kept", file=sys.stderr)
        return 130
    return 0
