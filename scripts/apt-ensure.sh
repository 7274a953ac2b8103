#!/usr/bin/env bash
# Ensure Debian packages are installed: shared by install-tex.sh and install-browser.sh.
#
# Usage: scripts/apt-ensure.sh NAME [--check] -- PACKAGE...
# Idempotent: does nothing (not even `apt-get update`) when every package is already
# installed. Needs root (or sudo) the first time. --check only reports (exit 1 if missing).
set -euo pipefail

name=$1; shift
check=0
if [[ ${1:-} == --check ]]; then check=1; shift; fi
[[ ${1:-} == -- ]] && shift

missing=()
for pkg in "$@"; do
  status=$(dpkg-query -W -f='${db:Status-Status}' "$pkg" 2>/dev/null || true)
  [[ $status == installed ]] || missing+=("$pkg")
done

if [[ ${#missing[@]} -eq 0 ]]; then
  echo "$name: all packages already installed"
  exit 0
fi
if [[ $check -eq 1 ]]; then
  echo "$name: missing: ${missing[*]}" >&2
  exit 1
fi
if ! command -v apt-get >/dev/null; then
  echo "$name: no apt-get here; install these by hand: ${missing[*]}" >&2
  exit 1
fi

SUDO=()
if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null || { echo "$name: run as root (or install sudo)" >&2; exit 1; }
  SUDO=(sudo)
fi

echo "$name: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${SUDO[@]}" apt-get update -qq
"${SUDO[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "$name: done"
