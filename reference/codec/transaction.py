"""Transaction files: ``_transactions/{read_version}-{uuid}.txn`` hold the raw Transaction protobuf
(no length prefix, no footer), byte-identical to the manifest's inline copy (docs/lance-format.md §8)."""

from __future__ import annotations

import itertools

from google.protobuf.message import DecodeError

from ..errors import FormatError
from ..proto import transaction_pb2
from .wire import decode, varint, varint_bytes


def decode_transaction(data: bytes, where: str = "") -> transaction_pb2.Transaction:
    """Decode a transaction file."""
    return decode(transaction_pb2.Transaction, data, where, "the transaction file")


def encode_transaction(txn: transaction_pb2.Transaction) -> bytes:
    """Encode a transaction file (deterministic field order)."""
    return txn.SerializeToString(deterministic=True)


def operation_name(txn: transaction_pb2.Transaction) -> str:
    """The oneof name of the transaction's operation (``append``, ``overwrite``, ...) or ``""``."""
    return txn.WhichOneof("operation") or ""


_T = transaction_pb2.Transaction
#: The fields of the ``operation`` oneof, by number.
_OPERATIONS = {f.number: f.name for f in _T.DESCRIPTOR.oneofs_by_name["operation"].fields}
_READ_VERSION = _T.DESCRIPTOR.fields_by_name["read_version"].number
_WIRE_VARINT, _WIRE_I64, _WIRE_LEN, _WIRE_I32 = 0, 1, 2, 5


def peek_transaction(data: bytes) -> tuple[str, int] | None:
    """``(operation_name, read_version)`` of an encoded Transaction from one walk of its top level, the operation
    left undecoded (a 1,000,000-fragment Overwrite is 77 MB, seconds and hundreds of MB to decode): as the
    decoder reads them, the last operation field met wins and so does the last read_version. None when the walk
    meets what only the decoder may judge (a field of a wire type other than its own, a group, a field cut
    short): the caller then decodes, and meets the error."""
    operation, read_version = "", 0
    i, end = 0, len(data)
    try:
        while i < end:
            key, i = varint(data, i)
            number, wire = key >> 3, key & 7
            if wire == _WIRE_VARINT:
                value, i = varint(data, i)
                if number == _READ_VERSION:
                    read_version = value & 0xFFFFFFFFFFFFFFFF
                elif number in _OPERATIONS:
                    return None
            elif wire == _WIRE_LEN:
                length, i = varint(data, i)
                i += length
                if number in _OPERATIONS:
                    operation = _OPERATIONS[number]
                elif number == _READ_VERSION:
                    return None
            elif wire in (_WIRE_I64, _WIRE_I32) and number != _READ_VERSION and number not in _OPERATIONS:
                i += 8 if wire == _WIRE_I64 else 4
            else:
                return None
    except FormatError:
        return None
    return (operation, read_version) if i == end else None


#: An operation field longer than this is decoded a run of its fields at a time (``decode_transaction_in_runs``).
RUN_BYTES = 1 << 22
_CLONE = _T.DESCRIPTOR.fields_by_name["clone"].number
#: The walks are Python, the decoder is not: past this many top-level fields of a Transaction, or fields of an
#: operation averaging fewer bytes than this (a million-fragment Overwrite's average about 77), the whole is
#: decoded instead, so that no transaction costs the walks much more time than the decoder.
_TOP_FIELDS_WALKED = 1024
_MIN_FIELD_BYTES = 32


def decode_transaction_in_runs(data: bytes, where: str = "", run_bytes: int = RUN_BYTES) -> transaction_pb2.Transaction:
    """``data`` decoded as a Transaction, each operation field longer than ``run_bytes`` (a clone's excepted)
    decoded a run of its fields at a time and left empty in the message returned: every other field is there.

    It succeeds or fails exactly where ``decode_transaction`` does: the decoder reads a field's content within
    that field's own length and each field of a message on its own, so an operation decodes when each run of its
    whole fields does; each run is decoded wrapped in the same operation field of a Transaction, at the depth
    the whole decode meets it. But it holds one run decoded at a time, where the 77 MB Overwrite of a
    1,000,000-fragment version takes about 330 MB decoded whole. When a walk meets what it does not follow (a
    group, a field cut short, more fields than it walks: ``_TOP_FIELDS_WALKED``, ``_MIN_FIELD_BYTES``) or a run
    does not decode, the whole is decoded, so an error is the decoder's own."""
    large = _large_operations(data, run_bytes)
    if not large:
        return decode_transaction(data, where)
    top = bytearray()
    before = 0
    for key_start, content_start, content_end in large:
        runs = _runs(data, content_start, content_end, run_bytes)
        if runs is None:
            return decode_transaction(data, where)
        key = data[key_start:_after_varint(data, key_start)]
        for run_start, run_end in itertools.pairwise(runs):
            wrapped = key + varint_bytes(run_end - run_start) + data[run_start:run_end]
            try:
                _T().ParseFromString(wrapped)
            except DecodeError:
                return decode_transaction(data, where)
        top += data[before:_after_varint(data, key_start)]
        top.append(0)  # the operation field, present and empty
        before = content_end
    top += data[before:]
    return decode_transaction(bytes(top), where)


def _after_varint(data: bytes, i: int) -> int:
    return varint(data, i)[1]


def _large_operations(data: bytes, run_bytes: int) -> list[tuple[int, int, int]]:
    """``(key start, content start, content end)`` of each operation field (not a clone) longer than
    ``run_bytes`` at the top level of ``data``; none when the walk meets what only the decoder may judge."""
    found: list[tuple[int, int, int]] = []
    i, end, fields = 0, len(data), 0
    try:
        while i < end:
            fields += 1
            if fields > _TOP_FIELDS_WALKED:
                return []
            start = i
            key, i = varint(data, i)
            number, wire = key >> 3, key & 7
            if wire == _WIRE_VARINT:
                _, i = varint(data, i)
            elif wire == _WIRE_LEN:
                length, i = varint(data, i)
                if length > run_bytes and number in _OPERATIONS and number != _CLONE:
                    found.append((start, i, i + length))
                i += length
            elif wire in (_WIRE_I64, _WIRE_I32):
                i += 8 if wire == _WIRE_I64 else 4
            else:
                return []
    except FormatError:
        return []
    return found if i == end else []


def _runs(data: bytes, start: int, end: int, run_bytes: int) -> list[int] | None:
    """Offsets cutting ``data[start:end]`` into runs of whole top-level fields of about ``run_bytes`` each
    (first ``start``, last ``end``); None when the walk meets a group, a field cut short, or more fields than
    one per ``_MIN_FIELD_BYTES``."""
    cuts = [start]
    i, cut_at = start, start + run_bytes
    fields_left = (end - start) // _MIN_FIELD_BYTES
    try:
        while i < end:
            fields_left -= 1
            if fields_left < 0:
                return None
            key = data[i]  # one-byte keys and lengths inline: one step per fragment of a huge Overwrite
            if key < 0x80:
                i += 1
            else:
                key, i = varint(data, i)
            wire = key & 7
            if wire == _WIRE_LEN:
                length = data[i]
                if length < 0x80:
                    i += 1
                else:
                    length, i = varint(data, i)
                i += length
            elif wire == _WIRE_VARINT:
                _, i = varint(data, i)
            elif wire in (_WIRE_I64, _WIRE_I32):
                i += 8 if wire == _WIRE_I64 else 4
            else:
                return None
            if i >= cut_at and i < end:
                cuts.append(i)
                cut_at = i + run_bytes
    except (IndexError, FormatError):
        return None
    if i != end:
        return None
    cuts.append(end)
    return cuts
