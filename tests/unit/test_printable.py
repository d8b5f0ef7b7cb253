"""What a dataset controls is printed safely: every character a terminal, a log reader, a bidirectional
renderer or an XML parser would act on is escaped, and JSON reports hold no lone surrogate
(docs/security.md). The second source of truth is Python's ``unicodedata`` tables."""

from __future__ import annotations

import json
import sys
import unicodedata

import pytest

from reference.printable import json_chunks, json_safe, json_text, printable

ACTING_CATEGORIES = {"Cc", "Cf", "Cs", "Zl", "Zp"}


def test_every_control_format_separator_and_surrogate_is_escaped() -> None:
    missed = [f"U+{cp:04X}" for cp in range(sys.maxunicode + 1)
              if unicodedata.category(chr(cp)) in ACTING_CATEGORIES and printable(chr(cp)) == chr(cp)]
    assert missed == []


@pytest.mark.parametrize("char", ["\u061c", "\u00ad", "\U000e0041", "\u180e", "\u2066", "\ufff9"])
def test_the_review_s_format_characters_are_escaped(char: str) -> None:
    shown = printable(f"tag{char}name")
    assert char not in shown and shown.startswith("tag\\") and shown.endswith("name")


def test_letters_and_spaces_are_kept() -> None:
    assert printable("Größe 数据 ünïcode test") == "Größe 数据 ünïcode test"


def test_json_has_no_lone_surrogate_and_strict_parsers_accept_it() -> None:
    name = b"data/\xff\xfe.lance".decode("utf-8", "surrogateescape")
    document = {"path": name, name: [name, 1, None], "ok": "ü"}
    text = json_text(document)
    strict = json.loads(text)  # json.loads accepts lone surrogates; check the text itself holds none
    assert "\\udc" not in text and "\\ud8" not in text
    assert strict["path"] == "data/\\xff\\xfe.lance"
    assert strict["ok"] == "ü"
    text.encode("utf-8")  # no lone surrogate survives to the encoder
    assert json_safe({"n": 1.5, "l": (1, 2)}) == {"n": 1.5, "l": [1, 2]}


@pytest.mark.parametrize("document", [
    {"path": b"data/\xff.lance".decode("utf-8", "surrogateescape"), "n": [1, 2.5, None, True], "t": (1, "ü")},
    {"plain": ["a", {"b": "c"}], "ok": "ü", "empty": {}},
    [b"\xfe".decode("utf-8", "surrogateescape")],
])
def test_json_in_pieces_is_the_json_text(document: object) -> None:
    """The streamed report (``json_chunks``) is the text ``json.dumps`` makes of the escaped document, whether
    or not it holds a lone surrogate to escape."""
    expected = json.dumps(json_safe(document), indent=2) + "\n"
    assert "".join(json_chunks(document)) == expected
    assert json_text(document) == expected
