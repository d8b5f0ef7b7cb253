"""A partial local copy of a data file that the file codec decodes as if it were whole (docs/lance-format.md
§5.2): the tail, the global buffers and the chosen columns' pages, each at its original offset in a sparse file.
A caller may repair the schema (global buffer 0, a ``lance.file.FileDescriptor``) on the way; the repaired
schema then goes after the pages, 64-byte aligned, with the column metadata, offset tables and footer behind.

Where a column's bytes lie is read from its ``lance.file.v2.ColumnMetadata`` on the protobuf wire: field 1 the
column encoding, 2 the pages ``{1 buffer_offsets, 2 buffer_sizes, 4 encoding}``, 3 and 4 the column buffers'
offsets and sizes; an encoding ``{1 indirect: DeferredEncoding{1 location, 2 length}}`` names one more buffer.
"""

from __future__ import annotations

import struct
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING

from ..errors import FormatError, LanceSpecError, ScratchSpaceError
from ..limits import check_limit
from ..proto import file_pb2
from .datafile import MAGIC, OFFSET_ENTRY, V2_FOOTER, V2_FOOTER_SIZE, parse_footer
from .wire import decode, iter_fields, varint

if TYPE_CHECKING:
    from ..store.base import ObjectStore

_COPY_CHUNK = 8 * 1024 * 1024
"""Bytes of a data region copied at once."""

SchemaRepair = Callable[[file_pb2.FileDescriptor], bool]
"""Changes a file's FileDescriptor in place and says whether it changed anything."""


def _uints(values: Iterable[tuple[int, int | bytes]]) -> list[int]:
    """The integers of a repeated uint64 field, whether its values come one by one or packed."""
    out: list[int] = []
    for wire, value in values:
        if wire == 0 and isinstance(value, int):
            out.append(value)
        elif wire == 2 and isinstance(value, bytes):
            i = 0
            while i < len(value):
                v, i = varint(value, i)
                out.append(v)
    return out


def _by_number(message: int | bytes) -> defaultdict[int, list[tuple[int, int | bytes]]]:
    """The ``(wire type, value)`` pairs of a message's top-level fields by field number (none for a scalar)."""
    fields: defaultdict[int, list[tuple[int, int | bytes]]] = defaultdict(list)
    if isinstance(message, bytes):
        for number, wire, value in iter_fields(message):
            fields[number].append((wire, value))
    return fields


def _deferred(encoding: int | bytes) -> list[tuple[int, int]]:
    """The buffer an ``Encoding{indirect: DeferredEncoding{location, length}}`` points at, if any."""
    for _, indirect in _by_number(encoding)[1]:
        parts = {n: v for n, _, v in iter_fields(indirect)} if isinstance(indirect, bytes) else {}
        location, length = parts.get(1, 0), parts.get(2, 0)
        if isinstance(location, int) and isinstance(length, int) and length:
            return [(location, length)]
    return []


def _column_ranges(column_metadata: bytes) -> list[tuple[int, int]]:
    """Every ``(position, size)`` a column's pages and buffers occupy in the file."""
    column = _by_number(column_metadata)
    ranges = [r for _, encoding in column[1] for r in _deferred(encoding)]
    for _, page in column[2]:
        fields = _by_number(page)
        ranges += zip(_uints(fields[1]), _uints(fields[2]), strict=True)
        ranges += [r for _, encoding in fields[4] for r in _deferred(encoding)]
    ranges += zip(_uints(column[3]), _uints(column[4]), strict=True)
    return [(p, s) for p, s in ranges if s > 0]


def merged(ranges: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """The ``(start, end)`` spans that ``(position, size)`` ranges cover together, overlaps and neighbours
    joined: what a copy reads, each byte once, whatever the file's metadata repeats (a page table naming
    ``[0, n)`` a million times, or a global buffer table repeating one span: issue 32, an outside review,
    read the file a million times over)."""
    spans: list[tuple[int, int]] = []
    for start, end in sorted((p, p + n) for p, n in ranges if n > 0):
        if spans and start <= spans[-1][1]:
            if end > spans[-1][1]:
                spans[-1] = (spans[-1][0], end)
        else:
            spans.append((start, end))
    return spans


def _offset_table(metadata: bytes, at: int, count: int) -> list[tuple[int, int]]:
    return [OFFSET_ENTRY.unpack_from(metadata, at + OFFSET_ENTRY.size * i) for i in range(count)]


def copy_columns(storage: ObjectStore, uri: str, file_size: int | None, columns: Sequence[int] | None, path: str,
                 repair: SchemaRepair, fetched: Callable[[int], None] | None = None) -> None:
    """Write to ``path`` a copy of the v2 data file at ``uri`` (``file_size`` bytes; asked of the store when
    None) that holds its tail, its global buffers and the pages of ``columns`` (indices in the file; None:
    every byte), with its schema passed through ``repair``. ``fetched`` hears the length of every read. Each
    byte is read at most once (``merged``), so a copy costs at most the file's size. Raises FormatError when
    the file's tail does not hold together, ScratchSpaceError when the copy cannot be written."""
    try:
        _copy(storage, uri, file_size, columns, path, repair, fetched)
    except LanceSpecError:  # the store's own (ObjectNotFound is also an OSError) and the copy's FormatErrors
        raise
    except (struct.error, ValueError, IndexError) as exc:
        raise FormatError(f"the data file's metadata does not decode: {exc}", uri) from exc
    except OSError as exc:  # the copy's own file: a full disk, a file-size limit (it was an exit 3)
        raise ScratchSpaceError(f"cannot copy the data file to {path}: {exc.strerror or exc}; give lancespec "
                                "more temporary space (TMPDIR)", uri) from exc


def _copy(storage: ObjectStore, uri: str, file_size: int | None, columns: Sequence[int] | None, path: str,
          repair: SchemaRepair, fetched: Callable[[int], None] | None) -> None:

    def fetch(start: int, length: int) -> bytes:
        """``length`` bytes the file's metadata chose, each read bounded by ``--max-object-bytes`` first."""
        check_limit("max_object_bytes", storage.limits.max_object_bytes, length, uri,
                    "a read the data file's metadata asks for, in bytes")
        data = storage.get_range(uri, start, length)
        if fetched is not None:
            fetched(len(data))
        if len(data) != length:
            raise FormatError(f"data file ends before byte {start + length}", uri)
        return data

    size = file_size or storage.head(uri).size
    if size < V2_FOOTER_SIZE:
        raise FormatError(f"data file is {size} bytes, too short for a v2 footer", uri)
    tail = fetch(size - V2_FOOTER_SIZE, V2_FOOTER_SIZE)
    footer = parse_footer(tail, size, uri)
    if footer.is_legacy or not footer.num_global_buffers:
        raise FormatError("data file footer is not a Lance v2 footer with a file descriptor", uri)
    cms, cmo, gbo, n_columns = footer.column_meta_start, footer.cmo_table_pos, footer.gbo_table_pos, footer.num_columns
    assert cms is not None and cmo is not None and gbo is not None and n_columns is not None
    metadata = fetch(cms, size - V2_FOOTER_SIZE - cms)
    column_table = _offset_table(metadata, cmo - cms, n_columns)
    buffer_table = _offset_table(metadata, gbo - cms, footer.num_global_buffers)
    if any(start + n > cms for start, n in buffer_table):
        raise FormatError("a global buffer (the file schema is buffer 0) is not before the column metadata", uri)
    schema_pos, schema_size = buffer_table[0]
    original_schema = fetch(schema_pos, schema_size)
    descriptor = decode(file_pb2.FileDescriptor, original_schema, uri, "the file schema (global buffer 0)")
    changed = repair(descriptor)
    if columns is None:
        wanted = [(0, cms)]  # every byte before the metadata, the schema with it
        skip = (0, 0)
    else:
        wanted = list(buffer_table[1:])
        skip = (schema_pos, schema_pos + schema_size)  # read already: written from memory, not read again
        for index in columns:
            if not 0 <= index < n_columns:
                raise FormatError(f"column index {index} is outside the file's {n_columns} columns", uri)
            pos, length = column_table[index]
            if not cms <= pos <= pos + length <= cmo:
                raise FormatError(f"column {index}'s metadata lies outside the column metadata region", uri)
            for start, n in _column_ranges(metadata[pos - cms:pos - cms + length]):
                if start + n > cms:
                    raise FormatError(f"a page of column {index} overlaps the file's metadata", uri)
                wanted.append((start, n))
    with open(path, "wb") as out:
        if columns is not None:
            out.seek(schema_pos)
            out.write(original_schema)
        for start, end in merged(wanted):  # each byte read once, in pieces: a span may be as large as the file
            for low, high in ((start, min(end, skip[0])), (max(start, skip[1]), end)):
                for at in range(low, high, _COPY_CHUNK):
                    chunk = fetch(at, min(_COPY_CHUNK, high - at))
                    if chunk.strip(b"\0"):  # zeros are left as a hole: a sparse file stays sparse in the copy
                        out.seek(at)
                        out.write(chunk)
        if not changed:
            out.seek(cms)
            out.write(metadata + tail)
            return
        schema = descriptor.SerializeToString()
        new_schema_pos = cms + (-cms % 64)
        new_cms = new_schema_pos + len(schema) + (-len(schema) % 64)
        delta = new_cms - cms
        moved = bytearray(schema + bytes(new_cms - new_schema_pos - len(schema)))
        moved += metadata[:cmo - cms]
        moved += b"".join(OFFSET_ENTRY.pack(p + delta, n) for p, n in column_table)
        new_gbo = new_schema_pos + len(moved)
        moved += b"".join(OFFSET_ENTRY.pack(p, n) for p, n in [(new_schema_pos, len(schema)), *buffer_table[1:]])
        moved += V2_FOOTER.pack(new_cms, cmo + delta, new_gbo, footer.num_global_buffers, n_columns, footer.major,
                                footer.minor, MAGIC)
        out.seek(new_schema_pos)
        out.write(moved)
        out.truncate(new_schema_pos + len(moved))
