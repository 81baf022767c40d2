"""escapes.csv_document: the CSV of any rows is what writing every cell through
csv_fields gives, whether its quick check of the written text passes them as they are or
not; a cell a spreadsheet would run starts with a quote, and numbers never do."""

from __future__ import annotations

import csv
import io

from hypothesis import given, settings
from hypothesis import strategies as st

from icount.escapes import _write, csv_cell, csv_document, csv_fields

# the characters that matter at a field's start and around it, and some plain ones
_TEXT = st.text(alphabet=st.sampled_from(list("=+-@'\"\t\r\0\n,.eE0123456789ab x")), max_size=8)
_CELL = st.one_of(_TEXT, st.integers(-(10**6), 10**6), st.floats(allow_nan=False))
_ROWS = st.lists(st.lists(_CELL, min_size=1, max_size=4), min_size=1, max_size=5)


@settings(max_examples=400, deadline=None)
@given(_ROWS)
def test_the_quick_check_never_passes_a_cell_that_needs_escaping(
    rows: list[list[object]],
) -> None:
    text = csv_document(rows)
    assert text == _write(csv_fields(rows))
    assert len(list(csv.reader(io.StringIO(text, newline="")))) == text.count("\n")


def test_numbers_stay_numbers_and_names_are_quoted() -> None:
    assert [csv_cell(v) for v in (-5, -1.5, "-12", "-0.5000", "+1e5", "-1.", ".5")] == [
        -5, -1.5, "-12", "-0.5000", "+1e5", "-1.", ".5"
    ]  # fmt: skip
    assert [csv_cell(v) for v in ("-", "-2+3", "=1", "@x", "'a", "\t", "a=1", "")] == [
        "'-", "'-2+3", "'=1", "'@x", "''a", "'\t", "a=1", ""
    ]  # fmt: skip
    assert csv_document([["name", "delta"], ["-2+3", "-12"], ["ok", -1]]) == (
        "name,delta\n'-2+3,-12\nok,-1\n"
    )
    # digits of other scripts are no number to a spreadsheet: a formula's start, quoted
    assert [csv_cell(v) for v in ("-\u0663", "+\uff11", "-1\u0663")] == [
        "'-\u0663", "'+\uff11", "'-1\u0663"
    ]  # fmt: skip
    assert csv_document([["name"], ["-\u0663"]]) == "name\n'-\u0663\n"
