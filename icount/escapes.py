"""Text from input files made safe for each output format icount writes, losslessly where
the format can say everything (JSON), visibly escaped where it cannot (CSV cells, XML).

Names come from files icount did not write: an ESC or OSC sequence, a C1 control, a bidi
override or a form feed in one reached terminals that `cat` or `less` the output raw, and
XML 1.0 cannot hold most control characters, nor U+FFFE and U+FFFF, even as references
(an SVG with one is rejected by every XML parser). `icount.text.printable` says which
characters are unsafe; the terminal and Markdown tables escape them already.
"""

from __future__ import annotations

import csv
import io

from icount.text import printable


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


def csv_text(text: str) -> str:
    """A CSV document (`,` delimited, minimal quoting, '\\n' line ends, as
    `icount.tables.render_csv` writes it) with each field escaped by `printable`, a
    newline in a field included: every record stays one line, and what a field shows is
    exactly what the input held, no two fields alike. A document with nothing to escape
    comes back as it is."""
    if _printable_lines(text) and '"' not in text:  # no field holds a newline either
        return text
    rows = list(csv.reader(io.StringIO(text, newline="")))
    if all(field.isprintable() for row in rows for field in row):
        return text
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    for row in rows:
        writer.writerow([_field(field) for field in row])
    return buf.getvalue()


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
