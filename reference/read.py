"""Reading rows of a snapshot, independently of pylance's dataset layer.

The reference resolves every file itself (``reference.table``), decodes each data file's columns with
``lance.file.LanceFileReader`` (the column codec, in a child process: ``reference.isolated``) and applies
deletion files with its own codec. Rows come back in fragment order, then row order (Table Format spec
"Fragments", "Deletion Files": readers must filter rows whose offsets appear in the fragment's deletion file).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import pyarrow as pa
import pyarrow.compute as pc

from .blob.columns import has_blob_column
from .blob.read import read_blob_data_file
from .codec.datafile import TailedObject, file_descriptor, read_footer
from .errors import FormatError, LanceSpecError, UnsupportedFeatureError
from .isolated import decode_data_file
from .proto import file_pb2
from .schema import arrow_field
from .store import Storage
from .table import FragmentView, Snapshot, deleted_offsets


def _file_fields(storage: Storage, uri: str) -> list[file_pb2.Field]:
    """The schema a data file records for itself (its FileDescriptor): field ids as the manifest knows them,
    names as they were when the file was written. A legacy (0.x) file is refused by name: the reference
    reader decodes the v2 file format only."""
    obj = TailedObject.fetch(storage, uri)
    footer = read_footer(obj)
    if footer.is_legacy:
        raise UnsupportedFeatureError(f"a legacy ({footer.major}.{footer.minor}) data file: the reference reader "
                                      "decodes the v2 file format only", uri)
    return list(file_descriptor(obj, footer).schema.fields)


def _conform(column: pa.ChunkedArray, stored: pa.Field, field_id: int, file_fields: list[file_pb2.Field],
             live: dict[int, file_pb2.Field], uri: str) -> tuple[pa.Field, pa.ChunkedArray]:
    """A column as the file stored it (field ``field_id``), renamed as the schema names it now and, for a
    struct, keeping only the children the schema still has (renamed likewise): a rename or a drop changes
    the manifest, never the data file (Table Format "Data Evolution")."""
    name = live[field_id].name
    stored_children = [f for f in file_fields if f.parent_id == field_id]
    if not pa.types.is_struct(stored.type) or not stored_children:  # a leaf, or a blob read as descriptors
        return stored.with_name(name), column
    if len(stored_children) != stored.type.num_fields:
        raise FormatError(f"struct field id {field_id} has {stored.type.num_fields} children in the data, "
                          f"{len(stored_children)} in the file's schema", uri)
    array = column.combine_chunks()
    kept = [(child.id, i) for i, child in enumerate(stored_children) if child.id in live]
    parts = [_conform(pa.chunked_array([array.field(i)]), stored.type.field(i), child_id, file_fields, live, uri)
             for child_id, i in kept]
    struct = pa.StructArray.from_arrays([p[1].combine_chunks() for p in parts], fields=[p[0] for p in parts],
                                        mask=array.is_null())
    return pa.field(name, struct.type, nullable=stored.nullable), pa.chunked_array([struct])


def _held_top_level(file_fields: list[file_pb2.Field], listed: Iterable[int]) -> set[int]:
    """The top-level field ids a data file holds: those whose id, or the id of a field below them, its
    DataFile lists (pylance lists a struct by its own id, a list by its item's). An id the list replaced by
    the tombstone -2 is not held: that column is ignored."""
    parent = {f.id: f.parent_id for f in file_fields}

    def top_level(field_id: int) -> int:
        for _ in parent:  # a cycle in a damaged schema ends after as many steps as there are fields
            if parent[field_id] == -1 or parent[field_id] not in parent:
                break
            field_id = parent[field_id]
        return field_id

    return {top_level(i) for i in listed if i >= 0 and i in parent}


def read_fragment(snapshot: Snapshot, fragment: FragmentView, storage: Storage,
                  storage_options: Mapping[str, str] | None = None, with_deleted: bool = False) -> pa.Table:
    """The fragment's rows with every top-level column of the schema. Columns are found by field id (the
    data file's own schema gives each id's stored name), so renamed, dropped and cast columns read as the
    schema says. A data file holds only the ids its DataFile lists: a column whose id the list replaces by
    the tombstone -2 is ignored, and a column no data file holds (added as all-null, metadata only, or
    tombstoned) reads as nulls (Table Format "Data Files": -2 tombstones; a field without a data file reads
    as NULL; docs/lance-format.md §3.2)."""
    fields = list(snapshot.manifest.fields)
    live = {f.id: f for f in fields}
    columns: dict[int, tuple[pa.Field, pa.ChunkedArray]] = {}
    for data_file, proto in zip(fragment.files, fragment.proto.files, strict=True):
        if data_file.uri is None:
            raise data_file.problem or LanceSpecError("unresolvable data file")
        if not any(i in live for i in proto.fields):
            continue
        file_fields = _file_fields(storage, data_file.uri)
        if has_blob_column(fields, proto.fields):  # blob v2 columns read as their stored descriptors
            table = read_blob_data_file(storage, data_file.uri, proto.file_size_bytes or None)
        else:
            table = decode_data_file(data_file.uri, None, data_file.uri, storage_options, storage.limits)
        if table.num_rows != fragment.physical_rows:
            raise FormatError(
                f"data file holds {table.num_rows} rows, the fragment records {fragment.physical_rows}",
                data_file.uri,
            )
        held = _held_top_level(file_fields, proto.fields)
        for stored in file_fields:
            if stored.parent_id != -1 or stored.id not in live or stored.id not in held:
                continue
            if stored.name not in table.column_names:
                raise FormatError(f"data file has no column {stored.name!r} (field id {stored.id})", data_file.uri)
            columns[stored.id] = _conform(table.column(stored.name), table.schema.field(stored.name), stored.id,
                                          file_fields, live, data_file.uri)
    for f in fields:
        if f.parent_id == -1 and f.id not in columns:
            nulls = pa.nulls(fragment.physical_rows, arrow_field(f, fields).type)
            columns[f.id] = (arrow_field(f, fields), pa.chunked_array([nulls]))
    order = [f.id for f in fields if f.parent_id == -1]
    metadata = dict(snapshot.manifest.schema_metadata) or None
    schema = pa.schema([columns[i][0] for i in order], metadata=metadata)
    result = pa.table([columns[i][1] for i in order], schema=schema)
    if with_deleted:
        return result
    deleted = deleted_offsets(storage, fragment)
    if not deleted:
        return result
    keep = pc.invert(pc.is_in(pa.array(range(result.num_rows), pa.uint32()), pa.array(deleted, pa.uint32())))
    return result.filter(keep)


def read_snapshot(snapshot: Snapshot, storage: Storage,
                  storage_options: Mapping[str, str] | None = None) -> pa.Table:
    """Every live row of the snapshot."""
    parts = [read_fragment(snapshot, f, storage, storage_options) for f in snapshot.fragments]
    parts = [p for p in parts if p.num_rows or p.num_columns]
    if not parts:
        return pa.table({})
    return pa.concat_tables(parts, promote_options="default")
