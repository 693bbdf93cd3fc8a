"""Java .properties text (server.properties, a client's --command-config) read into a dict, as
java.util.Properties.load reads it."""

from __future__ import annotations


class MalformedProperties(ValueError):
    """Text java.util.Properties.load refuses (a malformed \\uxxxx escape)."""


def parse_properties(text: str) -> dict[str, str]:
    """Java .properties, as java.util.Properties.load reads them: `key=value`, `key: value` or
    `key value`; `#` and `!` comment lines; a line ending in an odd number of backslashes
    continues on the next (whose leading whitespace is dropped); backslash escapes."""
    props: dict[str, str] = {}
    logical: str | None = None
    for natural in text.splitlines():
        line = natural.lstrip(" \t\f")
        if logical is None:
            if not line or line[0] in "#!":
                continue
            logical = ""
        backslashes = len(line) - len(line.rstrip("\\"))
        if backslashes % 2 == 1:
            logical += line[:-1]
            continue
        key, value = _split_property(logical + line)
        props[key] = value
        logical = None
    if logical is not None:  # the file ended on a continuation
        key, value = _split_property(logical)
        props[key] = value
    return props


def _split_property(line: str) -> tuple[str, str]:
    """Key and value of one logical line: the key ends at the first unescaped `=`, `:` or
    whitespace; whitespace and at most one `=`/`:` separate it from the value."""
    n = len(line)
    key_end = value_start = n
    has_separator = False
    i = 0
    while i < n:
        ch = line[i]
        if ch == "\\":
            i += 2
            continue
        if ch in "=:":
            key_end, value_start, has_separator = i, i + 1, True
            break
        if ch in " \t\f":
            key_end, value_start = i, i + 1
            break
        i += 1
    j = value_start
    while j < n and line[j] in " \t\f":
        j += 1
    if not has_separator and j < n and line[j] in "=:":
        j += 1
        while j < n and line[j] in " \t\f":
            j += 1
    return _unescape(line[:key_end]), _unescape(line[j:])


_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _unescape(text: str) -> str:
    if "\\" not in text:
        return text
    out = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch != "\\" or i + 1 == len(text):
            out.append(ch)
            i += 1
            continue
        nxt = text[i + 1]
        if nxt == "u" and i + 6 <= len(text):
            try:
                out.append(chr(int(text[i + 2:i + 6], 16)))
                i += 6
                continue
            except ValueError:
                raise MalformedProperties(f"Malformed \\uxxxx encoding in {text!r}") from None
        out.append(_ESCAPES.get(nxt, nxt))
        i += 2
    return "".join(out)
