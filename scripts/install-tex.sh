#!/usr/bin/env bash
# Install what `make pdf` needs from Debian: xelatex + latexmk, the LaTeX packages
# Sphinx's LaTeX builder uses, TeX Gyre + Inconsolata fonts, rsvg-convert (SVG → PDF)
# and poppler's pdftotext/pdftoppm (tests, page previews).
#
# Idempotent: does nothing (not even `apt-get update`) when every package is already
# installed. Needs root (or sudo) the first time. Usage: scripts/install-tex.sh [--check]
#   --check   only report; exit 1 when something is missing.
set -euo pipefail

PACKAGES=(
  latexmk
  texlive-xetex
  texlive-latex-recommended
  texlive-latex-extra
  texlive-fonts-recommended
  fonts-freefont-otf
  fonts-texgyre
  fonts-texgyre-math
  fonts-inconsolata
  librsvg2-bin
  poppler-utils
)

missing=()
for pkg in "${PACKAGES[@]}"; do
  status=$(dpkg-query -W -f='${db:Status-Status}' "$pkg" 2>/dev/null || true)
  [[ $status == installed ]] || missing+=("$pkg")
done

if [[ ${#missing[@]} -eq 0 ]]; then
  echo "install-tex: all TeX packages already installed"
  exit 0
fi
if [[ ${1:-} == --check ]]; then
  echo "install-tex: missing: ${missing[*]}" >&2
  exit 1
fi
if ! command -v apt-get >/dev/null; then
  echo "install-tex: no apt-get here; install these by hand: ${missing[*]}" >&2
  exit 1
fi

SUDO=()
if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null || { echo "install-tex: run as root (or install sudo)" >&2; exit 1; }
  SUDO=(sudo)
fi

echo "install-tex: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${SUDO[@]}" apt-get update -qq
"${SUDO[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "install-tex: done"
