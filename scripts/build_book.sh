#!/usr/bin/env bash
# Build the rendered book into _build/html, executing every chapter at REPRO_SCALE (default quick).
# Sets up .venv and the vendored browser scripts first; fails on any warning or failing cell.
#
# Execution: lib.run executes each chapter (per-cell time limit by scale: lib/run.py CELL_TIMEOUT_S)
# unless the book's jupyter-cache already holds its execution from this very context (same scale,
# seed, threads, lib/, results/ and requirements; e.g. by scripts/test.sh just before), and stores it
# there; jupyter-book (execute_notebooks: cache) then renders the cached executions.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup_env.sh
bash scripts/fetch_static.sh
export REPRO_SCALE=${REPRO_SCALE:-quick}
echo "[book] executing the chapters at scale $REPRO_SCALE (each only if not cached from this context)"
if ! .venv/bin/python -m lib.run --book-cache --out _build/executed chapters/*.ipynb; then
  echo "[book] a chapter failed (above): not building the book" >&2
  exit 1
fi
echo "[book] building at scale $REPRO_SCALE"
# --all: re-read every page (from the cache), so no page keeps outputs of another scale or seed
.venv/bin/jupyter-book build . -n -W --keep-going --all
echo "[book] open _build/html/index.html"
