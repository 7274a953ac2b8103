#!/usr/bin/env bash
# Install what the browser tests and bench/page_weight.py need from Debian: Chromium (driven by
# Playwright through executable_path; Playwright never downloads a browser here) and a font.
#
# Idempotent: does nothing (not even `apt-get update`) when every package is already
# installed. Needs root (or sudo) the first time. Usage: scripts/install-browser.sh [--check]
#   --check   only report; exit 1 when something is missing.
set -euo pipefail

PACKAGES=(
  chromium
  fonts-dejavu-core
)

missing=()
for pkg in "${PACKAGES[@]}"; do
  status=$(dpkg-query -W -f='${db:Status-Status}' "$pkg" 2>/dev/null || true)
  [[ $status == installed ]] || missing+=("$pkg")
done

if [[ ${#missing[@]} -eq 0 ]]; then
  echo "install-browser: $(/usr/bin/chromium --version 2>/dev/null || echo chromium) already installed"
  exit 0
fi
if [[ ${1:-} == --check ]]; then
  echo "install-browser: missing: ${missing[*]}" >&2
  exit 1
fi
if ! command -v apt-get >/dev/null; then
  echo "install-browser: no apt-get here; install these by hand: ${missing[*]}" >&2
  exit 1
fi

SUDO=()
if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null || { echo "install-browser: run as root (or install sudo)" >&2; exit 1; }
  SUDO=(sudo)
fi

echo "install-browser: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${SUDO[@]}" apt-get update -qq
"${SUDO[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "install-browser: done"
