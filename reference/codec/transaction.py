"""Transaction files: ``_transactions/{read_version}-{uuid}.txn`` hold the raw Transaction protobuf
(no length prefix, no footer), byte-identical to the manifest's inline copy (docs/lance-format.md §8)."""

from __future__ import annotations

from google.protobuf.message import DecodeError

from ..errors import FormatError
from ..proto import transaction_pb2


def decode_transaction(data: bytes, where: str = "") -> transaction_pb2.Transaction:
    """Decode a transaction file."""
    txn = transaction_pb2.Transaction()
    try:
        txn.ParseFromString(data)
    except DecodeError as exc:
        raise FormatError(f"does not decode as lance.table.Transaction: {exc}", where) from exc
    return txn


def encode_transaction(txn: transaction_pb2.Transaction) -> bytes:
    """Encode a transaction file (deterministic field order)."""
    return txn.SerializeToString(deterministic=True)


def operation_name(txn: transaction_pb2.Transaction) -> str:
    """The oneof name of the transaction's operation (``append``, ``overwrite``, ...) or ``""``."""
    return txn.WhichOneof("operation") or ""
