"""The command line's grammar: ``tabbook``'s options and each subcommand's, as argparse reads them.

:mod:`tabbook.cli` parses with :func:`parser` and runs what it names; this module only says what
may be written (and what ``--help`` tells), so a new option is one line here and its use one
line there.
"""

from __future__ import annotations

import argparse
from pathlib import Path


def _shard(text: str) -> tuple[int, int]:
    try:
        i, n = (int(v) for v in text.split("/"))
    except ValueError as exc:
        raise argparse.ArgumentTypeError("--shard wants i/N with 0 <= i < N") from exc
    if not (0 < n and 0 <= i < n):
        raise argparse.ArgumentTypeError("--shard wants i/N with 0 <= i < N")
    return i, n



def _target(text: str) -> str:
    if text not in D2LBOOK_TARGETS:
        raise argparse.ArgumentTypeError(f"{text!r} is not a build target ({', '.join(D2LBOOK_TARGETS)})")
    return text



#: What ``tabbook --help`` says first: plain text (the module's docstring is reST, for Sphinx).
DESCRIPTION = ("tabbook builds a book written in d2lbook's Markdown: it runs each framework's code in "
               "that framework's environment, keeps the outputs in the freeze store (_freeze/), and makes "
               "the site, one PDF per framework, the slides and the book's package. "
               "'tabbook COMMAND --help' tells more about a command.")



def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="tabbook", description=DESCRIPTION)
    p.add_argument("-C", "--root", type=Path, default=Path.cwd(), help="book root (holds config.ini)")
    p.add_argument("--overlay", type=Path, metavar="INI",
                   help="settings read after config.ini (default: tabbook.ini at the root, if any)")
    p.add_argument("--python", dest="interpreters", action="append", default=[], metavar="TAB=PATH",
                   help="run a tab's code with this existing interpreter (installs nothing into it)")
    p.add_argument("--set", dest="settings", action="append", default=[], metavar="SECTION.KEY=VALUE",
                   help="set a configuration key for this command, over the overlay, config.ini and the "
                   "key's environment variable (e.g. build.installer=pip); any key an overlay may set")
    p.add_argument("--debug", action="store_true",
                   help="show the traceback of an error tabbook did not expect (a bug), not one line")
    sub = p.add_subparsers(dest="command", required=True)
    _build_parser(sub)
    _other_parsers(sub)
    return p



def _build_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    b = sub.add_parser("build", help="execute what is stale and render the site")
    b.add_argument("targets", nargs="*", metavar="TARGET", type=_target,
                   help="d2lbook's build targets: " + ", ".join(D2LBOOK_TARGETS) + " (default: html)")
    b.add_argument("--tab", help="d2lbook's --tab: execute (and typeset) only this tab, or all")
    b.add_argument("--force", action="store_true", help="re-execute every selected unit")
    b.add_argument("--frameworks", help="comma list: execute only these frameworks")
    b.add_argument("--only", nargs="+", metavar="SECTION.md", help="execute only these sections")
    b.add_argument("--no-render", action="store_true", help="stop after execution (no Sphinx)")
    b.add_argument("--freeze-dir", type=Path, help="use another freeze store (e.g. a temp dir)")
    b.add_argument("--jobs", type=int, default=0, help="parallel units (default: core count)")
    b.add_argument("--scheduler", metavar="tls://HOST:PORT",
                   help="execute on this Dask cluster's workers (needs envs/builder-dask.txt; a tls:// "
                        "address takes Dask's DASK_DISTRIBUTED__COMM__TLS__* settings)")
    b.add_argument("--shard", type=_shard, help="i/N: execute every N-th stale unit from i")
    b.add_argument("--frozen", action="store_true", help="never execute; fail if the store is stale")
    b.add_argument("--execute-here", action="store_true",
                   help="re-run stale units even where this machine has fewer GPUs than the one that "
                        "computed their outputs (or than the page needs); by default those keep their "
                        "outputs, marked as from an earlier version of the code")
    b.add_argument("--builder", default="html", help="Sphinx builder; '' writes build/src only")
    ex = b.add_mutually_exclusive_group()
    ex.add_argument("--no-execute", dest="execute", action="store_false", default=None,
                    help="run nothing: show code without outputs where the store has none")
    ex.add_argument("--execute", dest="execute", action="store_true",
                    help="execute even if config.ini says eval_notebook = False")
    b.add_argument("--partial", action="store_true",
                   help="part of a book: Markdown outside its toc is not read, its library is the whole book's")
    b.add_argument("--dry-run", action="store_true",
                   help="say which units would run and why (which input changed); run and write nothing")
    b.add_argument("--json", action="store_true", help="with --dry-run: the plan as a JSON list, one object per unit")
    b.add_argument("--external", action="store_true",
                   help="with the linkcheck target: also ask every external link's server (network)")
    b.add_argument("--strict", action="store_true", default=None,
                   help="warnings fail the build too (d2lbook's [build] warning_is_error, Sphinx's -W)")



def _other_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    ch = sub.add_parser("check", help="lint the sources without starting a kernel")
    ch.add_argument("--partial", action="store_true", help="part of a book: its library is the whole book's")
    ch.add_argument("--strict", action="store_true", help="warnings are errors too (as [build] warning_is_error)")
    lib = sub.add_parser("lib", help="generate the d2l package from the book's #@save code")
    lib.add_argument("--check", action="store_true", help="exit 1 if the committed d2l/ is stale")
    lib.add_argument("--import", dest="import_", action="store_true",
                     help="then import each generated module in its framework's environment")
    lib.add_argument("--no-generate", action="store_true",
                     help="with --import: import the modules as the last build wrote them")
    lt = sub.add_parser("libtest", help="build the d2l wheel and test it in every framework env")
    lt.add_argument("frameworks", nargs="*", help="tabs to test (default: all)")
    lt.add_argument("--no-generate", action="store_true", help="package d2l/ as it is")
    lt.add_argument("--python", action="append", default=[], metavar="TAB=PATH",
                    help="use this interpreter for a framework's tests")
    lt.add_argument("--any-env", action="store_true", help="accept any completed env of the framework")
    lt.add_argument("--no-venv-check", action="store_true", help="skip the fresh Python 3.12 venv check")
    nbs = sub.add_parser("notebooks", help="run every notebook of the site's notebooks zips as downloaded: "
                         "a fresh venv, offline, its own install line (tabbook.render.notebooks)")
    nbs.add_argument("frameworks", nargs="*", help="tabs (default: all)")
    nbs.add_argument("--fetch", action="store_true", help="set-up first: download the wheels the runs need "
                     "(the package registries), into ~/.cache/tabbook/notebook-wheels")
    nbs.add_argument("--fetch-only", action="store_true", help="only the set-up")
    nbs.add_argument("--python", action="append", default=[], metavar="TAB=X.Y",
                     help="run a framework's notebooks on this Python instead of 3.12 (Colab's)")
    pdf = sub.add_parser("pdf", help="one PDF per framework in build/pdf")
    pdf.add_argument("--frameworks", help="comma list: build only these PDFs")
    pdf.add_argument("--frozen", action="store_true", help="never execute; fail if the store is stale")
    pdf.add_argument("--force", action="store_true", help="re-execute every unit first")
    pdf.add_argument("--jobs", type=int, default=0, help="parallel units / LaTeX runs (default: cores)")
    st = sub.add_parser("site", help="the complete site: the PDFs, then the HTML with them inside ([site] versions: every edition, each from its commit)")
    st.add_argument("--frozen", action="store_true", help="never execute; fail if the store is stale")
    st.add_argument("--force", action="store_true", help="re-execute every unit first")
    st.add_argument("--jobs", type=int, default=0, help="parallel units / LaTeX runs (default: cores)")
    st.add_argument("--no-pdfs", action="store_true",
                    help="the HTML alone (a preview, or a machine without TeX): no PDF is built or linked")
    sub.add_parser("serve", help="live preview: rebuild on save, reload the page (serve --help)", add_help=False)
    lc = sub.add_parser("linkcheck", help="check every internal link and anchor of a built site")
    lc.add_argument("site", nargs="?", type=Path, help="the site (default: build/html)")
    lc.add_argument("--external", action="store_true", help="also ask every http(s) link's server (network)")
    vf = sub.add_parser("verify-freeze", help="re-execute the store's CPU entries into a throw-away store and "
                        "report outputs that differ beyond timings, addresses and dates (review a _freeze-only change)")
    vf.add_argument("--only", nargs="+", metavar="SECTION.md", help="only these sections")
    vf.add_argument("--frameworks", help="comma list: only these frameworks")
    vf.add_argument("--jobs", type=int, default=0, help="parallel units (default: core count)")
    vf.add_argument("--scheduler", metavar="tls://HOST:PORT", help="execute on this Dask cluster's workers")
    lk = sub.add_parser("lock", help="pin every package of each framework's environment with its hashes "
                        "(envs/NAME.hashes.txt, installed in hash-checking mode)")
    lk.add_argument("frameworks", nargs="*", help="tabs (default: all with a requirements file)")
    ev = sub.add_parser("envs", help="create the framework environments")
    ev.add_argument("frameworks", nargs="*", help="tabs (default: all)")
    wh = sub.add_parser("wheelhouse", help="download what an offline (GPU) machine needs to execute")
    wh.add_argument("--dest", type=Path, help="where (default: build/wheelhouse)")
    wh.add_argument("--python-version", default="3.12", help="that machine's Python (default 3.12)")
    mg = sub.add_parser("merge-stores", help="merge the current entries of freeze stores (shards, CI jobs)")
    mg.add_argument("stores", nargs="+", type=Path, metavar="DIR", help="stores to merge, first wins a tie")
    mg.add_argument("--into", type=Path, help="the store to merge into (default: the book's _freeze)")
    sub.add_parser("katex", help="install KaTeX now (builds do it on demand) and print where")
    sub.add_parser("clean", help="remove build/")
    sub.add_parser("clear", help="remove build/ (d2lbook's name; the freeze store _freeze/ stays)")
    nw = sub.add_parser("new", help="make a small working book in DIR (config.ini, index.md, one page)")
    nw.add_argument("dir", type=Path, help="the new book's folder (made; must be empty if it exists)")
    wm = sub.add_parser("warm", help="the book's warm builder, which later builds hand over to (tabbook.warm)")
    wm.add_argument("--stop", action="store_true", help="end it")
    wm.add_argument("--wait", type=float, metavar="SECONDS",
                    help="wait up to SECONDS until it accepts builds (exit status 1 if it does not)")
    # How a build starts the warm builder in the background (tabbook.warm.client.start).
    wm.add_argument("--serve", type=Path, metavar="SOCKET", help=argparse.SUPPRESS)



#: ``tabbook build TARGET``: d2lbook's targets (``d2lbook build --help``), in the order ``all`` runs them.
D2LBOOK_TARGETS = ("eval", "rst", "html", "pdf", "pkg", "lib", "slides", "linkcheck", "all")
