"""The reference's Arrow -> manifest field conversion agrees with what pylance 14.0.2 writes, for every
type the reference supports (second source of truth: pylance's own manifests). ``type`` is compared
separately: the reference follows the seed, pylance writes 0 (finding F-004)."""

from __future__ import annotations

from pathlib import Path

import lance
import pyarrow as pa
import pytest

from reference.schema import arrow_to_fields, column_field_ids
from reference.table import Dataset

pytestmark = pytest.mark.interop

TYPES = [
    pa.bool_(), pa.int8(), pa.uint8(), pa.int16(), pa.uint16(), pa.int32(), pa.uint32(), pa.int64(),
    pa.uint64(), pa.float16(), pa.float32(), pa.float64(), pa.string(), pa.large_string(), pa.binary(),
    pa.large_binary(), pa.date32(), pa.date64(), pa.decimal128(10, 2), pa.time32("ms"), pa.time64("us"),
    pa.duration("s"), pa.timestamp("ns", "UTC"), pa.timestamp("ms"), pa.binary(4), pa.list_(pa.float32(), 3),
    pa.large_list(pa.int32()), pa.list_(pa.struct([("a", pa.int8())])), pa.dictionary(pa.int32(), pa.string()),
    pa.struct([("p", pa.struct([("q", pa.int8()), ("r", pa.string())]))]),
]


def test_fields_match_pylance(tmp_path: Path) -> None:
    columns = [pa.field(f"c{i}", t, metadata={"k": str(i)}) for i, t in enumerate(TYPES)]
    columns.append(pa.field("required", pa.int64(), nullable=False))
    schema = pa.schema(columns, metadata={"table": "meta"})
    values = [pa.array([None], t) for t in TYPES] + [pa.array([7], pa.int64())]
    lance.write_dataset(pa.table(values, schema=schema), tmp_path / "ds")
    snapshot = Dataset.open(str(tmp_path / "ds")).snapshot()

    def described(fields: list) -> list:  # type: ignore[type-arg]
        return [(f.name, f.id, f.parent_id, f.logical_type, f.nullable, dict(f.metadata)) for f in fields]

    ours = arrow_to_fields(schema)
    assert described(ours) == described(list(snapshot.manifest.fields))
    assert column_field_ids(ours) == list(snapshot.manifest.fragments[0].files[0].fields)
