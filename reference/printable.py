"""Text a dataset controls, made safe to print: names and values shown in reports and error lines.

A hostile dataset chooses its file names, base paths, ref names and error-provoking bytes. Printed raw,
a newline forges a report line, an ANSI escape repaints the terminal, a lone surrogate (an undecodable
byte of a file name) breaks UTF-8 output and XML, and a megabyte-long base path makes a megabyte-long
error line. ``printable`` escapes every control, format and separator character and every undecodable
byte as ``\\xNN`` / ``\\uNNNN``, and cuts a long value, saying how long it was (docs/security.md).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from typing import Any

#: A rendered report or listing: its text, or its text in pieces written as they are made (a large JSON report).
Rendered = str | Iterable[str]

#: The longest value shown whole; longer ones are cut and their length is given.
SHOWN_CHARACTERS = 1024

#: C0 and C1 controls and DEL; every format character (Unicode category Cf: the soft hyphen, the Arabic
#: letter mark, the Mongolian vowel separator, zero-width and bidirectional marks, the BOM, interlinear
#: annotation marks, tag characters); line and paragraph separators; surrogates (undecodable bytes under
#: surrogateescape); the non-characters XML forbids. tests/unit/test_printable.py checks the class against
#: the ``unicodedata`` tables.
_UNSAFE = re.compile(
    "[\x00-\x1f\x7f-\x9f\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e"
    "\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff\ufff9-\ufffb\ufffe\uffff\ud800-\udfff"
    "\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a"
    "\U000e0001\U000e0020-\U000e007f]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    if 0xDC80 <= code <= 0xDCFF:  # a byte that was not UTF-8, as surrogateescape keeps it
        return f"\\x{code - 0xDC00:02x}"
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def printable(value: object, limit: int = SHOWN_CHARACTERS) -> str:
    """``str(value)`` on one line with nothing a terminal, a log reader or an XML parser would act on, cut
    to ``limit`` characters (then ``… (N characters)`` says how many there were)."""
    text = str(value)
    if len(text) > limit:
        text = f"{text[:limit]}… ({len(text)} characters)"
    return _UNSAFE.sub(_escape, text)


def json_safe(value: Any) -> Any:
    """``value`` (JSON-shaped: dicts, lists, strings, numbers) with every lone surrogate in a string or key
    written as ``\\xNN`` (a byte that was not UTF-8) or ``\\uNNNN``: a JSON text holding a lone surrogate
    is rejected by strict parsers, and a non-UTF-8 file name can only be shown, not carried, in JSON."""
    if isinstance(value, str):
        return _SURROGATE.sub(_escape, value) if _SURROGATE.search(value) else value
    if isinstance(value, dict):
        return {json_safe(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value


_TOML_ESCAPED = re.compile('["\\\\]|' + _UNSAFE.pattern)


def _toml_escape(match: re.Match[str]) -> str:
    char = match.group()
    if char in '"\\':
        return "\\" + char
    code = ord(char)
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def toml_string(value: str) -> str:
    """``value`` as a TOML basic string (quoted) that reads back as ``json_safe(value)``: a quote and a backslash
    escaped, and every character ``printable`` escapes (controls, DEL, format and separator characters) written
    as a TOML ``\\uXXXX`` escape, so that the file holds nothing an editor or a diff would act on and every TOML
    parser accepts it (TOML forbids raw controls and DEL); a lone surrogate, which TOML cannot carry, is first
    written as ``json_safe`` writes it."""
    return '"' + _TOML_ESCAPED.sub(_toml_escape, json_safe(value)) + '"'


def _holds_surrogate(value: Any) -> bool:
    """Whether a string of ``value`` (JSON-shaped), key or value, holds a lone surrogate: ``json_safe`` then has
    something to rewrite (most reports hold none, and copying a million-entry report costs seconds)."""
    if isinstance(value, str):
        return not value.isascii() and _SURROGATE.search(value) is not None
    if isinstance(value, dict):
        return any(map(_holds_surrogate, value)) or any(map(_holds_surrogate, value.values()))
    if isinstance(value, (list, tuple)):
        return any(map(_holds_surrogate, value))
    return False


def _safe(value: Any) -> Any:
    return json_safe(value) if _holds_surrogate(value) else value


def json_text(value: Any, indent: int | None = 2) -> str:
    """A report as JSON text that every strict parser accepts (see ``json_safe``), ending in a newline."""
    return json.dumps(_safe(value), indent=indent) + "\n"


def json_chunks(value: Any, indent: int | None = 2) -> Iterator[str]:
    """``json_text`` in pieces, made as they are written: a report of a million files is never whole in
    memory as text (its JSON is several hundred megabytes)."""
    yield from json.JSONEncoder(indent=indent).iterencode(_safe(value))
    yield "\n"
