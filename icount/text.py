"""Text from input files and command lines made safe to print.

Names come from files icount did not write (section names, cell names, symbol names,
adapter fields). Printed raw, a newline in one forges a second `icount:` line and an
ESC sequence reaches the terminal, so every message and table cell shows them escaped.
"""

from __future__ import annotations

_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\\": "\\\\"}


def _escape(ch: str) -> str:
    code = ord(ch)
    if code <= 0xFF:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def _unsafe(ch: str) -> bool:
    # Python's "printable": not a control (C0/C1, DEL), not a format character (the
    # bidi overrides that reorder what follows them on screen), not a separator but
    # the space (line and paragraph separators, NBSP), not unassigned or private
    return not ch.isprintable()


def printable(text: str) -> str:
    """`text` with control, format, separator and unassigned characters escaped
    (\\n, \\x1b, \\u202e), and a backslash doubled only where it could be read as such an escape,
    so that what is printed is one line and says exactly what the input held.
    Text with nothing to escape comes back as it is."""
    if text.isprintable() and "\\" not in text:
        return text
    out = []
    for ch in text:
        if ch in _NAMED and (ch != "\\" or _needs_backslash_escape(text)):
            out.append(_NAMED[ch])
        elif ch != "\\" and _unsafe(ch):
            out.append(_escape(ch))
        else:
            out.append(ch)
    return "".join(out)


def _needs_backslash_escape(text: str) -> bool:
    # a path such as C:\dir stays readable; only text that also holds an escaped
    # character doubles its backslashes, so that the two cannot be confused
    return any(ch != "\\" and (ch in _NAMED or _unsafe(ch)) for ch in text)


# ASCII punctuation that starts Markdown inline syntax anywhere in a line: code (`),
# emphasis (* ~, and _ where it is not inside a word), links and images ([ ]), raw HTML
# and autolinks (<), entities (&), GitHub's math ($) and the backslash that escapes them.
# CommonMark lets a backslash escape any ASCII punctuation, so each is shown as itself. A
# table's `|` is its renderer's to escape (icount.tables): outside a table row it starts
# nothing. GitHub links a bare URL, www., @name and #1 in prose whatever the escapes:
# names go in code spans (md_code), where it links nothing.
_MD_ACTIVE = frozenset("\\`*~[]<&$")


def md_text(text: str) -> str:
    """`text` for a line of Markdown prose or a table cell: `printable`, then every
    character that could start Markdown syntax (code, emphasis, a link, HTML, an entity)
    backslash-escaped, so a name from a file reads as written and renders as nothing else.
    Text without such characters comes back as `printable` gives it."""
    shown = printable(text)
    out = []
    for i, ch in enumerate(shown):
        if ch in _MD_ACTIVE or (ch == "_" and not _inside_word(shown, i)):
            out.append("\\" + ch)
        else:
            out.append(ch)
    return "".join(out)


def _inside_word(text: str, i: int) -> bool:
    # an underscore between two letters or digits neither opens nor closes emphasis
    return 0 < i < len(text) - 1 and text[i - 1].isalnum() and text[i + 1].isalnum()


def md_code(text: str) -> str:
    """`text` as a Markdown code span: `printable`, fenced by one backtick more than its
    longest run of backticks (so none inside can close it and let a link or HTML after
    it through), padded with a space where it starts or ends with a backtick or a space.
    Inside a table cell, the table's renderer still escapes `|`."""
    shown = printable(text)
    longest = run = 0
    for ch in shown:
        run = run + 1 if ch == "`" else 0
        longest = max(longest, run)
    fence = "`" * (longest + 1)
    pad = " " if not shown or shown[0] in "` " or shown[-1] in "` " else ""
    return f"{fence}{pad}{shown}{pad}{fence}"


def md_plain(text: str) -> str:
    """A line `md_text` and `md_code` wrote, read back as it reads rendered: each code
    span's content (its padding space dropped), and a backslash before ASCII punctuation
    dropped. The result is `printable`'s form of what was escaped, one line still."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch == "\\" and i + 1 < n and text[i + 1] in _PUNCTUATION:
            out.append(text[i + 1])
            i += 2
            continue
        if ch != "`":
            out.append(ch)
            i += 1
            continue
        j = i
        while j < n and text[j] == "`":
            j += 1
        end = _closing_fence(text, j, j - i)
        if end is None:  # no span: the backticks are themselves
            out.append(text[i:j])
            i = j
            continue
        body = text[j:end]
        if len(body) >= 2 and body[0] == body[-1] == " " and body.strip(" "):
            body = body[1:-1]
        out.append(body)
        i = end + (j - i)
    return "".join(out)


_PUNCTUATION = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")


def _closing_fence(text: str, start: int, size: int) -> int | None:
    """Where the next run of exactly `size` backticks from `start` begins, or None."""
    i, n = start, len(text)
    while i < n:
        if text[i] != "`":
            i += 1
            continue
        j = i
        while j < n and text[j] == "`":
            j += 1
        if j - i == size:
            return i
        i = j
    return None
