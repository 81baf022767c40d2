"""Text from input files made safe for each output format icount writes, losslessly where
the format can say everything (JSON), visibly escaped where it cannot (CSV cells, XML);
a CSV cell that a spreadsheet would run as a formula starts with a quote.

Names come from files icount did not write: an ESC or OSC sequence, a C1 control, a bidi
override or a form feed in one reached terminals that `cat` or `less` the output raw, and
XML 1.0 cannot hold most control characters, nor U+FFFE and U+FFFF, even as references
(an SVG with one is rejected by every XML parser). `icount.text.printable` says which
characters are unsafe; the terminal and Markdown tables escape them already.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterable, Sequence

from icount.text import printable

# The first characters by which a spreadsheet reads a CSV cell as a formula (OWASP's CSV
# injection page; ASVS 5.0's 1.2.10 adds NUL); a leading quote makes it text, and is not
# shown
FORMULA_START = ("=", "+", "-", "@", "\t", "\r", "\0")
_QUOTE = "'"
# a number a spreadsheet reads as one, never as a formula: a negative delta stays a number
_NUMBER = re.compile(r"[-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?")
# What a written field that csv_cell quotes starts with, after its separator (a tab, CR
# and NUL are not printable: found apart). A superset: a sign or a quote inside a quoted
# field matches too; a sign that starts a number that ends its field does not. It starts
# at one of a few characters that names seldom hold, so a search of a size table's
# hundreds of thousands of rows tries few places.
_FORMULA_AT = re.compile(
    r"""[-+=@'"](?<=[,\n][-+=@'"])"""
    r"""(?:(?<=")[-+=@']|(?<=[=@'])|(?<=[-+])(?![0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?[,\n]))"""
)


def _printable_lines(text: str) -> bool:
    """Whether `text` holds nothing to escape but its newlines (at C speed: a results
    file is megabytes)."""
    return text.replace("\n", " ").isprintable()


def _json_escape(ch: str) -> str:
    code = ord(ch)
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    code -= 0x10000  # beyond the BMP: a JSON escape is a UTF-16 surrogate pair
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def json_text(text: str) -> str:
    """A JSON document (as `icount.jsonout.dumps` writes it) with every character that
    `printable` would escape written as a \\u escape: the same document to any JSON
    reader, and no raw control, bidi override or noncharacter in its bytes. Such a
    character can stand only inside a string there (dumps writes no other whitespace
    than spaces and newlines), where a \\u escape means the same."""
    if _printable_lines(text):
        return text
    return "".join(ch if ch == "\n" or ch.isprintable() else _json_escape(ch) for ch in text)


def csv_document(rows: Sequence[Sequence[object]]) -> str:
    """`rows` written as CSV (`,` delimited, minimal quoting, '\\n' line ends) through
    `csv_fields`. Rows with nothing to escape, which a check of the written text finds at
    C speed (a size table can hold 100,000 symbols), are written once."""
    text = _write(rows)
    one_line_each = text.count("\n") == len(rows)  # else a field holds a newline
    if one_line_each and _printable_lines(text) and not _FORMULA_AT.search("\n" + text):
        return text
    return _write(csv_fields(rows))


def _write(rows: Iterable[Sequence[object]]) -> str:
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows(rows)
    return buf.getvalue()


def csv_fields(rows: Iterable[Sequence[object]]) -> list[list[object]]:
    """The rows of a CSV document made safe for a spreadsheet and for scripts: each cell
    through `csv_cell`, then, where any field holds a character `printable` escapes, each
    field escaped by it, a newline or a lone carriage return included (the csv module
    leaves a CR unquoted): every record stays one line, and what a field shows is exactly
    what the input held, no two fields alike. Numbers are never changed."""
    out = [[csv_cell(v) for v in row] for row in rows]
    if all(not isinstance(v, str) or v.isprintable() for row in out for v in row):
        return out
    return [[_field(v) if isinstance(v, str) else v for v in row] for row in out]


def csv_cell(value: object) -> object:
    """`value` for a CSV cell: a string that a spreadsheet would run as a formula (one
    starting with a character of FORMULA_START that is not a plain number) prefixed with a
    single quote, as is one that starts with a quote already, so that no two names read
    alike (a reader drops one leading quote to get the name back). Numbers, and strings
    that are numbers, come back as they are."""
    if not isinstance(value, str) or not value.startswith((*FORMULA_START, _QUOTE)):
        return value
    if value[0] != _QUOTE and _NUMBER.fullmatch(value):
        return value
    return _QUOTE + value


def _field(text: str) -> str:
    # every backslash doubled where any field is escaped: a name holding the four
    # characters `\x1b` stays apart from one holding an ESC (a key of rows, in CSV)
    return printable(text) if not text.isprintable() else text.replace("\\", "\\\\")


def xml_text(text: str) -> str:
    """`text` for XML or HTML character data or a quoted attribute value: escaped by
    `printable` (no control character, newline, noncharacter or bidi override is left
    raw: XML would drop or refuse it, and a name's newline would show as a space), then
    `&`, `<`, `>` and both quotes as references."""
    return (
        printable(text)
        .replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace('"', "&quot;")
        .replace("'", "&#x27;")
    )
