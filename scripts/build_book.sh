#!/usr/bin/env bash
# Build the rendered book into _build/html, executing every chapter at REPRO_SCALE (default quick).
# Sets up .venv and the vendored browser scripts first; fails on any warning or failing cell.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup_env.sh
bash scripts/fetch_static.sh
export REPRO_SCALE=${REPRO_SCALE:-quick}
echo "[book] building at scale $REPRO_SCALE"
.venv/bin/jupyter-book build . -n -W --keep-going
echo "[book] open _build/html/index.html"
