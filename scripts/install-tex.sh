#!/usr/bin/env bash
# Install what `make pdf` needs from Debian: xelatex + latexmk, the LaTeX packages
# Sphinx's LaTeX builder uses, TeX Gyre + Inconsolata fonts, rsvg-convert (SVG → PDF)
# and poppler's pdftotext/pdftoppm (tests, page previews).
# Idempotent (see apt-ensure.sh). Usage: scripts/install-tex.sh [--check]
set -euo pipefail
exec bash "$(dirname "$0")/apt-ensure.sh" install-tex ${1:-} -- \
  latexmk texlive-xetex texlive-latex-recommended texlive-latex-extra texlive-fonts-recommended \
  fonts-freefont-otf fonts-texgyre fonts-texgyre-math fonts-inconsolata librsvg2-bin poppler-utils
