"""The one checked parser of numbers a user types: ASCII digits only, finite, in range.

Python's int() and float() take Unicode digits (Arabic-Indic, fullwidth), underscores ('1_0'), 'nan'
and 'inf', and pydantic takes most of them too; none is a number anyone means on a
command line, and each reached icount's core as one (a NaN --min-delta made every
change unchanged). Every numeric option goes through here (icount/cli/fastargs.py for
typer's int and float options, numfmt.parse_percent, shard specs), so each error
names the flag and says what it takes.
"""

from __future__ import annotations

import re
from fractions import Fraction

from icount.errors import UsageError

_INTEGER = re.compile(r"[+-]?[0-9]{1,18}")
# a plain decimal, with an exponent of at most two digits (1e99999 would take seconds
# to make exact)
_DECIMAL = re.compile(
    r"[+-]?(?:[0-9]{1,30}(?:\.[0-9]{0,30})?|\.[0-9]{1,30})(?:[eE][+-]?[0-9]{1,2})?"
)


class NumberError(UsageError):
    """A number on the command line that is not one, or out of range."""


def parse_int(text: str, flag: str, low: int | None = None, high: int | None = None) -> int:
    """'3' -> 3; NumberError naming `flag` for anything but ASCII decimal digits
    (spaces around them are dropped, as typer drops them)."""
    if not _INTEGER.fullmatch(text.strip()):
        raise NumberError(f"{flag} takes a whole number in ASCII digits, got {text!r}")
    value = int(text.strip())
    _check_range(value, text, flag, low, high)
    return value


def parse_exact(text: str, flag: str, what: str = "a number like 1 or 0.5") -> Fraction:
    """The exact value of a decimal such as '0.7' (7/10), for comparisons that must
    hold exactly at a limit; NumberError naming `flag` otherwise."""
    if not _DECIMAL.fullmatch(text.strip()):
        raise NumberError(f"{flag} takes {what} in ASCII digits, got {text!r}")
    return Fraction(text.strip())


def parse_float(text: str, flag: str, low: float | None = None, high: float | None = None) -> float:
    """'1.5' -> 1.5, finite; NumberError naming `flag` otherwise."""
    value = float(parse_exact(text, flag))
    _check_range(value, text, flag, low, high)
    return value


def _check_range(value: float, text: str, flag: str, low: float | None, high: float | None) -> None:
    if low is not None and value < low:
        raise NumberError(f"{flag} must be at least {low:g}, got {text!r}")
    if high is not None and value > high:
        raise NumberError(f"{flag} must be at most {high:g}, got {text!r}")


def parse_percent_exact(text: str, flag: str) -> Fraction:
    """'1', '1%' or '0.5%' -> the exact fraction (1/100, 1/200), above 0% and below
    1000%; NumberError naming `flag` otherwise."""
    raw = text.strip().removesuffix("%").strip()
    if not _DECIMAL.fullmatch(raw):
        raise NumberError(f"{flag} takes a percentage like 1 or 0.5% in ASCII digits, got {text!r}")
    value = Fraction(raw) / 100
    if not 0 < value < 10:
        raise NumberError(f"{flag} must be above 0% and below 1000%, got {text!r}")
    return value


def parse_percent(text: str, flag: str) -> float:
    """'1', '1%' or '0.5%' -> a fraction (0.01, 0.005)."""
    return float(parse_percent_exact(text, flag))


_EPOCH = re.compile(r"[0-9]{1,12}")
# 9999-12-31T23:59:59Z: the last second a four-digit year (a date's YYYY-MM-DD) can name
MAX_EPOCH = 253_402_300_799


def parse_epoch(text: str, name: str = "SOURCE_DATE_EPOCH") -> int:
    """Seconds since 1970 as `date +%s` writes them ($SOURCE_DATE_EPOCH: ASCII digits,
    spaces around them dropped), up to the end of year 9999; NumberError naming `name`
    for anything else (Arabic-Indic digits, a sign, a fraction, year 10000)."""
    raw = text.strip()
    if not _EPOCH.fullmatch(raw) or int(raw) > MAX_EPOCH:
        raise NumberError(
            f"{name}={text!r} is not a number of seconds since 1970 in ASCII digits, "
            f"0 to {MAX_EPOCH} (the end of year 9999)"
        )
    return int(raw)
