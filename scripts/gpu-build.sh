#!/usr/bin/env bash
# Execute the book's GPU tabs on a GPU build machine that has its frameworks and no network, and
# leave the new store entries in one tarball. Run from the repository root of a copy of the
# working tree that carries the wheel folder `make gpu-bundle` wrote (build/wheelhouse):
#
#     bash scripts/gpu-build.sh            # OUT=/some/folder to choose where the results go
#
# Why each step is as it is:
# - The machine's Python is often itself a venv (a CUDA image's /opt/torch/.venv). A venv made
#   with --system-site-packages from it would see the *base* interpreter's packages, not its
#   torch and jax, so the kernel's venv is made from the base interpreter and given a .pth file
#   naming the machine env's site-packages: it sees the machine's frameworks, and what the
#   wheels add (ipykernel, nbclient, ...) goes into it alone, without touching the machine's env.
# - pip resolves against what the machine has (numpy, the frameworks) and takes the rest from
#   the wheel folder, never from the network (--no-index).
# - The build executes every unit of the GPU tabs (--force: entries computed on a CPU are
#   replaced), the timing pages ([build] run_alone) alone and the others four to a GPU, then
#   writes the changed part of _freeze/ and the report under $OUT.
# Variables: GPU_PYTHON (the machine's interpreter; default: python3 on the PATH),
# WHEELS (default build/wheelhouse), FRAMEWORKS (default pytorch,jax), OUT (default build/gpu-out),
# UNITS_PER_GPU (default 4), ONLY (section files to execute, space-separated; default all),
# BUILD_SECONDS (stop the build with Ctrl-C after this long, keeping the entries it finished, so
# a machine lent for minutes still returns what was done; default: no limit), FACTS (a Python
# file run after the build with the machine's interpreter, its output in $OUT/facts.txt; default
# scripts/gpu-facts.py where it exists; FACTS_SECONDS bounds it, default 120).
set -euo pipefail

root=$(pwd)
# The builder is this checkout's tabbook (the script's own repository), whichever book it builds.
tabbook_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
test -f config.ini || { echo "gpu-build.sh: run it from the book's root (no config.ini in $root)" >&2; exit 2; }
machine_py=${GPU_PYTHON:-$(command -v python3)}
wheels=${WHEELS:-build/wheelhouse}
frameworks=${FRAMEWORKS:-pytorch,jax}
out=${OUT:-build/gpu-out}
per_gpu=${UNITS_PER_GPU:-4}
venv=${GPU_VENV:-/tmp/tabbook-gpu-venv}
start=$(date +%s)
mkdir -p "$out"
log="$out/gpu-build.log"
say() { echo "[gpu-build +$(( $(date +%s) - start ))s] $*" | tee -a "$log"; }

test -f "$wheels/requirements.txt" || { echo "gpu-build.sh: $wheels/requirements.txt missing: run \`make gpu-bundle\` where there is network" >&2; exit 2; }

# 1. The machine.
say "machine: $(uname -srm), $(nproc) cores, python $machine_py"
nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv,noheader 2>&1 | tee -a "$log" || true

# 2. A venv that sees the machine env's packages through a .pth file (made by the machine's
#    interpreter: venv then uses that interpreter's base, whether or not it is itself a venv).
site_dirs=$("$machine_py" -c 'import site; print(":".join(p for p in site.getsitepackages() if p))')
rm -rf "$venv"
"$machine_py" -m venv --without-pip "$venv"
purelib=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
tr ':' '\n' <<<"$site_dirs" > "$purelib/machine-env.pth"
say "kernel venv $venv sees: $site_dirs"

# 3. The wheels, with pip from the machine env (the venv has none of its own), no network.
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-index --no-compile \
    --find-links "$wheels" -r "$wheels/requirements.txt" 2>&1 | tee -a "$log"
"$venv/bin/python" - <<'EOF' 2>&1 | tee -a "$log"
import importlib
for name in ("torch", "jax", "ipykernel", "nbclient", "matplotlib"):
    try:
        mod = importlib.import_module(name)
        print(f"  {name} {getattr(mod, '__version__', '?')} from {mod.__file__}")
    except Exception as exc:  # report every missing piece, not only the first
        print(f"  {name}: {type(exc).__name__}: {exc}")
EOF
say "installed"

# 4. Execute. The overlay lets several non-timing units share the GPU.
overlay="$venv/gpu-overlay.ini"
printf '[build]\nunits_per_gpu = %s\n' "$per_gpu" > "$overlay"
py="$venv/bin/python"
args=(--overlay "$overlay")
for fw in ${frameworks//,/ }; do args+=(--python "$fw=$py"); done
only=()
if [ -n "${ONLY:-}" ]; then only=(--only $ONLY); fi
export PYTHONUNBUFFERED=1 TF_CPP_MIN_LOG_LEVEL=2
touch "$venv/stamp"
export PYTHONPATH="$tabbook_root"
"$py" -m tabbook -C "$root" "${args[@]}" build --dry-run --frameworks "$frameworks" --force "${only[@]}" 2>&1 | tee -a "$log"
set +e
limit=()
if [ -n "${BUILD_SECONDS:-}" ]; then limit=(timeout -s INT -k 20 "$BUILD_SECONDS"); fi
"${limit[@]}" "$py" -m tabbook -C "$root" "${args[@]}" build --no-render --frameworks "$frameworks" --force "${only[@]}" 2>&1 | tee -a "$log"
status=${PIPESTATUS[0]}
set -e
say "build exited $status"

# 5. What comes back: the entries that changed, the report, the log.
# Only entries a GPU computed: a CPU-only unit executed here carries the machine's frameworks in
# its key, so bringing it back would make every CPU build execute it again.
changed=$(cd "$root" && find _freeze -type f -name '*.ipynb' -newer "$venv/stamp" | sort \
    | "$machine_py" -c '
import json, sys
for path in sys.stdin.read().split():
    meta = json.load(open(path)).get("metadata", {}).get("tabbook", {})
    if meta.get("provenance", {}).get("gpus"):
        print(path)
    else:
        print(f"gpu-build.sh: {path}: left out (executed on the CPU)", file=sys.stderr)
')
if [ -n "$changed" ]; then
    tar czf "$out/freeze.tgz" $changed
    say "$(wc -l <<<"$changed") entries in $out/freeze.tgz"
fi
test -f build/report.json && cp build/report.json "$out/report.json"

# 6. Facts about the machine that the book's prose relies on (what the GPU does), after the
#    build so that they never disturb its timings.
facts=${FACTS:-$tabbook_root/scripts/gpu-facts.py}
if [ -f "$facts" ]; then
    say "facts: $facts"
    (cd "$out" && PYTHONPATH= timeout -k 10 "${FACTS_SECONDS:-120}" "$machine_py" "$facts" > facts.txt 2>&1) \
        || say "facts exited $? (output so far in $out/facts.txt)"
fi
say "done"
exit "$status"
