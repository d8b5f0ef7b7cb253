"""Arrow schemas <-> the manifest's flattened ``lance.file.Field`` list.

Rules (Table Format spec "Schema & Fields"): every field, nested ones included, has a unique id; ids are
assigned depth-first at creation; ``parent_id = -1`` marks a top-level field; PARENT fields are structs,
REPEATED fields are lists, the rest are LEAF. Logical-type strings are those pylance 14.0.2 writes
(the seed's ``time:{unit}`` is written ``time32:``/``time64:``, ``timestamp`` gains a timezone part,
and ``fixed_size_list``/``fixed_size_binary`` are added; spec/findings.md F-005). The reference writes
``Field.type`` as the seed says; pylance writes 0 (PARENT) for every field (F-004); readers ignore it.
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa

from .errors import UnsupportedFeatureError, ValidationError
from .proto import file_pb2

EXTENSION_NAME_KEY = "ARROW:extension:name"
EXTENSION_METADATA_KEY = "ARROW:extension:metadata"
BLOB_V2_EXTENSION = "lance.blob.v2"

_SIMPLE = {
    pa.null(): "null",
    pa.bool_(): "bool",
    pa.int8(): "int8",
    pa.uint8(): "uint8",
    pa.int16(): "int16",
    pa.uint16(): "uint16",
    pa.int32(): "int32",
    pa.uint32(): "uint32",
    pa.int64(): "int64",
    pa.uint64(): "uint64",
    pa.float16(): "halffloat",
    pa.float32(): "float",
    pa.float64(): "double",
    pa.string(): "string",
    pa.large_string(): "large_string",
    pa.binary(): "binary",
    pa.large_binary(): "large_binary",
    pa.date32(): "date32:day",
    pa.date64(): "date64:ms",
}


def logical_type(dtype: pa.DataType) -> str:
    """The manifest's logical-type string for an Arrow type (the list/struct wrappers included)."""
    if dtype in _SIMPLE:
        return _SIMPLE[dtype]
    if pa.types.is_timestamp(dtype):
        return f"timestamp:{dtype.unit}:{dtype.tz or '-'}"
    if pa.types.is_time32(dtype):
        return f"time32:{dtype.unit}"
    if pa.types.is_time64(dtype):
        return f"time64:{dtype.unit}"
    if pa.types.is_duration(dtype):
        return f"duration:{dtype.unit}"
    if pa.types.is_decimal128(dtype):
        return f"decimal:128:{dtype.precision}:{dtype.scale}"
    if pa.types.is_decimal256(dtype):
        return f"decimal:256:{dtype.precision}:{dtype.scale}"
    if pa.types.is_fixed_size_binary(dtype):
        return f"fixed_size_binary:{dtype.byte_width}"
    if pa.types.is_fixed_size_list(dtype):
        return f"fixed_size_list:{logical_type(dtype.value_type)}:{dtype.list_size}"
    if pa.types.is_dictionary(dtype):
        return f"dict:{logical_type(dtype.value_type)}:{logical_type(dtype.index_type)}:false"
    if pa.types.is_struct(dtype):
        return "struct"
    if pa.types.is_large_list(dtype):
        return "large_list.struct" if pa.types.is_struct(dtype.value_type) else "large_list"
    if pa.types.is_list(dtype):
        return "list.struct" if pa.types.is_struct(dtype.value_type) else "list"
    raise ValidationError(f"Arrow type {dtype} has no Lance logical type in this implementation")


_FROM_SIMPLE = {name: dtype for dtype, name in _SIMPLE.items()}


def arrow_field(field: file_pb2.Field, fields: Sequence[file_pb2.Field]) -> pa.Field:
    """The Arrow field a manifest field stands for, its children found among ``fields`` by ``parent_id``:
    the simple types, timestamps, structs and lists. Raises UnsupportedFeatureError for another logical
    type (the reader then says which field it cannot build)."""
    text = field.logical_type
    children = [f for f in fields if f.parent_id == field.id]
    if text in _FROM_SIMPLE:
        dtype = _FROM_SIMPLE[text]
    elif text.startswith("timestamp:"):
        _, unit, tz = [*text.split(":", 2), "-"][:3]
        dtype = pa.timestamp(unit, None if tz == "-" else tz)
    elif text == "struct":
        dtype = pa.struct([arrow_field(c, fields) for c in children])
    elif text in ("list", "large_list", "list.struct", "large_list.struct") and len(children) == 1:
        item = arrow_field(children[0], fields)
        dtype = pa.large_list(item) if text.startswith("large_list") else pa.list_(item)
    else:
        raise UnsupportedFeatureError(f"field {field.name!r} (id {field.id}) has logical type {text!r}, which the "
                                      "reference reader cannot build without a data file holding it")
    return pa.field(field.name, dtype, nullable=field.nullable)


def _children(dtype: pa.DataType) -> list[pa.Field]:
    if pa.types.is_struct(dtype):
        return [dtype.field(i) for i in range(dtype.num_fields)]
    if pa.types.is_list(dtype) or pa.types.is_large_list(dtype):
        return [dtype.value_field]
    return []


def _field_type(dtype: pa.DataType) -> int:
    if pa.types.is_struct(dtype):
        return int(file_pb2.Field.PARENT)
    if pa.types.is_list(dtype) or pa.types.is_large_list(dtype):
        return int(file_pb2.Field.REPEATED)
    return int(file_pb2.Field.LEAF)


def arrow_to_fields(schema: pa.Schema, first_id: int = 0) -> list[file_pb2.Field]:
    """Flatten ``schema`` depth-first, assigning ids from ``first_id``."""
    out: list[file_pb2.Field] = []

    def visit(field: pa.Field, parent_id: int) -> None:
        dtype = field.type
        extension: dict[str, bytes] = {}
        if isinstance(dtype, pa.ExtensionType):  # stored as its storage type, named in the metadata
            extension = {EXTENSION_NAME_KEY: dtype.extension_name.encode(),
                         EXTENSION_METADATA_KEY: dtype.__arrow_ext_serialize__()}
            dtype = dtype.storage_type
        proto = file_pb2.Field(
            type=_field_type(dtype),  # type: ignore[arg-type]
            name=field.name,
            id=first_id + len(out),
            parent_id=parent_id,
            logical_type=logical_type(dtype),
            nullable=field.nullable,
        )
        for key, value in (field.metadata or {}).items():
            proto.metadata[key.decode()] = value
        proto.metadata.update(extension)
        if EXTENSION_NAME_KEY in proto.metadata:
            proto.extension_name = proto.metadata[EXTENSION_NAME_KEY].decode()
        out.append(proto)
        for child in _children(dtype):
            visit(child, proto.id)

    for field in schema:
        visit(field, -1)
    return out


def schema_metadata(schema: pa.Schema) -> dict[str, bytes]:
    """The schema-level metadata as the manifest stores it (string keys, byte values)."""
    return {k.decode(): v for k, v in (schema.metadata or {}).items()}


def column_field_ids(fields: Sequence[file_pb2.Field]) -> list[int]:
    """The ids of fields that hold a column of their own in a v2 data file: the fields without
    children, in depth-first order (pylance 14.0.2: structs and lists list only their leaves), except
    that a blob v2 field is one column and its children none (docs/lance-format.md §14.1)."""
    blobs = {f.id for f in fields if f.extension_name == BLOB_V2_EXTENSION}
    parents = {f.parent_id for f in fields}
    return [f.id for f in fields if (f.id not in parents or f.id in blobs) and f.parent_id not in blobs]


def same_shape(a: Sequence[file_pb2.Field], b: Sequence[file_pb2.Field]) -> bool:
    """Whether two field lists describe the same columns (names, types, nesting; ids and nullability
    aside)."""

    def key(fields: Sequence[file_pb2.Field]) -> list[tuple[str, str, int]]:
        depth = {f.id: 0 for f in fields if f.parent_id == -1}
        for f in fields:
            if f.parent_id != -1:
                depth[f.id] = depth.get(f.parent_id, 0) + 1
        return [(f.name, f.logical_type, depth[f.id]) for f in fields]

    return key(a) == key(b)
