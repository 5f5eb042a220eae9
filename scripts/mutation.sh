#!/usr/bin/env bash
# Mutation testing of one lib module (README, "Tests that bite"):
#   bash scripts/mutation.sh lib/distill.py [--max-children 2]
# installs the development tools (requirements-dev.txt: mutmut, pinned) into .venv, runs mutmut on the
# module with the unit tests and writes the module's record into results/mutation.json.
# Takes minutes per module (mutmut prints its progress); the first run also generates all mutants (~3 min).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup_env.sh
.venv/bin/python -m pip install --quiet -r requirements-dev.txt
exec .venv/bin/python scripts/mutation.py "$@"
