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


def test_a_toml_string_reads_back_as_the_json_safe_text_and_holds_nothing_raw() -> None:
    """Every character ``printable`` escapes is a TOML escape in the file, quotes and backslashes too, and a
    lone surrogate (a byte that was not UTF-8) is written as ``json_safe`` writes it (TOML cannot carry one)."""
    import tomllib

    from reference.printable import json_safe, toml_string

    for value in ["plain", 'q"uote\\back', "d\x7fel\x85c1\u2028ls\u202ebidi\x00nul\tt", "bad\udcff", "tag\U000e0041"]:
        text = toml_string(value)
        assert tomllib.loads(f"k = {text}")["k"] == json_safe(value)
        assert all(0x20 <= ord(c) < 0x7F for c in text), text
