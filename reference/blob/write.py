"""Writing blob columns: validate them, write their sidecars and hand the file writer a prepared column
(the Blob v2 post "Lance Blob V2"; docs/lance-format.md §14).

How a blob column reaches the file writer (established from the Lance source and pylance 14.0.2): the table
layer routes (``blob.routing``) and writes sidecars itself, then hands ``lance.file.LanceFileWriter`` a
*prepared* struct (``PREPARED_TYPE``). The file writer's blob-v2 encoder stores inline ``data`` out of line in
the data file (64-byte aligned) and records its *absolute* file offset as ``position``; for the other kinds it
copies kind/blob_id/blob_size/position/uri into the stored descriptor ``<kind, position, size, blob_id,
blob_uri>`` (a packed-struct column). For the same input the reference's data file is byte-identical to
pylance's except for the order of two schema-metadata map entries.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from ..errors import BlobThresholdMismatch, InvalidBlobValue, ValidationError
from ..layout import Base
from ..proto import file_pb2
from ..schema import BLOB_V2_EXTENSION, EXTENSION_NAME_KEY
from ..store import Storage
from .columns import arrow_is_blob, is_blob_field, is_legacy_blob, metadata_text
from .routing import (
    THRESHOLD_KEYS,
    BlobKind,
    Placement,
    Thresholds,
    map_external_uri,
    plan_placements,
    sidecar_uri,
    thresholds_of,
)

PREPARED_TYPE = pa.struct([
    pa.field("kind", pa.uint8()),
    pa.field("data", pa.large_binary()),
    pa.field("uri", pa.utf8()),
    pa.field("blob_id", pa.uint32()),
    pa.field("blob_size", pa.uint64()),
    pa.field("position", pa.uint64()),
])
"""What ``LanceFileWriter`` takes for a blob v2 column (with ``ARROW:extension:name = lance.blob.v2`` on
the field). Per kind: inline sets ``data``; packed sets ``blob_id``, ``blob_size``, ``position``;
dedicated ``blob_id``, ``blob_size``; external ``uri``, ``blob_id`` (the base id, 0 for an absolute
URI) and, for a range, ``position`` and ``blob_size``. A null row is a null struct."""

MIN_FILE_VERSION = (2, 2)
"""Blob v2 needs data storage version 2.2 or later (pylance: "Blob v2 requires file version >= 2.2")."""


@dataclass(frozen=True)
class _Value:
    """One logical blob value: bytes, or a URI with an optional range; ``None`` rows are nulls."""

    data: bytes | None = None
    uri: str | None = None
    position: int | None = None
    size: int | None = None


def _storage_array(column: pa.ChunkedArray | pa.Array) -> pa.Array:
    array = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    if isinstance(array, pa.ExtensionArray):
        array = array.storage
    return array


def _logical_values(column: pa.ChunkedArray | pa.Array, name: str) -> list[_Value | None]:
    """The values of an incoming blob column: a ``lance.blob.v2`` array (storage ``data/uri`` or
    ``data/uri/position/size``), a struct with those children, or plain binary (bytes only)."""
    array = _storage_array(column)
    if pa.types.is_binary(array.type) or pa.types.is_large_binary(array.type):
        return [None if v is None else _Value(data=v) for v in array.to_pylist()]
    if not pa.types.is_struct(array.type):
        raise InvalidBlobValue(f"column {name!r} is a blob column but holds {array.type}; give lance.blob_array "
                               "values, a struct<data, uri[, position, size]> or binary")
    names = [array.type.field(i).name for i in range(array.type.num_fields)]
    if names not in (["data", "uri"], ["data", "uri", "position", "size"]):
        raise InvalidBlobValue(f"blob column {name!r} has children {names}; expected data, uri[, position, size]")

    def child(key: str) -> list[Any]:
        return array.field(key).to_pylist() if key in names else [None] * len(array)

    valid = array.is_valid().to_pylist()
    rows = zip(valid, child("data"), child("uri"), child("position"), child("size"), strict=True)
    return [_Value(data, uri, position, size) if ok else None for ok, data, uri, position, size in rows]


def _check_value(value: _Value, name: str, row: int) -> None:
    where = f"column {name!r} row {row}"
    if value.data is not None and value.uri is not None:
        raise InvalidBlobValue(f"{where}: Blob cannot have both data and uri")
    if value.data is None and value.uri is None:
        raise InvalidBlobValue(f"{where}: Blob must set `data` or `uri`; use None for a null blob")
    if (value.position is None) != (value.size is None):
        raise InvalidBlobValue(f"{where}: External blob must set both position and size, or neither")
    if value.position is not None and value.data is not None:
        raise InvalidBlobValue(f"{where}: Blob cannot have both inline data and external slice metadata")
    if value.size is not None and value.size <= 0:
        raise InvalidBlobValue(f"{where}: External blob range size must be greater than zero")
    if value.uri == "":
        raise InvalidBlobValue(f"{where}: Blob uri cannot be empty")


@dataclass(frozen=True)
class _BlobColumn:
    name: str
    nullable: bool
    thresholds: Thresholds
    values: list[_Value | None]
    external: dict[int, tuple[int, str]]  # row -> (blob_id, blob_uri)


@dataclass
class BlobWriter:
    """Routes the blob columns of a table and writes their sidecars, one data file at a time.

    ``check_blob_table`` builds it after validating everything (nothing is written by then);
    ``prepare(start, length, data_file_uri)`` writes the sidecars of rows ``[start, start+length)`` next
    to the data file and returns those rows with every blob column in ``PREPARED_TYPE``. Write order,
    hence sidecar ids, follows pylance 14.0.2: record batch by record batch, column by column within a
    batch, row by row. ``sidecars`` lists every sidecar written so far (for clean-up on failure).
    """

    storage: Storage
    table: pa.Table
    columns: dict[str, _BlobColumn]
    sidecars: list[str] = field(default_factory=list)

    def prepare(self, start: int, length: int, data_file_uri: str) -> pa.Table:
        chunk = self.table.slice(start, length)
        order: list[tuple[str, int]] = []  # (column, row) in write order
        row = start
        for batch in chunk.to_batches():
            for name in self.columns:
                order += [(name, r) for r in range(row, row + batch.num_rows)]
            row += batch.num_rows
        values = [self.columns[name].values[r] for name, r in order]
        sizes = [len(v.data) if v is not None and v.data is not None else None for v in values]
        placements = plan_placements(sizes, [self.columns[name].thresholds for name, _ in order])
        placed = dict(zip(order, placements, strict=True))
        packs: dict[int, list[tuple[int, bytes]]] = {}
        for value, placement in zip(values, placements, strict=True):
            if placement is None or value is None or value.data is None:
                continue
            if placement.kind is BlobKind.DEDICATED:
                self._put(sidecar_uri(data_file_uri, placement.blob_id), value.data)
            elif placement.kind is BlobKind.PACKED:
                packs.setdefault(placement.blob_id, []).append((placement.position or 0, value.data))
        for blob_id, parts in sorted(packs.items()):
            self._put(sidecar_uri(data_file_uri, blob_id), b"".join(data for _, data in sorted(parts)))
        for name, column in self.columns.items():
            prepared = _prepared_array(column, start, length, placed)
            prepared_field = pa.field(name, PREPARED_TYPE, nullable=column.nullable,
                                      metadata={EXTENSION_NAME_KEY: BLOB_V2_EXTENSION})
            chunk = chunk.set_column(chunk.schema.get_field_index(name), prepared_field, prepared)
        return chunk

    def _put(self, uri: str, data: bytes) -> None:
        self.storage.put(uri, data)
        self.sidecars.append(uri)


def _prepared_array(column: _BlobColumn, start: int, length: int,
                    placed: Mapping[tuple[str, int], Placement | None]) -> pa.Array:
    """The rows ``[start, start+length)`` of a blob column as ``PREPARED_TYPE`` for the file writer (a child
    a kind does not set is null)."""
    rows: list[dict[str, Any] | None] = []
    for r in range(start, start + length):
        value = column.values[r]
        placement = placed.get((column.name, r))
        if value is None:
            rows.append(None)
        elif placement is None:  # external: (base id or 0, relative or absolute URI)
            base_id, stored_uri = column.external[r]
            rows.append({"kind": BlobKind.EXTERNAL, "uri": stored_uri, "blob_id": base_id, "blob_size": value.size,
                         "position": value.position})
        elif placement.kind is BlobKind.INLINE:
            rows.append({"kind": BlobKind.INLINE, "data": value.data})
        else:
            rows.append({"kind": placement.kind, "blob_id": placement.blob_id, "blob_size": placement.size,
                         "position": placement.position if placement.kind is BlobKind.PACKED else None})
    children = pa.array([row or {} for row in rows], PREPARED_TYPE).flatten()  # a null row: null children too
    nulls = pa.array([row is None for row in rows], pa.bool_())
    return pa.StructArray.from_arrays(children, fields=list(PREPARED_TYPE), mask=nulls)


def check_blob_table(storage: Storage, table: pa.Table, fields: Sequence[file_pb2.Field], bases: Sequence[Base],
                     file_version: tuple[int, int], *, allow_external_blob_outside_bases: bool = False,
                     where: str | None = None) -> BlobWriter | None:
    """Validate the blob columns of ``table`` against the target schema ``fields`` before anything is
    written; None when the schema has no blob column.

    Refuses (ValidationError subclasses): blob v2 below data storage version 2.2; a legacy
    ``lance-encoding:blob`` binary column at 2.2 or later (the reference stores blob v2 only from the
    ``lance.blob.v2`` type); thresholds that are not numbers; incoming thresholds that differ from the
    schema's (pylance: "Blob thresholds for existing columns are stored in the dataset schema"); values
    that break the blob type's rules; external URIs outside every registered non-root base without the
    opt-in. Routing uses the thresholds of the schema (the dataset's on append).
    """
    top = [f for f in fields if f.parent_id == -1]
    if file_version >= MIN_FILE_VERSION:
        for f in top:
            if is_legacy_blob(f):
                raise ValidationError(
                    f"column {f.name!r} is a legacy blob column (lance-encoding:blob on binary); at data storage "
                    "version 2.2 and later the reference writes blob v2 only: use lance.blob_array", where)
    blob_fields = [f for f in top if is_blob_field(f)]
    if not blob_fields:
        return None
    if file_version < MIN_FILE_VERSION:
        raise ValidationError(
            f"Blob v2 requires data storage version >= 2.2 (got {file_version[0]}.{file_version[1]})", where)
    columns: dict[str, _BlobColumn] = {}
    for f in blob_fields:
        thresholds = thresholds_of(f, where)
        index = table.schema.get_field_index(f.name)
        if index < 0:
            raise ValidationError(f"the data has no column {f.name!r}", where)
        incoming = table.schema.field(index)
        for name, key in THRESHOLD_KEYS.items():
            given = metadata_text(incoming.metadata, key)
            if given is None:
                continue
            effective_value = metadata_text(f.metadata, key) or str(getattr(Thresholds(), name))
            if given != effective_value:
                raise BlobThresholdMismatch(
                    f"cannot write data with blob threshold metadata {key}={given} for field {f.name!r}; the "
                    f"dataset schema has effective value {effective_value}. Blob thresholds for existing columns "
                    "are stored in the dataset schema.", where)
        if not (arrow_is_blob(incoming) or pa.types.is_struct(_storage_array(table.column(index)).type)
                or pa.types.is_large_binary(incoming.type) or pa.types.is_binary(incoming.type)):
            raise InvalidBlobValue(f"column {f.name!r} is a blob column but the data gives {incoming.type}", where)
        values = _logical_values(table.column(index), f.name)
        external: dict[int, tuple[int, str]] = {}
        for row, value in enumerate(values):
            if value is None:
                if not f.nullable:
                    raise InvalidBlobValue(f"column {f.name!r} row {row}: null in a non-nullable blob column", where)
                continue
            _check_value(value, f.name, row)
            if value.uri is not None:
                try:
                    external[row] = map_external_uri(value.uri, bases, allow_external_blob_outside_bases)
                except ValidationError as exc:
                    raise type(exc)(f"column {f.name!r} row {row}: {exc.message}", where) from None
        columns[f.name] = _BlobColumn(f.name, f.nullable, thresholds, values, external)
    return BlobWriter(storage, table, columns)
