"""$SOURCE_DATE_EPOCH, the date of a ledger entry in a reproducible build: ASCII digits
of seconds since 1970, to the end of year 9999. Past it was an internal error (year
10000 has no YYYY), and Arabic-Indic digits passed `str.isdigit` as a date."""

from __future__ import annotations

import pytest

from icount.compare import ledger
from icount.errors import UsageError
from icount.numparse import MAX_EPOCH, parse_epoch


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("0", 0), ("1700000000", 1700000000), (" 1700000000\n", 1700000000),
     (str(MAX_EPOCH), MAX_EPOCH)],
)  # fmt: skip
def test_seconds_in_ascii_digits_are_read(text: str, seconds: int) -> None:
    assert parse_epoch(text) == seconds


@pytest.mark.parametrize(
    "text",
    [str(MAX_EPOCH + 1), "99999999999999999999", "\u0661\u0667\u0660\u0660",
     "\uff11\uff17\uff10\uff10", "-1", "+5", "1.5", "1e9", "", " ", "1_000", "0x10", "nan",
     "17\u200f00"],
)  # fmt: skip
def test_anything_else_is_one_line_naming_the_variable(
    text: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(UsageError) as info:
        parse_epoch(text)
    message = str(info.value)
    assert message.startswith(f"SOURCE_DATE_EPOCH={text!r} is not a number of seconds")
    assert "\n" not in message
    monkeypatch.setenv("SOURCE_DATE_EPOCH", text)
    with pytest.raises(UsageError):  # the ledger's date, as compare --ledger takes it
        ledger.today()


def test_the_ledger_dates_an_entry_by_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    assert ledger.today() == "2023-11-14"
    monkeypatch.setenv("SOURCE_DATE_EPOCH", str(MAX_EPOCH))
    assert ledger.today() == "9999-12-31"
