"""The content digest both sides of pipeline certification use: independent of row order, batching and the
Arrow type that carries a value; sensitive to any value, duplicate or move between rows."""

from __future__ import annotations

import datetime as dt
import random

import pyarrow as pa
import pytest

from conformance.spark.digest import NULL_HASH, Digest, digest_batches, digest_table, value_hashes

pytestmark = pytest.mark.spark


def table(n: int = 500) -> pa.Table:
    ids = list(range(n))
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "name": [f"row-{i}" if i % 7 else None for i in ids],
        "value": [i * 0.5 for i in ids],
        "flag": [i % 3 == 0 for i in ids],
        "ts": pa.array([1_700_000_000_000_000 + i for i in ids], pa.timestamp("us", tz="UTC")),
        "day": pa.array([dt.date(2024, 1, 1) + dt.timedelta(days=i % 365) for i in ids], pa.date32()),
        "tags": [[i, i + 1] for i in ids],
        "blob": [bytes([i % 256]) * 3 for i in ids],
    })


def test_order_batching_and_carrier_types_do_not_matter() -> None:
    t = table()
    first = digest_batches(t.to_batches(max_chunksize=64), t.column_names)
    order = list(range(t.num_rows))
    random.Random(7).shuffle(order)
    shuffled = t.take(order).cast(pa.schema([
        ("id", pa.int32()), ("name", pa.large_string()), ("value", pa.float32()), ("flag", pa.bool_()),
        ("ts", pa.timestamp("ns")), ("day", pa.date64()), ("tags", pa.list_(pa.int64())), ("blob", pa.large_binary()),
    ]))
    second = digest_batches(shuffled.to_batches(max_chunksize=37), t.column_names)
    assert first == second and first.rows == t.num_rows


@pytest.mark.parametrize("change", ["drop", "duplicate", "value", "null", "move", "zero"])
def test_every_change_shows(change: str) -> None:
    t = table()
    base = digest_table(t, t.column_names)
    if change == "drop":
        other = t.slice(1)
    elif change == "duplicate":
        other = pa.concat_tables([t, t.slice(3, 1)])
    elif change == "value":
        other = t.set_column(2, "value", pa.array([v + (i == 9) for i, v in enumerate(t.column("value").to_pylist())]))
    elif change == "null":
        names = t.column("name").to_pylist()
        other = t.set_column(1, "name", pa.array([None if i == 8 else v for i, v in enumerate(names)]))
    elif change == "move":  # the same values per column, paired differently across rows
        ids = t.column("id").to_pylist()
        other = t.set_column(0, "id", pa.array(ids[1:] + ids[:1], pa.int64()))
    else:  # dropping a row whose values are all zero or false still changes every column's digest
        zero = pa.table({"n": pa.array([0, 1], pa.int64()), "b": [False, True]})
        assert set(digest_table(zero, ["n", "b"]).differences(digest_table(zero.slice(1), ["n", "b"]))) == {
            "n", "b", "<row>"}
        return
    assert base.differences(digest_table(other, t.column_names))


def test_nulls_hash_alike_and_digests_round_trip() -> None:
    assert list(value_hashes(pa.array([None, None], pa.string()))) == [NULL_HASH, NULL_HASH]
    d = digest_table(table(), ["id", "name"])
    assert Digest.from_json(d.to_json()) == d
    assert Digest.total([d, d]).rows == 2 * d.rows
