"""Which columns are blob columns: blob v2 by its extension name, in manifest and Arrow schemas, and the legacy
``lance-encoding:blob`` marker (docs/lance-format.md §14.1)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import pyarrow as pa

from ..proto import file_pb2
from ..schema import BLOB_V2_EXTENSION, EXTENSION_NAME_KEY

LEGACY_BLOB_KEY = "lance-encoding:blob"


def metadata_text(metadata: Mapping[Any, Any] | None, key: str) -> str | None:
    """The value of ``key`` in field metadata whose keys and values may be bytes or text (undecodable bytes
    stay visible as escapes)."""
    for k, v in (metadata or {}).items():
        if (k.decode("utf-8", "backslashreplace") if isinstance(k, bytes) else k) == key:
            return v.decode("utf-8", "backslashreplace") if isinstance(v, bytes) else str(v)
    return None


def is_blob_field(field: file_pb2.Field) -> bool:
    """Whether a manifest field is a blob v2 column (``extension_name`` or its metadata say so)."""
    return field.extension_name == BLOB_V2_EXTENSION or metadata_text(
        field.metadata, EXTENSION_NAME_KEY) == BLOB_V2_EXTENSION


def blob_field_ids(fields: Iterable[file_pb2.Field]) -> dict[int, file_pb2.Field]:
    """Top-level blob v2 fields by id."""
    return {f.id: f for f in fields if f.parent_id == -1 and is_blob_field(f)}


def has_blob_column(fields: Iterable[file_pb2.Field], data_file_fields: Iterable[int]) -> bool:
    """Whether a data file holding ``data_file_fields`` holds a blob v2 column of the schema."""
    return not blob_field_ids(fields).keys().isdisjoint(data_file_fields)


def arrow_is_blob(field: pa.Field) -> bool:
    """Whether an Arrow field is a blob v2 column (its extension type or its metadata say so)."""
    if isinstance(field.type, pa.ExtensionType):
        return bool(field.type.extension_name == BLOB_V2_EXTENSION)
    return metadata_text(field.metadata, EXTENSION_NAME_KEY) == BLOB_V2_EXTENSION


def is_legacy_blob(field: file_pb2.Field) -> bool:
    """Whether a manifest field is a legacy blob column: binary marked ``lance-encoding:blob = true``."""
    return field.logical_type in ("binary", "large_binary") and metadata_text(
        field.metadata, LEGACY_BLOB_KEY) == "true"
