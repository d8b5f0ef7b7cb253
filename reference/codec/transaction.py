"""Transaction files: ``_transactions/{read_version}-{uuid}.txn`` hold the raw Transaction protobuf
(no length prefix, no footer), byte-identical to the manifest's inline copy (docs/lance-format.md §8)."""

from __future__ import annotations

from ..proto import transaction_pb2
from .wire import decode


def decode_transaction(data: bytes, where: str = "") -> transaction_pb2.Transaction:
    """Decode a transaction file."""
    return decode(transaction_pb2.Transaction, data, where, "the transaction file")


def encode_transaction(txn: transaction_pb2.Transaction) -> bytes:
    """Encode a transaction file (deterministic field order)."""
    return txn.SerializeToString(deterministic=True)


def operation_name(txn: transaction_pb2.Transaction) -> str:
    """The oneof name of the transaction's operation (``append``, ``overwrite``, ...) or ``""``."""
    return txn.WhichOneof("operation") or ""
