"""Stable number formatting shared by every table icount prints.

Counts are shown with 4 significant digits and a k/M/G suffix, so that a 1% change
is always visible; the legend line says what the suffixes mean. Formatting never
depends on the locale.
"""

from __future__ import annotations

import math

LEGEND = "k = thousand, M = million, G = billion instructions"
UNIT_BYTES = "bytes"  # the unit of the cells of `icount size -o`
BYTES_LEGEND = "KiB = 1024 bytes, MiB = 1024 KiB"

_SUFFIXES = ((1e9, "G"), (1e6, "M"), (1e3, "k"))


def si(value: float, digits: int = 4) -> str:
    """13012 -> '13.01k', 312930 -> '312.9k', 3102.4 -> '3.102k', 56.25 -> '56.25'."""
    if math.isnan(value) or math.isinf(value):
        return "-"
    sign = "-" if value < 0 else ""
    v = abs(value)
    suffix = ""
    for scale, name in _SUFFIXES:
        if v >= scale * (1 - 0.5 * 10**-digits):
            v /= scale
            suffix = name
            break
    if v == 0:
        return "0"
    if not suffix and float(v).is_integer():
        return f"{sign}{int(v)}"
    whole = len(str(int(v))) if v >= 1 else 1
    decimals = max(0, digits - whole)
    text = f"{v:.{decimals}f}"
    if "." in text and suffix == "":
        text = text.rstrip("0").rstrip(".")
    return f"{sign}{text}{suffix}"


def median_range(median: float, lo: float, hi: float) -> str:
    return f"{si(median)} ({si(lo)}-{si(hi)})"


def figure(value: float, unit: str) -> str:
    """A figure in a table: sizes as `icount size` prints them (KiB), counts with k/M/G."""
    if unit == UNIT_BYTES and math.isfinite(value):
        return human_bytes(round(value))
    return si(value)


def plural(n: int, word: str, many: str | None = None) -> str:
    """'1 cell', '2 cells', '1 compile unit'; `many` where adding s is wrong."""
    return f"{n} {word if n == 1 else many or word + 's'}"


def percent(fraction: float, decimals: int = 2) -> str:
    """0.0123 -> '1.23%'; '-' for a spread that cannot be taken (runs that differ
    around a median of 0)."""
    if not math.isfinite(fraction):
        return "-"
    return f"{fraction * 100:.{decimals}f}%"


def share(part: int, whole: int) -> str:
    """A part's share of a whole to one decimal ('12.5%'), or '-' for a whole of 0
    (an empty section, a file with no VM size)."""
    return percent(part / whole, 1) if whole else "-"


def signed_percent(fraction: float, decimals: int = 2) -> str:
    """0.0123 -> '+1.23%', -0.5 -> '-50.00%', 0 -> '0.00%'."""
    text = f"{fraction * 100:+.{decimals}f}%"
    return "0.00%" if text in ("+0.00%", "-0.00%") and decimals == 2 else text


def plain(value: float) -> str:
    """Machine-readable: integers as integers, other values with up to 3 decimals."""
    if float(value).is_integer():
        return str(int(value))
    return f"{value:.3f}".rstrip("0").rstrip(".")


def human_bytes(n: int) -> str:
    """Sizes in tables: 1536 -> '1.50 KiB'; exact bytes below 1 KiB."""
    if n < 1024 and n > -1024:
        return f"{n} B"
    v = float(n)
    for unit in ("KiB", "MiB", "GiB", "TiB"):
        v /= 1024
        if abs(v) < 1024:
            return f"{v:.2f} {unit}"
    return f"{v:.2f} PiB"


def parse_percent(text: str, flag: str) -> float:
    """User input '1', '1%' or '0.5%' -> a fraction (0.01, 0.005); UsageError names the flag."""
    from icount.numparse import parse_percent as checked  # ASCII digits, finite, in range

    return checked(text, flag)
