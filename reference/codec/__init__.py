"""Bytes <-> typed objects for every file the table layer writes. Knows nothing of where files live."""

from .datafile import DataFileFooter, parse_footer
from .deletion import decode_deletions, encode_deletions, file_type_for
from .fragment_columns import FragmentColumns, decode_fragment_columns
from .manifest import ManifestFile, decode_manifest_file, encode_manifest_file
from .refs import BranchRecord, TagRecord, decode_branch, decode_tag, decode_version_hint, encode_version_hint
from .transaction import decode_transaction, decode_transaction_in_runs, encode_transaction, operation_name

__all__ = [
    "BranchRecord",
    "DataFileFooter",
    "FragmentColumns",
    "ManifestFile",
    "TagRecord",
    "decode_branch",
    "decode_deletions",
    "decode_fragment_columns",
    "decode_manifest_file",
    "decode_tag",
    "decode_transaction",
    "decode_transaction_in_runs",
    "decode_version_hint",
    "encode_deletions",
    "encode_manifest_file",
    "encode_transaction",
    "encode_version_hint",
    "file_type_for",
    "operation_name",
    "parse_footer",
]
