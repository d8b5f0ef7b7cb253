"""Blob routing laws (the Blob v2 post "Thresholds for Different Storage Semantics", "File and Table Format
Integration"; docs/lance-format.md §14.4-14.5), with sizes drawn at and around the thresholds:

* the kind is a function of size and thresholds: what the reference writes (read back from the stored
  descriptors) is ``route(size, thresholds)`` for every value, and pylance writing the same column chooses
  the same kinds (BLOB-001, BLOB-005);
* reading any range of a descriptor returns the bytes written, through the reference's ``BlobFile`` and
  through pylance's ``take_blobs`` on the reference's dataset (BLOB-002, BLOB-003).
"""

from __future__ import annotations

from typing import Any

import lance
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st
from property_kit import scratch

from conformance.strategies import blob_columns, thresholds
from reference import api as ref
from reference.blob.read import BlobReader
from reference.blob.routing import BlobKind, Thresholds, route
from reference.table import Dataset

pytestmark = pytest.mark.interop  # pylance writes and reads the same columns


def blob_table(values: list[bytes | None], limits: Thresholds) -> pa.Table:
    field = lance.blob_field("blob", inline_size_threshold=limits.inline,
                             dedicated_size_threshold=limits.dedicated, pack_file_size_threshold=limits.pack_file)
    schema = pa.schema([pa.field("id", pa.int64()), field])
    return pa.Table.from_arrays([pa.array(range(len(values)), pa.int64()), lance.blob_array(list(values))],
                                schema=schema)


def stored_kinds(uri: str) -> list[int | None]:
    """Per row, the kind of the stored descriptor (read by the reference from any writer's files)."""
    snap = Dataset(uri).snapshot()
    reader = BlobReader(snap)
    out: list[int | None] = []
    for fragment in snap.fragments:
        out += [None if d is None else d.kind for d in reader.descriptors(fragment, "blob")]
    return out


def expected_kinds(values: list[bytes | None], limits: Thresholds) -> list[int | None]:
    return [None if v is None else int(route(len(v), limits)) for v in values]


@given(limits=thresholds(max_threshold=1500), data=st.data())
def test_the_kind_is_a_function_of_size_and_thresholds(limits: Thresholds, data: st.DataObject) -> None:
    values = data.draw(blob_columns(limits, max_rows=10), label="values")
    # every example also holds the boundary sizes themselves (BLOB-005: "above" a threshold, not "at")
    values += [bytes([7]) * n for n in (limits.inline, limits.inline + 1, limits.dedicated, limits.dedicated + 1)]
    per_file = data.draw(st.integers(1, 4), label="max_rows_per_file")
    with scratch() as tmp:
        table = blob_table(values, limits)
        ref.write_dataset(table, str(tmp / "ref"), max_rows_per_file=per_file)
        lance.write_dataset(table, str(tmp / "pyl"), max_rows_per_file=per_file, data_storage_version="2.2")
        want = expected_kinds(values, limits)
        assert stored_kinds(str(tmp / "ref")) == want
        assert stored_kinds(str(tmp / "pyl")) == want  # pylance routes the same way


def _ranges(data: st.DataObject, size: int) -> list[tuple[int, int]]:
    offset = st.integers(0, size)
    out = []
    for _ in range(data.draw(st.integers(1, 3), label="ranges")):
        start = data.draw(offset, label="offset")
        out.append((start, data.draw(st.integers(0, size - start), label="length")))
    return out


@given(limits=thresholds(max_threshold=1500), data=st.data())
def test_reading_any_range_returns_the_bytes_written(limits: Thresholds, data: st.DataObject) -> None:
    values = data.draw(blob_columns(limits, max_rows=8), label="values")
    per_file = data.draw(st.integers(1, 4), label="max_rows_per_file")
    base = data.draw(st.sampled_from([None, "plain", "root"]), label="base")
    with scratch() as tmp:
        kw: dict[str, Any] = {}
        if base is not None:
            kw = {"initial_bases": [ref.DatasetBasePath(str(tmp / "b"), name="b", is_dataset_root=base == "root")],
                  "target_bases": ["b"]}
        ds = ref.write_dataset(blob_table(values, limits), str(tmp / "ds"), max_rows_per_file=per_file, **kw)
        indices = list(range(len(values)))
        ours = ds.take_blobs("blob", indices)
        theirs = lance.dataset(str(tmp / "ds")).take_blobs("blob", indices=indices)
        for value, mine, pylance_file in zip(values, ours, theirs, strict=True):
            if value is None:
                assert mine is None
                continue
            assert mine is not None and mine.size() == len(value)
            assert mine.readall() == value
            for start, length in _ranges(data, len(value)):
                assert mine.read_range(start, length) == value[start:start + length]
                pylance_file.seek(start)
                assert pylance_file.read(length) == value[start:start + length]
            kind = BlobKind(mine.descriptor.kind)
            assert kind is route(len(value), limits)
