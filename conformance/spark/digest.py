"""An order-independent content digest of Arrow data: a row count, one digest per column and one per row.

The same function digests a Spark DataFrame's partitions (``mapInArrow``) and a Lance dataset's fragments
(read with pylance), so two tables hold the same rows, in any order and any split into batches, exactly
when (up to hash collisions) their digests are equal.

Every value is hashed to 64 bits from a canonical form of its logical value (so ``string`` and
``large_string``, ``int32`` and ``int64``, a timestamp in ``us`` and the same instant in ``ns`` hash alike);
null hashes to a constant. A column's digest is the sum, modulo 2**64, of its values' hashes: order does
not matter, duplicates count. The row digest sums a mix of each row's column hashes taken in column-name
order, so it also notices values that moved between rows. Hashing is vectorised (``pandas.util.hash_array``,
a keyed SipHash for strings and bytes, a fixed mixer for numbers), about 0.15 s per million strings.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["NULL_HASH", "Digest", "digest_batches", "digest_table", "value_hashes"]

U64 = npt.NDArray[np.uint64]
MOD = 2**64
NULL_HASH = np.uint64(0x9E3779B97F4A7C15)
_ROW_PRIME = np.uint64(0x100000001B3)
_OFFSET = np.uint64(0x632BE59BD9B4E019)
_TIME_DIGITS = {"s": 0, "ms": 3, "us": 6, "ns": 9}


def _hash_array(values: npt.NDArray[Any]) -> U64:
    import pandas as pd  # PySpark's own dependency; imported late so lancespec does not need it without Spark

    hashed: U64 = pd.util.hash_array(values, categorize=False)
    return hashed


def _mix(h: U64) -> U64:
    """splitmix64's finaliser, element-wise (wrapping uint64 arithmetic)."""
    with np.errstate(over="ignore"):
        h = (h ^ (h >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        h = (h ^ (h >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return h ^ (h >> np.uint64(31))


def _int64(array: pa.Array) -> npt.NDArray[np.int64]:
    """Integers (booleans as 0/1; temporal values as their stored integers), nulls as 0, in int64."""
    kind = array.type
    if pa.types.is_temporal(kind):
        array = array.view(pa.int32() if kind.bit_width == 32 else pa.int64())
    values: npt.NDArray[np.int64] = pc.cast(array, pa.int64(), safe=False).fill_null(0).to_numpy(
        zero_copy_only=False)
    return values


def _temporal(array: pa.Array, unit: str) -> U64:
    """An instant (or a duration or time of day) as (whole seconds, nanoseconds), whatever its unit."""
    values = _int64(array)
    scale = 10 ** _TIME_DIGITS[unit]
    seconds = np.floor_divide(values, scale)
    nanos = (values - seconds * scale) * 10 ** (9 - _TIME_DIGITS[unit])
    with np.errstate(over="ignore"):
        return _mix(_hash_array(seconds.view(np.uint64)) * _ROW_PRIME + _hash_array(nanos.view(np.uint64)))


def _canonical_python(value: Any) -> Any:
    if isinstance(value, dict):
        return tuple((k, _canonical_python(v)) for k, v in value.items())
    if isinstance(value, list):
        return tuple(_canonical_python(v) for v in value)
    return value


def value_hashes(array: pa.Array | pa.ChunkedArray) -> U64:
    """One 64-bit hash per value of ``array``, from the value's canonical form; nulls hash to NULL_HASH."""
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks() if array.num_chunks != 1 else array.chunk(0)
    kind = array.type
    if pa.types.is_dictionary(kind):
        array = array.dictionary_decode()
        kind = array.type
    if isinstance(kind, pa.ExtensionType):
        array = array.storage
        kind = array.type
    if pa.types.is_null(kind):
        return np.full(len(array), NULL_HASH, dtype=np.uint64)
    if pa.types.is_integer(kind) or pa.types.is_boolean(kind):
        hashed = _hash_array(_int64(array).view(np.uint64))
    elif pa.types.is_floating(kind):
        floats = pc.cast(array, pa.float64()).fill_null(0.0).to_numpy(zero_copy_only=False) + 0.0  # -0.0 -> 0.0
        floats[np.isnan(floats)] = np.nan  # one NaN
        hashed = _hash_array(floats.view(np.uint64))
    elif pa.types.is_timestamp(kind) or pa.types.is_duration(kind) or pa.types.is_time(kind):
        hashed = _temporal(array, kind.unit)
    elif pa.types.is_date(kind):
        hashed = _hash_array(_int64(pc.cast(array, pa.date32())).view(np.uint64))
    elif (pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_string_view(kind)
          or pa.types.is_binary(kind) or pa.types.is_large_binary(kind) or pa.types.is_binary_view(kind)
          or pa.types.is_fixed_size_binary(kind)):
        hashed = _hash_array(array.to_numpy(zero_copy_only=False))
    elif pa.types.is_decimal(kind):
        hashed = _hash_array(pc.cast(array, pa.string()).to_numpy(zero_copy_only=False))
    else:  # nested and anything else: the repr of the canonical Python value (slow, but exact)
        texts = np.array([repr(_canonical_python(v)) for v in array.to_pylist()], dtype=object)
        hashed = _hash_array(texts)
    with np.errstate(over="ignore"):
        hashed = _mix(hashed + _OFFSET)  # pandas hashes the integer 0 to 0: no value may count for nothing
    if array.null_count:
        hashed[array.is_null().to_numpy(zero_copy_only=False)] = NULL_HASH
    return hashed


def _wrap(value: int) -> int:
    return value % MOD


@dataclass
class Digest:
    """Row count, per-column digests and the row digest of some rows (each digest a sum modulo 2**64)."""

    rows: int = 0
    columns: dict[str, int] = field(default_factory=dict)
    row: int = 0

    def __add__(self, other: Digest) -> Digest:
        names = set(self.columns) | set(other.columns)
        return Digest(self.rows + other.rows,
                      {n: _wrap(self.columns.get(n, 0) + other.columns.get(n, 0)) for n in sorted(names)},
                      _wrap(self.row + other.row))

    def to_json(self) -> str:
        return json.dumps({"rows": self.rows, "columns": self.columns, "row": self.row}, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> Digest:
        data = json.loads(text)
        return cls(int(data["rows"]), {str(k): int(v) for k, v in data["columns"].items()}, int(data["row"]))

    @classmethod
    def total(cls, digests: Iterable[Digest], columns: Sequence[str] = ()) -> Digest:
        return sum(digests, cls(0, dict.fromkeys(columns, 0), 0))

    def differences(self, other: Digest) -> dict[str, tuple[int, int]]:
        """Column names (and ``"<row>"``) whose digests differ, with both values."""
        out = {n: (self.columns.get(n, 0), other.columns.get(n, 0))
               for n in sorted(set(self.columns) | set(other.columns))
               if self.columns.get(n, 0) != other.columns.get(n, 0)}
        if self.row != other.row:
            out["<row>"] = (self.row, other.row)
        return out


def digest_table(data: pa.RecordBatch | pa.Table, columns: Sequence[str]) -> Digest:
    """The digest of ``columns`` of ``data``."""
    names = sorted(columns)
    digest = Digest(data.num_rows, {}, 0)
    combined = np.zeros(data.num_rows, dtype=np.uint64)
    for position, name in enumerate(names):
        hashed = value_hashes(data.column(name))
        digest.columns[name] = int(hashed.sum(dtype=np.uint64))
        with np.errstate(over="ignore"):
            combined = combined * _ROW_PRIME + (hashed ^ np.uint64(position + 1))
    digest.row = int(_mix(combined).sum(dtype=np.uint64)) if data.num_rows else 0
    return digest


def digest_batches(batches: Iterable[pa.RecordBatch | pa.Table], columns: Sequence[str]) -> Digest:
    """The digest of ``columns`` over all ``batches``."""
    return Digest.total((digest_table(b, columns) for b in batches), columns)
