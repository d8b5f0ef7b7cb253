"""Reading rows of a snapshot, independently of pylance's dataset layer.

The reference resolves every file itself (``reference.table``), decodes each data file's columns with
``lance.file.LanceFileReader`` (the column codec, in a child process: ``reference.isolated``) and applies
deletion files with its own codec. Rows
come back in fragment order, then row order (Table Format spec "Fragments", "Deletion Files": readers must
filter rows whose offsets appear in the fragment's deletion file).
"""

from __future__ import annotations

from collections.abc import Mapping

import pyarrow as pa
import pyarrow.compute as pc

from .blob.columns import has_blob_column
from .blob.read import read_blob_data_file
from .errors import FormatError, LanceSpecError
from .isolated import decode_data_file
from .proto import file_pb2
from .store import Storage
from .table import FragmentView, Snapshot, deleted_offsets

TOMBSTONE = -2


def _top_level_owner(fields: list[file_pb2.Field]) -> dict[int, int]:
    parent = {f.id: f.parent_id for f in fields}
    owner = {}
    for f in fields:
        top = f.id
        while parent.get(top, -1) != -1:
            top = parent[top]
        owner[f.id] = top
    return owner


def read_fragment(snapshot: Snapshot, fragment: FragmentView, storage: Storage,
                  storage_options: Mapping[str, str] | None = None, with_deleted: bool = False) -> pa.Table:
    """The fragment's rows with every top-level column of the schema that some data file holds."""
    fields = list(snapshot.manifest.fields)
    owner = _top_level_owner(fields)
    names = {f.id: f.name for f in fields}
    columns: dict[int, pa.ChunkedArray] = {}
    arrow_fields: dict[int, pa.Field] = {}
    for data_file, proto in zip(fragment.files, fragment.proto.files, strict=True):
        if data_file.uri is None:
            raise data_file.problem or LanceSpecError("unresolvable data file")
        wanted = {owner[i] for i in proto.fields if i != TOMBSTONE and i in owner}
        if not wanted:
            continue
        if has_blob_column(fields, proto.fields):  # blob v2 columns read as their stored descriptors
            table = read_blob_data_file(storage, data_file.uri, proto.file_size_bytes or None)
        else:
            table = decode_data_file(data_file.uri, None, data_file.uri, storage_options, storage.limits)
        if table.num_rows != fragment.physical_rows:
            raise FormatError(
                f"data file holds {table.num_rows} rows, the fragment records {fragment.physical_rows}",
                data_file.uri,
            )
        for top in wanted:
            if names[top] not in table.column_names:
                raise FormatError(f"data file has no column {names[top]!r}", data_file.uri)
            columns[top] = table.column(names[top])
            arrow_fields[top] = table.schema.field(names[top])
    order = [f.id for f in fields if f.parent_id == -1 and f.id in columns]
    metadata = dict(snapshot.manifest.schema_metadata) or None
    schema = pa.schema([arrow_fields[i] for i in order], metadata=metadata)
    result = pa.table([columns[i] for i in order], schema=schema)
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
