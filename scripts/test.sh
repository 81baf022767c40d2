#!/usr/bin/env bash
# The whole test suite, as CI runs it (.ci/run calls exactly this): install what is
# missing (scripts/setup.sh), then lint, type-check and run every test.
#
# scripts/test.sh --fast: only the fast tier (every test not marked slow: no valgrind,
# no builds, no servers beyond the fake backend), for the loop of editing (under 2 minutes on a
# 2-core VM with one other job beside it; more on a busier one: docs/benchmarks.md); no
# setup, lint or type-check. Other arguments go to pytest either way.
# It keeps Python's bytecode (of icount, of the tests with pytest's rewritten asserts)
# in a cache outside the tree, even where PYTHONDONTWRITEBYTECODE is set: compiling them
# again in pytest and in each `python -m icount` it starts costs seconds of CPU a run;
# and it spreads the tests over one worker per CPU where pytest-xdist is installed
# (the test extra): a worker waiting on a process leaves the CPU to the other. To run
# them in order in one process (an ordered traceback, --pdb), set ICOUNT_TEST_WORKERS=0
# or pass -p no:xdist; ICOUNT_TEST_WORKERS=N or -n N picks the workers.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [[ "${1:-}" == "--fast" ]]; then
    shift
    unset PYTHONDONTWRITEBYTECODE
    export PYTHONPYCACHEPREFIX=${PYTHONPYCACHEPREFIX:-${XDG_CACHE_HOME:-$HOME/.cache}/icount/pycache}
    want=${ICOUNT_TEST_WORKERS:-auto}
    for arg in "$@"; do
        case $arg in
            -n* | --numprocesses* | no:xdist | -pno:xdist) want=given ;;
        esac
    done
    workers=()
    if [[ $want != given && $want != 0 ]] && $PY -c "import xdist" 2>/dev/null; then
        workers=(-n "$want")
    fi
    exec $PY -m pytest -p no:cacheprovider -q -m "not slow" --durations=10 \
        ${workers[@]+"${workers[@]}"} "$@"
fi
bash scripts/setup.sh
echo "test: ruff"
$PY -m ruff check icount tests scripts
$PY -m ruff format --check icount tests scripts
echo "test: mypy"
$PY -m mypy
echo "test: pytest"
exec $PY -m pytest -p no:cacheprovider --durations=15 "$@"
