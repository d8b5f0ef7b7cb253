"""Deletion files: the row offsets of a fragment that are deleted.

Two encodings (Table Format spec "Deletion Files"; docs/lance-format.md §9 for what pylance 14.0.2 writes):
``.arrow`` is an Arrow IPC *file* with exactly one record batch of one non-null ``row_id: uint32``
column (the seed says Int32Array; pylance writes and requires UInt32); ``.bin`` is a 32-bit roaring
bitmap in the portable serialization. Writers choose ``.bin`` from 5000 deleted rows up.
"""

from __future__ import annotations

from collections.abc import Iterable

import pyarrow as pa
import pyarrow.ipc as ipc
from pyroaring import BitMap

from ..errors import FormatError
from ..layout import DELETION_ARROW, DELETION_BITMAP
from ..limits import DEFAULT_LIMITS
from .arrow_ipc import check_inflation

BITMAP_THRESHOLD = 5000
ARROW_SCHEMA = pa.schema([pa.field("row_id", pa.uint32(), nullable=False)])


def file_type_for(count: int) -> int:
    """The file type a writer uses for ``count`` deleted rows (pylance 14.0.2: bitmap from 5000)."""
    return DELETION_BITMAP if count >= BITMAP_THRESHOLD else DELETION_ARROW


def deserialize_bitmap(data: bytes, where: str = "") -> BitMap:
    """A ``.bin`` file as a roaring bitmap, compact as stored. Raises FormatError when it is not one."""
    try:
        return BitMap.deserialize(data)
    except (ValueError, OverflowError, IndexError) as exc:  # IndexError: pyroaring on some truncated runs
        raise FormatError(f"not a portable roaring bitmap: {exc}", where) from exc


def decode_deletions(data: bytes, file_type: int, where: str = "", physical_rows: int | None = None) -> list[int]:
    """The deleted row offsets, sorted ascending. Raises FormatError when the bytes are not that type, or
    (given ``physical_rows``) when an offset is not below it: a bitmap is checked before it is expanded,
    so a small file cannot make a list of billions of offsets."""
    if file_type == DELETION_ARROW:
        offsets = _decode_arrow(data, where, physical_rows)
    elif file_type == DELETION_BITMAP:
        bitmap = deserialize_bitmap(data, where)
        if physical_rows is not None and bitmap and bitmap.max() >= physical_rows:
            raise FormatError(f"deletes offset {bitmap.max()}, not below physical_rows = {physical_rows} "
                              f"({len(bitmap)} offsets in all)", where)
        offsets = list(bitmap)
    else:
        raise FormatError(f"unknown deletion file type {file_type}", where)
    if physical_rows is not None and offsets and offsets[-1] >= physical_rows:
        raise FormatError(f"deletes offset {offsets[-1]}, not below physical_rows = {physical_rows}", where)
    return offsets


def arrow_batches(data: bytes, where: str, max_rows: int | None) -> list[pa.RecordBatch]:
    """The record batches of an Arrow IPC file, its field names checked as UTF-8 (pyarrow decodes them only
    when first used, and then raises UnicodeDecodeError); FormatError when it is no such file. A batch of
    more than ``max_rows`` rows (the fragment's ``physical_rows``; unknown: as many as ``--max-object-bytes``
    holds at 8 bytes a row), or a compressed buffer declaring more than its rows need, is refused before
    anything is inflated (``arrow_ipc.check_inflation``)."""
    check_inflation(data, where, DEFAULT_LIMITS.max_object_bytes // 8 if max_rows is None else max_rows)
    try:
        reader = ipc.open_file(pa.BufferReader(data))
        batches = [reader.get_batch(i) for i in range(reader.num_record_batches)]
        for batch in batches:
            batch.schema.names  # noqa: B018 - decoded here, so that a name that is not UTF-8 fails here
    except UnicodeDecodeError as exc:
        raise FormatError(f"not an Arrow IPC file: a field name is not UTF-8 ({exc.reason})", where) from exc
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise FormatError(f"not an Arrow IPC file: {exc}", where) from exc
    return batches


def _decode_arrow(data: bytes, where: str, physical_rows: int | None) -> list[int]:
    batches = arrow_batches(data, where, physical_rows)
    rows = sum(batch.num_rows for batch in batches)
    if physical_rows is not None and rows > physical_rows:  # never decoded: no such many distinct offsets fit
        raise FormatError(f"holds {rows} offsets, more than the fragment's physical_rows = {physical_rows}", where)
    if len(batches) != 1:
        raise FormatError(f"expected exactly one record batch, found {len(batches)}", where)
    schema = batches[0].schema
    if len(schema) != 1 or schema.field(0).type != pa.uint32() or schema.field(0).name != "row_id":
        raise FormatError(f"expected one column 'row_id: uint32', found {schema}", where)
    column = batches[0].column(0)
    if column.null_count:
        raise FormatError("row_id column contains nulls", where)
    return sorted(column.to_pylist())


def encode_deletions(offsets: Iterable[int], file_type: int) -> bytes:
    """Encode the deleted row offsets (deduplicated) in the given file type."""
    rows = sorted(set(offsets))
    if file_type == DELETION_BITMAP:
        return bytes(BitMap(rows).serialize())
    if file_type != DELETION_ARROW:
        raise ValueError(f"unknown deletion file type {file_type}")
    sink = pa.BufferOutputStream()
    batch = pa.record_batch([pa.array(rows, pa.uint32())], schema=ARROW_SCHEMA)
    with ipc.new_file(sink, ARROW_SCHEMA) as writer:
        writer.write_batch(batch)
    return bytes(sink.getvalue().to_pybytes())
