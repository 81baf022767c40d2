#!/usr/bin/env bash
# The whole test suite, as CI runs it (.ci/run calls exactly this): install what is
# missing (scripts/setup.sh), then lint, type-check and run every test.
#
# scripts/test.sh --fast: only the fast tier (every test not marked slow: no valgrind,
# no builds, no servers beyond the fake backend), in under 2 minutes, for the loop of
# editing; no setup, lint or type-check. Other arguments go to pytest either way.
# It keeps Python's bytecode (of icount, of the tests with pytest's rewritten asserts)
# in a cache outside the tree, even where PYTHONDONTWRITEBYTECODE is set: compiling them
# again in pytest and in each `python -m icount` it starts costs seconds of CPU a run;
# and it spreads the tests over one worker per CPU where pytest-xdist is installed
# (the test extra): a worker waiting on a process leaves the CPU to the other.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [[ "${1:-}" == "--fast" ]]; then
    shift
    unset PYTHONDONTWRITEBYTECODE
    export PYTHONPYCACHEPREFIX=${PYTHONPYCACHEPREFIX:-${XDG_CACHE_HOME:-$HOME/.cache}/icount/pycache}
    workers=()
    if $PY -c "import xdist" 2>/dev/null; then
        workers=(-n auto)
    fi
    exec $PY -m pytest -p no:cacheprovider -q -m "not slow" --durations=10 "${workers[@]}" "$@"
fi
bash scripts/setup.sh
echo "test: ruff"
$PY -m ruff check icount tests scripts
$PY -m ruff format --check icount tests scripts
echo "test: mypy"
$PY -m mypy
echo "test: pytest"
exec $PY -m pytest -p no:cacheprovider --durations=15 "$@"
