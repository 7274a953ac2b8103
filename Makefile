# Two commands set everything up on a fresh machine: `make html` and `make test`.
# Everything else is optional. The builder's venv is .venv; framework venvs live in
# ~/.cache/tabbook/venvs, keyed by their lock files, and are created on demand.

PY        ?= python3.11
VENV      := .venv
VPY       := $(VENV)/bin/python
# The builder as any book uses it: the installed `tabbook` command (packaging/tabbook, installed
# editable into .venv, so it runs this checkout's code as it is), with this repository's exact lock
# (envs/builder.txt) for reproducible outputs; test tools come separately (envs/builder-test.txt).
TB        := $(VENV)/bin/tabbook
BUILDER_STAMP := $(VENV)/.installed-$(shell cat envs/builder.txt packaging/tabbook/pyproject.toml packaging/tabbook/hatch_build.py 2>/dev/null | sha256sum | cut -c1-12)
# What only the tests add (pytest, ruff, Playwright, the optional Dask extra of `build --scheduler`, actionlint):
# `make test` installs it; a plain `make html` never does.
TEST_STAMP := $(VENV)/.extra-test-$(shell cat envs/builder-test.txt envs/builder-dask.txt 2>/dev/null | sha256sum | cut -c1-12)
export TF_CPP_MIN_LOG_LEVEL := 2

.PHONY: bytecode html site test check lib envs clean serve unit frozen-site freeze-check exec-check lint typecheck pdf tex libtest dist browser axe bench d2lbook-book d2l-side-by-side wheelhouse notebooks-check d2lbook-venv differential gpu-bundle corpus fuzz-incremental bench-realbook

html: $(BUILDER_STAMP) bytecode
	$(TB) build $(if $(FORCE),--force)

# The complete site, as published: the four PDFs, then the HTML with them inside and linked
# from every page (`make html` alone says on its pages that the PDFs are not in the build).
site: $(BUILDER_STAMP) tex
	$(TB) site $(if $(FORCE),--force)

# pip's own output (which can be pages of the machine's configuration warnings) goes to a log,
# shown only when an install fails: a newcomer's `make html` prints our lines, not pip's.
PIP_QUIET = $(VPY) -m pip install --quiet --disable-pip-version-check
PIP_LOG   = $(VENV)/pip-install.log

$(BUILDER_STAMP): envs/builder.txt packaging/tabbook/pyproject.toml packaging/tabbook/hatch_build.py
	@test -x $(VPY) || $(PY) -m venv $(VENV)
	@echo "[setup] the builder's environment: $(VENV) from envs/builder.txt (pip's log: $(PIP_LOG))"
	@{ $(PIP_QUIET) -r envs/builder.txt && $(PIP_QUIET) --no-deps -e packaging/tabbook; } >$(PIP_LOG) 2>&1 \
		|| { tail -n 40 $(PIP_LOG); echo "[setup] pip failed: $(PIP_LOG)"; exit 1; }
	@$(MAKE) --no-print-directory bytecode
	@rm -f $(VENV)/.installed-* && touch $@

# tabbook's own bytecode, written at install as pip writes a wheel's: an editable install has none,
# and where PYTHONDONTWRITEBYTECODE is set (CI, these machines) every command would compile the
# package from source again (a tenth of a second, half a no-op build). `make html` and `make test`
# bring it up to date (compileall rewrites only what changed: the stat of each file otherwise).
bytecode:
	@$(VPY) -m compileall -q tabbook

$(TEST_STAMP): envs/builder-test.txt envs/builder-dask.txt $(BUILDER_STAMP)
	@echo "[setup] the test tools: envs/builder-test.txt into $(VENV) (pip's log: $(PIP_LOG))"
	@$(PIP_QUIET) -r envs/builder-test.txt >$(PIP_LOG) 2>&1 \
		|| { tail -n 40 $(PIP_LOG); echo "[setup] pip failed: $(PIP_LOG)"; exit 1; }
	@rm -f $(VENV)/.extra-test-* && touch $@

envs: $(BUILDER_STAMP)
	$(TB) envs

check: $(BUILDER_STAMP)
	$(TB) check

lib: $(BUILDER_STAMP)
	$(TB) lib

# The d2l wheel, installed into every framework env and tested there (+ a bare Python 3.12).
libtest: $(BUILDER_STAMP)
	$(TB) libtest

# Both distributions: the d2l library (this folder's pyproject.toml) and the tabbook tool
# (packaging/tabbook/pyproject.toml, which packages tabbook/ with its data files): its sdist,
# then its wheel built from that sdist (uv build), so a broken sdist cannot go unnoticed.
dist: $(BUILDER_STAMP)
	$(VPY) -m pip wheel . --no-deps --quiet -w build/dist
	$(VENV)/bin/uv build --quiet packaging/tabbook --out-dir build/dist
	@ls build/dist/*.whl build/dist/*.tar.gz

lint: $(BUILDER_STAMP) $(TEST_STAMP)
	$(VPY) -m ruff check .

# mypy --strict over the builder (pyproject.toml's [tool.mypy]: which parts, and why the rest waits).
typecheck: $(BUILDER_STAMP) $(TEST_STAMP)
	$(VPY) -m mypy

# The PDFs are part of the product, so their tests run everywhere `make test` runs, not only
# under CI: TeX (like Chromium) is installed first when missing (Debian packages, root once).
unit: $(BUILDER_STAMP) $(TEST_STAMP) bytecode browser axe tex d2lbook-venv
	TABBOOK_TEST_STRICT=1 $(VPY) -m pytest -q -rs tests

# The committed freeze store must match the sources (no stale or missing entry),
# and the committed d2l/ must be what `make lib` generates.
freeze-check: $(BUILDER_STAMP)
	$(TB) lib --check
	$(TB) build --frozen --no-render --strict

# Execute the whole book in every framework into a throw-away store, so committed
# outputs can never hide code that no longer runs.
exec-check: $(BUILDER_STAMP)
	@tmp=$$(mktemp -d); trap 'rm -rf $$tmp' EXIT; \
	$(TB) build --force --no-render --freeze-dir $$tmp --strict

# The site builds from the committed store alone (TABBOOK_VENVS points at an empty
# folder: no framework environment is used). It is built before the unit tests, so the browser
# tests of the real pages check this run's site, never one an earlier run left in build/html.
frozen-site: $(BUILDER_STAMP)
	@tmp=$$(mktemp -d); trap 'rm -rf $$tmp' EXIT; TABBOOK_VENVS=$$tmp $(TB) build --frozen --strict
	$(TB) linkcheck build/html

# Every notebook of the site's notebooks zips runs as a reader downloads it (issue 53, item 3;
# tabbook/render/notebooks.py): a fresh venv per framework, offline, each notebook's own install
# line (generated from envs/<tab>.txt), on the CPU. Set-up first (the one step that uses the
# package registries; cached in ~/.cache/tabbook/notebook-wheels, free the second time), then the
# runs with pip told no index. Python 3.12 (Colab's) for JAX and TensorFlow; PyTorch on 3.11: the
# only torch 2.13.0 for 3.12 a registry here has is the CUDA build (4 GB with its nvidia-* wheels),
# so its CPU wheel (local disk, cp311) stands in; the line it runs, torch==2.13.0, is the one a
# Colab reader's pip resolves to that CUDA build. MXNet is skipped and says why (d2l[mxnet] installs
# nothing on 3.12: MXNet 1.9.1 has no wheel for it).
NOTEBOOK_PYTHONS := --python pytorch=3.11
notebooks-check: $(BUILDER_STAMP) frozen-site
	$(TB) notebooks --fetch-only $(NOTEBOOK_PYTHONS)
	$(TB) notebooks $(NOTEBOOK_PYTHONS)

# ... and every internal link of it resolves.
test: lint typecheck frozen-site unit freeze-check exec-check libtest notebooks-check
	$(TB) linkcheck build/html
	@echo "make test: all checks passed"

# What a GPU build machine without network needs to execute the book (README: Executing on a
# GPU machine): wheels for its Python into build/wheelhouse.
wheelhouse: $(BUILDER_STAMP)
	$(TB) wheelhouse $(if $(PYVER),--python-version $(PYVER))

# The wheel folder scripts/gpu-build.sh installs on a GPU machine without network (README:
# Executing on a GPU machine), and what would travel with it: the working tree and the wheels.
gpu-bundle: wheelhouse
	@tree=$$(git ls-files -co --exclude-standard -z | du -cb --files0-from=- 2>/dev/null | tail -1 | cut -f1); \
	wheels=$$(du -sb build/wheelhouse | cut -f1); \
	echo "gpu-bundle: working tree $$((tree / 1048576)) MiB + build/wheelhouse $$((wheels / 1048576)) MiB = $$(((tree + wheels) / 1048576)) MiB"; \
	echo "gpu-bundle: on the GPU machine, from the repository root: bash scripts/gpu-build.sh (OUT=folder for the results)"

# Live preview: rebuilds on save (a prose edit starts no kernel) and reloads the page.
serve: $(BUILDER_STAMP) bytecode
	$(TB) serve --port $(or $(PORT),8000)

# Debian's Chromium for the browser tests and the page-weight benchmark (idempotent).
browser:
	@bash scripts/install-browser.sh

# axe-core, the accessibility checker the browser tests run over the site: from the npm registry,
# pinned with its integrity hash (tests/browser/axe/package-lock.json), installed once into the
# user-wide cache; nothing is loaded from a CDN (tests/browser/axe_core.py).
axe: $(BUILDER_STAMP)
	@$(VPY) tests/browser/axe_core.py

bench: $(BUILDER_STAMP) $(TEST_STAMP) browser
	$(VPY) bench/run.py

# The real books, beside Sphinx + myst-nb on the same generated sources (issue 50; the books are
# not in this repository, see bench/realbook.py):
#   make bench-realbook BOOKS=DIR [RUNS=5] [TOOLS=tabbook,peer,d2lbook]
bench-realbook: $(BUILDER_STAMP)
	TABBOOK_WARM=0 $(VPY) bench/realbook.py --books $(BOOKS) --runs $(or $(RUNS),5) $(if $(TOOLS),--tools $(TOOLS))

tex:
	@bash scripts/install-tex.sh

pdf: $(BUILDER_STAMP) tex
	$(TB) pdf $(if $(FORCE),--force)
	@echo "PDFs: build/pdf/"

clean:
	rm -rf build

# A book written for d2lbook, built as it is (its checkout is only read, except for the
# d2l/ library, which is regenerated in place as `d2lbook build lib` does, and its build/):
#   make d2lbook-book BOOK=/path/to/d2l-en [EXECUTE=1] [PARTIAL=1]
# OVERLAY holds what d2lbook has no key for (the environments; d2l-en's:
# OVERLAY=books/d2l-en/tabbook.ini); none unless given. EXECUTE=1 runs the code.
d2lbook-book: $(BUILDER_STAMP)
	@test -n "$(BOOK)" || { echo "usage: make d2lbook-book BOOK=/path/to/book [OVERLAY=INI] [EXECUTE=1] [PARTIAL=1]" >&2; exit 2; }
	$(TB) -C $(BOOK) $(if $(OVERLAY),--overlay $(OVERLAY)) build $(if $(EXECUTE),--execute,--no-execute) $(if $(PARTIAL),--partial)
	@echo "site: $(BOOK)/build/html/index.html"

# d2lbook 1.0.3 in its own venv (~/.cache/tabbook/d2lbook-venv-bare: d2lbook==1.0.3,
# setuptools<81, pybtex==0.24.0; made once), for the differential tests (tests/test_differential.py).
d2lbook-venv: $(BUILDER_STAMP)
	@$(VPY) -c 'import sys; sys.path.insert(0, "bench"); import d2lbook_book as b; b.ensure_venv(b.BARE_VENV, autodoc=False)'

# tabbook's reading of a book beside d2lbook 1.0.3's, per page and per tab (bench/differential.py):
# exit 1 on a difference that bench/differential.py does not explain; then the fixtures and
# EXAMPLES (default 50) Hypothesis-generated books. The whole d2l-en takes about a minute (d2lbook's
# reading is cached under build/differential):
#   make differential BOOK=/path/to/d2l-en [EXAMPLES=50]
differential: $(BUILDER_STAMP) d2lbook-venv
	@test -n "$(BOOK)" || { echo "usage: make differential BOOK=/path/to/d2l-en [EXAMPLES=50]" >&2; exit 2; }
	@mkdir -p build/differential
	$(VPY) bench/differential.py --book $(BOOK) --report build/differential/report.tsv --json build/differential/report.json
	DIFFERENTIAL_EXAMPLES=$(or $(EXAMPLES),50) $(VPY) -m pytest -q tests/test_differential.py

# tabbook and d2lbook 1.0.3 timed in one run on the same copy of the book, execution off,
# interleaved, REPEAT rounds (medians; one JSON object on stdout; ~7 min a round for d2l-en):
#   make d2l-side-by-side BOOK=/path/to/d2l-en [REPEAT=3]
REPEAT ?= 3
d2l-side-by-side: $(BUILDER_STAMP)
	@test -n "$(BOOK)" || { echo "usage: make d2l-side-by-side BOOK=/path/to/book [REPEAT=3]" >&2; exit 2; }
	$(VPY) bench/d2l_side_by_side.py --book $(BOOK) --repeat $(REPEAT) --overlay $(or $(OVERLAY),books/d2l-en/tabbook.ini)

# Incremental = clean (issue 49): random sequences of edits to a small book (pages, labels and
# duplicates, references, citations, toc, code cells, #@save, images, config keys), each build
# compared with a clean build of the same sources (tests/incremental_fuzz.py). A difference prints
# its seed and edits; SEED=N replays that one sequence, step by step:
#   make fuzz-incremental [SEEDS=2000] [FIRST=0] [LENGTH=8] [JOBS=1] [SEED=N]
# Sphinx runs in forks of a process that imported it first, as in the warm builder (the named
# cases in make test keep a new interpreter per run); JOBS runs sequences side by side.
fuzz-incremental: $(BUILDER_STAMP)
	TABBOOK_WARM=0 nice -n 19 $(VPY) tests/incremental_fuzz.py $(if $(SEED),--seed $(SEED),--seeds $(or $(SEEDS),2000) --first $(or $(FIRST),0)) --length $(or $(LENGTH),8) $(if $(JOBS),--jobs $(JOBS))

# The corpus (issue 44; not in CI: the books are not ours): every d2lbook book in a folder (one per
# subfolder with a config.ini, or its docs/), copied and built unchanged by tabbook with execution
# off (then --strict), and by d2lbook 1.0.3 beside it; one row per book (exit, pages rendered of
# those d2lbook selects, warnings by kind, times), the Markdown table BENCHMARKS.md keeps, exit 1
# when a book does not build as the contract says (bench/corpus.py):
#   make corpus BOOKS=/path/to/books [ONLY=d2l-pt,mlc-en] [D2LBOOK=0] [WORKDIR=/tmp/corpus]
corpus: $(BUILDER_STAMP) d2lbook-venv
	@test -n "$(BOOKS)" || { echo "usage: make corpus BOOKS=/path/to/books [ONLY=a,b] [D2LBOOK=0] [WORKDIR=DIR]" >&2; exit 2; }
	$(VPY) bench/corpus.py $(BOOKS) $(if $(ONLY),--only $(ONLY)) $(if $(filter 0,$(D2LBOOK)),--no-d2lbook) $(if $(WORKDIR),--workdir $(WORKDIR) --json $(WORKDIR)/corpus.json)
