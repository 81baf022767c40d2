"""The results file: versioned JSON holding every raw sample, cell statistics,
validity and the environment fingerprint.

Provenance (date, host, load, steal, commit) lives in a separate file beside it, so
the results themselves stay byte-identical when the same measurement is repeated.
`model` holds runs, cells and results; `details` the typed payload of each run;
`files` reading (every version) and writing (the newest); `shard` the record a shard
of a session carries; `merge` joins files (the shards of one session, or distinct cells).
"""

from __future__ import annotations

from icount.jsonout import dumps
from icount.results.files import (
    FORMAT,
    MAX_RESULTS_BYTES,
    VERSION,
    check_writable,
    holds_measurements,
    load,
    next_free_path,
    output_path,
    provenance_path,
    read_bounded,
    read_json,
    refuse_to_replace,
    release_unused,
    results_json,
    save,
    to_json,
    write_atomic,
)
from icount.results.merge import load_inputs, merge, merge_inputs
from icount.results.model import UNIT_INSTRUCTIONS, UNIT_PER_REQUEST, Cell, Results, Run

__all__ = [
    "FORMAT",
    "MAX_RESULTS_BYTES",
    "UNIT_INSTRUCTIONS",
    "UNIT_PER_REQUEST",
    "VERSION",
    "Cell",
    "Results",
    "Run",
    "check_writable",
    "dumps",
    "holds_measurements",
    "load",
    "load_inputs",
    "merge",
    "merge_inputs",
    "next_free_path",
    "output_path",
    "provenance_path",
    "read_bounded",
    "read_json",
    "refuse_to_replace",
    "release_unused",
    "results_json",
    "save",
    "to_json",
    "write_atomic",
]
