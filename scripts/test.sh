#!/usr/bin/env bash
# Run every test: lib unit tests, structure tests, reproducibility, and every chapter notebook executed
# top to bottom at the quick scale (tests/test_chapters.py: a cell that raises fails its notebook, as
# with nbval --nbval-lax; its assert and check cells are the checks). Sets up .venv first.
# Each notebook runs once, with a per-cell time limit (lib/run.py: a stuck kernel fails within minutes,
# naming the cell), and is stored in the book's execution cache, so that scripts/build_book.sh run
# afterwards renders these executions instead of running every chapter again.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup_env.sh
export REPRO_SCALE=quick
exec .venv/bin/python -m pytest tests --durations=15 "$@"
