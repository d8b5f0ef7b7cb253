"""Manifest feature flags (Table Format spec Manifest.reader_feature_flags / writer_feature_flags; bit meanings
from docs/lance-format.md §15). A reader must refuse a dataset whose reader flags hold a bit it does not
implement; flags are recomputed from the manifest's content on every commit."""

from __future__ import annotations

from .proto import table_pb2

DELETION_FILES = 1
STABLE_ROW_IDS = 2
USE_V2_FORMAT_DEPRECATED = 4
TABLE_CONFIG = 8
BASE_PATHS = 16
DISABLE_TRANSACTION_FILE = 32

FLAG_NAMES = {
    DELETION_FILES: "deletion files",
    STABLE_ROW_IDS: "stable row ids",
    USE_V2_FORMAT_DEPRECATED: "use v2 format (deprecated)",
    TABLE_CONFIG: "table config",
    BASE_PATHS: "base paths",
    DISABLE_TRANSACTION_FILE: "disable transaction file",
}

#: Every bit this implementation understands, for reading and for writing.
KNOWN_FLAGS = sum(FLAG_NAMES)  # distinct bits: their sum is their union


def unknown_bits(flags: int) -> list[int]:
    """The set bits of ``flags`` this implementation does not know, lowest first."""
    rest = flags & ~KNOWN_FLAGS
    return [1 << i for i in range(64) if rest >> i & 1]


def uses_stable_row_ids(manifest: table_pb2.Manifest) -> bool:
    """Whether any fragment stores a row-id sequence."""
    return any(f.WhichOneof("row_id_sequence") is not None for f in manifest.fragments)


def compute_flags(manifest: table_pb2.Manifest, stable_row_ids: bool | None = None,
                  transaction_file_written: bool = True, deletion_files: bool | None = None) -> tuple[int, int]:
    """``(reader, writer)`` flags the manifest's content calls for, as pylance 14.0.2 sets them.

    Deletion files and stable row ids set the bit in both words; a non-empty table config sets the
    writer word only; any base path sets both. ``stable_row_ids`` and ``deletion_files``: whether any
    fragment stores a row-id sequence or a deletion file, where the caller knows (else the fragments are
    looked at).
    """
    reader = writer = 0
    if deletion_files if deletion_files is not None else any(f.HasField("deletion_file") for f in manifest.fragments):
        reader |= DELETION_FILES
        writer |= DELETION_FILES
    if uses_stable_row_ids(manifest) if stable_row_ids is None else stable_row_ids:
        reader |= STABLE_ROW_IDS
        writer |= STABLE_ROW_IDS
    if len(manifest.config) > 0:
        writer |= TABLE_CONFIG
    if len(manifest.base_paths) > 0:
        reader |= BASE_PATHS
        writer |= BASE_PATHS
    if not transaction_file_written:
        writer |= DISABLE_TRANSACTION_FILE
    return reader, writer
