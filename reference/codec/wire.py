"""The protobuf wire format: one decoder for every message lancespec reads (``decode``), and fields read one by
one without decoding a message, for metadata that must be looked at before it is trusted (a data file's column
metadata; a manifest's fragments are walked by ``fragment_columns``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TypeVar

from google.protobuf.message import DecodeError, Message

from ..errors import FormatError

M = TypeVar("M", bound=Message)


def decode(message: type[M], data: bytes, where: str, what: str = "") -> M:
    """``data`` decoded as a ``message``; FormatError naming ``where`` (and ``what`` was read, the message's
    name when not given) when it does not decode."""
    decoded = message()
    try:
        decoded.ParseFromString(data)
    except DecodeError as exc:
        name = message.DESCRIPTOR.full_name
        raise FormatError(f"{what or name} does not decode as {name}: {exc}", where) from exc
    return decoded


def varint(buf: bytes, i: int) -> tuple[int, int]:
    """The varint at ``buf[i:]`` and the offset after it. Raises FormatError when it is cut short."""
    result = shift = 0
    while True:
        if i >= len(buf):
            raise FormatError("truncated protobuf varint")
        byte = buf[i]
        i += 1
        result |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return result, i


def varint_bytes(value: int) -> bytes:
    """``value`` (not negative) encoded as a varint, in the fewest bytes."""
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def iter_fields(buf: bytes) -> Iterator[tuple[int, int, int | bytes]]:
    """``(field number, wire type, value)`` of each top-level field of a protobuf message, in order."""
    i = 0
    while i < len(buf):
        key, i = varint(buf, i)
        number, wire = key >> 3, key & 7
        value: int | bytes
        if wire == 0:
            value, i = varint(buf, i)
        elif wire == 1:
            value, i = buf[i:i + 8], i + 8
        elif wire == 2:
            n, i = varint(buf, i)
            value, i = buf[i:i + n], i + n
        elif wire == 5:
            value, i = buf[i:i + 4], i + 4
        else:
            raise FormatError(f"unsupported protobuf wire type {wire}")
        yield number, wire, value
