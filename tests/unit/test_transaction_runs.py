"""``decode_transaction_in_runs`` (reference/codec/transaction.py) against the protobuf decoder: on valid
transactions whose operation is cut into runs, on the same bytes damaged at random (a byte changed, cut short,
bytes inserted), on groups nested past the decoder's depth limit and on a large clone, it succeeds exactly when
``decode_transaction`` does, with the same error, and keeps every field a check reads."""

from __future__ import annotations

import random

import pytest

from reference.codec.transaction import decode_transaction, decode_transaction_in_runs
from reference.codec.wire import varint_bytes as _varint
from reference.errors import FormatError
from reference.proto import table_pb2, transaction_pb2

T = transaction_pb2.Transaction
OPERATIONS = [f.name for f in T.DESCRIPTOR.oneofs_by_name["operation"].fields]
RUN = 64  # bytes: a few fragments per run


def test_varint_bytes_encodes_as_protobuf() -> None:
    # the runs are wrapped with it, and the inputs below are built with it
    read_version = T.DESCRIPTOR.fields_by_name["read_version"].number
    for value in (1, 127, 128, 300, 2**32, 2**63 - 1):
        assert T(read_version=value).SerializeToString() == _varint(read_version << 3) + _varint(value)


def _overwrite(rng: random.Random, fragments: int) -> bytes:
    txn = T(read_version=rng.randrange(0, 9), uuid="u", tag="t")
    for k in range(fragments):
        fragment = txn.overwrite.fragments.add(id=k, physical_rows=rng.randrange(1, 1000))
        fragment.files.add(path=f"{k}-{rng.randrange(10**6)}-{'p' * 30}.lance", fields=[0, 1], file_size_bytes=k)
    txn.overwrite.schema.add(name="a", id=0, logical_type="int64")
    txn.overwrite.config_upsert_values["k"] = "v"
    data = txn.SerializeToString()
    if rng.random() < 0.3:  # a second operation after the first: the decoder keeps the last
        other = T()
        getattr(other, rng.choice(OPERATIONS)).SetInParent()
        data += other.SerializeToString()
    return data


def _outcome(decoder, data: bytes) -> tuple[str, ...]:  # type: ignore[no-untyped-def]
    try:
        txn = decoder(data)
    except FormatError as exc:
        return ("error", exc.message)
    return ("ok", txn.WhichOneof("operation") or "", str(txn.read_version), txn.uuid, txn.tag,
            str(txn.clone.ref_version))


def _runs(data: bytes) -> T:
    return decode_transaction_in_runs(data, run_bytes=RUN)


@pytest.mark.parametrize("seed", range(200))
def test_runs_decode_as_the_decoder(seed: int) -> None:
    rng = random.Random(seed)
    data = _overwrite(rng, rng.randrange(10, 40))
    whole, cut = decode_transaction(data), _runs(data)
    assert _outcome(_runs, data) == _outcome(decode_transaction, data)
    if whole.WhichOneof("operation") == "overwrite":  # not replaced by a second operation: the runs were taken
        assert len(whole.overwrite.fragments) >= 10 and len(cut.overwrite.fragments) == 0
    damaged = bytearray(data)
    for _ in range(rng.randrange(1, 4)):
        at = rng.randrange(len(damaged))
        how = rng.randrange(3)
        if how == 0:
            damaged[at] = rng.randrange(256)
        elif how == 1:
            del damaged[at:]
        else:
            damaged[at:at] = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 4)))
        if not damaged:
            break
    assert _outcome(_runs, bytes(damaged)) == _outcome(decode_transaction, bytes(damaged))


def test_invalid_utf8_in_one_fragment_fails_as_the_decoder() -> None:
    data = _overwrite(random.Random(1), 30)
    at = data.index(b"17-")
    bad = data[:at] + b"\xff" + data[at + 1:]
    assert _outcome(_runs, bad) == _outcome(decode_transaction, bad)
    assert _outcome(_runs, bad)[0] == "error"


def _nested_groups(depth: int) -> bytes:
    """An Overwrite of fragments whose last carries an unknown field: ``depth`` groups one inside another."""
    unknown = 900
    inner = _varint(unknown << 3 | 3) * depth + _varint(unknown << 3 | 4) * depth
    data = bytearray(_overwrite(random.Random(2), 20))
    fragment = table_pb2.DataFragment(id=99).SerializeToString() + inner
    overwrite = T.DESCRIPTOR.fields_by_name["overwrite"].number
    fragments = T.Overwrite.DESCRIPTOR.fields_by_name["fragments"].number
    body = _varint(fragments << 3 | 2) + _varint(len(fragment)) + fragment
    data += _varint(overwrite << 3 | 2) + _varint(len(body)) + body
    return bytes(data)


def test_groups_nested_to_the_depth_limit_fail_as_the_decoder() -> None:
    # The depth at which the whole decode starts failing; the runs, decoded inside the same operation field of a
    # Transaction, must fail there too (an Overwrite decoded alone would reach two levels deeper).
    outcomes = {depth: _outcome(decode_transaction, _nested_groups(depth)) for depth in range(80, 140)}
    limit = min(depth for depth, outcome in outcomes.items() if outcome[0] == "error")
    assert outcomes[limit - 1][0] == "ok"
    for depth in (limit - 2, limit - 1, limit, limit + 1):
        data = _nested_groups(depth)
        assert _outcome(_runs, data) == _outcome(decode_transaction, data)
        assert len(data) > 2 * RUN


def test_a_large_clone_is_decoded_whole() -> None:
    txn = T(read_version=3)
    txn.clone.ref_version = 3
    txn.clone.ref_path = "x" * (4 * RUN)
    data = txn.SerializeToString()
    assert _runs(data).clone.ref_version == 3
    assert _outcome(_runs, data) == _outcome(decode_transaction, data)


def test_an_operation_of_tiny_fields_is_decoded_whole() -> None:
    # an Overwrite of two-byte unknown varints: walking them one by one would cost far more than the decoder
    overwrite = T.DESCRIPTOR.fields_by_name["overwrite"].number
    body = (_varint(900 << 3 | 0) + b"\x01") * 200
    data = T(read_version=1).SerializeToString() + _varint(overwrite << 3 | 2) + _varint(len(body)) + body
    assert len(data) > 2 * RUN
    assert _runs(data).overwrite.ByteSize() == decode_transaction(data).overwrite.ByteSize() > 0  # not cut
    assert _outcome(_runs, data) == _outcome(decode_transaction, data)


def test_a_top_level_of_many_fields_is_decoded_whole() -> None:
    data = T(read_version=1).SerializeToString() * 2000 + _overwrite(random.Random(3), 30)
    assert len(decode_transaction(data).overwrite.fragments) == 30
    assert len(_runs(data).overwrite.fragments) == 30  # not cut: the top level is not walked that far
    assert _outcome(_runs, data) == _outcome(decode_transaction, data)
