#!/usr/bin/env bash
# The whole test suite, as CI runs it (.ci/run calls exactly this): install what is
# missing (scripts/setup.sh), then lint, type-check and run every test.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
PY=${PYTHON:-python3}
echo "test: ruff"
$PY -m ruff check icount tests scripts
$PY -m ruff format --check icount tests scripts
echo "test: mypy"
$PY -m mypy
echo "test: pytest"
exec $PY -m pytest -p no:cacheprovider --durations=15 "$@"
