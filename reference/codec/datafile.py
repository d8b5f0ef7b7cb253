"""Data-file footers, validated without decoding any column (docs/lance-format.md §5.2), and the
row count read from the file's FileDescriptor (``row_count``), both from one suffix read where it
reaches back far enough (``TailedObject``).

A v2 file ends with a 40-byte footer ``u64 column_meta_start | u64 cmo_table_pos | u64 gbo_table_pos |
u32 num_global_buffers | u32 num_columns | u16 major | u16 minor | b"LANC"``; a legacy (0.1) file with
16 bytes ``u64 metadata_pos | u16 major | u16 minor | b"LANC"``. The two offset tables follow each other
and end where the footer begins.
"""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING, NamedTuple

from ..errors import FormatError, UnsupportedFeatureError
from ..limits import check_limit
from ..proto import file_pb2
from ..store.base import Tail
from .wire import decode

if TYPE_CHECKING:
    from ..store.base import ObjectStore

MAGIC = b"LANC"
V2_FOOTER_SIZE = 40
LEGACY_FOOTER_SIZE = 16
V2_FOOTER = struct.Struct("<QQQIIHH4s")
OFFSET_ENTRY = struct.Struct("<QQ")
"""One entry of the column-metadata and global-buffer offset tables: ``u64 position | u64 size``."""

# (DataFile.file_major_version, file_minor_version) -> the (major, minor) the footer carries.
FOOTER_VERSION_FOR = {(2, 0): (0, 3), (2, 1): (2, 1), (2, 2): (2, 2), (2, 3): (2, 3), (0, 2): (0, 2)}


class DataFileFooter(NamedTuple):
    """The parsed footer. Legacy files have no column or buffer tables (their counts are None). A named tuple:
    a million-fragment version's file checks parse a million of them."""

    major: int
    minor: int
    num_columns: int | None
    num_global_buffers: int | None
    column_meta_start: int | None
    cmo_table_pos: int | None
    gbo_table_pos: int | None

    @property
    def is_legacy(self) -> bool:
        return (self.major, self.minor) in ((0, 1), (0, 2))


def parse_footer(tail: bytes, file_size: int, where: str = "") -> DataFileFooter:
    """Parse the footer from the file's last ``min(40, size)`` bytes and check it against ``file_size``."""
    if len(tail) < LEGACY_FOOTER_SIZE or tail[-4:] != MAGIC:
        raise FormatError("data file does not end with the LANC magic", where)
    major, minor = struct.unpack_from("<HH", tail, len(tail) - 8)
    if (major, minor) in ((0, 1), (0, 2)):
        (metadata_pos,) = struct.unpack_from("<Q", tail, len(tail) - LEGACY_FOOTER_SIZE)
        if metadata_pos >= file_size:
            raise FormatError(f"legacy footer metadata position {metadata_pos} is past the end", where)
        return DataFileFooter(major, minor, None, None, None, None, None)
    if len(tail) < V2_FOOTER_SIZE:
        raise FormatError(f"data file is {file_size} bytes, too short for a v2 footer", where)
    cms, cmo, gbo, n_buffers, n_columns, _, _, _ = V2_FOOTER.unpack_from(tail, len(tail) - V2_FOOTER_SIZE)
    footer_start = file_size - V2_FOOTER_SIZE
    if cmo + 16 * n_columns != gbo or gbo + 16 * n_buffers != footer_start:
        raise FormatError(
            f"offset tables are inconsistent (columns at {cmo} x{n_columns}, buffers at {gbo} x{n_buffers}, "
            f"footer at {footer_start})",
            where,
        )
    if cms > cmo:
        raise FormatError(f"column metadata starts at {cms}, after its offset table at {cmo}", where)
    return DataFileFooter(major, minor, n_columns, n_buffers, cms, cmo, gbo)


TAIL_READ = 64 * 1024
"""Bytes a reader asks for in its first (suffix) read of a data file: the footer, both offset tables and
the FileDescriptor of every file with a modest schema, so one request usually answers every question."""


class TailedObject:
    """Range reads of one object of known size, served from a suffix read already made wherever it covers
    them, and from the store otherwise."""

    def __init__(self, storage: ObjectStore, uri: str, tail: Tail) -> None:
        self.storage, self.uri, self.tail = storage, uri, tail

    @property
    def size(self) -> int:
        return self.tail.size

    def read(self, start: int, length: int) -> bytes:
        """``length`` bytes from ``start`` (fewer at the end of the object). A read the file's own metadata
        chose is bounded by the object's real size and by ``--max-object-bytes`` (LimitExceeded naming it)
        before anything is fetched: a sparse 3 GiB file whose footer spans it costs no 3 GiB."""
        covered_from = self.tail.size - len(self.tail.data)
        if start >= covered_from:
            return self.tail.data[start - covered_from : start - covered_from + length]
        length = max(0, min(length, self.tail.size - start))
        limit = self.storage.limits.max_object_bytes
        check_limit("max_object_bytes", limit, length, self.uri, "a read the data file's metadata asks for, in bytes")
        return self.storage.get_range(self.uri, start, length)

    @classmethod
    def fetch(cls, storage: ObjectStore, uri: str, length: int = TAIL_READ) -> TailedObject:
        """One suffix read of ``uri``. Raises ObjectNotFound."""
        return cls(storage, uri, storage.get_tail(uri, length))


def read_footer(obj: TailedObject) -> DataFileFooter:
    """The footer of a data file whose tail was fetched. Raises FormatError."""
    return parse_footer(obj.read(max(0, obj.size - V2_FOOTER_SIZE), V2_FOOTER_SIZE), obj.size, obj.uri)


def read_row_count(storage: ObjectStore, uri: str, size: int) -> int:
    """The row count of the v2 data file at ``uri`` (``size`` bytes), without decoding any column."""
    if size < LEGACY_FOOTER_SIZE:
        raise FormatError(f"data file is {size} bytes, too short for a footer", uri)
    obj = TailedObject(storage, uri, Tail(storage.get_range(uri, max(0, size - V2_FOOTER_SIZE),
                                                           min(size, V2_FOOTER_SIZE)), size))
    return row_count(obj, read_footer(obj))


def row_count(obj: TailedObject, footer: DataFileFooter) -> int:
    """The row count of a v2 data file from its parsed footer: the ``length`` of its FileDescriptor
    (``file_descriptor``)."""
    return int(file_descriptor(obj, footer).length)


def file_descriptor(obj: TailedObject, footer: DataFileFooter) -> file_pb2.FileDescriptor:
    """The FileDescriptor of a v2 data file from its parsed footer (docs/lance-format.md §5.2): entry 0 of
    the global-buffer offset table at ``gbo_table_pos`` (``num_global_buffers`` x ``{u64 pos, u64 size}``)
    locates global buffer 0, the ``lance.file.FileDescriptor``: the file's schema (field ids as the
    manifest records them, names as they were when the file was written) and its ``length`` in rows.
    Both come from the fetched tail when it reaches back far enough. Raises FormatError when the table
    entry or the descriptor is damaged, and UnsupportedFeatureError for a legacy (0.x) file, which keeps
    its metadata elsewhere.
    """
    return decode_descriptor(descriptor_bytes(obj, footer), obj.uri)


def descriptor_bytes(obj: TailedObject, footer: DataFileFooter) -> bytes:
    """Global buffer 0 of a v2 data file, the bytes ``file_descriptor`` decodes (files written alike share
    them, so a reader of many files may decode each distinct one once). Raises as ``file_descriptor``."""
    position, length = descriptor_span(obj, footer)
    data = obj.read(position, length)
    if len(data) != length:
        raise FormatError(f"global buffer 0 at {position} is cut short ({len(data)} of {length} bytes)", obj.uri)
    return bytes(data)


def descriptor_span(obj: TailedObject, footer: DataFileFooter) -> tuple[int, int]:
    """Where global buffer 0 lies, ``(position, length)``, from entry 0 of the global-buffer offset table: before
    the offset tables, so the descriptor, the tables and the footer are the file's last ``size - position``
    bytes. Raises as ``file_descriptor``."""
    uri = obj.uri
    if footer.is_legacy:
        raise UnsupportedFeatureError(f"legacy ({footer.major}.{footer.minor}) data file: no FileDescriptor", uri)
    assert footer.gbo_table_pos is not None and footer.cmo_table_pos is not None
    if not footer.num_global_buffers:
        raise FormatError("the file has no global buffer, so no FileDescriptor", uri)
    entry = obj.read(footer.gbo_table_pos, OFFSET_ENTRY.size)
    if len(entry) != OFFSET_ENTRY.size:
        raise FormatError(f"global-buffer offset table at {footer.gbo_table_pos} is cut short", uri)
    position, length = OFFSET_ENTRY.unpack(entry)
    if length == 0 or position + length > footer.cmo_table_pos:
        raise FormatError(
            f"global buffer 0 at {position} ({length} bytes) does not lie before the offset tables "
            f"(at {footer.cmo_table_pos})",
            uri,
        )
    return position, length


def decode_descriptor(data: bytes, uri: str) -> file_pb2.FileDescriptor:
    """Global buffer 0 (``descriptor_bytes``) decoded as a FileDescriptor. Raises FormatError when it is none."""
    descriptor = decode(file_pb2.FileDescriptor, data, uri, "global buffer 0")
    if not descriptor.HasField("schema"):
        raise FormatError("global buffer 0 is no lance.file.FileDescriptor (no schema)", uri)
    return descriptor
