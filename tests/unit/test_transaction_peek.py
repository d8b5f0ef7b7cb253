"""``peek_transaction`` (reference/codec/transaction.py) against the protobuf decoder: on every operation, on
encodings protobuf merges (an operation met twice, read_version twice) and on bytes cut short or of the wrong
wire type, the peek answers as the decoder reads, or not at all (None)."""

from __future__ import annotations

import random

import pytest

from reference.codec.transaction import decode_transaction, peek_transaction
from reference.errors import FormatError
from reference.proto import transaction_pb2

T = transaction_pb2.Transaction
OPERATIONS = [f.name for f in T.DESCRIPTOR.oneofs_by_name["operation"].fields]


def _transaction(rng: random.Random) -> bytes:
    txn = T(read_version=rng.choice([0, 1, 7, 2**40]), uuid="u")
    name = rng.choice([*OPERATIONS, None])
    if name is not None:
        getattr(txn, name).SetInParent()
        if name == "overwrite":
            for k in range(rng.randrange(0, 4)):
                txn.overwrite.fragments.add(id=k, physical_rows=1).files.add(path="x.lance")
    data = txn.SerializeToString()
    if rng.random() < 0.3:  # a second operation after the first: the decoder keeps the last
        other = T()
        getattr(other, rng.choice(OPERATIONS)).SetInParent()
        data += other.SerializeToString()
    if rng.random() < 0.3:
        data += T(read_version=rng.randrange(1, 99)).SerializeToString()
    return data


def _decoded(data: bytes) -> tuple[str, int] | None:
    try:
        txn = decode_transaction(data)
    except FormatError:
        return None
    return txn.WhichOneof("operation") or "", txn.read_version


@pytest.mark.parametrize("seed", range(300))
def test_the_peek_reads_as_the_decoder(seed: int) -> None:
    rng = random.Random(seed)
    data = _transaction(rng)
    assert peek_transaction(data) == _decoded(data) is not None
    cut = data[: rng.randrange(0, len(data) + 1)]
    peeked = peek_transaction(cut)
    assert peeked is None or peeked == _decoded(cut)


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def test_a_field_of_the_wrong_wire_type_is_left_to_the_decoder() -> None:
    overwrite = T.DESCRIPTOR.fields_by_name["overwrite"].number
    read_version = T.DESCRIPTOR.fields_by_name["read_version"].number
    for data in (_varint(overwrite << 3 | 0) + _varint(1),  # a varint where a message belongs
                 _varint(read_version << 3 | 2) + _varint(0)):  # bytes where a varint belongs
        assert peek_transaction(data) is None
