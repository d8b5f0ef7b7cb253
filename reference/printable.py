"""Text a dataset controls, made safe to print: names and values shown in reports and error lines.

A hostile dataset chooses its file names, base paths, ref names and error-provoking bytes. Printed raw,
a newline forges a report line, an ANSI escape repaints the terminal, a lone surrogate (an undecodable
byte of a file name) breaks UTF-8 output and XML, and a megabyte-long base path makes a megabyte-long
error line. ``printable`` escapes every control, format and separator character and every undecodable
byte as ``\\xNN`` / ``\\uNNNN``, and cuts a long value, saying how long it was (docs/security.md).
"""

from __future__ import annotations

import re

#: The longest value shown whole; longer ones are cut and their length is given.
SHOWN_CHARACTERS = 1024

#: C0 and C1 controls and DEL; zero-width, bidirectional and BOM format characters; line and paragraph
#: separators; surrogates (undecodable bytes under surrogateescape); the non-characters XML forbids.
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff\ufffe\uffff\ud800-\udfff]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    if 0xDC80 <= code <= 0xDCFF:  # a byte that was not UTF-8, as surrogateescape keeps it
        return f"\\x{code - 0xDC00:02x}"
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(value: object, limit: int = SHOWN_CHARACTERS) -> str:
    """``str(value)`` on one line with nothing a terminal, a log reader or an XML parser would act on, cut
    to ``limit`` characters (then ``… (N characters)`` says how many there were)."""
    text = str(value)
    if len(text) > limit:
        text = f"{text[:limit]}… ({len(text)} characters)"
    return _UNSAFE.sub(_escape, text)
