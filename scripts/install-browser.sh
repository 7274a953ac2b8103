#!/usr/bin/env bash
# Install what the browser tests and bench/page_weight.py need from Debian: Chromium (driven by
# Playwright through executable_path; Playwright never downloads a browser here) and a font.
# Idempotent (see apt-ensure.sh). Usage: scripts/install-browser.sh [--check]
set -euo pipefail
exec bash "$(dirname "$0")/apt-ensure.sh" install-browser ${1:-} -- chromium fonts-dejavu-core
