"""``DescriptorColumn``: the stored blob descriptors of a data file as columns, row access against Arrow's own
reading of the struct, and the refusals of what no descriptor may hold."""

from __future__ import annotations

import pyarrow as pa
import pytest

from reference.blob.read import DESCRIPTOR_FIELDS, BlobDescriptor, DescriptorColumn
from reference.errors import FormatError

TYPES = [pa.uint8(), pa.uint64(), pa.uint64(), pa.uint32(), pa.utf8()]


def _struct(rows: list[tuple[object, ...] | None], types: list[pa.DataType] = TYPES) -> pa.StructArray:
    children = [pa.array([None if r is None else r[i] for r in rows], t) for i, t in enumerate(types)]
    return pa.StructArray.from_arrays(children, names=list(DESCRIPTOR_FIELDS),
                                      mask=pa.array([r is None for r in rows]))


def _as_arrow_reads(column: pa.ChunkedArray) -> list[BlobDescriptor | None]:
    return [None if v is None else
            BlobDescriptor(v["kind"], v["position"], v["size"], v["blob_id"], v["blob_uri"] or "")
            for v in column.to_pylist()]


def test_rows_read_as_arrow_reads_them_across_chunks_and_slices() -> None:
    rows = [(0, 5, 10, 0, ""), None, (1, 0, 7, 3, None), (3, 2**64 - 1, 1, 1, "a.bin"), (2, 0, 0, 2**32 - 1, "")]
    whole = _struct(rows)
    column = pa.chunked_array([whole.slice(1, 2), whole.slice(3)])  # chunks with offsets
    found = DescriptorColumn.from_arrow(column, "f.lance")
    assert list(found) == _as_arrow_reads(column)
    assert len(found) == 4 and found[0] is None
    assert not found.exact  # 2^64 - 1 does not fit a 64-bit sum: judged row by row


def test_a_column_of_small_values_is_exact() -> None:
    found = DescriptorColumn.from_arrow(pa.chunked_array([_struct([(0, 1, 2, 0, ""), (1, 3, 4, 1, "")])]), "f.lance")
    assert found.exact and list(found.kind) == [0, 1] and found.kind.dtype.kind == "i"


def test_a_null_child_of_a_present_descriptor_is_a_format_error() -> None:
    with pytest.raises(FormatError, match="row 1 has a null 'size'"):
        DescriptorColumn.from_arrow(pa.chunked_array([_struct([(0, 1, 2, 0, ""), (0, 1, None, 0, "")])]), "f.lance")


def test_a_child_that_is_not_an_integer_is_a_format_error() -> None:
    types = [pa.uint8(), pa.float64(), pa.uint64(), pa.uint32(), pa.utf8()]
    with pytest.raises(FormatError, match="'position' is double, not an integer"):
        DescriptorColumn.from_arrow(pa.chunked_array([_struct([(0, 1.5, 2, 0, "")], types)]), "f.lance")


def test_nulls_is_a_column_of_null_blobs() -> None:
    assert list(DescriptorColumn.nulls(3)) == [None, None, None]
