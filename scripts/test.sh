#!/usr/bin/env bash
# Run every test: lib unit tests, structure tests, reproducibility, and nbval over all chapters
# (each notebook executed at the quick scale; its assert cells are the checks). Sets up .venv first.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup_env.sh
export REPRO_SCALE=quick
exec .venv/bin/python -m pytest tests chapters --nbval-lax --nbval-current-env \
  --nbval-cell-timeout=600 --durations=15 "$@"
