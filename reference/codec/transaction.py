"""Transaction files: ``_transactions/{read_version}-{uuid}.txn`` hold the raw Transaction protobuf
(no length prefix, no footer), byte-identical to the manifest's inline copy (docs/lance-format.md §8)."""

from __future__ import annotations

from ..errors import FormatError
from ..proto import transaction_pb2
from .wire import decode, varint


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
